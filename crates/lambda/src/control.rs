//! The Lambda control plane of a memory sweep, on the function itself: read its
//! configuration, take the sweep's lock (a marker appended to the function's
//! description with a compare-and-set on its `RevisionId`, so two sweeps of one
//! function cannot interleave), set its memory and wait for `LastUpdateStatus:
//! Successful` (a bounded poll), publish a version (checked to be this sweep's) and wait
//! for it to be `Active`, delete the versions published (by their qualified names,
//! `FUNCTION:N`, the resource the role allows), and put the original memory and description back. Each call
//! is one attempt (the client has retries off); a failure names the call. A marker
//! older than the function's timeout (a sweep killed before its cleanup) expires: the
//! next sweep removes it and takes the lock.

use std::time::{Duration, Instant};

use aws_sdk_lambda::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_lambda::types::{LastUpdateStatus, State};

/// What the lock marker in the description starts with.
pub const LOCK_MARKER: &str = "[s3sweep-memory-sweep ";

/// How long to wait for an update to finish, and how often to look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollSettings {
    pub interval: Duration,
    pub max_wait: Duration,
}

impl Default for PollSettings {
    /// One look a second for up to two minutes (an update usually takes seconds).
    fn default() -> Self {
        PollSettings {
            interval: Duration::from_secs(1),
            max_wait: Duration::from_secs(120),
        }
    }
}

/// The function as it was before the sweep: what is put back at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Original {
    pub memory_mb: u32,
    pub description: String,
}

/// A control-plane call that failed, or the lock held by another sweep.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    #[error("another memory sweep of {function} is running (the function's description holds its marker {marker:?}): this one was refused rather than interleaved with it. If no sweep is running (one was stopped before it could clean up), remove the marker from the function's description")]
    Concurrent { function: String, marker: String },
    /// Lambda refused to set this memory size (the update was answered with an error,
    /// or it ended `LastUpdateStatus: Failed`): that size is a failed step, the sweep
    /// goes on with the next one.
    #[error("{memory_mb} MB refused: {call} on {function} failed: {message}")]
    Refused {
        memory_mb: u32,
        call: &'static str,
        function: String,
        message: String,
    },
    #[error("{call} on {function} failed: {message}")]
    Call {
        call: &'static str,
        function: String,
        message: String,
    },
}

impl ControlError {
    fn call(call: &'static str, function: &str, message: impl Into<String>) -> Self {
        ControlError::Call {
            call,
            function: function.to_string(),
            message: message.into(),
        }
    }
}

