"""`make bench MODE=clients`: the clients side by side in one run, on the same objects
(issue 25): s3sweep's lean path (`s3sweep run` with `clients: ["lean"]`, the engine on
its lean signed GET), the bare aws-sdk-s3 client (`bare_sdk`, examples/bare_sdk.rs:
GetObject in a `buffer_unordered` loop, no s3sweep engine), s3sweep's SDK path (`s3sweep
run`, the engine) and a plain unsigned HTTP load generator (wrk) against two servers:

- the static server: nginx serving the objects as files, ROOT/BUCKET/KEY, so a
  path-style GET /BUCKET/KEY of the S3 clients reads them (nginx ignores the signing
  headers and the query string); wrk reads the same paths (a Lua script cycles through
  the keys);
- the lab: `s3sweep serve`, the same bucket seeded with `s3sweep seed` (the same bytes:
  nginx's files are written with the seed's pattern, byte i = i mod 251).

Each over HTTP and HTTPS (nginx with a certificate signed by a CA made at start with
openssl; the lab with its own CA; the S3 clients trust them through --ca-file, wrk does
not verify), 16, 64 and 256 in flight, 46,080-byte objects by default.

Every client is a child process of this script, so its CPU time is its own (os.wait4;
the Rust clients also report their own CPU per GET over the timed round: getrusage in
bare_sdk, `cpu_ms_per_get` in s3sweep's rows, which leave out process start and the
warm-up round, and that figure is the one used).
wrk runs for --wrk-seconds per in-flight count; its CPU per GET is its whole process's
CPU (threads, TLS handshakes, the Lua script) over its GETs.

The machine is noisy, so the runs are interleaved: each round runs every client on
every server and scheme, the clients' order rotating from round to round, and each
ratio is the median of the rounds' own ratios with a distribution-free 95% interval
of that median (bench-py/intervals.py). Rounds are added, from --rounds (6) up to
--max-rounds (20), until every interval is within --precision (+/-5%) of its median;
the report says when it stopped and why, and the machine it ran on. The targets at 16,
64 and 256 in flight, PASS when the whole interval is inside, MISS when its lower end is
above, else UNSURE: the lean client's CPU per GET at most 0.5x the bare SDK's (each
server and scheme); within 2x of wrk's over HTTP (static server, issue 39); s3sweep's SDK path
within 1.05x of the bare SDK's CPU per GET on the static server and on the lab (each
scheme).

`--clients bare,engine` runs only those clients (and checks only the targets between
them): the SDK path against the bare SDK in a quarter of the time.

Refuses (exit 2) when wrk, nginx or openssl is missing: `make bench-tools` installs
them (apt-get, as root). Standard library only.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from intervals import CONFIDENCE, Interval, median  # noqa: E402

BUCKET = "bench-clients"
KEY = "test/{i}/vectors"
LEAN_CPU_VS_BARE = 0.5
LEAN_CPU_VS_WRK = 2
ENGINE_VS_BARE = 1.05
ENGINE_VS_TM = 1.05
LEAN_VS_BEST = 1.0
# Clients and the servers each reads; wrk reads files by path, so the static server only;
# the transfer manager's download_objects lists the prefix, which only the lab answers.
CLIENTS = ("lean", "bare", "engine", "wrk", "crt", "tm", "tm-prefix", "tm-sdk")
LABEL = {"lean": "s3sweep lean path", "bare": "bare aws-sdk-s3", "engine": "s3sweep SDK path",
         "wrk": "wrk (unsigned)", "crt": "CRT (awscrt)", "tm": "transfer manager",
         "tm-prefix": "transfer manager download_objects", "tm-sdk": "transfer manager, SDK HTTP client"}
ONLY_ON = {"wrk": "static", "tm-prefix": "lab"}
# The outside S3 clients the lean client is held to (signed GETs, as the lean client's;
# wrk is unsigned and has its own target).
OUTSIDE = ("bare", "crt", "tm", "tm-prefix", "tm-sdk")
TM_MODE = {"tm": ("download", "managed"), "tm-prefix": ("objects", "managed"), "tm-sdk": ("download", "sdk")}
SERVERS = ("static", "lab")


def runs_on(client, server):
    return ONLY_ON.get(client, server) == server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_child(argv, stdout_path, env=None):
    """Runs argv, stdout to a file, stderr to stdout_path + ".err" (shown when it fails);
    returns (exit code, cpu seconds, wall seconds)."""
    t0 = time.perf_counter()
    with open(stdout_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
    with open(stdout_path + ".err", "w") as f:
        f.write(err)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write(err)
    return code, usage.ru_utime + usage.ru_stime, time.perf_counter() - t0


def missing_tools():
    return [t for t in ("wrk", "nginx", "openssl") if shutil.which(t) is None]


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certificate(tmp):
    """A CA and a certificate for 127.0.0.1 and localhost signed by it: (ca, cert, key)."""
    ca_key, ca, key, csr, cert = (os.path.join(tmp, n) for n in ("ca.key", "ca.pem", "tls.key", "tls.csr", "tls.pem"))
    ext = os.path.join(tmp, "tls.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=s3sweep bench CA")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
            "-days", "2", "-extfile", ext)
    return ca, cert, key


def write_objects(root, count, size):
    """The seed's objects as files under root/BUCKET/KEY (byte i is i mod 251)."""
    body = bytes(i % 251 for i in range(size))
    for i in range(count):
        path = os.path.join(root, BUCKET, KEY.format(i=i))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(body)


