"""The baseline function: the original kind of reader, for `s3sweep compare`.

A Lambda handler (`handler(event, context)`) that reads the same objects as s3sweep
with boto3 and a ThreadPoolExecutor, the client of the measurement that started the
project (docs/background.md): one boto3 client per invocation, `max_pool_connections`
= the event's `pool_connections` (the pool size), one configuration per bucket x
worker count x repetition, every body read to the end. It takes s3sweep's event
(docs/usage.md) and answers with an `s3sweep.result/v1` document holding the fields
it can measure; the row fields it cannot are listed in the document's `not_measured`
and left at zero. `timeouts_ms.connect` and `first_byte` are botocore's connect and
read timeouts; `attempt` is accepted but not enforced (botocore has no limit per
attempt); the shuffle is Python's `random.Random(seed)`, not s3sweep's order.

Settings from the environment (the template sets them; the tests point them at the lab):
- S3SWEEP_ENDPOINT_URL: an S3 endpoint instead of AWS's (the lab); path-style.
- AWS_CA_BUNDLE: CA certificates to trust (botocore reads it itself).
- S3SWEEP_NETWORK_PATH (`default` or `vpc`), S3SWEEP_SUBNET_ZONE_IDS (comma list):
  how the function was deployed, recorded as `environment.lambda.deployment`.
- S3SWEEP_SAFETY_MARGIN_MS: no configuration starts with less than this left
  before the deadline (default 5,000).
"""

import json
import os
import platform
import random
import resource
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    IncompleteReadError,
    ReadTimeoutError,
    ResponseStreamingError,
)

SCHEMA = "s3sweep.result/v1"
_COLD = [True]  # the first invocation of this execution environment
VERSION = "1"
# The row fields this client cannot measure (left at zero in every row).
NOT_MEASURED = [
    "ttfb_ms",  # boto3 returns after the headers, but its clock would include signing and the pool wait
    "pool_wait_ms",  # urllib3 does not report the wait for a pooled connection
    "connect_ms_total",
    "retries_by_cause",
    "throttled_responses",  # retried attempts are not visible, only their count
]
DEFAULTS = {
    "key_template": "test/{i}/vectors",
    "object_count": 1000,
    "workers": [1, 2, 4, 8, 16, 17, 18, 19, 20],
    "pool_connections": 20,
    "repetitions": 1,
    "warmup": True,
    "shuffle": True,
    "seed": 1,
    "timeouts_ms": {"connect": 3000, "first_byte": 10000, "attempt": 30000},
    "max_attempts": 1,
}
# s3sweep's fields the baseline does not implement: refused by name.
S3SWEEP_ONLY = [
    "key_prefix", "allow_fewer_keys", "fanout", "from_coordinator", "prices",
    "target_wall_ms", "memory_mb", "order", "probe_bandwidth", "probe_key",
    "pool_idle_timeout_ms",
]
# A worker is a thread, and Lambda allows 1,024 threads per execution environment (the
# runtime's own among them): 1,000 workers leave it room.
LAMBDA_THREADS = 1024
MAX = {"buckets": 16, "object_count": 1_000_000, "workers": 1000, "pool_connections": 4096,
       "repetitions": 100, "max_attempts": 10, "timeout_ms": 900_000, "configurations": 1000}


class BadEvent(ValueError):
    """An event with bad fields; the message names every one."""


