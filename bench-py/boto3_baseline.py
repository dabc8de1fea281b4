"""The Python thread-pool client of the measurement in CONTEXT.md, for side-by-side
benchmarks: boto3, one client shared by a ThreadPoolExecutor, `max_pool_connections`
as given, every body read to the end. Over HTTPS it trusts `--ca-file` (boto3's
`verify=`); a directory bucket (NAME--ZONE--x-s3) is read through botocore's own S3
Express sessions (CreateSession, then requests signed with the session).

Prints one JSON document on stdout: {"client": ..., "results": [{workers, repetition,
wall_ms, ok, errors, bytes, cpu_ms, cpu_ms_per_get}, ...]}. CPU is this process's
user+system time during each configuration (resource.getrusage), so it is comparable
with s3sweep's `cpu_ms_per_get`.
"""

import argparse
import json
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--endpoint", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--objects", type=int, default=1000)
    p.add_argument("--workers", default="1,2,4,8,16,17,18,19,20")
    p.add_argument("--pool", type=int, default=0, help="max_pool_connections (default: largest worker count)")
    p.add_argument("--key-template", default="test/{i}/vectors")
    p.add_argument("--repetitions", type=int, default=1)
    p.add_argument("--access-key", default="s3sweep")
    p.add_argument("--secret-key", default="s3sweep-local-secret")
    p.add_argument("--ca-file", help="CA certificate (PEM) to trust over HTTPS: boto3's verify=")
    args = p.parse_args()

    workers = [int(w) for w in args.workers.split(",")]
    pool = args.pool or max(workers)
    s3 = boto3.client(
        "s3",
        endpoint_url=args.endpoint,
        region_name="us-east-1",
        aws_access_key_id=args.access_key,
        aws_secret_access_key=args.secret_key,
        verify=args.ca_file if args.ca_file else None,
        config=Config(
            max_pool_connections=pool,
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1, "mode": "standard"},
        ),
    )
    keys = [args.key_template.replace("{i}", str(i)) for i in range(args.objects)]

    def get(key):
        try:
            body = s3.get_object(Bucket=args.bucket, Key=key)["Body"]
            n = 0
            while True:
                chunk = body.read(65536)
                if not chunk:
                    return n
                n += len(chunk)
        except Exception as e:  # a failed request is data, not a crash
            print(f"GET {key}: {e}", file=sys.stderr)
            return -1

    results = []
    for w in workers:
        for rep in range(1, args.repetitions + 1):
            with ThreadPoolExecutor(max_workers=w) as ex:
                # Warm-up, untimed: opens min(w, pool) connections, as s3sweep's does.
                list(ex.map(get, keys[: min(w, pool, len(keys))]))
                cpu0 = cpu_seconds()
                t0 = time.perf_counter()
                sizes = list(ex.map(get, keys))
                wall = time.perf_counter() - t0
                cpu = cpu_seconds() - cpu0
            ok = sum(1 for s in sizes if s >= 0)
            results.append(
                {
                    "workers": w,
                    "repetition": rep,
                    "wall_ms": round(wall * 1000, 3),
                    "ok": ok,
                    "errors": len(keys) - ok,
                    "bytes": sum(s for s in sizes if s > 0),
                    "cpu_ms": round(cpu * 1000, 3),
                    "cpu_ms_per_get": round(cpu * 1000 / len(keys), 4),
                }
            )
            print(f"  boto3 {args.bucket} workers {w} rep {rep}: {wall * 1000:.0f} ms", file=sys.stderr)
    print(json.dumps({"client": "boto3 " + boto3.__version__, "results": results}))


if __name__ == "__main__":
    main()
