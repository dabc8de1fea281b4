//! The function's event: a sweep request validated into a plan, plus the limits only
//! the function has (its response size, its file descriptors, `FanoutMax`).

use crate::plan::json::EventJson;
use crate::plan::{FieldProblem, Plan, RequestError};

use super::settings::FanoutSettings;

/// The event as a plan, with the one limit only the Lambda has: its response size.
pub fn validate_event(payload: impl Into<EventJson>) -> Result<Plan, RequestError> {
    validate_event_with(payload, &FanoutSettings::default())
}

/// [`validate_event`] with the function's fan-out settings: `fanout.invocations` is
/// capped by `FanoutMax`. Duplicate keys (seen when the runtime parsed the event into
/// an [`EventJson`]) and the configurations of one run
/// ([`crate::plan::MAX_CONFIGURATIONS`], as on every entry point) are checked by the
/// plan.
pub fn validate_event_with(payload: impl Into<EventJson>, fanout: &FanoutSettings) -> Result<Plan, RequestError> {
    let plan = Plan::from_event(payload.into())?;
    // Children's rows are kept in the answer only while it fits in 6 MB
    // (`response::fit`); the merged rows are bounded by the configurations cap.
    let problems: Vec<FieldProblem> = fanout.check(&plan).into_iter().collect();
    if !problems.is_empty() {
        return Err(RequestError::new(problems));
    }
    // Lambda allows 1,024 file descriptors: a pool that needs more is a bad event, not
    // a run that fails half-way with EMFILE.
    if let Err(err) = plan.check_fd_budget(false) {
        return Err(RequestError {
            problems: vec![FieldProblem {
                field: "pool_connections".into(),
                message: err.to_string(),
            }],
        });
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lambda_refuses_results_larger_than_its_response_limit() {
        let workers: Vec<u32> = (1..=50).collect();
        let err = validate_event(serde_json::json!({
            "buckets": ["a-bucket", "b-bucket"],
            "object_count": 10,
            "workers": workers,
            "repetitions": 11,
        }))
        .unwrap_err();
        assert_eq!(err.fields(), vec!["repetitions"]);
        assert!(err.to_string().contains("1100 configurations"), "{err}");
        let workers: Vec<u32> = (1..=50).collect();
        assert!(validate_event(serde_json::json!({
            "buckets": ["a-bucket", "b-bucket"],
            "object_count": 10,
            "workers": workers,
            "repetitions": 10,
        }))
        .is_ok());
    }

    #[test]
    fn a_pool_beyond_the_descriptor_limit_is_an_invalid_event() {
        let buckets: Vec<String> = (0..16).map(|i| format!("bucket-{i:02}")).collect();
        let event =
            serde_json::json!({"buckets": buckets, "object_count": 1, "workers": [1], "pool_connections": 4096});
        let (needed, _) = crate::sys::limits::fds_needed(4096, 16, false);
        match validate_event(event) {
            Err(err) => {
                assert!(needed > crate::sys::limits::nofile().soft, "{err}");
                assert_eq!(err.fields(), vec!["pool_connections"]);
                assert!(err.to_string().contains("file descriptors"), "{err}");
            }
            Ok(_) => assert!(
                needed <= crate::sys::limits::nofile().soft,
                "a pool needing {needed} fds was accepted"
            ),
        }
    }
}