def _int_in(problems, name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append(f"{name}: {value!r} is not an integer from {low} to {high}")
        return False
    return True


def _check_buckets(problems, buckets):
    if not isinstance(buckets, list) or not 1 <= len(buckets) <= MAX["buckets"]:
        problems.append(f"buckets: must be a list of 1 to {MAX['buckets']} bucket names")
        return
    for n, b in enumerate(buckets):
        if not isinstance(b, str) or not 3 <= len(b) <= 63 or b != b.lower() or b[0] in ".-":
            problems.append(f"buckets[{n}]: {b!r} is not a bucket name")


def _check_timeouts(problems, t):
    if not isinstance(t, dict):
        problems.append("timeouts_ms: must be an object {connect, first_byte, attempt}")
        return
    for k, v in t.items():
        if k not in DEFAULTS["timeouts_ms"]:
            problems.append(f"timeouts_ms.{k}: unknown field (connect, first_byte, attempt)")
        else:
            _int_in(problems, f"timeouts_ms.{k}", v, 1, MAX["timeout_ms"])


def validate(event):
    """The event with defaults filled in, or BadEvent naming every bad field."""
    if not isinstance(event, dict):
        raise BadEvent("the event must be a JSON object")
    problems = []
    for k in event:
        if k in S3SWEEP_ONLY:
            problems.append(f"{k}: an s3sweep field the baseline does not implement")
        elif k != "buckets" and k not in DEFAULTS:
            problems.append(f"{k}: unknown field")
    if "buckets" not in event:
        problems.append("buckets: required")
    else:
        _check_buckets(problems, event["buckets"])
    req = {k: event.get(k, v) for k, v in DEFAULTS.items()}
    req["timeouts_ms"] = {**DEFAULTS["timeouts_ms"], **(event.get("timeouts_ms") or {})} \
        if isinstance(event.get("timeouts_ms", {}), dict) else event["timeouts_ms"]
    if not isinstance(req["key_template"], str) or "{i}" not in req["key_template"]:
        problems.append(f"key_template: {req['key_template']!r} must be a string containing {{i}}")
    _int_in(problems, "object_count", req["object_count"], 1, MAX["object_count"])
    workers = req["workers"]
    if not isinstance(workers, list) or not workers:
        problems.append("workers: must be a non-empty list of integers")
    else:
        for n, w in enumerate(workers):
            if not _int_in(problems, f"workers[{n}]", w, 1, MAX["workers"]) and isinstance(w, int) \
                    and w > MAX["workers"]:
                problems[-1] += f" (a thread each: Lambda allows {LAMBDA_THREADS:,} threads, the runtime's included)"
    _int_in(problems, "pool_connections", req["pool_connections"], 1, MAX["pool_connections"])
    _int_in(problems, "repetitions", req["repetitions"], 1, MAX["repetitions"])
    _int_in(problems, "max_attempts", req["max_attempts"], 1, MAX["max_attempts"])
    _int_in(problems, "seed", req["seed"], 0, 2**64 - 1)
    for k in ("warmup", "shuffle"):
        if not isinstance(req[k], bool):
            problems.append(f"{k}: {req[k]!r} is not true or false")
    _check_timeouts(problems, req["timeouts_ms"])
    if not problems:
        configs = len(event["buckets"]) * len(workers) * req["repetitions"]
        if configs > MAX["configurations"]:
            problems.append(f"buckets x workers x repetitions: {configs} configurations, at most {MAX['configurations']}")
    if problems:
        raise BadEvent("invalid event: " + "; ".join(problems))
    return {"buckets": list(event["buckets"]), **req}


def error_kind(exc):
    """s3sweep's ErrorKind name (src/model/errors.rs) of a failed GET."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if code in ("ExpiredToken", "InvalidToken"):
            return "session"
        if code in ("NoSuchKey", "NoSuchBucket") or status == 404:
            return "not_found"
        if code in ("SlowDown", "Throttling", "TooManyRequests") or status in (429, 503):
            return "throttled"
        if status == 403:
            return "access_denied"
        if 500 <= status <= 599:
            return "server_error"
        return "other"
    if isinstance(exc, (ConnectTimeoutError, ReadTimeoutError)):
        return "timeout"
    if isinstance(exc, (EndpointConnectionError, ConnectionClosedError, ResponseStreamingError,
                        IncompleteReadError, ConnectionError)):
        return "connection"
    return "other"


def cpu_seconds():
    """This process's CPU time, user + system, every thread (its own process clock)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Reader:
    """One boto3 client and the counters read around each configuration."""

    def __init__(self, req):
        endpoint = os.environ.get("S3SWEEP_ENDPOINT_URL") or None
        t = req["timeouts_ms"]
        self.endpoint = endpoint
        self.pool = req["pool_connections"]
        self.client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
            config=Config(
                max_pool_connections=self.pool,
                connect_timeout=t["connect"] / 1000,
                read_timeout=t["first_byte"] / 1000,
                s3={"addressing_style": "path"} if endpoint else None,
                retries={"total_max_attempts": req["max_attempts"], "mode": "standard"},
            ),
        )
        self.sessions = 0
        events = self.client.meta.events
        events.register("provide-client-params.s3.CreateSession", self._read_only_session)
        events.register("before-call.s3.CreateSession", self._count_session)

    @staticmethod
    def _read_only_session(params, **_):
        # botocore asks for ReadWrite sessions; the role allows ReadOnly ones only.
        params.setdefault("SessionMode", "ReadOnly")

    def _count_session(self, **_):
        self.sessions += 1

    def connections(self):
        """Connections urllib3's pools have opened so far, or None when it cannot tell."""
        try:
            manager = self.client._endpoint.http_session._manager
            return sum(manager.pools[k].num_connections for k in manager.pools.keys())
        except (AttributeError, KeyError, TypeError):
            return None

    def get(self, bucket, key):
        """(bytes or None, seconds to the last byte, retries, error kind, message)."""
        t0 = time.perf_counter()
        try:
            resp = self.client.get_object(Bucket=bucket, Key=key)
            n = 0
            for chunk in iter(lambda: resp["Body"].read(65536), b""):
                n += len(chunk)
            retries = resp.get("ResponseMetadata", {}).get("RetryAttempts", 0)
            return n, time.perf_counter() - t0, retries, None, None
        except (ClientError, botocore.exceptions.BotoCoreError, OSError) as e:  # a failed GET is data
            retries = getattr(e, "response", {}).get("ResponseMetadata", {}).get("RetryAttempts", 0)
            return None, time.perf_counter() - t0, retries, error_kind(e), f"GET {key}: {e}"[:300]


