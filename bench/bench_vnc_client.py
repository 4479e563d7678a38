#!/usr/bin/env python
"""Requests per second through VncClient against the embedded config API server.

Measures the client's whole path (pooled keep-alive session, JSON, error mapping, observer) for
one greenlet and for several concurrent greenlets sharing one client, as the daemon's reconciler
does. gevent is monkey-patched first so that `requests` yields while waiting on a socket.

Besides requests per second and latency, each row gives the CPU time one request costs the client
and (for a server process this script started, on Linux) the server. Throughput on a shared
machine moves with the neighbours' load; CPU per request does not, so it is the figure to compare
between two versions of the code.

The server runs in a separate process by default (`contrail-kube-manager vnc-server`), so client and
server do not share one interpreter lock; `--server thread` runs it in this process instead, and
`--url` benchmarks a server that is already running (even a real contrail-api: the workload only
reads the default policy management and creates and deletes its own `bench=<n>` tags).

    python bench/bench_vnc_client.py [--requests 2000] [--concurrency 1,8] [--latency 0.005]

It then measures the client's own CPU per request against a minimal local server (a process that
answers every request with the same small JSON, keep-alive, no work of its own), in the same run
beside `http.client` (the floor: one connection, nothing around it) and a `requests.Session` (what
the client used before), each doing the same POST with a JSON body `--requests` times, under gevent.
"""
from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402 - after monkey-patching, on purpose
import json  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from contextlib import contextmanager, nullcontext  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from itertools import count  # noqa: E402
from typing import Callable, Dict, Iterator, List, Optional  # noqa: E402

import gevent  # noqa: E402
from gevent.pool import Pool  # noqa: E402

from vnc_client.client import VncClient  # noqa: E402
from vnc_client.errors import VncConnectionError  # noqa: E402
from vnc_client.retry import RetryPolicy  # noqa: E402

PM = ["default-policy-management"]
START_TIMEOUT = 15.0
# The minimal server's one answer, and the body every client of the comparison POSTs.
MINIMAL_ANSWER = b'{"tag": {"uuid": "0f6c3ea4-4b1e-4c9a-9f0e-6f0b1e2d3c4a", "fq_name": ["bench=v"]}}'
MINIMAL_BODY = {"tag": {"fq_name": ["bench=v"], "tag_type_name": "bench", "tag_value": "v"}}


@dataclass
class Result:
    workload: str
    greenlets: int
    requests: int
    seconds: float
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    client_cpu_us: int  # CPU time of this process per request
    server_cpu_us: Optional[int]  # CPU time of the server process per request, when measurable


@dataclass
class Server:
    """A server to benchmark: its URL and, when it is a process of ours, its pid."""

    url: str
    pid: Optional[int] = None

    def cpu_seconds(self) -> Optional[float]:
        """User + system CPU time of the server process (Linux /proc), None when unknown."""
        if self.pid is None:
            return None
        try:
            with open(f"/proc/{self.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        # Fields 14 and 15 of proc(5) (utime, stime), counted after the ")" that ends the command.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str) -> None:
    """Polls the home page until the server answers or START_TIMEOUT passes."""
    deadline = time.monotonic() + START_TIMEOUT
    with VncClient(url, retry=RetryPolicy(attempts=1), connect_timeout=0.5) as probe:
        while True:
            try:
                probe.home()
                return
            except VncConnectionError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"the embedded server at {url} did not come up within {START_TIMEOUT}s")
                gevent.sleep(0.05)


@contextmanager
def embedded_server(mode: str, latency: float) -> Iterator[Server]:
    """A fresh embedded server, run as `mode` ("process" or "thread")."""
    if mode == "thread":
        from simulators.vnc_api.runner import run_in_background

        with run_in_background(latency=latency) as server:
            yield Server(server.url)  # its CPU time is this process's, counted as the client's
        return
    port = free_port()
    command = [sys.executable, "-m", "kube_manager", "vnc-server", "--listen", f"127.0.0.1:{port}",
               "--latency", str(latency), "--log-level", "WARNING"]
    process = subprocess.Popen(command)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url)
        yield Server(url, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:  # a server holding millions of objects takes long to exit:
            process.kill()                 # its figures are taken, do not lose them to its teardown
            process.wait()


def workloads(client: VncClient, names: Iterator[int]) -> Dict[str, Callable[[], int]]:
    """Each workload does one unit of work and returns how many HTTP requests it made."""
    pm_uuid = client.fqname_to_id("policy-management", PM)

    def read() -> int:
        client.read("policy-management", pm_uuid, fields=["annotations"])
        return 1

    def lookup() -> int:
        client.fqname_to_id("policy-management", PM)
        return 1

    def create_delete() -> int:
        value = f"v{next(names)}"
        created = client.create("tag", {"fq_name": [f"bench={value}"], "tag_type_name": "bench", "tag_value": value})
        client.delete("tag", created["uuid"])
        return 2

    return {"read": read, "fqname-to-id": lookup, "create+delete": create_delete}


def run_one(server: Server, workload: str, greenlets: int, total: int, names: Iterator[int]) -> Result:
    latencies: List[float] = []
    with VncClient(server.url, concurrency=greenlets,
                   observer=lambda m, p, s, sec: latencies.append(sec)) as client:
        unit = workloads(client, names)[workload]
        unit()  # warm-up: connection established, first request out of the way
        latencies.clear()
        done = [0]

        def worker() -> None:
            while done[0] < total:
                made = unit()  # yields; read the shared count only after it returns
                done[0] += made

        pool = Pool(greenlets)
        server_cpu = server.cpu_seconds()
        client_cpu = time.process_time()
        started = time.perf_counter()
        for _ in range(greenlets):
            pool.spawn(worker)
        pool.join(raise_error=True)
        seconds = time.perf_counter() - started
        client_cpu = time.process_time() - client_cpu
        server_end = server.cpu_seconds()
    ordered = sorted(latencies)
    n = len(ordered)
    server_us = None if server_cpu is None or server_end is None else round((server_end - server_cpu) / n * 1e6)
    return Result(workload, greenlets, n, round(seconds, 3), round(n / seconds, 1),
                  round(statistics.median(ordered) * 1000, 2),
                  round(ordered[min(n - 1, int(n * 0.99))] * 1000, 2),
                  round(client_cpu / n * 1e6), server_us)


def serve_minimal(port: int) -> None:
    """The minimal server: reads each request (head and Content-Length body) and answers
    MINIMAL_ANSWER on the same connection."""
    from gevent.server import StreamServer

    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
              % (len(MINIMAL_ANSWER), MINIMAL_ANSWER))

    def handle(sock: socket.socket, _: object) -> None:
        pending = b""
        while True:
            data = sock.recv(65536)
            if not data:
                return
            pending += data
            while (end := pending.find(b"\r\n\r\n")) >= 0:
                length = 0
                for line in pending[:end].split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if len(pending) < end + 4 + length:
                    break
                pending = pending[end + 4 + length:]
                sock.sendall(answer)

    StreamServer(("127.0.0.1", port), handle).serve_forever()


