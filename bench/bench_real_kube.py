#!/usr/bin/env python
"""The daemon against a real kube-apiserver beside the emulator (`bench_daemon.py --real-kube`).

For each server, a fresh embedded config API and `contrail-kube-manager run` as a real process (the
e2e and realkube rigs: tests/support/e2e_support.py, tests/support/real_cluster.py), over a cluster
of NAMESPACES namespaces and POLICIES NetworkPolicies (no pods: the policies' objects are the work)
created before the daemon starts; the real server's through its API, as its administrator, the
daemon reading as the restricted identity. Reported:

- cold start: from the daemon's launch to its last config API write, once converged on `translate`
  of what the server holds (the process start, the lists, the translation and the writes);
- one NetworkPolicy event to its last write: a new policy created through the server's API at a
  time, `--events` of them, p50 and p99 (the write times are the config API's, so the polls of the
  bench do not enter them).

    python bench/bench_real_kube.py [--policies 750] [--namespaces 15] [--events 20] [--control-plane DIR]

`--control-plane DIR` uses a control plane already up (`tools/control-plane up --dir DIR`); without
it one is started and stopped. The figures depend on the machine's load: compare the two servers
of one run.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))  # tests/ as a package

from kube_manager.offline.manifests import Manifests  # noqa: E402
from tests.support.builders import allow_from, namespace, policy  # noqa: E402
from tests.support.control_plane_support import RealKube, run_tool  # noqa: E402
from tests.support.e2e_support import Environment  # noqa: E402
from tests.support.real_cluster import RealCluster, client_errors  # noqa: E402
from tests.support.reconciler_support import expected_objects  # noqa: E402
from tests.support.waiting import wait_until  # noqa: E402
from tools.control_plane.env_file import read_env  # noqa: E402

CONVERGE = 900.0  # seconds: a loaded machine, the largest cluster asked
POLL = 0.25


def cluster_objects(policies: int, namespaces: int) -> List[Dict[str, Any]]:
    spaces = [namespace(f"bench-{n}", team=f"team-{n % 5}") for n in range(namespaces)]
    rules = [policy(f"bench-{i % namespaces}", f"np-{i}", allow_from(f"app-{i % 40}", f"app-{(i + 7) % 40}",
                                                                     8000 + i % 200))
             for i in range(policies)]
    return spaces + rules


def last_write(env: Any) -> float:
    return max(env.vnc.counters.last_write_by_agent().values(), default=0.0)


def settled(env: Any, policies: int) -> None:
    """Polls cheaply (the count of firewall policies, every POLL seconds) until the daemon wrote as
    many as `translate` makes, then checks convergence once: a test's tight poll, translating the
    whole cluster each time, would take the CPU the daemon measured needs."""
    wait_until(lambda: len(env.contrail.owned().get("firewall-policy", {})) >= policies,
               f"{policies} firewall policies", CONVERGE, sleep=lambda _: time.sleep(POLL))
    env.wait_converged(CONVERGE)


def measure(env: Any, start: Any, events: int) -> Dict[str, Any]:
    policies = len(expected_objects(env.translation())["firewall-policy"])
    launched = time.time()
    daemon = start()
    settled(env, policies)
    cold = last_write(env) - launched
    latencies = []
    for i in range(events):
        created = time.time()
        env.apply(policy("bench-0", f"event-{i}", allow_from("app-1", f"event-{i}", 9000 + i)))
        settled(env, policies + i + 1)
        latencies.append(last_write(env) - created)
    assert daemon.stop() == 0
    refused = client_errors(daemon.log())
    assert not refused, refused[:3]
    return {"cold_start_s": round(cold, 2), "event_p50_ms": round(statistics.median(latencies) * 1000, 1),
            "event_p99_ms": round(sorted(latencies)[math.ceil(len(latencies) * 0.99) - 1] * 1000, 1)}


def emulator(objects: List[Dict[str, Any]], events: int) -> Dict[str, Any]:
    env = Environment(Manifests({"Namespace": [o for o in objects if o["kind"] == "Namespace"],
                                 "NetworkPolicy": [o for o in objects if o["kind"] == "NetworkPolicy"]}))
    try:
        return measure(env, lambda: env.start_daemon("--leader-elect", "false"), events)
    finally:
        env.close()


def real(folder: Path, objects: List[Dict[str, Any]], events: int) -> Dict[str, Any]:
    env = RealCluster(RealKube(folder, read_env(folder)))
    try:
        made = time.time()
        env.apply(*objects)
        print(f"real server: {len(objects)} objects created in {time.time() - made:.1f} s", file=sys.stderr)
        return measure(env, env.start_daemon, events)
    finally:
        env.close()


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", type=int, default=750)
    parser.add_argument("--namespaces", type=int, default=15)
    parser.add_argument("--events", type=int, default=20, help="single-NetworkPolicy events timed per server")
    parser.add_argument("--control-plane", help="the folder of a control plane already up")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    objects = cluster_objects(args.policies, args.namespaces)
    results = {"policies": args.policies, "namespaces": args.namespaces,
               "emulator": emulator(objects, args.events)}
    folder = Path(args.control_plane) if args.control_plane else Path(tempfile.mkdtemp(prefix="bench-cp-")) / "cp"
    if not args.control_plane:
        up = run_tool("up", "--dir", str(folder), timeout=1800)
        if up.returncode != 0:
            raise SystemExit(f"tools/control-plane up failed:\n{up.stdout}{up.stderr}")
    try:
        results["real"] = real(folder, objects, args.events)
    finally:
        if not args.control_plane:
            run_tool("down", "--dir", str(folder))
    if args.json:
        print(json.dumps(results))
        return 0
    print(f"{args.policies} NetworkPolicies in {args.namespaces} namespaces, {args.events} events")
    print(f"{'server':<10} {'cold start':>11} {'event p50':>10} {'event p99':>10}")
    for server in ("emulator", "real"):
        r = results[server]
        print(f"{server:<10} {r['cold_start_s']:>9.2f} s {r['event_p50_ms']:>7.1f} ms {r['event_p99_ms']:>7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
