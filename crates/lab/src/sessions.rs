//! The lab's S3 Express sessions: what `CreateSession` hands out (an access key, a
//! secret, a token, an expiration 5 minutes out as in S3, or the lab's
//! `--session-ttl-s`), the mode each was asked for (ReadOnly or ReadWrite), and a
//! tally of sessions created and of requests accepted or refused with one. Served as
//! JSON at [`SESSIONS_PATH`].

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};
use std::time::{Duration, SystemTime};

use rand::Rng;
use serde::Serialize;

use super::caps::MAX_SESSIONS;

/// Path of the session tally endpoint (not a valid bucket name, so never an S3 request).
pub const SESSIONS_PATH: &str = "/_s3sweep/sessions";

/// How long a session lasts unless the lab is told otherwise: 5 minutes, as in S3.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(300);

/// What a session may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SessionMode {
    /// Reads only (`x-amz-create-session-mode: ReadOnly`).
    ReadOnly,
    /// Reads and writes (S3's default when no mode is asked for).
    ReadWrite,
}

impl SessionMode {
    /// The mode a `CreateSession` asked for (`None`: S3's default, ReadWrite).
    pub fn parse(asked: Option<&str>) -> Result<SessionMode, UnknownSessionMode> {
        match asked {
            None | Some("ReadWrite") => Ok(SessionMode::ReadWrite),
            Some("ReadOnly") => Ok(SessionMode::ReadOnly),
            Some(other) => Err(UnknownSessionMode(other.to_string())),
        }
    }
}

/// A `CreateSession` mode S3 does not have, as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown session mode {0:?} (ReadOnly or ReadWrite)")]
pub struct UnknownSessionMode(pub String);

/// One session handed out.
#[derive(Debug, Clone)]
pub struct Session {
    pub bucket: String,
    pub mode: SessionMode,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub token: String,
    pub expires: SystemTime,
}

/// Sessions created and requests seen with one, by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SessionTally {
    /// `CreateSession` calls answered with a ReadOnly session.
    pub created_read_only: u64,
    /// `CreateSession` calls answered with a ReadWrite session.
    pub created_read_write: u64,
    /// Requests signed with a valid session and let through.
    pub accepted: u64,
    /// Requests refused: the session had expired (400 ExpiredToken).
    pub refused_expired: u64,
    /// Requests refused: a token the lab never handed out, or another key's (400 InvalidToken).
    pub refused_invalid: u64,
    /// Requests refused: the signature did not match the session's secret (403).
    pub refused_signature: u64,
    /// Requests refused: a session used for another bucket (403 AccessDenied).
    pub refused_other_bucket: u64,
    /// Writes refused: a ReadOnly session (403 AccessDenied).
    pub refused_read_only_writes: u64,
}

impl SessionTally {
    /// `created ro=1 rw=2, accepted 100, refused expired=0 ...` in one line.
    pub fn line(&self) -> String {
        format!(
            "created ReadOnly={} ReadWrite={}; accepted {}; refused expired={} invalid={} signature={} other-bucket={} read-only-write={}",
            self.created_read_only,
            self.created_read_write,
            self.accepted,
            self.refused_expired,
            self.refused_invalid,
            self.refused_signature,
            self.refused_other_bucket,
            self.refused_read_only_writes
        )
    }
}

/// The session table. Sessions are kept after they expire (so a late request gets
/// `ExpiredToken`, not `InvalidToken`) and dropped an hour later.
#[derive(Debug)]
pub struct Sessions {
    ttl: RwLock<Duration>,
    by_token: RwLock<HashMap<String, Session>>,
    tally: Mutex<SessionTally>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions::new(DEFAULT_SESSION_TTL)
    }
}

/// How long an expired session is remembered.
const KEEP_EXPIRED: Duration = Duration::from_secs(3600);

fn random_text(len: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..len)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
        .collect()
}

impl Sessions {
    pub fn new(ttl: Duration) -> Self {
        Sessions {
            ttl: RwLock::new(ttl),
            by_token: RwLock::new(HashMap::new()),
            tally: Mutex::new(SessionTally::default()),
        }
    }

