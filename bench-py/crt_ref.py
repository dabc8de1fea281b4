"""The CRT reference of `make bench MODE=clients` (bench-py/clients.py): awscrt's S3
client (aws-c-s3, pinned in bench-py/requirements.txt) reading the bench's objects,
measured as examples/bare_sdk.rs measures the bare SDK: one client per in-flight count,
one untimed warm-up round (its connections open), then this process's CPU time
(getrusage: the CRT's event-loop threads and Python's callbacks) and wall time over the
timed round.

Each object is one GET_OBJECT meta request (path-style GET /BUCKET/KEY, SigV4-signed by
the CRT with the lab's keys); at most --workers are outstanding (a semaphore released in
on_done), and the client's connections are capped at the same number
(max_active_connections_override; left alone, the CRT sizes them from a throughput
target: Gbps / 0.4, at least 10). Bodies are counted in on_body and dropped. The CRT
reaches the endpoint's port through the Host header. Over HTTPS it trusts only
--ca-file.

Prints one JSON document on stdout, shaped like bare_sdk's: {"client": ..., "results":
[{workers, wall_ms, ok, errors, errors_by_kind, bytes, cpu_ms, cpu_ms_per_get}, ...]}.
"""

import argparse
import json
import resource
import sys
import threading
import time
from urllib.parse import urlsplit

from awscrt import io as crt_io
from awscrt.auth import AwsCredentialsProvider
from awscrt.http import HttpHeaders, HttpRequest
from awscrt.s3 import S3Client, S3RequestTlsMode, S3RequestType, create_default_s3_signing_config


def cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def make_client(args, workers, bootstrap):
    """A CRT S3 client for the endpoint, its connections capped at `workers`."""
    creds = AwsCredentialsProvider.new_static("s3sweep", "s3sweep-local-secret")
    signing = create_default_s3_signing_config(region="us-east-1", credential_provider=creds)
    tls = {"tls_mode": S3RequestTlsMode.DISABLED}
    if urlsplit(args.endpoint).scheme == "https":
        opts = crt_io.TlsContextOptions()
        if args.ca_file:
            opts.override_default_trust_store_from_path(None, args.ca_file)
        tls = {"tls_mode": S3RequestTlsMode.ENABLED,
               "tls_connection_options": crt_io.ClientTlsContext(opts).new_connection_options()}
    return S3Client(bootstrap=bootstrap, region="us-east-1", signing_config=signing,
                    max_active_connections_override=workers, **tls)


def one_round(client, args, keys, workers):
    """GETs the keys, at most `workers` outstanding: (ok, errors by kind, bytes)."""
    host = urlsplit(args.endpoint).netloc
    slots = threading.Semaphore(workers)
    lock = threading.Lock()
    tally = {"ok": 0, "bytes": 0, "errors": {}}
    requests = []

    def on_done(error=None, status_code=None, **_):
        with lock:
            if error is None and status_code is not None and status_code < 300:
                tally["ok"] += 1
            else:
                kind = f"HTTP {status_code}" if status_code else type(error).__name__ if error else "unknown"
                if not tally["errors"]:
                    print(f"crt_ref: first error: {error} (status {status_code})", file=sys.stderr)
                tally["errors"][kind] = tally["errors"].get(kind, 0) + 1
        slots.release()

    def on_body(chunk, **_):
        with lock:
            tally["bytes"] += len(chunk)

    for key in keys:
        slots.acquire()
        request = HttpRequest("GET", f"/{args.bucket}/{key}", HttpHeaders([("host", host)]))
        requests.append(client.make_request(type=S3RequestType.GET_OBJECT, request=request,
                                            on_body=on_body, on_done=on_done))
    for r in requests:
        r.finished_future.result()
    return tally["ok"], tally["errors"], tally["bytes"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--endpoint", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--objects", type=int, default=1000)
    p.add_argument("--workers", default="16,64,256")
    p.add_argument("--ca-file")
    p.add_argument("--key-template", default="test/{i}/vectors")
    args = p.parse_args()
    workers_list = [int(w) for w in args.workers.split(",")]
    keys = [args.key_template.replace("{i}", str(i)) for i in range(args.objects)]
    elg = crt_io.EventLoopGroup()
    bootstrap = crt_io.ClientBootstrap(elg, crt_io.DefaultHostResolver(elg))
    results = []
    for workers in workers_list:
        client = make_client(args, workers, bootstrap)
        one_round(client, args, keys[:min(workers, len(keys))], workers)
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        ok, errors, nbytes = one_round(client, args, keys, workers)
        wall, cpu_ms = time.perf_counter() - t0, (cpu_seconds() - cpu0) * 1000
        failed = sum(errors.values())
        gets = max(ok + failed, 1)
        print(f"  crt workers {workers}: {wall * 1000:.0f} ms, {cpu_ms / gets:.4f} ms CPU/GET, {ok} ok, "
              f"{failed} failed", file=sys.stderr)
        results.append({"workers": workers, "wall_ms": round(wall * 1000, 3), "ok": ok, "errors": failed,
                        "errors_by_kind": errors, "bytes": nbytes, "cpu_ms": round(cpu_ms, 3),
                        "cpu_ms_per_get": round(cpu_ms / gets, 4)})
        del client
    print(json.dumps({"client": "awscrt S3Client (aws-c-s3), from Python", "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