class Nginx:
    """nginx in the foreground on two free ports (HTTP and HTTPS), serving root."""

    def __init__(self, tmp, root, cert, key, workers):
        self.http_port, self.https_port = free_port(), free_port()
        prefix = os.path.join(tmp, "nginx")
        os.makedirs(os.path.join(prefix, "temp"), exist_ok=True)
        conf = os.path.join(prefix, "nginx.conf")
        temp = os.path.join(prefix, "temp")
        with open(conf, "w") as f:
            f.write(f"""
worker_processes {workers};
pid {prefix}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    log_not_found off;
    sendfile on;
    tcp_nodelay on;
    keepalive_requests 10000000;
    keepalive_timeout 300s;
    default_type application/octet-stream;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    server {{ listen 127.0.0.1:{self.http_port}; root {root}; }}
    server {{
        listen 127.0.0.1:{self.https_port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {root};
    }}
}}
""")
        self.proc = subprocess.Popen(["nginx", "-p", prefix, "-c", conf, "-e", "stderr", "-g", "daemon off;"],
                                     stdout=subprocess.DEVNULL, stderr=sys.stderr)
        deadline = time.time() + 10
        while not self._listening():
            if self.proc.poll() is not None or time.time() > deadline:
                sys.exit("clients bench: nginx did not start (its errors are above)")
            time.sleep(0.05)

    def _listening(self):
        for port in (self.http_port, self.https_port):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            except OSError:
                return False
        return True

    def endpoint(self, scheme):
        return f"{scheme}://127.0.0.1:{self.http_port if scheme == 'http' else self.https_port}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Lab:
    """`s3sweep serve` on a free port over one scheme, the bucket seeded."""

    def __init__(self, args, scheme, tmp):
        argv = [args.s3sweep, "serve", "--port", "0", "--bucket", f"{BUCKET}=none"]
        if scheme == "https":
            argv.append("--tls")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
        line = self.proc.stdout.readline()
        self.url = next(w for w in line.split() if w.startswith(("http://", "https://")))
        self.ca_file = self.proc.stdout.readline().strip().removeprefix("ca-file: ") if scheme == "https" else None
        subprocess.run([args.s3sweep, "seed", "--endpoint", self.url, "--bucket", BUCKET, "--count",
                        str(args.objects), "--size", str(args.size), "--concurrency", "64",
                        "--manifest", os.path.join(tmp, f"{scheme}.manifest.json")] + self.ca_args(),
                       check=True, stdout=subprocess.DEVNULL, env=child_env())

    def ca_args(self):
        return ["--ca-file", self.ca_file] if self.ca_file else []

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def child_env():
    """The clients' environment: the CA is always given explicitly."""
    env = dict(os.environ)
    env.pop("AWS_CA_BUNDLE", None)
    return env


def per_get(doc, workers):
    """{workers: (wall ms, wall ms per GET, CPU ms per GET, GETs, errors)} of a client's JSON."""
    out = {}
    for r in doc["results"]:
        if r["workers"] in workers:
            # s3sweep's errors are counted by kind, the bare SDK's as one number.
            errors = r["errors"]["total"] if isinstance(r["errors"], dict) else r["errors"]
            gets = r["requests"] if "requests" in r else r["ok"] + errors
            out[r["workers"]] = (r["wall_ms"], r["wall_ms"] / max(gets, 1), r["cpu_ms_per_get"], gets, errors)
    return out