/// One SDK error in one line: its code and message.
fn sdk_message<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
    err: &SdkError<E, R>,
) -> String {
    let mut text = match err {
        SdkError::ServiceError(e) => {
            let code = e.err().code().unwrap_or("ServiceError");
            format!("{code}: {}", e.err().message().unwrap_or("(no message)"))
        }
        other => DisplayErrorContext(other).to_string(),
    };
    if text.len() > 400 {
        let mut end = 400;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

fn code_of<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> Option<&str> {
    match err {
        SdkError::ServiceError(e) => e.err().code(),
        _ => None,
    }
}

/// The first lock marker in `description` and the description without it (and the
/// space before it).
fn split_marker(description: &str) -> Option<(String, String)> {
    let at = description.find(LOCK_MARKER)?;
    let rest = &description[at..];
    let end = rest.find(']').map_or(rest.len(), |i| i + 1);
    let marker = rest[..end].to_string();
    let without = format!("{}{}", description[..at].trim_end(), &rest[end..]);
    Some((marker, without))
}

/// Slack past the function's timeout before a marker counts as left behind, ms.
const MARKER_SLACK_MS: u64 = 60_000;

/// True when `marker` (`[s3sweep-memory-sweep REQUEST-ID START-MS]`) was taken longer
/// ago than the function's timeout (`timeout_s`, else Lambda's longest, 900 s) plus
/// [`MARKER_SLACK_MS`]: the sweep that took it has ended, killed before its cleanup,
/// since no invocation outlives the function's timeout. A marker whose start cannot be
/// read is never expired.
pub fn marker_expired(marker: &str, timeout_s: Option<u32>, now_ms: u64) -> bool {
    let Some(start_ms) = marker
        .trim_end_matches(']')
        .rsplit(' ')
        .next()
        .and_then(|t| t.parse::<u64>().ok())
    else {
        return false;
    };
    let deadline_ms = u64::from(timeout_s.unwrap_or(900)) * 1000 + MARKER_SLACK_MS;
    now_ms > start_ms.saturating_add(deadline_ms)
}

/// The function's control plane, for one memory sweep (`token` names it).
#[derive(Debug, Clone)]
pub struct ControlPlane {
    client: aws_sdk_lambda::Client,
    function: String,
    token: String,
    poll: PollSettings,
}

/// The fields of `GetFunctionConfiguration` a sweep reads.
#[derive(Debug, Clone)]
struct Config {
    memory_mb: u32,
    /// The function's timeout, seconds: no sweep runs longer.
    timeout_s: Option<u32>,
    description: String,
    revision_id: Option<String>,
    status: Option<LastUpdateStatus>,
    status_reason: Option<String>,
}

impl ControlPlane {
    pub fn new(client: aws_sdk_lambda::Client, function: &str, token: &str, poll: PollSettings) -> Self {
        ControlPlane {
            client,
            function: function.to_string(),
            token: token.to_string(),
            poll,
        }
    }

    /// The unqualified function this sweep changes.
    pub fn function(&self) -> &str {
        &self.function
    }

    /// This sweep's marker in the description.
    pub fn marker(&self) -> String {
        format!("{LOCK_MARKER}{}]", self.token)
    }

    async fn read(&self) -> Result<Config, ControlError> {
        let out = self
            .client
            .get_function_configuration()
            .function_name(&self.function)
            .send()
            .await
            .map_err(|e| ControlError::call("GetFunctionConfiguration", &self.function, sdk_message(&e)))?;
        Ok(Config {
            memory_mb: out.memory_size().and_then(|m| u32::try_from(m).ok()).unwrap_or(0),
            timeout_s: out.timeout().and_then(|t| u32::try_from(t).ok()),
            description: out.description().unwrap_or_default().to_string(),
            revision_id: out.revision_id().map(str::to_string),
            status: out.last_update_status().cloned(),
            status_reason: out.last_update_status_reason().map(str::to_string),
        })
    }

    /// Reads the function and takes the lock (sends the update; see
    /// [`ControlPlane::wait_locked`]): refused when another sweep's marker is in
    /// the description, or when the function changed between the read and the write
    /// (`RevisionId`). Returns the original memory and description.
    pub async fn lock(&self) -> Result<Original, ControlError> {
        let config = self.read().await?;
        let mut description = config.description.clone();
        if let Some((marker, rest)) = split_marker(&config.description) {
            let now_ms = crate::sys::now_unix_ms();
            if !marker_expired(&marker, config.timeout_s, now_ms) {
                return Err(ControlError::Concurrent {
                    function: self.function.clone(),
                    marker,
                });
            }
            tracing::warn!(%marker, "memory sweep: a marker older than the function's timeout is left by a sweep that was stopped: it is removed and the lock taken");
            description = rest;
        }
        let original = Original {
            memory_mb: config.memory_mb,
            description: description.clone(),
        };
        let locked = if description.is_empty() {
            self.marker()
        } else {
            format!("{description} {}", self.marker())
        };
        let mut update = self
            .client
            .update_function_configuration()
            .function_name(&self.function)
            .description(locked);
        if let Some(rev) = &config.revision_id {
            update = update.revision_id(rev);
        }
        if let Err(e) = update.send().await {
            return Err(match code_of(&e) {
                Some("PreconditionFailedException" | "ResourceConflictException") => ControlError::Concurrent {
                    function: self.function.clone(),
                    marker: format!("(the function changed while the lock was taken: {})", sdk_message(&e)),
                },
                _ => ControlError::call("UpdateFunctionConfiguration (lock)", &self.function, sdk_message(&e)),
            });
        }
        Ok(original)
    }

    /// Waits until the lock's update is done (after [`ControlPlane::lock`]; a failure
    /// here leaves the marker set: restore).
    pub async fn wait_locked(&self) -> Result<(), ControlError> {
        self.wait_ready("taking the lock").await.map(|_| ())
    }

    /// Polls until the last update is `Successful` (bounded by `max_wait`); the
    /// description must still hold this sweep's marker. Returns the revision.
    async fn wait_ready(&self, what: &str) -> Result<Config, ControlError> {
        let started = Instant::now();
        loop {
            let config = self.read().await?;
            match config.status {
                None | Some(LastUpdateStatus::Successful) => {
                    if !config.description.contains(&self.marker()) {
                        return Err(ControlError::call(
                            "GetFunctionConfiguration",
                            &self.function,
                            format!("after {what}: this sweep's marker {} is gone from the description: someone else changed the function; stopping", self.marker()),
                        ));
                    }
                    return Ok(config);
                }
                Some(LastUpdateStatus::Failed) => {
                    return Err(ControlError::call(
                        "UpdateFunctionConfiguration",
                        &self.function,
                        format!(
                            "{what}: LastUpdateStatus Failed: {}",
                            config.status_reason.as_deref().unwrap_or("(no reason given)")
                        ),
                    ))
                }
                Some(_) if started.elapsed() >= self.poll.max_wait => {
                    return Err(ControlError::call(
                        "GetFunctionConfiguration",
                        &self.function,
                        format!(
                            "{what}: LastUpdateStatus still {:?} after {} ms",
                            config.status.as_ref().map(|s| s.as_str()).unwrap_or(""),
                            self.poll.max_wait.as_millis()
                        ),
                    ))
                }
                Some(_) => tokio::time::sleep(self.poll.interval).await,
            }
        }
    }

    /// Sets the memory and waits until the update is done; returns the revision to
    /// publish.
    /// An update answered with an error (e.g. `InvalidParameterValueException` above
    /// the account's memory limit) or ending `Failed` is [`ControlError::Refused`].
    pub async fn set_memory(&self, memory_mb: u32) -> Result<Option<String>, ControlError> {
        let refused = |call: &'static str, message: String| ControlError::Refused {
            memory_mb,
            call,
            function: self.function.clone(),
            message,
        };
        self.client
            .update_function_configuration()
            .function_name(&self.function)
            .memory_size(memory_mb as i32)
            .send()
            .await
            .map_err(|e| match e {
                SdkError::ServiceError(_) => refused("UpdateFunctionConfiguration", sdk_message(&e)),
                other => ControlError::call("UpdateFunctionConfiguration", &self.function, sdk_message(&other)),
            })?;
        let config = match self.wait_ready(&format!("setting {memory_mb} MB")).await {
            Err(ControlError::Call { call, message, .. }) if message.contains("LastUpdateStatus Failed") => {
                return Err(refused(call, message))
            }
            other => other?,
        };
        if config.memory_mb != memory_mb {
            return Err(ControlError::call(
                "GetFunctionConfiguration",
                &self.function,
                format!("the memory is {} MB, not the {memory_mb} MB just set", config.memory_mb),
            ));
        }
        Ok(config.revision_id)
    }

    /// Publishes a version of the configuration just set (at `revision`). The version
    /// must carry this sweep's marker and `memory_mb`; otherwise Lambda handed back a
    /// version that already existed, which is not this sweep's to delete: an error.
    pub async fn publish(&self, memory_mb: u32, revision: Option<String>) -> Result<String, ControlError> {
        let mut call = self
            .client
            .publish_version()
            .function_name(&self.function)
            .description(format!("s3sweep memory sweep {} at {memory_mb} MB", self.token));
        if let Some(rev) = revision {
            call = call.revision_id(rev);
        }
        let out = call
            .send()
            .await
            .map_err(|e| ControlError::call("PublishVersion", &self.function, sdk_message(&e)))?;
        let version = out.version().unwrap_or_default().to_string();
        let ours = out.description().is_some_and(|d| d.contains(&self.token))
            && out.memory_size() == Some(memory_mb as i32)
            && !version.is_empty()
            && version != "$LATEST";
        if !ours {
            return Err(ControlError::call(
                "PublishVersion",
                &self.function,
                format!("Lambda answered with version {version:?}, which is not the one this sweep published (description {:?}, {:?} MB): it is left alone", out.description().unwrap_or(""), out.memory_size()),
            ));
        }
        Ok(version)
    }

    /// Waits until a version just published is `State: Active` (a new version is
    /// `Pending` for a while, and Lambda refuses to invoke it until then): polls
    /// `GetFunctionConfiguration` on the version's qualified name `FUNCTION:VERSION`,
    /// bounded by `max_wait`. IAM checks the qualified ARN `function:NAME:VERSION` (as
    /// it would for the unqualified name with `Qualifier=VERSION`: Lambda's rule since
    /// 2022-01-24), which the role allows through `ReadVersionsOfItself`.
    pub async fn wait_active(&self, version: &str) -> Result<(), ControlError> {
        let started = Instant::now();
        let call = "GetFunctionConfiguration (version state)";
        let qualified = self.qualified(version);
        loop {
            let out = self
                .client
                .get_function_configuration()
                .function_name(&qualified)
                .send()
                .await
                .map_err(|e| ControlError::call(call, &qualified, sdk_message(&e)))?;
            let state = out.state().cloned();
            match state {
                None | Some(State::Active) => return Ok(()),
                Some(State::Failed | State::Inactive) => {
                    return Err(ControlError::call(
                        call,
                        &self.function,
                        format!(
                            "version {version} is {}: {}",
                            out.state().map(|s| s.as_str()).unwrap_or(""),
                            out.state_reason().unwrap_or("(no reason given)")
                        ),
                    ))
                }
                Some(other) if started.elapsed() >= self.poll.max_wait => {
                    return Err(ControlError::call(
                        call,
                        &self.function,
                        format!(
                            "version {version} still {} after {} ms",
                            other.as_str(),
                            self.poll.max_wait.as_millis()
                        ),
                    ))
                }
                Some(_) => tokio::time::sleep(self.poll.interval).await,
            }
        }
    }

    /// The qualified name of a version, `FUNCTION:VERSION`: what `DeleteFunction` and
    /// the version's `GetFunctionConfiguration` are passed. IAM checks the qualified
    /// ARN `function:NAME:VERSION` (the same ARN it checks for the unqualified name with
    /// `Qualifier=VERSION`), which the role allows only on `function:NAME:*`.
    pub fn qualified(&self, version: &str) -> String {
        format!("{}:{version}", self.function)
    }

    /// Deletes one version this sweep published (never anything else: the caller
    /// passes only versions [`ControlPlane::publish`] returned), by its qualified name.
    pub async fn delete_version(&self, version: &str) -> Result<(), ControlError> {
        let qualified = self.qualified(version);
        if version.is_empty() || version == "$LATEST" {
            return Err(ControlError::call(
                "DeleteFunction",
                &qualified,
                "refused: only a numbered version this sweep published is deleted",
            ));
        }
        self.client
            .delete_function()
            .function_name(&qualified)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| ControlError::call("DeleteFunction", &qualified, sdk_message(&e)))
    }

    /// Puts the original memory and description back (the lock goes with the
    /// description) and waits until that update is done.
    pub async fn restore(&self, original: &Original) -> Result<(), ControlError> {
        self.client
            .update_function_configuration()
            .function_name(&self.function)
            .memory_size(original.memory_mb as i32)
            .description(&original.description)
            .send()
            .await
            .map_err(|e| {
                ControlError::call("UpdateFunctionConfiguration (restore)", &self.function, sdk_message(&e))
            })?;
        let started = Instant::now();
        loop {
            let config = self.read().await?;
            match config.status {
                None | Some(LastUpdateStatus::Successful) => return Ok(()),
                Some(LastUpdateStatus::Failed) => {
                    return Err(ControlError::call(
                        "UpdateFunctionConfiguration (restore)",
                        &self.function,
                        format!(
                            "LastUpdateStatus Failed: {}",
                            config.status_reason.as_deref().unwrap_or("(no reason given)")
                        ),
                    ))
                }
                Some(_) if started.elapsed() >= self.poll.max_wait => {
                    return Err(ControlError::call(
                        "GetFunctionConfiguration",
                        &self.function,
                        "the restore is still in progress after the wait",
                    ))
                }
                Some(_) => tokio::time::sleep(self.poll.interval).await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_expires_after_the_functions_timeout() {
        let marker = "[s3sweep-memory-sweep req-1 1000000]";
        assert!(!marker_expired(marker, Some(900), 1_000_000 + 900_000));
        assert!(marker_expired(
            marker,
            Some(900),
            1_000_000 + 900_000 + MARKER_SLACK_MS + 1
        ));
        assert!(marker_expired(
            marker,
            Some(60),
            1_000_000 + 60_000 + MARKER_SLACK_MS + 1
        ));
        assert!(!marker_expired(
            "[s3sweep-memory-sweep req-1 later]",
            Some(60),
            u64::MAX
        ));
        let (m, rest) = split_marker("the user's [s3sweep-memory-sweep req-1 5] tail").unwrap();
        assert_eq!(
            (m.as_str(), rest.as_str()),
            ("[s3sweep-memory-sweep req-1 5]", "the user's tail")
        );
        assert_eq!(split_marker("[s3sweep-memory-sweep r 5]").unwrap().1, "");
    }
}
