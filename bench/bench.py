"""`make bench`: s3sweep's engine and the boto3 thread-pool baseline, side by side in one
run, against one embedded server (buckets with the `none`, `express` and `standard`
latency profiles), over the same keys and worker counts.

Prints a markdown table (wall ms, objects/s, client CPU per GET, peak RSS, ratios) and
checks the performance targets of issue 5, each as PASS or MISS with its figures.
Both clients run as child processes of this script, so each one's CPU time and peak
RSS are its own (os.wait4); the server's CPU per GET is read from /proc.
Standard library only; the baseline runs in the virtualenv `make bench` creates.
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


def cpu_of(pid):
    """User+system seconds of a running process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rfind(")") + 2 :].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def run_child(argv, stdout_path):
    """Runs argv, stdout to a file; returns (exit code, peak RSS bytes, cpu seconds, wall s)."""
    t0 = time.perf_counter()
    with open(stdout_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=sys.stderr)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    return code, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime, wall


class Server:
    def __init__(self, s3sweep, buckets):
        argv = [s3sweep, "serve", "--port", "0"]
        for b, p in buckets:
            argv += ["--bucket", f"{b}={p}"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
        line = self.proc.stdout.readline()
        self.endpoint = next(w for w in line.split() if w.startswith("http://"))

    def cpu(self):
        return cpu_of(self.proc.pid)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--s3sweep", default=os.path.join(ROOT, "target", "release", "s3sweep"))
    p.add_argument("--python", default=sys.executable, help="interpreter with boto3 for the baseline")
    p.add_argument("--objects", type=int, default=1000)
    p.add_argument("--size", type=int, default=46080)
    p.add_argument("--workers", default="1,4,16,64,256")
    p.add_argument("--profiles", default="none,express,standard")
    p.add_argument("--many", type=int, default=100_000, help="objects of the memory-growth run (0: skip)")
    p.add_argument("--skip-baseline", action="store_true")
    args = p.parse_args()

    workers = [int(w) for w in args.workers.split(",")]
    profiles = args.profiles.split(",")
    buckets = [(f"bench-{p}", p) for p in profiles]
    if args.many:
        buckets.append(("bench-many", "none"))
    tmp = tempfile.mkdtemp(prefix="s3sweep-bench-")
    server = Server(args.s3sweep, buckets)
    print(f"embedded server {server.endpoint}; objects {args.objects} x {args.size} B", file=sys.stderr)
    try:
        for b, _ in buckets:
            count, size = (args.many, 1024) if b == "bench-many" else (args.objects, args.size)
            subprocess.run(
                [args.s3sweep, "seed", "--endpoint", server.endpoint, "--bucket", b, "--count", str(count),
                 "--size", str(size), "--concurrency", "128", "--manifest", os.path.join(tmp, f"{b}.manifest.json")],
                check=True,
            )
        rows = []
        checks = []
        for profile in profiles:
            bucket = f"bench-{profile}"
            event = os.path.join(tmp, f"{bucket}.event.json")
            with open(event, "w") as f:
                json.dump({"buckets": [bucket], "object_count": args.objects, "workers": workers,
                           "pool_connections": max(workers)}, f)
            out = os.path.join(tmp, f"{bucket}.s3sweep.json")
            server_cpu0 = server.cpu()
            code, rss, _, _ = run_child([args.s3sweep, "run", "--event", event, "--endpoint", server.endpoint,
                                         "--no-preflight"], out)
            server_cpu = server.cpu() - server_cpu0
            if code != 0:
                sys.exit(f"s3sweep run failed for {bucket}")
            ours = json.load(open(out))
            gets = sum(r["requests"] for r in ours["results"])
            base = None
            base_rss = None
            if not args.skip_baseline:
                bout = os.path.join(tmp, f"{bucket}.boto3.json")
                code, base_rss, _, _ = run_child(
                    [args.python, os.path.join(HERE, "boto3_baseline.py"), "--endpoint", server.endpoint,
                     "--bucket", bucket, "--objects", str(args.objects), "--workers", args.workers], bout)
                if code != 0:
                    sys.exit(f"boto3 baseline failed for {bucket}")
                base = {r["workers"]: r for r in json.load(open(bout))["results"]}
            one = next((r for r in ours["results"] if r["workers"] == 1), None)
            for r in ours["results"]:
                b = base.get(r["workers"]) if base else None
                rows.append((profile, r, b))
            # Targets.
            best = min(ours["results"], key=lambda r: r["wall_ms"])
            if profile == "none":
                at64 = next((r for r in ours["results"] if r["workers"] == 64), None)
                if at64:
                    checks.append(("client CPU per GET at 64 in flight, none", at64["cpu_ms_per_get"] <= 0.10,
                                   f"{at64['cpu_ms_per_get']:.3f} ms (target <= 0.10 ms)"))
            if profile in ("express", "standard") and one:
                median = one["ttfb_ms"]["p50"]
                limit = max(workers) if profile == "standard" else best["workers"]
                for r in ours["results"]:
                    if r["workers"] > limit or (profile == "express" and r is not best):
                        continue
                    ideal = args.objects / r["workers"] * median
                    checks.append((f"{profile}: wall within 1.25x of ideal at {r['workers']} workers",
                                   r["wall_ms"] <= 1.25 * ideal,
                                   f"{r['wall_ms']:.0f} ms vs ideal {ideal:.0f} ms = {args.objects}/{r['workers']} x "
                                   f"{median:.2f} ms ({r['wall_ms'] / ideal:.2f}x)"))
            if profile == "express" and base:
                base_best = min(base.values(), key=lambda r: r["wall_ms"])
                ratio = base_best["wall_ms"] / best["wall_ms"]
                checks.append(("express: best >= 10x faster than boto3's best", ratio >= 10,
                               f"{best['wall_ms']:.0f} ms at {best['workers']} vs boto3 {base_best['wall_ms']:.0f} ms "
                               f"at {base_best['workers']} workers ({ratio:.1f}x)"))
            if max(workers) >= 256:
                checks.append((f"peak RSS of s3sweep run at {max(workers)} workers ({profile})", rss <= 64 << 20,
                               f"{rss / 2**20:.1f} MiB (target <= 64 MiB)"
                               + (f"; boto3 {base_rss / 2**20:.1f} MiB" if base_rss else "")))
            checks.append((f"server CPU per GET ({profile})", True,
                           f"{server_cpu * 1000 / max(gets, 1):.3f} ms over {gets} timed GETs (+ warm-up)"))
        if args.many:
            event = os.path.join(tmp, "many.event.json")
            with open(event, "w") as f:
                json.dump({"buckets": ["bench-many"], "object_count": args.many, "workers": [256],
                           "pool_connections": 256, "warmup": False}, f)
            out = os.path.join(tmp, "many.s3sweep.json")
            code, rss, _, _ = run_child([args.s3sweep, "run", "--event", event, "--endpoint", server.endpoint,
                                         "--no-preflight"], out)
            many = json.load(open(out))["results"][0]
            checks.append((f"peak RSS of a {args.many}-object sweep at 256 workers", rss <= 64 << 20 and code == 0,
                           f"{rss / 2**20:.1f} MiB, {many['ok']} ok, {many['errors']['total']} errors, "
                           f"{many['wall_ms']:.0f} ms, {many['cpu_ms_per_get']:.3f} ms CPU/GET"))
    finally:
        server.stop()

    print("| profile | workers | s3sweep wall ms | boto3 wall ms | speedup | s3sweep objects/s | boto3 objects/s "
          "| s3sweep CPU ms/GET | boto3 CPU ms/GET | CPU ratio | s3sweep ttfb p50 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for profile, r, b in rows:
        bw = f"{b['wall_ms']:.0f}" if b else "-"
        sp = f"{b['wall_ms'] / r['wall_ms']:.1f}x" if b else "-"
        bo = f"{b['ok'] / (b['wall_ms'] / 1000):.0f}" if b else "-"
        bc = f"{b['cpu_ms_per_get']:.3f}" if b else "-"
        cr = f"{b['cpu_ms_per_get'] / max(r['cpu_ms_per_get'], 1e-6):.1f}x" if b else "-"
        print(f"| {profile} | {r['workers']} | {r['wall_ms']:.0f} | {bw} | {sp} | {r['objects_per_s']:.0f} | {bo} "
              f"| {r['cpu_ms_per_get']:.3f} | {bc} | {cr} | {r['ttfb_ms']['p50']:.2f} |")
    print()
    print("| target | result | figures |")
    print("|---|---|---|")
    for name, ok, figures in checks:
        print(f"| {name} | {'PASS' if ok else 'MISS'} | {figures} |")


if __name__ == "__main__":
    main()