def minimal_comparison(total: int) -> Dict[str, int]:
    """Client CPU per POST (us) against the minimal server: VncClient, http.client, requests."""
    import http.client

    import requests

    port = free_port()
    process = subprocess.Popen([sys.executable, __file__, "--minimal-server", str(port)])
    url = f"http://127.0.0.1:{port}"
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

        def plain() -> None:
            connection.request("POST", "/tags", json.dumps(MINIMAL_BODY).encode(), headers)
            connection.getresponse().read()

        session = requests.Session()

        def with_requests() -> None:
            session.post(f"{url}/tags", json=MINIMAL_BODY, timeout=(5, 30)).json()

        client = VncClient(url)

        def with_vnc_client() -> None:
            client.create("tag", MINIMAL_BODY["tag"])

        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                plain()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the minimal server did not come up")
                connection.close()
                gevent.sleep(0.05)
        figures: Dict[str, int] = {}
        for name, call in (("VncClient", with_vnc_client), ("http.client", plain),
                           ("requests.Session", with_requests)):
            for _ in range(50):  # warm-up
                call()
            cpu = time.process_time()
            for _ in range(total):
                call()
            figures[name] = round((time.process_time() - cpu) / total * 1e6)
        client.close()
        session.close()
        connection.close()
        return figures
    finally:
        process.terminate()
        process.wait()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per measurement (default 2000)")
    parser.add_argument("--concurrency", default="1,8", help="comma list of greenlet counts (default 1,8)")
    parser.add_argument("--latency", type=float, default=0.0, help="latency the embedded server adds (seconds)")
    parser.add_argument("--server", choices=["process", "thread"], default="process",
                        help="run the embedded server in its own process (default) or in a thread here")
    parser.add_argument("--url", help="benchmark an already running server instead of starting one")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--minimal-server", type=int, help=argparse.SUPPRESS)  # a child: the minimal server
    args = parser.parse_args(argv)
    if args.minimal_server:
        serve_minimal(args.minimal_server)
        return 0
    try:
        levels = [int(c) for c in args.concurrency.split(",")]
    except ValueError:
        parser.error(f"--concurrency {args.concurrency!r}: expected a comma list of integers")
    if args.requests < 1 or any(c < 1 for c in levels):
        parser.error("--requests and every --concurrency level must be at least 1")

    names = count()
    results: List[Result] = []
    with (nullcontext(Server(args.url)) if args.url else embedded_server(args.server, args.latency)) as server:
        for workload in ("read", "fqname-to-id", "create+delete"):
            for greenlets in levels:
                results.append(run_one(server, workload, greenlets, args.requests, names))
    minimal = minimal_comparison(args.requests)
    if args.json:
        print(json.dumps({"embedded": [asdict(r) for r in results], "minimal_server_client_cpu_us": minimal},
                         indent=2))
        return 0
    where = args.url or f"embedded server ({args.server}, latency {args.latency * 1000:g} ms)"
    print(f"VncClient against {where}")
    print(f"{'workload':<15}{'greenlets':>10}{'requests':>10}{'seconds':>9}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
          f"{'client CPU us/req':>19}{'server CPU us/req':>19}")
    for r in results:
        server_us = "-" if r.server_cpu_us is None else r.server_cpu_us
        print(f"{r.workload:<15}{r.greenlets:>10}{r.requests:>10}{r.seconds:>9}{r.requests_per_second:>9}"
              f"{r.p50_ms:>9}{r.p99_ms:>9}{r.client_cpu_us:>19}{server_us:>19}")
    print(f"\nClient CPU per POST against a minimal local server, {args.requests} requests each, one greenlet:")
    for name, us in minimal.items():
        print(f"{name:<20}{us:>8} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