    /// How long new sessions last.
    pub fn ttl(&self) -> Duration {
        *self.ttl.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets how long new sessions last.
    pub fn set_ttl(&self, ttl: Duration) {
        *self.ttl.write().unwrap_or_else(|e| e.into_inner()) = ttl;
    }

    /// A new session for `bucket`; `None` when [`MAX_SESSIONS`] unexpired sessions
    /// are held (expired ones are forgotten first to make room).
    pub fn create(&self, bucket: &str, mode: SessionMode) -> Option<Session> {
        let now = SystemTime::now();
        let session = Session {
            bucket: bucket.to_string(),
            mode,
            access_key_id: format!("S3SWEEPSESSION{}", random_text(12)),
            secret_access_key: random_text(40),
            token: random_text(64),
            expires: now + self.ttl(),
        };
        {
            let mut map = self.by_token.write().unwrap_or_else(|e| e.into_inner());
            map.retain(|_, s| now.duration_since(s.expires).map_or(true, |d| d < KEEP_EXPIRED));
            if map.len() >= MAX_SESSIONS {
                map.retain(|_, s| s.expires > now);
            }
            if map.len() >= MAX_SESSIONS {
                return None;
            }
            map.insert(session.token.clone(), session.clone());
        }
        self.count(|t| match mode {
            SessionMode::ReadOnly => t.created_read_only += 1,
            SessionMode::ReadWrite => t.created_read_write += 1,
        });
        Some(session)
    }

    /// The session with this token, expired or not.
    pub fn get(&self, token: &str) -> Option<Session> {
        self.by_token
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(token)
            .cloned()
    }

    /// Ends every session now, as if each had reached its expiration: the next request
    /// signed with one is refused with `ExpiredToken` (a client whose clock runs behind,
    /// or a session revoked early, looks like this).
    pub fn expire_all(&self) {
        let past = SystemTime::now() - Duration::from_secs(1);
        for s in self.by_token.write().unwrap_or_else(|e| e.into_inner()).values_mut() {
            s.expires = s.expires.min(past);
        }
    }

    /// The tally so far.
    pub fn tally(&self) -> SessionTally {
        *self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn count(&self, f: impl FnOnce(&mut SessionTally)) {
        f(&mut self.tally.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_expire_and_are_counted_by_mode() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let ro = sessions.create("b--az1--x-s3", SessionMode::ReadOnly).unwrap();
        let rw = sessions.create("b--az1--x-s3", SessionMode::ReadWrite).unwrap();
        assert_ne!(ro.token, rw.token);
        assert!(ro.expires > SystemTime::now() + Duration::from_secs(50));
        assert_eq!(sessions.get(&ro.token).unwrap().mode, SessionMode::ReadOnly);
        sessions.expire_all();
        assert!(sessions.get(&ro.token).unwrap().expires < SystemTime::now());
        let t = sessions.tally();
        assert_eq!((t.created_read_only, t.created_read_write), (1, 1));
        assert!(sessions.get("never-handed-out").is_none());
        assert_eq!(SessionMode::parse(None), Ok(SessionMode::ReadWrite));
        assert_eq!(SessionMode::parse(Some("ReadOnly")), Ok(SessionMode::ReadOnly));
        assert_eq!(
            SessionMode::parse(Some("Sometimes")),
            Err(UnknownSessionMode("Sometimes".into()))
        );
    }

    #[test]
    fn sessions_past_the_cap_are_refused_until_some_expire() {
        let sessions = Sessions::new(Duration::from_secs(60));
        for _ in 0..MAX_SESSIONS {
            assert!(sessions.create("b--az1--x-s3", SessionMode::ReadOnly).is_some());
        }
        assert!(sessions.create("b--az1--x-s3", SessionMode::ReadOnly).is_none());
        assert_eq!(sessions.by_token.read().unwrap().len(), MAX_SESSIONS);
        // Expired sessions make room (they are forgotten first).
        sessions.expire_all();
        let fresh = sessions.create("b--az1--x-s3", SessionMode::ReadWrite).unwrap();
        assert_eq!(sessions.by_token.read().unwrap().len(), 1);
        assert!(sessions.get(&fresh.token).is_some());
    }
}
