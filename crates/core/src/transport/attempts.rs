//! Each attempt of one request, stamped by the transport: when it was handed over,
//! when its response headers came (if they did), when it ended, and the connection it
//! went out on. A [`super::RequestProbe`] keeps the first [`MAX_STAMPED_ATTEMPTS`] of
//! its request's attempts (a lock per attempt, never per read), so the request log
//! can give a retried attempt its own times and connection.

use std::sync::Mutex;

/// Attempts of one request stamped; later ones are counted but not stamped.
pub const MAX_STAMPED_ATTEMPTS: usize = 8;

/// One attempt's stamps, in nanoseconds after its request began
/// ([`super::RequestProbe::begin`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttemptStamp {
    /// Handed over to the transport.
    pub sent_ns: u64,
    /// Its response headers; `None` when it got none (a timeout, a dropped connection).
    pub headers_ns: Option<u64>,
    /// Ended: its headers, or its failure.
    pub end_ns: u64,
    /// The connection it went out on (the transport's number, from 1); 0: none.
    pub connection_id: u64,
}

/// The stamps of a request's attempts, in order.
#[derive(Debug, Default)]
pub(super) struct AttemptLog {
    stamps: Mutex<([AttemptStamp; MAX_STAMPED_ATTEMPTS], usize)>,
}

impl AttemptLog {
    /// Notes attempt number `n` (from 1), its clock stamps made relative to `began`.
    pub(super) fn note(&self, n: u64, began: u64, (sent, headers, end): (u64, Option<u64>, u64), connection_id: u64) {
        let Some(i) = (n as usize).checked_sub(1).filter(|&i| i < MAX_STAMPED_ATTEMPTS) else {
            return;
        };
        let mut s = self.stamps.lock().unwrap_or_else(|e| e.into_inner());
        s.0[i] = AttemptStamp {
            sent_ns: sent.saturating_sub(began),
            headers_ns: headers.map(|h| h.saturating_sub(began)),
            end_ns: end.saturating_sub(began),
            connection_id,
        };
        s.1 = s.1.max(i + 1);
    }

    /// The stamps so far (how many are set, and the array), and a reset.
    pub(super) fn take(&self) -> Stamps {
        let mut s = self.stamps.lock().unwrap_or_else(|e| e.into_inner());
        let out = Stamps { stamps: s.0, len: s.1 };
        *s = Default::default();
        out
    }
}

/// The stamped attempts of one request, first to last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamps {
    stamps: [AttemptStamp; MAX_STAMPED_ATTEMPTS],
    len: usize,
}

impl Stamps {
    /// The stamped attempts, in order.
    pub fn as_slice(&self) -> &[AttemptStamp] {
        &self.stamps[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_are_stamped_in_order_from_the_requests_start_up_to_the_bound() {
        let log = AttemptLog::default();
        log.note(1, 100, (110, None, 150), 3);
        log.note(2, 100, (300, Some(340), 340), 4);
        log.note(9, 100, (900, None, 950), 5);
        let s = log.take();
        assert_eq!(s.as_slice().len(), 2);
        assert_eq!(
            s.as_slice()[1],
            AttemptStamp {
                sent_ns: 200,
                headers_ns: Some(240),
                end_ns: 240,
                connection_id: 4
            }
        );
        assert!(log.take().as_slice().is_empty(), "taking resets");
    }
}
