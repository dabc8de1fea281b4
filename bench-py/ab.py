"""A/B two s3sweep binaries on the same embedded server, alternating runs, so a change's
effect on client CPU per GET and wall time is measured side by side (noisy machines).

    python3 bench-py/ab.py OLD_BINARY NEW_BINARY [--workers 64] [--objects 1000] [--runs 5] [--tls]

Starts `NEW_BINARY serve` with one `none`-profile bucket (over HTTPS with `--tls`, both
clients trusting its CA), seeds it, then runs `run --no-preflight` with each binary in
turn and prints the medians and their ratio. OLD_BINARY and NEW_BINARY may be the same
file, to see the spread of one build.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--workers", type=int, default=64)
    p.add_argument("--objects", type=int, default=1000)
    p.add_argument("--size", type=int, default=46080)
    p.add_argument("--reps", type=int, default=3, help="repetitions inside each run")
    p.add_argument("--runs", type=int, default=5, help="runs of each binary")
    p.add_argument("--profile", default="none")
    p.add_argument("--tls", action="store_true", help="serve and read over HTTPS")
    args = p.parse_args()

    tmp = tempfile.mkdtemp(prefix="s3sweep-ab-")
    server = subprocess.Popen([args.new, "serve", "--port", "0", "--bucket", f"ab-bucket={args.profile}"]
                              + (["--tls"] if args.tls else []), stdout=subprocess.PIPE, text=True)
    try:
        endpoint = next(w for w in server.stdout.readline().split() if w.startswith(("http://", "https://")))
        ca = ["--ca-file", server.stdout.readline().strip().removeprefix("ca-file: ")] if args.tls else []
        subprocess.run([args.new, "seed", "--endpoint", endpoint, "--bucket", "ab-bucket", "--count",
                        str(args.objects), "--size", str(args.size), "--manifest", os.path.join(tmp, "m.json")] + ca,
                       check=True, stderr=subprocess.DEVNULL)
        event = os.path.join(tmp, "event.json")
        with open(event, "w") as f:
            json.dump({"buckets": ["ab-bucket"], "object_count": args.objects, "workers": [args.workers],
                       "pool_connections": args.workers, "repetitions": args.reps}, f)
        cpu = {"old": [], "new": []}
        wall = {"old": [], "new": []}
        for _ in range(args.runs):
            for name in ("old", "new"):
                binary = getattr(args, name)
                out = subprocess.run([binary, "run", "--no-preflight", "--event", event, "--endpoint", endpoint] + ca,
                                     check=True, capture_output=True, text=True).stdout
                for r in json.loads(out)["results"]:
                    cpu[name].append(r["cpu_ms_per_get"])
                    wall[name].append(r["wall_ms"])
    finally:
        server.terminate()
    for metric, data in (("cpu_ms_per_get", cpu), ("wall_ms", wall)):
        old, new = statistics.median(data["old"]), statistics.median(data["new"])
        print(f"{metric}: old {old:.4f}  new {new:.4f}  new/old {new / old:.3f}  (n={len(data['old'])} each)")


if __name__ == "__main__":
    sys.exit(main())
