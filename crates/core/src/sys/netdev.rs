//! The network interfaces' receive counters (`/proc/net/dev` on Linux): bytes and
//! packets received, summed over the interfaces that carry the sweep's traffic, so a
//! configuration's wire bytes are a snapshot before minus one after.

use std::time::Duration;

/// Which interfaces to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interfaces {
    /// `lo` only: the endpoint is on this machine.
    Loopback,
    /// Every interface but `lo` (on Lambda, the function's network device).
    External,
}

impl Interfaces {
    /// Loopback for an endpoint on this machine (`localhost`, `127.x`, `::1`), the
    /// external interfaces otherwise (AWS's endpoints included).
    pub(crate) fn for_endpoint(endpoint: Option<&str>) -> Interfaces {
        let Some(e) = endpoint else {
            return Interfaces::External;
        };
        let host = e.split("://").nth(1).unwrap_or(e);
        let host = host.split('/').next().unwrap_or(host);
        let local = host.starts_with("127.")
            || host.starts_with("localhost")
            || host.starts_with("[::1]")
            || host.starts_with("::1");
        if local {
            Interfaces::Loopback
        } else {
            Interfaces::External
        }
    }

    fn counts(self, name: &str) -> bool {
        match self {
            Interfaces::Loopback => name == "lo",
            Interfaces::External => name != "lo",
        }
    }
}

/// Receive counters summed over some interfaces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RxSnapshot {
    pub interfaces: Vec<String>,
    pub bytes: u64,
    pub packets: u64,
}

impl RxSnapshot {
    /// Now, from `/proc/net/dev`; `None` where it cannot be read (not Linux).
    pub(crate) fn read(which: Interfaces) -> Option<RxSnapshot> {
        let text = std::fs::read_to_string("/proc/net/dev").ok()?;
        parse(&text, which)
    }

    /// What was received since `before` (the interfaces of this snapshot).
    pub(crate) fn since(&self, before: &RxSnapshot) -> RxSnapshot {
        RxSnapshot {
            interfaces: self.interfaces.clone(),
            bytes: self.bytes.saturating_sub(before.bytes),
            packets: self.packets.saturating_sub(before.packets),
        }
    }

    /// Bytes per second over `wall`, in MiB/s.
    pub(crate) fn mib_per_s(&self, wall: Duration) -> f64 {
        self.bytes as f64 / (1024.0 * 1024.0) / wall.as_secs_f64().max(1e-9)
    }
}

/// Parses `/proc/net/dev`: two header lines, then `name: rx_bytes rx_packets ...`.
pub(crate) fn parse(text: &str, which: Interfaces) -> Option<RxSnapshot> {
    let mut snap = RxSnapshot::default();
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if !which.counts(name) {
            continue;
        }
        let mut fields = rest.split_whitespace().map(|f| f.parse::<u64>().ok());
        let (Some(Some(bytes)), Some(Some(packets))) = (fields.next(), fields.next()) else {
            continue;
        };
        snap.interfaces.push(name.to_string());
        snap.bytes += bytes;
        snap.packets += packets;
    }
    (!snap.interfaces.is_empty()).then_some(snap)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0: 5000      20    0    0    0     0          0         0     7000      30    0    0    0     0       0          0
  eth1:  300       3    0    0    0     0          0         0        0       0    0    0    0     0       0          0
";

    #[test]
    fn loopback_or_the_others_are_summed() {
        let lo = parse(SAMPLE, Interfaces::Loopback).unwrap();
        assert_eq!(
            (lo.bytes, lo.packets, lo.interfaces.clone()),
            (1000, 10, vec!["lo".to_string()])
        );
        let ext = parse(SAMPLE, Interfaces::External).unwrap();
        assert_eq!((ext.bytes, ext.packets), (5300, 23));
        assert_eq!(ext.interfaces, ["eth0", "eth1"]);
        let later = RxSnapshot {
            bytes: 6300,
            packets: 33,
            ..ext.clone()
        };
        assert_eq!(later.since(&ext).bytes, 1000);
    }

    #[test]
    fn endpoints_pick_their_interfaces() {
        assert_eq!(
            Interfaces::for_endpoint(Some("http://127.0.0.1:9000")),
            Interfaces::Loopback
        );
        assert_eq!(
            Interfaces::for_endpoint(Some("https://localhost:9000")),
            Interfaces::Loopback
        );
        assert_eq!(
            Interfaces::for_endpoint(Some("http://[::1]:9000")),
            Interfaces::Loopback
        );
        assert_eq!(
            Interfaces::for_endpoint(Some("https://s3.example.com")),
            Interfaces::External
        );
        assert_eq!(Interfaces::for_endpoint(None), Interfaces::External);
    }

    #[test]
    fn this_machine_has_a_loopback_counter() {
        if cfg!(target_os = "linux") {
            assert!(RxSnapshot::read(Interfaces::Loopback).is_some());
        }
    }
}
