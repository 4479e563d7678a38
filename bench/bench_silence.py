#!/usr/bin/env python
"""Time for a change made during a watch stall to reach the config API, end to end.

A real daemon process (`contrail-kube-manager run`) watches the emulated Kubernetes API server
(in this process) and writes to the embedded config API (in a thread of this process). Once the
daemon has converged and stayed idle for `--idle` seconds (the quiet watches living on bookmarks
alone), every open watch is stalled (open, no data, no bookmarks) and a NetworkPolicy is created at
once; the figure is the time until its firewall policy is in the config API. The same change without
a stall is the baseline. The daemon's `silent` watch restarts are counted over the idle time (on a
healthy quiet cluster they should be 0) and in total.

    python bench/bench_silence.py [--silence 60] [--bookmark-interval 60] [--idle 130] [--runs 1]

With the production settings (60 s and the API server's bookmark about every 60 s) one run takes
about 1 to 3 minutes; `--silence 5 --bookmark-interval 2 --idle 10` is the scaled-down version.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from typing import Callable, List

from simulators.kube_api.runner import EmulatorRunner
from vnc_client.client import VncClient
from simulators.vnc_api.runner import run_in_background

CLUSTER = "bench"


def policy(name: str) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"namespace": "shop", "name": name},
            "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]}}


def wait(predicate: Callable[[], bool], timeout: float, what: str, step: float = 0.05) -> float:
    """Poll until true; the time it took."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(step)
    return time.monotonic() - started


class Daemon:
    def __init__(self, kube_port: int, vnc_port: int, silence: float) -> None:
        handle, self.config = tempfile.mkstemp(suffix=".conf")
        with os.fdopen(handle, "w") as stream:
            stream.write(f"[DEFAULTS]\nhttp_server_ip = 127.0.0.1\nhttp_server_port = 0\nkube_timer_interval = 3600\n"
                         f"[KUBERNETES]\ncluster_name = {CLUSTER}\nkubernetes_api_server = 127.0.0.1\n"
                         f"kubernetes_api_port = {kube_port}\nwatch_silence_timeout = {silence}\nleader_elect = false\n"
                         f"[VNC]\nvnc_endpoint_ip = 127.0.0.1\nvnc_endpoint_port = {vnc_port}\n")
        self.proc = subprocess.Popen([sys.executable, "-m", "kube_manager", "run", "-c", self.config],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: List[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def url(self) -> str:
        wait(lambda: any("introspect server listening on " in l for l in self.lines), 60, "introspect")
        line = next(l for l in self.lines if "introspect server listening on " in l)
        return line.split("introspect server listening on ")[1].split()[0].strip('"')

    def silent_restarts(self, base: str) -> float:
        with urllib.request.urlopen(base + "/metrics", timeout=10) as answer:
            text = answer.read().decode()
        return sum(float(m) for m in re.findall(r'kube_manager_watch_restarts_total\{[^}]*reason="silent"[^}]*\} (\S+)', text))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)
        os.unlink(self.config)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--silence", type=float, default=60.0, help="watch_silence_timeout (default 60)")
    parser.add_argument("--bookmark-interval", type=float, default=60.0, help="emulator bookmarks (default 60)")
    parser.add_argument("--idle", type=float, default=130.0, help="quiet seconds before the stall")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    vnc = run_in_background()
    kube = EmulatorRunner(bookmark_interval=args.bookmark_interval, progress_interval=args.bookmark_interval).start()
    kube.store.create({"kind": "Namespace", "metadata": {"name": "shop"}})
    client = VncClient([vnc.host], vnc.port)
    in_contrail = lambda name: any(  # noqa: E731
        fp["fq_name"][-1] == f"{CLUSTER}-shop-{name}" for fp in client.list("firewall-policy"))
    daemon = Daemon(int(kube.url.rsplit(":", 1)[1]), vnc.port, args.silence)
    results = []
    try:
        base = daemon.url()
        kube.store.create(policy("warm-up"))
        wait(lambda: in_contrail("warm-up"), 120, "convergence")
        baseline = []
        for run in range(args.runs):
            name = f"baseline-{run}"
            kube.store.create(policy(name))
            baseline.append(wait(lambda: in_contrail(name), 120, name))
            before = daemon.silent_restarts(base)
            time.sleep(args.idle)  # a quiet cluster: the watches live on bookmarks alone
            idle_restarts = daemon.silent_restarts(base) - before
            name = f"stalled-{run}"
            frozen = kube.store.freeze_watches()
            kube.store.create(policy(name))
            seconds = wait(lambda: in_contrail(name), 10 * args.silence + 60, name)
            results.append({"stalled_watches": frozen, "change_reached_contrail_s": round(seconds, 2),
                            "silent_restarts_while_idle": idle_restarts})
        print(json.dumps({"silence_timeout": args.silence, "bookmark_interval": args.bookmark_interval,
                          "idle_s": args.idle, "baseline_s": [round(b, 3) for b in baseline],
                          "runs": results, "silent_restarts_total": daemon.silent_restarts(base)}, indent=1))
    finally:
        daemon.stop()
        kube.stop()
        vnc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
