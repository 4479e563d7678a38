#!/usr/bin/env python
"""Soak: random operator changes on the random team mix (exact_shapes.py), through the daemon's
path, and whether what it wants written and its work queue stay bounded.

The path is `bench_reconcile.py`'s: `EventDispatcher` (records + incremental translator) ->
`Reconciler` -> `VncClient` over HTTP -> the embedded config API in a process of its own (every pod's
VM and VMI made first, as the CNI would). After the cold start converges, `--rate` changes a second
for `--seconds`, each one of, at random: a NetworkPolicy's ingress or egress peer and port redrawn
(as the mix draws them), a namespace moved to another team, a pod relabelled to another app, a pod
deleted, a new pod (its VMI made first) in a namespace. Each second it prints the desired objects,
the pair rules of those, the reconciler's queue and the keys not yet settled; at the end, how long
the last change took to converge.

    python bench/soak_changes.py [--namespaces 100] [--seconds 60] [--rate 5] [--running 4]
                                 [--semantics kubernetes|cluster-wide] [--seed 1]
"""
from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402 - after monkey-patching, on purpose
import copy  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Any, Dict, List  # noqa: E402

import gevent  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import exact_shapes  # noqa: E402
from bench_reconcile import attach_vmi, feed, populate_vmis  # noqa: E402
from bench_vnc_client import embedded_server  # noqa: E402
from kube_manager.offline.manifests import Manifests  # noqa: E402
from kube_manager.service.pipeline import build_pipeline  # noqa: E402
from kube_manager.settings import ReconcilerSettings  # noqa: E402
from kube_manager.translator import translate  # noqa: E402
from kube_manager.translator.exact.pairs import pair_rule_prefix  # noqa: E402
from vnc_client.client import VncClient  # noqa: E402


def with_uids(dump: Dict[str, Any]) -> Manifests:
    """The mix as the loader holds it, every pod with a uid (its VM's uuid)."""
    objects: Dict[str, List[Dict[str, Any]]] = {"Namespace": [], "Pod": [], "NetworkPolicy": []}
    for i, item in enumerate(dump["items"]):
        if item["kind"] == "Pod":
            item["metadata"]["uid"] = f"00000000-0000-4000-8000-{i:012d}"
        objects[item["kind"]].append(item)
    return Manifests(objects)


