#!/usr/bin/env python
"""How long the daemon takes to converge around a poisoned object (SPEC 7, issue 8).

Runs `contrail-kube-manager run --demo DIR --once` (embedded config API, emulated API server) on
`examples/demo` as it is and on `examples/demo` plus one poisoned NetworkPolicy in the initial list
(`policyTypes: [["Ingress"]]`, which once stalled the daemon until some later event), alternating
the two, and prints per variant the median and best time from start to the `converged` line, from
the `initial lists done` line to it, and the exit statuses. The two should be equal: the poisoned
policy is rejected and nothing waits for it.

    python bench/bench_confinement.py [--runs 5]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "demo")
POISONED = """apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: aa-poisoned, namespace: shop, uid: 0b8e1d2c-0009-4f00-8000-000000000001}
spec:
  podSelector: {}
  policyTypes: [[Ingress]]
"""
Run = Tuple[int, Optional[float], Optional[float]]  # exit status, start->converged, lists->converged


def once(demo: str, timeout: float) -> Run:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "kube_manager", "run", "--demo", demo, "--once"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    lists = converged = None
    assert proc.stderr is not None
    for line in proc.stderr:
        if lists is None and "initial lists done" in line:
            lists = time.monotonic()
        if "msg=converged" in line:
            converged = time.monotonic()
        if time.monotonic() - started > timeout:
            proc.kill()
            break
    status = proc.wait()
    return (status, None if converged is None else converged - started,
            None if converged is None or lists is None else converged - lists)


def summary(runs: List[Run]) -> str:
    def figure(values: List[Optional[float]]) -> str:
        done = [v for v in values if v is not None]
        if not done:
            return "never"
        return f"median {statistics.median(done):.2f} s, best {min(done):.2f} s ({len(done)}/{len(values)})"
    return (f"start->converged {figure([r[1] for r in runs])}; lists->converged {figure([r[2] for r in runs])};"
            f" exit statuses {sorted({r[0] for r in runs})}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each variant (default 5)")
    parser.add_argument("--timeout", type=float, default=60.0, help="give up on one run after this (s)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-confinement-")
    try:
        variants: Dict[str, str] = {"demo": os.path.join(work, "demo"), "demo + poisoned": os.path.join(work, "poisoned")}
        for path in variants.values():
            shutil.copytree(DEMO, path)
        with open(os.path.join(variants["demo + poisoned"], "poisoned.yaml"), "w") as stream:
            stream.write(POISONED)
        results: Dict[str, List[Run]] = {name: [] for name in variants}
        for _ in range(args.runs):
            for name, path in variants.items():
                results[name].append(once(path, args.timeout))
        for name, runs in results.items():
            print(f"{name:16} {summary(runs)}")
        print(f"load average {os.getloadavg()[0]:.1f} (the machine has {os.cpu_count()} cores)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
