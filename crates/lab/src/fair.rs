//! The lab's fairness at its connection cap: no client's kept-alive connections can
//! hold every slot. At `--max-connections`, a new connection does not get 503 while
//! some connection sits idle between requests: the peer address holding the most
//! connections gives up its connection idle longest (closed gracefully, between
//! requests, as the idle timeout closes one), and the new connection takes the slot.
//! Only when no connection is idle after a request (all mid-request, or connected
//! but never sent one: that wait is bounded by the header read timeout) is the new
//! one refused.
//!
//! Per peer: the eviction takes from the peer address with the most connections
//! first, so one address's connections go before another's. On loopback every
//! client is 127.0.0.1, one peer: the rule then is the global idle-longest one.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::idle::Activity;

/// How long a new connection waits for the slot of the connection it evicted.
pub(crate) const EVICTION_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The connections being served, by peer.
#[derive(Debug, Default)]
pub(crate) struct Conns {
    open: Mutex<Vec<Entry>>,
    next_id: AtomicU64,
    evicted: AtomicU64,
}

#[derive(Debug)]
struct Entry {
    id: u64,
    peer: IpAddr,
    activity: Arc<Activity>,
    close: Arc<Notify>,
}

/// One connection's place in [`Conns`]: leaves it when dropped.
#[derive(Debug)]
pub(crate) struct Registered {
    conns: Arc<Conns>,
    id: u64,
    /// Notified when the connection is to close (evicted).
    pub(crate) close: Arc<Notify>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.conns.lock().retain(|e| e.id != self.id);
    }
}

impl Conns {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a connection from `peer`.
    pub(crate) fn register(self: &Arc<Self>, peer: IpAddr, activity: Arc<Activity>) -> Registered {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        self.lock().push(Entry {
            id,
            peer,
            activity,
            close: close.clone(),
        });
        Registered {
            conns: self.clone(),
            id,
            close,
        }
    }

    /// Connections closed to make room so far.
    pub(crate) fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// Asks the idle-longest connection of the peer holding the most connections to
    /// close; false when no connection is idle after a request.
    pub(crate) fn evict_one(&self) -> bool {
        let mut open = self.lock();
        let mut per_peer: HashMap<IpAddr, usize> = HashMap::new();
        for e in open.iter() {
            *per_peer.entry(e.peer).or_default() += 1;
        }
        let victim = open
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.activity.kept_alive_since().map(|since| (i, per_peer[&e.peer], since)))
            // Most connections first, then idle longest (earliest).
            .min_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)))
            .map(|(i, _, _)| i);
        let Some(i) = victim else {
            return false;
        };
        let entry = open.swap_remove(i);
        entry.close.notify_one();
        self.evicted.fetch_add(1, Ordering::Relaxed);
        true
    }
}
