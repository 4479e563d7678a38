#!/usr/bin/env python
"""Staged policies benchmark (SPEC 17): what a staged run costs, and whether it delays writes.

1. The run: on a synthetic cluster (`--size` NetworkPolicies:pods, namespaces of 100 pods, as
   `bench_reconcile.synthetic` makes them) with two staged policies, a deny-all NetworkPolicy on
   namespace ns-0 (100 pods) and an Admin ClusterNetworkPolicy whose subject is every namespace,
   `compute_reports` (what the daemon's staged runner runs, with its budget) in a child process of
   its own: its wall time, whether each policy's report is complete (pairs checked of pairs), and
   the child's memory (RSS once the manifests are built, and its peak).
2. Writes: the daemon's path at `--latency-size` (`EventDispatcher` -> `Reconciler` -> `VncClient` over
   HTTP -> the embedded config API in a process of its own), converged, then one new NetworkPolicy
   at a time (`--events`), event -> last write, p50 and p99: first with no staged run, then with
   staged runs going on back to back, each in a forked child, as the runner runs them.

    python bench/bench_staged.py [--size 15000:20000] [--latency-size 1500:6000] [--events 30]
                                 [--budget 30] [--json]

Figures depend on the machine's load (compare the two p99 of one run, not runs of different days).
"""
from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402 - after monkey-patching, on purpose
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Any, Dict, List, Tuple  # noqa: E402

import gevent  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_daemon import Daemon, event_latency, rss_mb  # noqa: E402
from bench_reconcile import policy, populate_vmis, synthetic  # noqa: E402
from bench_vnc_client import embedded_server  # noqa: E402

from kube_manager.plumbing.forked import in_child  # noqa: E402
from kube_manager.service.staged_runner import GRACE, NICE, compute_reports  # noqa: E402
from kube_manager.translator.staged_policies import STAGED_ANNOTATION, staged_keys  # noqa: E402

NAMESPACE_DENY = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                  "metadata": {"name": "staged-deny", "namespace": "ns-0", "uid": "staged-np",
                               "annotations": {STAGED_ANNOTATION: "true"}},
                  "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}
CLUSTER_DENY = {"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy",
                "metadata": {"name": "staged-admin", "uid": "staged-cnp", "annotations": {STAGED_ANNOTATION: "true"}},
                "spec": {"tier": "Admin", "priority": 5, "subject": {"namespaces": {}},
                         "ingress": [{"action": "Deny", "from": [{"namespaces": {"matchLabels": {"team": "team-1"}}}]}]}}


def size(text: str) -> Tuple[int, int]:
    policies, pods = text.split(":")
    return int(policies), int(pods)


def staged_cluster(policies: int, pods: int) -> Dict[str, List[Any]]:
    objects = {kind: list(items) for kind, items in synthetic(policies, pods).objects.items()}
    objects["NetworkPolicy"].append(NAMESPACE_DENY)
    objects["ClusterNetworkPolicy"] = [CLUSTER_DENY]
    return objects


def daemon_order(keys: List[Any]) -> List[Any]:
    """The staged policies in the order the daemon's runner computes them (ClusterTranslator.staged):
    NetworkPolicies, then ClusterNetworkPolicies."""
    return sorted(keys, key=lambda key: (key[0] != "NetworkPolicy", key))


def the_run(policies: int, pods: int, budget: float) -> Dict[str, Any]:
    """In this (child) process: one staged run over the cluster."""
    base = rss_mb()
    objects = staged_cluster(policies, pods)
    built = rss_mb()
    started = time.monotonic()
    reports = compute_reports(objects, daemon_order(staged_keys(objects)), "k8s", "kubernetes", started + budget)
    seconds = time.monotonic() - started
    return {"policies": policies, "pods": pods, "budget_s": budget, "wall_s": round(seconds, 1),
            "reports": [{key: r[key] for key in ("kind", "name", "complete", "pairs", "pairs_checked", "opened", "closed")}
                        for r in reports],
            "memory_mb": {"manifests": round(built - base, 1), "after_manifests": round(built, 1),
                          "peak": round(rss_mb("VmHWM"), 1), "run_peak_over_manifests": round(rss_mb("VmHWM") - built, 1)}}


def writes(policies: int, pods: int, events: int, budget: float) -> Dict[str, Any]:
    """Event -> last write without, then with, staged runs going on."""
    cluster = synthetic(policies, pods)
    objects = staged_cluster(policies, pods)
    keys = daemon_order(staged_keys(objects))
    result: Dict[str, Any] = {"policies": policies, "pods": pods}
    with embedded_server("process", 0.0) as srv:
        populate_vmis(srv.url, cluster)
        daemon = Daemon(srv.url, 16)
        daemon.converge(cluster)
        result["without"] = event_latency(daemon, cluster, events)
        n_namespaces = len(cluster.objects["Namespace"])
        for e in range(events):  # gone again, so that the second round's events are new policies too
            daemon.cache.on_event("networkpolicies", "DELETED", policy(f"ns-{e % n_namespaces}", f"extra-{e}", e))
        if not daemon.reconciler.wait_converged(600):
            raise SystemExit("the first round's policies were not deleted")
        runs: List[float] = []
        stop = gevent.event.Event()

        def staged_runs() -> None:
            while not stop.is_set():
                started = time.monotonic()
                in_child(lambda: compute_reports(objects, keys, "k8s", "kubernetes", started + budget),
                         budget + GRACE, NICE)
                runs.append(time.monotonic() - started)

        runner = gevent.spawn(staged_runs)
        gevent.sleep(0.5)  # the first run under way
        with_runs = event_latency(daemon, cluster, events)
        stop.set()
        runner.join()
        with_runs["staged_runs"] = len(runs)
        with_runs["staged_run_s"] = [round(r, 2) for r in runs]
        result["with_staged_runs"] = with_runs
        daemon.close()
    for side in ("without", "with_staged_runs"):
        for key in ("times_ms", "by_request"):
            result[side].pop(key, None)
    return result


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="15000:20000")
    parser.add_argument("--latency-size", default="1500:6000")
    parser.add_argument("--events", type=int, default=30)
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--run-only", action="store_true", help=argparse.SUPPRESS)  # the child
    args = parser.parse_args(argv)
    if args.run_only:
        print(json.dumps(the_run(*size(args.size), args.budget)))
        return 0
    child = subprocess.run([sys.executable, __file__, "--run-only", "--size", args.size, "--budget", str(args.budget)],
                           check=True, capture_output=True, text=True)
    result = {"run": json.loads(child.stdout.strip().splitlines()[-1])}
    if args.events:
        result["writes"] = writes(*size(args.latency_size), args.events, args.budget)
    print(json.dumps(result, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