def percentiles(seconds):
    """s3sweep's Percentiles block, ms (nearest rank)."""
    if not seconds:
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0, "mean": 0.0, "count": 0}
    ms = sorted(s * 1000 for s in seconds)
    rank = lambda q: ms[min(len(ms) - 1, max(0, int(q * len(ms) + 0.999999) - 1))]
    r3 = lambda x: round(x, 3)
    return {"p50": r3(rank(0.5)), "p90": r3(rank(0.9)), "p99": r3(rank(0.99)), "max": r3(ms[-1]),
            "mean": r3(sum(ms) / len(ms)), "count": len(ms)}


def run_config(reader, bucket, keys, workers, req):
    """One configuration: an untimed warm-up, then every key once; its row's figures."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        if req["warmup"]:
            list(pool.map(lambda k: reader.get(bucket, k), keys[: min(workers, reader.pool, len(keys))]))
        conn0, sess0 = reader.connections(), reader.sessions
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        done = list(pool.map(lambda k: reader.get(bucket, k), keys))
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        conn1 = reader.connections()
    errors = {"total": 0, **{k: 0 for k in ERROR_KINDS}}
    samples = []
    for size, _, _, kind, message in done:
        if kind:
            errors["total"] += 1
            errors[kind] += 1
            if message not in samples and len(samples) < 3:
                samples.append(message)
    ok = [d for d in done if d[0] is not None]
    opened = conn1 - conn0 if conn0 is not None and conn1 is not None else 0
    nbytes = sum(d[0] for d in ok)
    wall_ms = wall * 1000
    zero = percentiles([])
    row = {
        "bucket": bucket, "workers": workers, "repetition": 0, "pool_connections": reader.pool,
        "requests": len(done), "ok": len(ok), "errors": errors, "retries": sum(d[2] for d in done),
        "bytes": nbytes, "wall_ms": round(wall_ms, 3),
        "objects_per_s": round(len(ok) / wall, 3), "mib_per_s": round(nbytes / 1048576 / wall, 3),
        "ttfb_ms": zero, "ttlb_ms": percentiles([d[1] for d in ok]), "pool_wait_ms": zero,
        "cpu_ms": round(cpu * 1000, 3), "cpu_ms_per_get": float(f"{cpu * 1000 / len(done):.4g}"),
        "connections_opened": opened, "connect_ms_total": 0.0,
        "session_requests": reader.sessions - sess0,
        "tls_handshakes": opened if (reader.endpoint or "https:").startswith("https:") else 0,
    }
    if samples:
        row["error_samples"] = samples
    return row


ERROR_KINDS = ["not_found", "access_denied", "throttled", "server_error", "timeout", "connection", "session", "other"]


def summary(rows, bucket):
    """s3sweep's BucketSummary of one bucket: best and one-worker median walls, the knee."""
    mine = [r for r in rows if r["bucket"] == bucket]
    by_w = {}
    for r in mine:
        by_w.setdefault(r["workers"], []).append(r)
    med = {w: statistics.median(r["wall_ms"] for r in rs) for w, rs in by_w.items()}
    rate = {w: statistics.median(r["objects_per_s"] for r in rs) for w, rs in by_w.items()}
    best = min(med, key=lambda w: (med[w], w))
    one = med.get(1)
    knee = min((w for w in rate if rate[w] >= 0.9 * max(rate.values())), default=None)
    return {
        "bucket": bucket, "best_workers": best, "best_wall_ms": round(med[best], 3),
        "best_objects_per_s": round(rate[best], 3), "one_worker_wall_ms": None if one is None else round(one, 3),
        "speedup_over_one_worker": None if one is None else float(f"{one / med[best]:.4g}"),
        "errors_total": sum(r["errors"]["total"] for r in mine), "knee_workers": knee,
    }


