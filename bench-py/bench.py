"""`make bench`: s3sweep, the bare aws-sdk-s3 client (examples/bare_sdk.rs: the SDK's
default HTTPS client, GETs in a `buffer_unordered` loop, nothing recorded) and the
boto3 thread-pool baseline, side by side in one run, against the same embedded servers: one over HTTP and one over HTTPS (a CA made at
start, which both clients trust: s3sweep through --ca-file, boto3 through verify=). Each
has buckets with the `none`, `express` and `standard` latency profiles; the `express`
one is a directory bucket (NAME--ZONE--x-s3), so both clients read it through S3
Express sessions (CreateSession, then requests signed with the session). Same keys and
worker counts for both clients.

Prints a markdown table per scheme (wall ms, objects/s, client CPU per GET, ratios) and
checks the performance targets of issues 5, 14 and 17, each as PASS or MISS with its
figures: client CPU per GET at 64 in flight at most 0.10 ms over HTTP and 0.13 ms over
HTTPS, the express-like directory bucket's best wall time at least 12x better than
boto3's best, s3sweep's CPU per GET and wall time at most 1.1x the bare SDK's at 16-256
in flight (`none`, medians of --rounds rounds run alternately), and the targets of
issue 5 (wall time near the ideal, peak RSS). `--transports` adds a table of the bare
SDK on each HTTP client (the SDK's default, its 1.5 connection pool, s3sweep's
transport): the measurement behind the transport choice in docs/client.md.
Both clients run as child processes of this script, so each one's CPU time and peak
RSS are its own (os.wait4); each server's CPU per GET is read from /proc.
Standard library only; the baseline runs in the virtualenv `make bench-venv` creates.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Client CPU per GET at 64 in flight, `none` profile, by scheme (issue 14).
CPU_TARGET_MS = {"http": 0.10, "https": 0.13}
# The express-like directory bucket's best wall time against boto3's best (issue 14).
EXPRESS_SPEEDUP_TARGET = 12.0
# s3sweep against the bare SDK, CPU per GET and wall time, at these worker counts (issue 17).
BARE_RATIO_TARGET = 1.1
BARE_RATIO_WORKERS = (16, 64, 256)
# The HTTP clients the bare SDK can run on (--transports).
TRANSPORTS = ("smithy", "smithy-pool", "s3sweep")


def middle(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def bucket_of(profile):
    """The bench bucket of a profile; the express-like one is a directory bucket."""
    return "bench-express--lab1-az1--x-s3" if profile == "express" else f"bench-{profile}"


def cpu_of(pid):
    """User+system seconds of a running process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rfind(")") + 2 :].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def child_env():
    """The environment of the clients: the CA is always given explicitly."""
    env = dict(os.environ)
    env.pop("AWS_CA_BUNDLE", None)
    return env


def run_child(argv, stdout_path):
    """Runs argv, stdout to a file; returns (exit code, peak RSS bytes, cpu seconds, wall s)."""
    t0 = time.perf_counter()
    with open(stdout_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=sys.stderr, env=child_env())
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    return code, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime, wall