def run_bare(args, url, ca, workers, out):
    """The bare SDK (examples/bare_sdk.rs)."""
    argv = [args.bench_client, "--client", "sdk", "--endpoint", url,
            "--bucket", BUCKET, "--objects", str(args.objects), "--workers", ",".join(map(str, workers))]
    if ca:
        argv += ["--ca-file", ca]
    code, _, _ = run_child(argv, out, child_env())
    if code != 0:
        sys.exit(f"clients bench: {LABEL['bare']} failed against {url}")
    return per_get(json.load(open(out)), workers)


def run_crt(args, url, ca, workers, out):
    """awscrt's S3 client (bench-py/crt_ref.py, in --crt-python)."""
    argv = [args.crt_python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "crt_ref.py"),
            "--endpoint", url, "--bucket", BUCKET, "--objects", str(args.objects),
            "--workers", ",".join(map(str, workers))]
    if ca:
        argv += ["--ca-file", ca]
    code, _, _ = run_child(argv, out, child_env())
    if code != 0:
        sys.exit(f"clients bench: {LABEL['crt']} failed against {url}")
    return per_get(json.load(open(out)), workers)


def run_tm(args, client, url, ca, workers, out):
    """The transfer manager (bench-tm, built by `make bench MODE=clients`): per-object
    downloads or download_objects, on its own HTTP client (which takes no CA: over HTTPS
    it reads the CA from SSL_CERT_FILE) or on the SDK's, handed to it with the CA."""
    mode, http = TM_MODE[client]
    argv = [args.tm_client, "--mode", mode, "--http", http, "--endpoint", url, "--bucket", BUCKET,
            "--objects", str(args.objects), "--workers", ",".join(map(str, workers))]
    env = child_env()
    if ca:
        argv += ["--ca-file", ca]
        env["SSL_CERT_FILE"] = ca
    code, _, _ = run_child(argv, out, env)
    if code != 0:
        sys.exit(f"clients bench: {LABEL[client]} failed against {url}")
    return per_get(json.load(open(out)), workers)


def run_engine(args, client, url, ca, workers, out, tmp):
    """`s3sweep run` on its SDK path (`engine`) or its lean signed GET (`lean`)."""
    event = os.path.join(tmp, "event.json")
    with open(event, "w") as f:
        json.dump({"buckets": [BUCKET], "object_count": args.objects, "workers": workers,
                   "pool_connections": max(workers), "clients": ["lean" if client == "lean" else "sdk"]}, f)
    # The lab's keys on both servers (nginx ignores the signature), without asking the
    # endpoint whether it is the lab: the same requests against each.
    argv = [args.s3sweep, "run", "--event", event, "--endpoint", url, "--credentials", "lab", "--no-preflight",
            "--quiet"]
    if ca:
        argv += ["--ca-file", ca]
    code, _, _ = run_child(argv, out, child_env())
    if code != 0:
        sys.exit(f"clients bench: s3sweep run ({LABEL[client]}) failed against {url}")
    return per_get(json.load(open(out)), workers)


WRK_SCRIPT = """
local n = {count}
local i = 0
request = function()
  local path = "/{bucket}/test/" .. (i % n) .. "/vectors"
  i = i + 1
  return wrk.format("GET", path)
end
"""


def run_wrk(args, url, workers, out, tmp):
    """wrk for --wrk-seconds at each in-flight count: its process's CPU over its GETs."""
    script = os.path.join(tmp, "paths.lua")
    with open(script, "w") as f:
        f.write(WRK_SCRIPT.format(count=args.objects, bucket=BUCKET))
    result = {}
    for w in workers:
        threads = max(1, min(args.wrk_threads, w))
        argv = ["wrk", "-t", str(threads), "-c", str(w), "-d", f"{args.wrk_seconds}s", "-s", script, url + "/"]
        code, cpu_s, _ = run_child(argv, out)
        text = open(out).read()
        m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
        if code != 0 or not m:
            sys.exit(f"clients bench: wrk failed against {url}:\n{text}")
        gets = int(m.group(1))
        wall_ms = float(m.group(2)) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[m.group(3)]
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
        sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
        errors = (int(bad.group(1)) if bad else 0) + (sum(map(int, sock.groups())) if sock else 0)
        result[w] = (wall_ms, wall_ms / max(gets, 1), cpu_s * 1000 / max(gets, 1), gets, errors)
    return result


