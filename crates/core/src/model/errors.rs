//! Failed requests by kind: the one list of error kinds ([`ErrorKind::ALL`]) and the
//! per-kind counts a result row carries ([`ErrorCounts`]). Every other place that
//! needs the kinds (counting, merging, printing) goes through these two.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::closed_set::closed_set;

closed_set! {
    /// The kinds of failure a request can have, in the order results list them.
    pub enum ErrorKind {
        /// 404 NoSuchKey / NoSuchBucket.
        NotFound = "not_found",
        /// 403.
        AccessDenied = "access_denied",
        /// 503 SlowDown, 429.
        Throttled = "throttled",
        /// Other 5xx.
        ServerError = "server_error",
        /// Connect, first-byte or attempt timeout.
        Timeout = "timeout",
        /// Connection refused, reset or closed, truncated body.
        Connection = "connection",
        /// 400 ExpiredToken / InvalidToken: the S3 Express session a request was signed
        /// with was refused (expired, or unknown to the server).
        Session = "session",
        /// Anything else.
        Other = "other",
    }
}

impl ErrorKind {
    /// The kind an HTTP status means, by the status alone (`None`: not a failure).
    /// The one place statuses are sorted: the transport's retry causes and the S3
    /// layer's classification (which looks at S3's error code first) both use it.
    pub fn of_http_status(status: u16) -> Option<ErrorKind> {
        match status {
            100..=399 => None,
            429 | 503 => Some(ErrorKind::Throttled),
            404 => Some(ErrorKind::NotFound),
            403 => Some(ErrorKind::AccessDenied),
            500..=599 => Some(ErrorKind::ServerError),
            _ => Some(ErrorKind::Other),
        }
    }

    /// Failures that may pass on a second try (throttling, 5xx, timeouts, dropped
    /// connections), as opposed to ones every try would repeat.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorKind::Throttled | ErrorKind::ServerError | ErrorKind::Timeout | ErrorKind::Connection
        )
    }
}

/// Retried attempts by what ended them (the attempt before each retry).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryCauses {
    /// A 503 SlowDown or 429 answer.
    pub throttled: u64,
    /// Another 5xx answer.
    pub server_error: u64,
    /// No response headers in time (the first-byte or the attempt timeout).
    pub timeout: u64,
    /// The connection failed or was closed before the headers.
    pub connection: u64,
    /// Any other answer the SDK chose to retry.
    pub other: u64,
}

impl RetryCauses {
    /// All retries counted here.
    pub fn total(&self) -> u64 {
        self.throttled + self.server_error + self.timeout + self.connection + self.other
    }

    /// Adds `other`'s counts.
    pub fn add_all(&mut self, other: &RetryCauses) {
        self.throttled += other.throttled;
        self.server_error += other.server_error;
        self.timeout += other.timeout;
        self.connection += other.connection;
        self.other += other.other;
    }

    /// `throttled=N server_error=N` (causes with zero left out), or `none`.
    pub fn short(&self) -> String {
        let parts: Vec<String> = [
            ("throttled", self.throttled),
            ("server_error", self.server_error),
            ("timeout", self.timeout),
            ("connection", self.connection),
            ("other", self.other),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{name}={n}"))
        .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(" ")
        }
    }
}

/// Failed requests by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    pub total: u64,
    /// 404 NoSuchKey / NoSuchBucket.
    pub not_found: u64,
    /// 403.
    pub access_denied: u64,
    /// 503 SlowDown, 429.
    pub throttled: u64,
    /// Other 5xx.
    pub server_error: u64,
    /// Connect, first-byte or attempt timeout.
    pub timeout: u64,
    /// Connection refused, reset or closed, truncated body.
    pub connection: u64,
    /// 400 ExpiredToken / InvalidToken: an S3 Express session the server refused.
    /// (Absent from results written before it existed: 0.)
    #[serde(default)]
    pub session: u64,
    /// Anything else.
    pub other: u64,
}

impl ErrorCounts {
    fn slot(&mut self, kind: ErrorKind) -> &mut u64 {
        match kind {
            ErrorKind::NotFound => &mut self.not_found,
            ErrorKind::AccessDenied => &mut self.access_denied,
            ErrorKind::Throttled => &mut self.throttled,
            ErrorKind::ServerError => &mut self.server_error,
            ErrorKind::Timeout => &mut self.timeout,
            ErrorKind::Connection => &mut self.connection,
            ErrorKind::Session => &mut self.session,
            ErrorKind::Other => &mut self.other,
        }
    }

    /// The count of one kind.
    pub fn get(&self, kind: ErrorKind) -> u64 {
        let mut copy = *self;
        *copy.slot(kind)
    }

    /// Counts `n` more failures of `kind`.
    pub fn add(&mut self, kind: ErrorKind, n: u64) {
        self.total += n;
        *self.slot(kind) += n;
    }

    /// Adds every count of `other` (merging rows).
    pub fn add_all(&mut self, other: &ErrorCounts) {
        for kind in ErrorKind::ALL {
            self.add(kind, other.get(kind));
        }
    }

    /// `kind=count` for every non-zero kind, or `0`.
    pub fn short(&self) -> String {
        if self.total == 0 {
            return "0".into();
        }
        let mut s = String::new();
        for kind in ErrorKind::ALL {
            let n = self.get(kind);
            if n > 0 {
                if !s.is_empty() {
                    s.push(' ');
                }
                let _ = write!(s, "{}={n}", kind.name());
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_counts_by_kind() {
        let mut e = ErrorCounts::default();
        e.add(ErrorKind::Timeout, 2);
        e.add(ErrorKind::Throttled, 1);
        assert_eq!(e.total, 3);
        assert_eq!(e.short(), "throttled=1 timeout=2");
        assert_eq!(ErrorCounts::default().short(), "0");
    }

    #[test]
    fn every_kind_has_its_own_field_and_merges() {
        let mut e = ErrorCounts::default();
        for (n, kind) in ErrorKind::ALL.into_iter().enumerate() {
            e.add(kind, n as u64 + 1);
        }
        let json = serde_json::to_value(e).unwrap();
        for (n, kind) in ErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(json[kind.name()], n as u64 + 1, "{kind:?}");
            assert_eq!(e.get(kind), n as u64 + 1);
        }
        let mut sum = e;
        sum.add_all(&e);
        assert_eq!(sum.total, 2 * e.total);
        assert_eq!(sum.other, 2 * ErrorKind::ALL.len() as u64);
    }
}