class Server:
    """`s3sweep serve` on a free port, HTTP or HTTPS; its endpoint and CA file."""

    def __init__(self, s3sweep, buckets, tls):
        argv = [s3sweep, "serve", "--port", "0"]
        if tls:
            argv.append("--tls")
        for b, p in buckets:
            argv += ["--bucket", f"{b}={p}"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
        line = self.proc.stdout.readline()
        self.endpoint = next(w for w in line.split() if w.startswith(("http://", "https://")))
        self.ca_file = None
        if tls:
            self.ca_file = self.proc.stdout.readline().strip().removeprefix("ca-file: ")

    def ca_args(self):
        return ["--ca-file", self.ca_file] if self.ca_file else []

    def cpu(self):
        return cpu_of(self.proc.pid)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def run_bare(args, server, bucket, workers, transport, tmp, tag):
    """The bare SDK client on one bucket: its JSON document."""
    out = os.path.join(tmp, f"{tag}-{bucket}.bare-{transport}.json")
    argv = [args.bare_sdk, "--endpoint", server.endpoint, "--bucket", bucket, "--objects", str(args.objects),
            "--workers", ",".join(map(str, workers)), "--transport", transport]
    if server.ca_file:
        argv += ["--ca-file", server.ca_file]
    code, _, _, _ = run_child(argv, out)
    if code != 0:
        sys.exit(f"bare SDK ({transport}) failed for {bucket}")
    return json.load(open(out))


def measure(args, server, scheme, profile, workers, tmp):
    """s3sweep then boto3 on one bucket: (rows, checks)."""
    bucket = bucket_of(profile)
    event = os.path.join(tmp, f"{scheme}-{bucket}.event.json")
    with open(event, "w") as f:
        json.dump({"buckets": [bucket], "object_count": args.objects, "workers": workers,
                   "pool_connections": max(workers)}, f)
    out = os.path.join(tmp, f"{scheme}-{bucket}.s3sweep.json")
    server_cpu0 = server.cpu()
    code, rss, _, _ = run_child([args.s3sweep, "run", "--event", event, "--endpoint", server.endpoint,
                                 "--no-preflight", "--quiet"] + server.ca_args(), out)
    server_cpu = server.cpu() - server_cpu0
    if code != 0:
        sys.exit(f"s3sweep run failed for {scheme} {bucket}")
    ours = json.load(open(out))
    gets = sum(r["requests"] for r in ours["results"])
    bare = None
    if args.bare_sdk and profile == "none":
        # Alternate rounds, so both clients see the same moments of a noisy machine;
        # the medians of CPU per GET and wall time per worker count are compared.
        rounds = {"s3sweep": [ours], "bare": []}
        for i in range(args.rounds):
            if i > 0:
                again = os.path.join(tmp, f"{scheme}-{bucket}.s3sweep.{i}.json")
                code, _, _, _ = run_child([args.s3sweep, "run", "--event", event, "--endpoint", server.endpoint,
                                           "--no-preflight", "--quiet"] + server.ca_args(), again)
                if code != 0:
                    sys.exit(f"s3sweep run failed for {scheme} {bucket}")
                rounds["s3sweep"].append(json.load(open(again)))
            rounds["bare"].append(run_bare(args, server, bucket, workers, "smithy", tmp, f"{scheme}.{i}"))
        bare = {}
        for w in workers:
            ours_w = [next(r for r in doc["results"] if r["workers"] == w) for doc in rounds["s3sweep"]]
            bare_w = [next(r for r in doc["results"] if r["workers"] == w) for doc in rounds["bare"]]
            # Each round's two runs are seconds apart; rounds can be minutes apart, and the
            # machine's speed drifts between them (a whole round 25% faster than the next
            # has been seen). So the ratio is the median of each round's own ratio.
            bare[w] = {
                "s3sweep_cpu": middle([r["cpu_ms_per_get"] for r in ours_w]),
                "s3sweep_wall": middle([r["wall_ms"] for r in ours_w]),
                "bare_cpu": middle([r["cpu_ms_per_get"] for r in bare_w]),
                "bare_wall": middle([r["wall_ms"] for r in bare_w]),
                "cpu_ratio": middle([o["cpu_ms_per_get"] / max(b["cpu_ms_per_get"], 1e-9) for o, b in zip(ours_w, bare_w)]),
                "wall_ratio": middle([o["wall_ms"] / max(b["wall_ms"], 1e-9) for o, b in zip(ours_w, bare_w)]),
                "bare_errors": sum(r["errors"] for r in bare_w),
            }
    base = None
    base_rss = None
    if not args.skip_baseline:
        bout = os.path.join(tmp, f"{scheme}-{bucket}.boto3.json")
        argv = [args.python, os.path.join(HERE, "boto3_baseline.py"), "--endpoint", server.endpoint,
                "--bucket", bucket, "--objects", str(args.objects), "--workers", ",".join(map(str, workers))]
        if server.ca_file:
            argv += ["--ca-file", server.ca_file]
        code, base_rss, _, _ = run_child(argv, bout)
        if code != 0:
            sys.exit(f"boto3 baseline failed for {scheme} {bucket}")
        base = {r["workers"]: r for r in json.load(open(bout))["results"]}
    rows = [(scheme, profile, r, base.get(r["workers"]) if base else None,
             bare.get(r["workers"]) if bare else None) for r in ours["results"]]
    checks = []
    if bare:
        for w in (w for w in BARE_RATIO_WORKERS if w in bare):
            m = bare[w]
            for what, ours_v, bare_v, ratio in (("CPU per GET", m["s3sweep_cpu"], m["bare_cpu"], m["cpu_ratio"]),
                                               ("wall time", m["s3sweep_wall"], m["bare_wall"], m["wall_ratio"])):
                checks.append((f"{scheme}: {what} within {BARE_RATIO_TARGET}x of the bare SDK at {w} in flight, none",
                               ratio <= BARE_RATIO_TARGET and m["bare_errors"] == 0,
                               f"{ours_v:.4g} vs {bare_v:.4g}, medians of {args.rounds} rounds; "
                               f"{ratio:.2f}x, the median of the rounds' own ratios"))
    one = next((r for r in ours["results"] if r["workers"] == 1), None)
    best = min(ours["results"], key=lambda r: r["wall_ms"])
    if profile == "none":
        at64 = next((r for r in ours["results"] if r["workers"] == 64), None)
        if at64:
            target = CPU_TARGET_MS[scheme]
            if bare and 64 in bare:
                # The median of the alternate rounds, not the first round alone.
                at64 = dict(at64, cpu_ms_per_get=bare[64]["s3sweep_cpu"])
            figures = f"{at64['cpu_ms_per_get']:.3f} ms (target <= {target:.2f} ms)"
            b64 = base.get(64) if base else None
            if b64:
                figures += f"; boto3 {b64['cpu_ms_per_get']:.3f} ms"
            checks.append((f"{scheme}: client CPU per GET at 64 in flight, none", at64["cpu_ms_per_get"] <= target,
                           figures))
    if profile in ("express", "standard") and one:
        median = one["ttfb_ms"]["p50"]
        limit = max(workers) if profile == "standard" else best["workers"]
        for r in ours["results"]:
            if r["workers"] > limit or (profile == "express" and r is not best):
                continue
            ideal = args.objects / r["workers"] * median
            checks.append((f"{scheme}: {profile}: wall within 1.25x of ideal at {r['workers']} workers",
                           r["wall_ms"] <= 1.25 * ideal,
                           f"{r['wall_ms']:.0f} ms vs ideal {ideal:.0f} ms = {args.objects}/{r['workers']} x "
                           f"{median:.2f} ms ({r['wall_ms'] / ideal:.2f}x)"))
    if profile == "express" and base:
        base_best = min(base.values(), key=lambda r: r["wall_ms"])
        ratio = base_best["wall_ms"] / best["wall_ms"]
        sessions = sum(r["session_requests"] + (r.get("warmup") or {}).get("session_requests", 0)
                       for r in ours["results"])
        checks.append((f"{scheme}: express-like directory bucket: best >= {EXPRESS_SPEEDUP_TARGET:.0f}x faster than "
                       f"boto3's best", ratio >= EXPRESS_SPEEDUP_TARGET,
                       f"{best['wall_ms']:.0f} ms at {best['workers']} vs boto3 {base_best['wall_ms']:.0f} ms "
                       f"at {base_best['workers']} workers ({ratio:.1f}x); s3sweep CreateSession calls {sessions}"))
    if max(workers) >= 256:
        checks.append((f"{scheme}: peak RSS of s3sweep run at {max(workers)} workers ({profile})", rss <= 64 << 20,
                       f"{rss / 2**20:.1f} MiB (target <= 64 MiB)"
                       + (f"; boto3 {base_rss / 2**20:.1f} MiB" if base_rss else "")))
    checks.append((f"{scheme}: server CPU per GET ({profile})", True,
                   f"{server_cpu * 1000 / max(gets, 1):.3f} ms over {gets} timed GETs (+ warm-up)"))
    return rows, checks


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--s3sweep", default=os.path.join(ROOT, "target", "release", "s3sweep"))
    p.add_argument("--python", default=sys.executable, help="interpreter with boto3 for the baseline")
    p.add_argument("--objects", type=int, default=1000)
    p.add_argument("--size", type=int, default=46080)
    p.add_argument("--workers", default="1,4,16,64,256")
    p.add_argument("--profiles", default="none,express,standard")
    p.add_argument("--schemes", default="http,https", help="http, https or both")
    p.add_argument("--many", type=int, default=100_000, help="objects of the memory-growth run (0: skip)")
    p.add_argument("--skip-baseline", action="store_true")
    p.add_argument("--bare-sdk", help="the bare-SDK baseline binary (examples/bare_sdk.rs)")
    p.add_argument("--rounds", type=int, default=3, help="alternate rounds of s3sweep and the bare SDK (none)")
    p.add_argument("--transports", action="store_true",
                   help="also the bare SDK on each HTTP client: smithy, smithy-pool, s3sweep")
    args = p.parse_args()

    workers = [int(w) for w in args.workers.split(",")]
    profiles = args.profiles.split(",")
    schemes = args.schemes.split(",")
    buckets = [(bucket_of(p), p) for p in profiles]
    if args.many:
        buckets.append(("bench-many", "none"))
    tmp = tempfile.mkdtemp(prefix="s3sweep-bench-")
    servers = {}
    rows = []
    checks = []
    transports = {}
    started = time.time()
    try:
        for scheme in schemes:
            servers[scheme] = Server(args.s3sweep, buckets, tls=scheme == "https")
            server = servers[scheme]
            print(f"embedded server {server.endpoint}" + (f" (CA {server.ca_file})" if server.ca_file else "")
                  + f"; objects {args.objects} x {args.size} B", file=sys.stderr)
            for b, _ in buckets:
                if b == "bench-many" and scheme != schemes[0]:
                    continue
                count, size = (args.many, 1024) if b == "bench-many" else (args.objects, args.size)
                subprocess.run(
                    [args.s3sweep, "seed", "--endpoint", server.endpoint, "--bucket", b, "--count", str(count),
                     "--size", str(size), "--concurrency", "128",
                     "--manifest", os.path.join(tmp, f"{scheme}-{b}.manifest.json")] + server.ca_args(),
                    check=True, env=child_env(),
                )
        for scheme in schemes:
            for profile in profiles:
                r, c = measure(args, servers[scheme], scheme, profile, workers, tmp)
                rows += r
                checks += c
        if args.transports and args.bare_sdk and "none" in profiles:
            for scheme in schemes:
                for i in range(args.rounds):
                    for t in TRANSPORTS:
                        doc = run_bare(args, servers[scheme], bucket_of("none"), workers, t, tmp, f"{scheme}.t{i}")
                        for r in doc["results"]:
                            by = transports.setdefault((scheme, r["workers"]), {x: {"cpu": [], "wall": []}
                                                                                for x in TRANSPORTS})
                            by[t]["cpu"].append(r["cpu_ms_per_get"])
                            by[t]["wall"].append(r["wall_ms"])
        if args.many:
            server = servers[schemes[0]]
            event = os.path.join(tmp, "many.event.json")
            with open(event, "w") as f:
                json.dump({"buckets": ["bench-many"], "object_count": args.many, "workers": [256],
                           "pool_connections": 256, "warmup": False}, f)
            out = os.path.join(tmp, "many.s3sweep.json")
            code, rss, _, _ = run_child([args.s3sweep, "run", "--event", event, "--endpoint", server.endpoint,
                                         "--no-preflight", "--quiet"] + server.ca_args(), out)
            many = json.load(open(out))["results"][0]
            checks.append((f"{schemes[0]}: peak RSS of a {args.many}-object sweep at 256 workers",
                           rss <= 64 << 20 and code == 0,
                           f"{rss / 2**20:.1f} MiB, {many['ok']} ok, {many['errors']['total']} errors, "
                           f"{many['wall_ms']:.0f} ms, {many['cpu_ms_per_get']:.3f} ms CPU/GET"))
    finally:
        for server in servers.values():
            server.stop()

    print(f"bench: {time.strftime('%Y-%m-%d %H:%M:%S')}, {time.time() - started:.0f} s, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} vCPUs")
    print()
    if any(bare for *_, bare in rows):
        print("s3sweep against the bare SDK (`none`; medians of the alternate rounds; each ratio is the "
              "median of the rounds' own ratios):")
        print()
        print("| scheme | workers | s3sweep wall ms | bare SDK wall ms | wall ratio | s3sweep CPU ms/GET "
              "| bare SDK CPU ms/GET | CPU ratio |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for scheme, profile, r, b, m in rows:
            if m:
                print(f"| {scheme} | {r['workers']} | {m['s3sweep_wall']:.0f} | {m['bare_wall']:.0f} "
                      f"| {m['wall_ratio']:.2f}x | {m['s3sweep_cpu']:.4f} "
                      f"| {m['bare_cpu']:.4f} | {m['cpu_ratio']:.2f}x |")
        print()
    if transports:
        print("The bare SDK on each HTTP client (`none`, CPU ms per GET / wall ms, medians of the rounds):")
        print()
        print("| scheme | workers | " + " | ".join(TRANSPORTS) + " |")
        print("|---|---:|" + "---:|" * len(TRANSPORTS))
        for (scheme, w), by in sorted(transports.items()):
            print(f"| {scheme} | {w} | " + " | ".join(
                f"{middle(by[t]['cpu']):.4f} / {middle(by[t]['wall']):.0f}" for t in TRANSPORTS) + " |")
        print()
    print("| scheme | profile | workers | s3sweep wall ms | boto3 wall ms | speedup | s3sweep objects/s "
          "| boto3 objects/s | s3sweep CPU ms/GET | boto3 CPU ms/GET | CPU ratio | s3sweep ttfb p50 ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for scheme, profile, r, b, _ in rows:
        bw = f"{b['wall_ms']:.0f}" if b else "-"
        sp = f"{b['wall_ms'] / r['wall_ms']:.1f}x" if b else "-"
        bo = f"{b['ok'] / (b['wall_ms'] / 1000):.0f}" if b else "-"
        bc = f"{b['cpu_ms_per_get']:.3f}" if b else "-"
        cr = f"{b['cpu_ms_per_get'] / max(r['cpu_ms_per_get'], 1e-6):.1f}x" if b else "-"
        print(f"| {scheme} | {profile} | {r['workers']} | {r['wall_ms']:.0f} | {bw} | {sp} | {r['objects_per_s']:.0f} "
              f"| {bo} | {r['cpu_ms_per_get']:.3f} | {bc} | {cr} | {r['ttfb_ms']['p50']:.2f} |")
    print()
    print("| target | result | figures |")
    print("|---|---|---|")
    for name, ok, figures in checks:
        print(f"| {name} | {'PASS' if ok else 'MISS'} | {figures} |")


if __name__ == "__main__":
    main()