class Changes:
    """Random operator changes on a cluster (module docstring), as watch events."""

    def __init__(self, cluster: Manifests, seed: int, client: VncClient, teams: int = 5) -> None:
        self.rng = random.Random(seed)
        self.client = client
        self.teams = teams
        self.policies = {(p["metadata"]["namespace"], p["metadata"]["name"]): p
                         for p in cluster.objects["NetworkPolicy"]}
        self.namespaces = {n["metadata"]["name"]: n for n in cluster.objects["Namespace"]
                           if n["metadata"]["name"] != "kube-system"}
        self.pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in cluster.objects["Pod"]
                     if p["metadata"]["namespace"] != "kube-system"}
        self.made = 0

    def final(self, cluster: Manifests) -> Dict[str, List[Dict[str, Any]]]:
        """The cluster as the changes left it (kube-system as it was)."""
        system = [item for kind in ("Namespace", "Pod") for item in cluster.objects[kind]
                  if item["metadata"].get("namespace", item["metadata"]["name"]) == "kube-system"]
        return {"Namespace": [n for n in system if n["kind"] == "Namespace"] + list(self.namespaces.values()),
                "Pod": [p for p in system if p["kind"] == "Pod"] + list(self.pods.values()),
                "NetworkPolicy": list(self.policies.values())}

    def peer(self) -> Dict[str, Any]:
        kind = self.rng.choice(("pods", "team", "both"))
        found: Dict[str, Any] = {}
        if kind in ("team", "both"):
            found["namespaceSelector"] = {"matchLabels": {"team": f"t{self.rng.randrange(self.teams)}"}}
        if kind in ("pods", "both"):
            found["podSelector"] = {"matchLabels": {"app": self.rng.choice(exact_shapes.APPS)}}
        return found

    def next(self) -> List[tuple]:
        """One change: its (resource, event type, object) events."""
        what = self.rng.choice(("policy", "namespace", "relabel", "delete", "create"))
        if what == "policy":
            key = self.rng.choice(sorted(self.policies))
            manifest = self.policies[key] = copy.deepcopy(self.policies[key])
            block = manifest["spec"][self.rng.choice(("ingress", "egress"))][0]
            block["from" if "from" in block else "to"] = [self.peer()]
            block["ports"] = [{"protocol": "TCP", "port": self.rng.choice((80, 443, 8080))}]
            return [("networkpolicies", "MODIFIED", manifest)]
        if what == "namespace":
            name = self.rng.choice(sorted(self.namespaces))
            manifest = self.namespaces[name] = copy.deepcopy(self.namespaces[name])
            manifest["metadata"]["labels"]["team"] = f"t{self.rng.randrange(self.teams)}"
            return [("namespaces", "MODIFIED", manifest)]
        if what in ("relabel", "delete") and self.pods:
            key = self.rng.choice(sorted(self.pods))
            if what == "delete":
                return [("pods", "DELETED", self.pods.pop(key))]
            manifest = self.pods[key] = copy.deepcopy(self.pods[key])
            manifest["metadata"]["labels"] = {"app": self.rng.choice(exact_shapes.APPS)}
            return [("pods", "MODIFIED", manifest)]
        namespace = self.rng.choice(sorted(self.namespaces))
        self.made += 1
        manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"new-{self.made}", "namespace": namespace, "uid": f"00000000-0000-4000-9000-{self.made:012d}",
            "labels": {"app": self.rng.choice(exact_shapes.APPS)}},
            "status": {"podIP": f"10.200.{self.made // 256 % 256}.{self.made % 256}"}}
        attach_vmi(self.client, manifest)
        self.pods[(namespace, manifest["metadata"]["name"])] = manifest
        return [("pods", "ADDED", manifest)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=5.0, help="changes per second")
    parser.add_argument("--running", type=int, default=len(exact_shapes.APPS))
    parser.add_argument("--semantics", default="kubernetes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    cluster = with_uids(exact_shapes.random_mix(args.namespaces, args.seed, running=args.running))
    prefix = pair_rule_prefix("k8s")
    with embedded_server("process", 0.0) as server:
        populate_vmis(server.url, cluster)
        pipeline = build_pipeline("k8s", "k8s", semantics=args.semantics)
        translator = pipeline.translator
        with VncClient(server.url, concurrency=args.concurrency) as client:
            reconciler = pipeline.connect(client, ReconcilerSettings(concurrency=args.concurrency))
            started = time.perf_counter()
            feed(pipeline.cache, cluster)
            reconciler.start()
            reconciler.resync()
            if not reconciler.wait_converged(600):
                print("the cold start did not converge in 600 s")
                return 1
            print(f"cold start: {time.perf_counter() - started:.1f} s, {args.namespaces} namespaces, "
                  f"{args.semantics}, {args.rate:g} changes/s for {args.seconds:g} s")
            print(f"{'s':>5} {'changes':>7} {'desired':>8} {'pair rules':>10} {'queue':>6} {'unsettled':>9}")
            changes = Changes(cluster, args.seed + 1, client)
            started = time.perf_counter()
            made, next_report, peak_desired, peak_queue = 0, 0.0, 0, 0
            while True:
                elapsed = time.perf_counter() - started
                if elapsed >= next_report:
                    desired = translator.desired()
                    total = sum(len(objects) for objects in desired.values())
                    pairs = sum(fq[-1].startswith(prefix) for fq in desired.get("firewall-rule", {}))
                    queued = len(reconciler.queue)
                    peak_desired, peak_queue = max(peak_desired, total), max(peak_queue, queued)
                    print(f"{elapsed:>5.0f} {made:>7} {total:>8,} {pairs:>10,} {queued:>6,} "
                          f"{len(reconciler.unsettled(100_000)):>9,}")
                    next_report += 1.0
                if elapsed >= args.seconds:
                    break
                for resource, event_type, obj in changes.next():
                    pipeline.cache.on_event(resource, event_type, obj)
                made += 1
                gevent.sleep(max(0.0, made / args.rate - (time.perf_counter() - started)))
            last = time.perf_counter()
            converged = reconciler.wait_converged(600)
            print(f"peak desired {peak_desired:,}, peak queue {peak_queue:,}; the last change "
                  f"{'converged' if converged else 'did NOT converge'} {time.perf_counter() - last:.2f} s later")
            fresh = translate(changes.final(cluster), semantics=args.semantics).to_dict()
            kept = sum(len(objects) for objects in translator.desired().values())
            listed = sum(len(fresh[name]) for name in ("tags", "address_groups", "firewall_rules", "firewall_policies"))
            print(f"desired at the end {kept:,}; a translation of the final cluster from scratch {listed + 1:,}")
            reconciler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