def one_round(args, rnd, servers, workers, tmp, data, alive):
    """Every client on every server and scheme, the clients' order rotated by the round."""
    chosen = args.clients
    order = list(chosen[rnd % len(chosen):] + chosen[:rnd % len(chosen)])
    for scheme in args.schemes:
        for server in SERVERS:
            url, ca = servers[(server, scheme)]
            for client in order:
                if not runs_on(client, server):
                    continue
                out = os.path.join(tmp, f"{rnd}-{scheme}-{server}-{client}.out")
                if client == "wrk":
                    got = run_wrk(args, url, workers, out, tmp)
                elif client in ("engine", "lean"):
                    got = run_engine(args, client, url, ca, workers, out, tmp)
                elif client == "crt":
                    got = run_crt(args, url, ca, workers, out)
                elif client in TM_MODE:
                    got = run_tm(args, client, url, ca, workers, out)
                else:
                    got = run_bare(args, url, ca, workers, out)
                failed = sum(f[4] for f in got.values())
                if failed:
                    # What the client said about its first failure, and whether a server died.
                    said = open(out + ".err").read() if os.path.exists(out + ".err") else ""
                    print(f"clients bench: {LABEL[client]} on {server} {scheme}: {failed} failed GETs; "
                          + " ".join(l for l in said.splitlines() if "error" in l)[:600], file=sys.stderr)
                    for name, proc in alive.items():
                        if proc.poll() is not None:
                            sys.exit(f"clients bench: the {name} server ended (status {proc.returncode})")
                for w, figures in got.items():
                    data.setdefault((scheme, server, client, w), []).append(figures)
                print(f"  round {rnd + 1}: {scheme} {server} {LABEL[client]}: "
                      + ", ".join(f"{w} in flight {f[2]:.4f} ms CPU/GET" for w, f in sorted(got.items())),
                      file=sys.stderr)


def ratio(data, a, b, col=2):
    """The rounds' own ratios of a's figure to b's, as an Interval (median and its
    order-statistic confidence interval, bench-py/intervals.py)."""
    ra, rb = data[a], data[b]
    return Interval([x[col] / max(y[col], 1e-9) for x, y in zip(ra, rb)])


def best_outside(data, scheme, server, ran, w):
    """Each round's lowest CPU per GET of the outside S3 clients that read this server, as
    a run of rows (the figure in column 2), and their names."""
    names = [c for c in OUTSIDE if c in ran and runs_on(c, server)]
    rounds = zip(*(data[(scheme, server, c, w)] for c in names))
    return [(0, 0, min(r[2] for r in row)) for row in rounds], names


def checks(data, args, workers):
    """(target, scheme, server, {workers: Interval}, limit) for every target whose two
    clients ran (--clients)."""
    ran = set(args.clients)
    rows = []

    def add(name, scheme, server, a, b, limit):
        if {a, b} <= ran:
            rows.append((name, scheme, server,
                         {w: ratio(data, (scheme, server, a, w), (scheme, server, b, w)) for w in workers}, limit))

    for scheme in args.schemes:
        for server in SERVERS:
            add(f"lean CPU/GET <= {LEAN_CPU_VS_BARE}x bare SDK", scheme, server, "lean", "bare", LEAN_CPU_VS_BARE)
    if "http" in args.schemes:
        add(f"lean CPU/GET <= {LEAN_CPU_VS_WRK}x wrk (unsigned)", "http", "static", "lean", "wrk", LEAN_CPU_VS_WRK)
    for scheme in args.schemes:
        for server in SERVERS:
            add(f"s3sweep SDK path CPU/GET <= {ENGINE_VS_BARE}x bare SDK", scheme, server, "engine", "bare",
                ENGINE_VS_BARE)
    for scheme in args.schemes:
        for server in SERVERS:
            add(f"s3sweep SDK path CPU/GET <= {ENGINE_VS_TM}x transfer manager", scheme, server, "engine", "tm",
                ENGINE_VS_TM)
    # The lean client against the best outside S3 client, round by round, where one
    # besides the bare SDK (which has its own target above) ran.
    if "lean" in ran and ran & (set(OUTSIDE) - {"bare"}):
        for scheme in args.schemes:
            for server in SERVERS:
                intervals = {}
                for w in workers:
                    best, names = best_outside(data, scheme, server, ran, w)
                    intervals[w] = Interval([x[2] / max(y[2], 1e-9)
                                             for x, y in zip(data[(scheme, server, "lean", w)], best)])
                rows.append((f"lean CPU/GET <= best outside client ({', '.join(names)})", scheme, server,
                             intervals, LEAN_VS_BEST))
    return rows