def deployment():
    """The network path the template deployed the function with, when it said."""
    path = os.environ.get("S3SWEEP_NETWORK_PATH")
    if not path:
        return None
    zones = [z.strip() for z in os.environ.get("S3SWEEP_SUBNET_ZONE_IDS", "").split(",") if z.strip()]
    d = {"network_path": path}
    if zones:
        d["subnet_zone_ids"] = zones
    return d


def environment(req, context):
    """s3sweep's Environment block; `lambda` when run by Lambda."""
    in_lambda = bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))
    endpoint = os.environ.get("S3SWEEP_ENDPOINT_URL") or None
    env = {
        "runner": "lambda" if in_lambda else ("local" if endpoint else "cli"),
        "os": sys.platform, "arch": platform.machine(), "vcpus": os.cpu_count() or 1,
        # The pool's threads ran the requests (one at a time under the GIL).
        "runtime_worker_threads": max(req["workers"]),
        "memory_total_bytes": None,
        "region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        "endpoint": endpoint, "credentials": "chain",
    }
    if in_lambda:
        mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        env["lambda"] = {
            "function_name": os.environ.get("AWS_LAMBDA_FUNCTION_NAME"),
            "function_version": os.environ.get("AWS_LAMBDA_FUNCTION_VERSION"),
            "memory_size_mb": int(mb) if mb else None,
            "cold_start": _COLD[0], "architecture": "arm64" if platform.machine() == "aarch64" else "x86_64",
            "region": os.environ.get("AWS_REGION"),
            "request_id": getattr(context, "aws_request_id", None),
            "remaining_ms_at_start": remaining_ms(context), "safety_margin_ms": margin_ms(),
            "deployment": deployment(),
        }
    return env


def remaining_ms(context):
    f = getattr(context, "get_remaining_time_in_millis", None)
    return f() if f else None


def margin_ms():
    return int(os.environ.get("S3SWEEP_SAFETY_MARGIN_MS", "5000"))


def sweep(req, context=None):
    """Every configuration in s3sweep's ascending order (bucket, workers, repetition)."""
    started_unix_ms, t0 = int(time.time() * 1000), time.perf_counter()
    reader = Reader(req)
    keys = [req["key_template"].replace("{i}", str(i)) for i in range(req["object_count"])]
    rows, skipped, last_ms = [], [], 0.0
    for bucket in req["buckets"]:
        order = list(keys)
        if req["shuffle"]:
            random.Random(req["seed"]).shuffle(order)
        for w in req["workers"]:
            for rep in range(1, req["repetitions"] + 1):
                left = remaining_ms(context)
                if left is not None and left < margin_ms() + 2 * last_ms:
                    skipped.append({"bucket": bucket, "workers": w, "repetition": rep,
                                    "reason": f"deadline: {left} ms left, the last configuration took {last_ms:.0f} ms"})
                    continue
                row = run_config(reader, bucket, order, w, req)
                row["repetition"], row["run_index"] = rep, len(rows)
                last_ms = row["wall_ms"]
                rows.append(row)
    return {
        "schema": SCHEMA,
        "tool": {"name": "s3sweep-baseline", "version": VERSION,
                 "client": f"boto3 {boto3.__version__} (botocore {botocore.__version__}, Python {platform.python_version()}), ThreadPoolExecutor"},
        "environment": environment(req, context),
        "request": req, "started_unix_ms": started_unix_ms,
        "total_wall_ms": round((time.perf_counter() - t0) * 1000, 3),
        "results": rows, "summary": [summary(rows, b) for b in req["buckets"] if any(r["bucket"] == b for r in rows)],
        "truncated": bool(skipped), "skipped": skipped,
        "not_measured": NOT_MEASURED + ([] if reader.connections() is not None else ["connections_opened", "tls_handshakes"]),
    }


def handler(event, context):
    """The Lambda entry point: a bad event raises BadEvent (the invoke's FunctionError)."""
    req = validate(event)
    try:
        return sweep(req, context)
    finally:
        _COLD[0] = False


if __name__ == "__main__":
    # `python handler.py < event.json`: the handler outside Lambda, the result on stdout.
    try:
        print(json.dumps(handler(json.load(sys.stdin), None)))
    except BadEvent as e:
        print(e, file=sys.stderr)
        sys.exit(2)
