#!/usr/bin/env python
"""Leader election: failover after SIGKILL, handover after SIGTERM, and writes by standbys.

Each round starts three `contrail-kube-manager run` processes against one emulated Kubernetes API
server and one embedded config API (both in this process, as in the e2e tests), waits for one
leader and convergence, then
- SIGKILLs the leader, changes a NetworkPolicy while nobody leads, and measures the failover: from
  the signal to the start of the winning attempt of the next leader (the Lease's `acquireTime`), and
  to the moment the config API matches the cluster again (the new leader's start-up resync);
- SIGTERMs that new leader and measures the handover: from the signal, and from the release (the
  old leader's "lease released" log line), to the third instance's `acquireTime`.
The config API server counts writes per daemon (User-Agent = election identity); an instance that
never led must have written nothing.

    PYTHONPATH=. python bench/bench_failover.py [--timings short,default] [--rounds 2]

`short` is lease 3 s / renew deadline 2 s / retry 0.5 s (the tests' timings), `default` client-go's
15 / 10 / 2. Figures move with the machine's load; the bounds to compare with are lease + 2 retry
periods (failover) and about one retry period (handover).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))  # tests/ as a package

from kube_manager.offline.manifests import Manifests  # noqa: E402
from tests.support.builders import HTTP_8080, allow_from, namespace, pod, policy  # noqa: E402
from tests.support.leader_support import DEFAULT, SHORT, ElectionRig, Timings, log_time  # noqa: E402

TIMINGS: Dict[str, Timings] = {"short": SHORT, "default": DEFAULT}
BASE = Manifests({"Namespace": [namespace("shop", team="shop")],
                  "Pod": [pod("shop", f"web-{n}", f"10.1.0.{n + 1}", app="web", ports=HTTP_8080) for n in range(5)]
    + [pod("shop", "api", "10.1.1.1", app="api", ports=HTTP_8080)], "NetworkPolicy": [policy("shop", f"api-from-web-{n}", allow_from("web", "api", 8000 + n)) for n in range(5)]})


@dataclass
class Round:
    timings: str
    failover_s: float            # SIGKILL -> next leader's winning attempt
    failover_converged_s: float  # SIGKILL -> config API matches the cluster again
    handover_s: float            # SIGTERM -> next leader's winning attempt
    handover_after_release_s: float  # lease released -> next leader's winning attempt
    standby_writes: int          # writes by instances while they had never led


def one_round(name: str, timings: Timings) -> Round:
    rig = ElectionRig(BASE, timings)
    try:
        candidates = rig.start(3)
        first = rig.wait_single_leader(timeout=120)
        rig.env.wait_converged(60)
        killed_at = rig.kill(first)
        rig.env.apply(policy("shop", "after-kill", allow_from("api", "web", 80)))
        second = rig.wait_single_leader(among=[c for c in candidates if c is not first], timeout=120)
        failover = rig.takeover_by(second) - killed_at
        rig.env.wait_converged(60)
        converged = time.time() - killed_at
        third = next(c for c in candidates if c not in (first, second))
        never_led = rig.writes_of(third)
        termed_at = rig.terminate(second)
        took_over = rig.takeover_by(third, timeout=120)
        released = log_time(second.process.wait_log("lease released"))
        return Round(name, round(failover, 3), round(converged, 3), round(took_over - termed_at, 3),
                     round(took_over - released, 3), never_led)
    finally:
        rig.close()


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timings", default="short,default", help="comma list of: " + ", ".join(TIMINGS))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.timings.split(",") if n.strip()]
    unknown = [n for n in names if n not in TIMINGS]
    if unknown or args.rounds < 1:
        parser.error(f"unknown timings {unknown}" if unknown else "--rounds must be at least 1")
    rows = []
    for name in names:
        timings = TIMINGS[name]
        results = [one_round(name, timings) for _ in range(args.rounds)]
        for result in results:
            print(json.dumps(asdict(result)), flush=True)
        rows.append((name, timings, results))
    print(f"\n{'timings':<24} {'failover s (bound)':>20} {'to converged s':>15} {'handover s':>11} "
          f"{'after release s':>16} {'standby writes':>15}")
    for name, t, results in rows:
        def median(field: str) -> float:
            return statistics.median(getattr(r, field) for r in results)
        label = f"{name} {t.lease}/{t.renew:g}/{t.retry:g}"
        print(f"{label:<24} {median('failover_s'):>9.2f} ({t.lease + 2 * t.retry:>5.1f})    "
              f"{median('failover_converged_s'):>15.2f} {median('handover_s'):>11.2f} "
              f"{median('handover_after_release_s'):>16.2f} {sum(r.standby_writes for r in results):>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
