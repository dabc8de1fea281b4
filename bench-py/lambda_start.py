"""Time from process start to the first handled event of the release `s3sweep-lambda`,
and its binary size: the cold-start cost the function itself adds.

Plays the Lambda Runtime API (the part a function uses: /invocation/next and
/invocation/{id}/response) on 127.0.0.1, starts `s3sweep serve` with one seeded
bucket, then execs the function with AWS_LAMBDA_RUNTIME_API pointing at the fake
runtime and S3SWEEP_ENDPOINT_URL at the server, hands it one small event, and
measures exec -> its first GET /invocation/next (the init: ready for its first event)
and exec -> response received. Repeats 20 times; prints the medians.

    python3 bench-py/lambda_start.py [--lambda target/release/s3sweep-lambda] [--s3sweep target/release/s3sweep]
"""

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time


class Runtime(http.server.BaseHTTPRequestHandler):
    event = b"{}"
    done = None  # threading.Event set when the response arrives
    result = None
    served = False
    ready_at = None  # perf_counter() of the first GET /invocation/next: ready for its first event

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.endswith("/runtime/invocation/next"):
            if Runtime.served:
                time.sleep(30)  # no second event: the function waits here until killed
                return
            Runtime.served = True
            Runtime.ready_at = time.perf_counter()
            self.send_response(200)
            self.send_header("Lambda-Runtime-Aws-Request-Id", "start-bench-1")
            self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 60_000))
            self.send_header("Lambda-Runtime-Invoked-Function-Arn",
                             "arn:aws:lambda:us-east-1:000000000000:function:s3sweep")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(Runtime.event)))
            self.end_headers()
            self.wfile.write(Runtime.event)
        else:
            self.send_response(404)
            self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length)
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()
        Runtime.result = (self.path, body)
        Runtime.done.set()


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lambda", dest="function", default=os.path.join(here, "target/release/s3sweep-lambda"))
    p.add_argument("--s3sweep", default=os.path.join(here, "target/release/s3sweep"))
    p.add_argument("--runs", type=int, default=20)
    args = p.parse_args()

    server = subprocess.Popen([args.s3sweep, "serve", "--port", "0", "--bucket", "start-bucket=none"],
                              stdout=subprocess.PIPE, text=True)
    try:
        endpoint = next(w for w in server.stdout.readline().split() if w.startswith("http://"))
        subprocess.run([args.s3sweep, "seed", "--endpoint", endpoint, "--bucket", "start-bucket", "--count", "4",
                        "--manifest", os.path.join(tempfile.mkdtemp(), "m.json")], check=True,
                       stderr=subprocess.DEVNULL)
        Runtime.event = json.dumps({"buckets": ["start-bucket"], "object_count": 4, "workers": [1],
                                    "warmup": False}).encode()
        times = []
        inits = []
        own = []  # the function's own figure: environment.lambda.init_us (absent before it existed)
        for _ in range(args.runs):
            Runtime.served = False
            Runtime.done = threading.Event()
            httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Runtime)
            threading.Thread(target=httpd.serve_forever, daemon=True).start()
            env = dict(os.environ, AWS_LAMBDA_RUNTIME_API=f"127.0.0.1:{httpd.server_address[1]}",
                       S3SWEEP_ENDPOINT_URL=endpoint, AWS_LAMBDA_FUNCTION_NAME="s3sweep",
                       AWS_LAMBDA_FUNCTION_MEMORY_SIZE="1769", AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
                       AWS_REGION="us-east-1", AWS_LAMBDA_LOG_LEVEL="WARN")
            t0 = time.perf_counter()
            proc = subprocess.Popen([args.function], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            ok = Runtime.done.wait(30)
            elapsed = time.perf_counter() - t0
            proc.kill()
            proc.wait()
            httpd.shutdown()
            if not ok or not Runtime.result[0].endswith("/response"):
                sys.exit(f"no response from the function: {Runtime.result}")
            body = json.loads(Runtime.result[1])
            assert body["results"][0]["ok"] == 4, body
            times.append(elapsed * 1000)
            inits.append((Runtime.ready_at - t0) * 1000)
            init_us = (body["environment"].get("lambda") or {}).get("init_us")
            if init_us is not None:
                own.append(init_us / 1000)
    finally:
        server.terminate()
    size = os.path.getsize(args.function)
    if own:
        print(f"s3sweep-lambda: init as the function reports it (environment.lambda.init_us, main to ready): "
              f"median {statistics.median(own):.1f} ms (min {min(own):.1f}, max {max(own):.1f})")
    print(f"s3sweep-lambda: init (process start to ready for its first event, GET /invocation/next): "
          f"median {statistics.median(inits):.1f} ms over {len(inits)} starts (min {min(inits):.1f}, max {max(inits):.1f})")
    print(f"s3sweep-lambda: binary {size:,} bytes; process start to first event handled "
          f"(4 GETs, local server): median {statistics.median(times):.0f} ms over {len(times)} runs "
          f"(min {min(times):.0f}, max {max(times):.0f})")


if __name__ == "__main__":
    main()
