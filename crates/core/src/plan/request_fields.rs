//! Every top-level field of a request, defined once: its name (the [`SweepRequest`]
//! field of that name), what its value must be and how it is read. The reader and the
//! list of fields users are shown ([`REQUEST_FIELDS`]) are made from this one table
//! (the `run`/`local` flag of a field is the clap flag of the same name:
//! `cli::sweep_args`); the compiler refuses a [`SweepRequest`] field missing from it, and
//! tests/it/doc_examples.rs checks docs/usage.md's request table against it. Defaults
//! live in one place, `impl Default for SweepRequest`.

use serde_json::Value;

use crate::model::request::{SweepRequest, FROM_COORDINATOR_FIELD};

use super::fields::Section;
use serde_json::Map;

use super::sections::{both_key_sources, typed_fanout, typed_from_coordinator, typed_prices, typed_timeouts};
use super::FieldProblem;

/// Reads one field into `request` by the way its table row says.
macro_rules! read_field {
    ($s:ident, $r:ident, $field:ident, take($expected:expr)) => {
        $s.take(stringify!($field), $expected, &mut $r.$field)
    };
    ($s:ident, $r:ident, $field:ident, require($expected:expr, $missing:expr)) => {
        $s.require(stringify!($field), $expected, $missing, &mut $r.$field)
    };
    ($s:ident, $r:ident, $field:ident, section($read:expr)) => {
        if let Some(v) = $s.raw(stringify!($field)) {
            $r.$field = ($read)(v, $s.problems());
        }
    };
}

/// The table: one row per field, `name: how(...);`, in the order the
/// docs list them (and problems are reported in).
macro_rules! request_fields {
    ($($field:ident: $how:ident($($arg:expr),*);)*) => {
        /// The request's top-level fields, in the order docs/usage.md's request table
        /// lists them: the known fields an unknown one is answered with.
        pub const REQUEST_FIELDS: &[&str] = &[$(stringify!($field)),*];

        /// Reads every field of the request's own section into `request`.
        fn read_fields(s: &mut Section<'_>, request: &mut SweepRequest) {
            $(read_field!(s, request, $field, $how($($arg),*));)*
        }

        /// Never called: does not compile when a [`SweepRequest`] field has no row
        /// (the envelope, [`crate::model::request::FROM_COORDINATOR_FIELD`], is no
        /// request field: the coordinator writes it).
        #[allow(dead_code)]
        fn every_field_has_a_row(request: SweepRequest) {
            let SweepRequest { from_coordinator: _, $($field: _),* } = request;
        }
    };
}

request_fields! {
    buckets: require("a list of bucket names", "the list of buckets to sweep");
    key_template: take("a string");
    key_prefix: take("a string");
    allow_fewer_keys: take("true or false");
    object_count: take("a whole number");
    workers: take("a list of whole numbers");
    pool_connections: take("a whole number");
    repetitions: take("a whole number");
    warmup: take("true or false");
    shuffle: take("true or false");
    seed: take("a whole number");
    fanout: section(typed_fanout);
    timeouts_ms: section(typed_timeouts);
    max_attempts: take("a whole number");
    prices: section(typed_prices);
    target_wall_ms: take("a whole number of milliseconds");
    memory_mb: take("a list of whole numbers of MB");
    order: take("\"ascending\" or \"interleaved\"");
    probe_bandwidth: take("true or false");
    probe_key: take("an object key");
    pool_idle_timeout_ms: take("a whole number of milliseconds");
    results_uri: take("an S3 URI like \"s3://my-bucket/prefix\"");
    requests_log_uri: take("an S3 URI like \"s3://my-bucket/prefix\"");
    object_sizes_bytes: take("a list of whole numbers of bytes");
    clients: take("a list of client names: \"sdk\", \"lean\"");
    hedge: take("a list of hedge policies: \"off\", \"pNN\", {\"after_ms\": N}");
    max_hedge_percent: take("a whole number of percent");
    run_id: take("a string of 1 to 64 letters, digits, '.', '_' or '-'");
    results_by_date: take("true or false");
    results_html: take("true or false");
    expect_memory_mb: take("a whole number of MB");
    metrics_namespace: take("a CloudWatch namespace like \"s3sweep\"");
}

/// Reads the request's own section (`map` less the coordinator's envelope) into
/// `request`, every field by its row; a field no row reads is a problem when the
/// section closes ([`Section`]'s finish).
pub fn read_request(map: serde_json::Map<String, Value>, request: &mut SweepRequest, problems: &mut Vec<FieldProblem>) {
    if let Some(mut s) = Section::open("", Value::Object(map), REQUEST_FIELDS, "{}", problems) {
        read_fields(&mut s, request);
    }
}

/// Field by field typing, so one pass reports every wrong type and unknown field.
/// The coordinator's envelope is taken out first: it is not one of the fields a user
/// is shown.
pub fn typed_request(mut map: Map<String, Value>, problems: &mut Vec<FieldProblem>) -> SweepRequest {
    let mut request = SweepRequest::new(Vec::new());
    if let Some(v) = map.remove(FROM_COORDINATOR_FIELD) {
        request.from_coordinator = typed_from_coordinator(v, problems);
    }
    if map.contains_key("key_template") && map.contains_key("key_prefix") {
        problems.push(both_key_sources());
    }
    read_request(map, &mut request, problems);
    request
}