def widest(data, args, workers):
    """The interval furthest from the precision asked for: (half width, target, scheme,
    server, workers, confident)."""
    found = []
    for name, scheme, server, intervals, _ in checks(data, args, workers):
        for w, iv in intervals.items():
            found.append((iv.half_width() if iv.confident() else float("inf"), name, scheme, server, w,
                          iv.confident()))
    return max(found)


def settled(data, args, workers, rounds):
    """Whether enough rounds ran: at least --rounds, and every interval confident and
    within --precision of its median."""
    return rounds >= args.rounds and widest(data, args, workers)[0] <= args.precision


def verdict(intervals, limit, errors):
    """PASS when every in-flight count's interval is inside the target; MISS when one is
    wholly outside it, or a GET failed; else UNSURE (an interval straddles the target,
    or too few rounds to be 95% sure)."""
    each = [iv.verdict(limit) for iv in intervals.values()]
    if errors or "MISS" in each:
        return "MISS"
    return "PASS" if all(v == "PASS" for v in each) else "UNSURE"


def machine(loads):
    """What the figures were measured on: CPU model, cores, clocksource, kernel, load."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), model)
    except OSError:
        pass
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            clock = f.read().strip()
    except OSError:
        clock = "unknown"
    fmt = lambda l: " ".join(f"{x:.2f}" for x in l)
    return (f"machine: {model}, {os.cpu_count()} cores, clocksource {clock}, kernel {os.uname().release}; "
            f"load average at the start {fmt(loads[0])}, at the end {fmt(loads[1])}")


def report(data, args, workers, rounds, loads):
    print(f"Clients side by side: {args.objects} objects x {args.size} B, {rounds} interleaved rounds "
          f"(figures: medians of the rounds; wrk: {args.wrk_seconds} s per in-flight count)")
    print(machine(loads))
    print()
    print("| scheme | server | client | in flight | wall ms | wall ms/GET | CPU ms/GET | GETs | errors |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for scheme in args.schemes:
        for server in SERVERS:
            for client in args.clients:
                if not runs_on(client, server):
                    continue
                for w in workers:
                    runs = data[(scheme, server, client, w)]
                    wall, per, cpu = (median([r[i] for r in runs]) for i in range(3))
                    gets, errors = sum(r[3] for r in runs), sum(r[4] for r in runs)
                    print(f"| {scheme} | {server} | {LABEL[client]} | {w} | {wall:.0f} | {per:.4f} | {cpu:.4f} "
                          f"| {gets} | {errors} |")
    print()
    print("| target | scheme | server | " + " | ".join(f"ratio at {w} [{CONFIDENCE:.0%} interval]" for w in workers)
          + " | result |")
    print("|---|---|---|" + "---:|" * len(workers) + "---|")
    all_errors = sum(r[4] for runs in data.values() for r in runs)
    for name, scheme, server, intervals, limit in checks(data, args, workers):
        cells = " | ".join(intervals[w].cell() for w in workers)
        print(f"| {name} | {scheme} | {server} | {cells} | {verdict(intervals, limit, all_errors)} |")
    print()
    if all_errors:
        print(f"errors: {all_errors} failed GETs in the run: every target is MISS")
    gap, name, scheme, server, w, confident = widest(data, args, workers)
    stop = (f"every interval within +/-{args.precision * 100:g}% of its median"
            if settled(data, args, workers, rounds) else
            f"the limit of {args.max_rounds} rounds reached before every interval was within "
            f"+/-{args.precision * 100:g}%: the widest, {name} ({scheme} {server} at {w} in flight), is "
            + (f"+/-{gap:.1%}" if confident else f"not yet {CONFIDENCE:.0%} sure (too few rounds)"))
    print(f"rounds: {rounds} ({stop})")
    print(f"ratios: the median of the rounds' own ratios of CPU per GET, with a distribution-free "
          f"{CONFIDENCE:.0%} interval of that median (order statistics; the confidence each interval "
          f"reaches is below {CONFIDENCE:.0%} with fewer than 6 rounds); PASS needs the whole interval "
          f"inside the target, MISS its lower end above it, else UNSURE")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--s3sweep", required=True, help="the s3sweep binary (serve, seed, run)")
    p.add_argument("--bench-client", required=True, help="examples/bare_sdk.rs built (--client sdk|lean)")
    p.add_argument("--objects", type=int, default=2000)
    p.add_argument("--size", type=int, default=46080, help="object size, bytes")
    p.add_argument("--workers", default="16,64,256", help="in-flight counts")
    p.add_argument("--schemes", default="http,https")
    p.add_argument("--rounds", type=int, default=6,
                   help="interleaved rounds at least (6 is the fewest for a 95%% interval)")
    p.add_argument("--max-rounds", type=int, default=20,
                   help="interleaved rounds at most: rounds are added until every ratio's interval is "
                        "within --precision of its median, or this many ran")
    p.add_argument("--precision", type=float, default=0.05,
                   help="the interval's half width asked for, a fraction of the median (0.05: +/-5%%)")
    p.add_argument("--wrk-seconds", type=int, default=2, help="wrk's run per in-flight count, seconds")
    p.add_argument("--wrk-threads", type=int, default=2)
    p.add_argument("--nginx-workers", type=int, default=2)
    p.add_argument("--crt-python",
                   help="a Python that imports awscrt (bench-py/requirements.txt, .venv-bench): runs the CRT "
                        "reference (bench-py/crt_ref.py)")
    p.add_argument("--tm-client",
                   help="bench-tm's binary (bench-tm/target/release/tm-ref): runs the transfer manager's "
                        "references")
    p.add_argument("--clients",
                   help="the clients to run, of " + ", ".join(CLIENTS) + " (a target is checked when both "
                        "of its clients run); by default all of them whose program is given (crt needs "
                        "--crt-python, tm, tm-prefix and tm-sdk --tm-client)")
    args = p.parse_args()
    args.schemes = args.schemes.split(",")
    needs = {"crt": args.crt_python, "tm": args.tm_client, "tm-prefix": args.tm_client,
             "tm-sdk": args.tm_client}
    asked = args.clients.split(",") if args.clients else [c for c in CLIENTS if needs.get(c, True)]
    args.clients = tuple(c for c in CLIENTS if c in asked)
    unknown = set(asked) - set(CLIENTS)
    if unknown or len(args.clients) < 2:
        p.error(f"--clients: {', '.join(sorted(unknown)) or 'fewer than two'}: name two or more of "
                + ", ".join(CLIENTS))
    unrunnable = [c for c in args.clients if not needs.get(c, True)]
    if unrunnable:
        p.error(f"--clients: {', '.join(unrunnable)} named without "
                + " and ".join(sorted({"--crt-python" if c == "crt" else "--tm-client" for c in unrunnable})))
    if not 1 <= args.rounds <= args.max_rounds or not 0 < args.precision < 1:
        p.error(f"--rounds {args.rounds} must be at least 1 and at most --max-rounds {args.max_rounds}, "
                f"and --precision {args.precision} between 0 and 1")
    workers = [int(w) for w in args.workers.split(",")]
    missing = missing_tools()
    if missing:
        print(f"clients bench: {', '.join(missing)} not installed: `make bench-tools` installs them "
              f"(apt-get, as root), or install the Debian packages {' '.join(missing)}", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="s3sweep-clients-")
    # nginx's workers run as nobody when started as root: they must read the files.
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "www")
    write_objects(root, args.objects, args.size)
    ca, cert, key = make_certificate(tmp)
    nginx = None
    labs = []
    try:
        nginx = Nginx(tmp, root, cert, key, args.nginx_workers)
        servers = {}
        alive = {"nginx": nginx.proc}
        for scheme in args.schemes:
            servers[("static", scheme)] = (nginx.endpoint(scheme), ca if scheme == "https" else None)
            lab = Lab(args, scheme, tmp)
            labs.append(lab)
            alive[f"lab {scheme}"] = lab.proc
            servers[("lab", scheme)] = (lab.url, lab.ca_file)
        for (server, scheme), (url, _) in sorted(servers.items()):
            print(f"{server} {scheme}: {url}", file=sys.stderr)
        data = {}
        rounds = 0
        loads = [os.getloadavg()]
        while rounds < args.max_rounds and not (rounds and settled(data, args, workers, rounds)):
            one_round(args, rounds, servers, workers, tmp, data, alive)
            rounds += 1
        loads.append(os.getloadavg())
    finally:
        for lab in labs:
            lab.stop()
        if nginx:
            nginx.stop()
    report(data, args, workers, rounds, loads)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
