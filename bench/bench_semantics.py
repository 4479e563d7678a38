#!/usr/bin/env python3
"""Firewall rules per NetworkPolicy and translate() time under both policy semantics (SPEC 14).

Shapes: `antrea` (bench_translate.py's cluster), `kubectl` (cluster_dumps.py's busy cluster, as
XLarge's policies look in practice) and `egress` (default deny both ways in every namespace, DNS
egress to kube-system, and application pairs allowed by an egress rule at one end and an ingress
rule at the other: namespace i's `client` pods reach namespace i+1's `server` pods on TCP 8080).
SPEC 14's bound: `kubernetes` emits at most 1.5 times the rules of `cluster-wide`.

    python bench/bench_semantics.py [--namespaces 2500]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from bench_translate import cluster as antrea  # noqa: E402
from cluster_dumps import kubectl_dump  # noqa: E402
from kube_manager.offline.manifests import Manifests  # noqa: E402
from kube_manager.translator import translate  # noqa: E402

BOUND = 1.5


def egress_heavy(namespaces: int) -> Manifests:
    manifests = Manifests()
    manifests.add({"kind": "Namespace", "metadata": {"name": "kube-system"}})
    manifests.add({"kind": "Pod", "metadata": {"name": "dns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
                   "status": {"podIP": "10.255.0.2"}})
    for i in range(namespaces):
        ns, peer = f"app-{i:05d}", f"app-{(i + 1) % namespaces:05d}"
        manifests.add({"kind": "Namespace", "metadata": {"name": ns}})
        for j, role in enumerate(("client", "server")):
            manifests.add({"kind": "Pod", "metadata": {"name": role, "namespace": ns, "labels": {"role": role}},
                           "status": {"podIP": f"10.{i >> 8 & 255}.{i & 255}.{10 + j}"}})
        for name, spec in (
                ("default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "egress": [{
                    "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                    "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}]}),
                ("client-out", {"podSelector": {"matchLabels": {"role": "client"}}, "policyTypes": ["Egress"],
                                "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": peer}},
                                                    "podSelector": {"matchLabels": {"role": "server"}}}],
                                            "ports": [{"port": 8080}]}]}),
                ("server-in", {"podSelector": {"matchLabels": {"role": "server"}}, "ingress": [{
                    "from": [{"namespaceSelector": {"matchLabels": {
                        "kubernetes.io/metadata.name": f"app-{(i - 1) % namespaces:05d}"}},
                        "podSelector": {"matchLabels": {"role": "client"}}}], "ports": [{"port": 8080}]}]})):
            manifests.add({"kind": "NetworkPolicy", "metadata": {"name": name, "namespace": ns}, "spec": spec})
    return manifests


def shapes(namespaces: int) -> Dict[str, Manifests]:
    objects = antrea(namespaces)
    result = {"antrea": Manifests({"Namespace": objects["namespaces"],
                                   "Pod": objects["pods"],
                                   "NetworkPolicy": objects["policies"]})}
    dump = Manifests()
    dump.add(kubectl_dump(max(1, namespaces // 5)))
    result["kubectl"] = dump
    result["egress"] = egress_heavy(namespaces)
    return result


def measure(manifests: Manifests, semantics: str) -> Dict[str, Any]:
    start = time.perf_counter()
    translation = translate(manifests.objects, semantics=semantics)
    seconds = time.perf_counter() - start
    return {"rules": len(translation.firewall_rules), "seconds": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespaces", type=int, default=2500)
    args = parser.parse_args()
    print(f"{'shape':<8} {'policies':>8} {'mode':<13} {'rules':>8} {'rules/NP':>8} {'seconds':>8} {'ratio':>6}")
    failed = False
    for name, manifests in shapes(args.namespaces).items():
        baseline: List[int] = []
        for semantics in ("cluster-wide", "kubernetes"):
            found = measure(manifests, semantics)
            count = len(manifests.objects["NetworkPolicy"])
            ratio = found["rules"] / baseline[0] if baseline else 1.0
            baseline.append(found["rules"])
            failed |= ratio > BOUND
            print(f"{name:<8} {count:>8,} {semantics:<13} {found['rules']:>8,} {found['rules'] / count:>8.2f} "
                  f"{found['seconds']:>8.2f} {ratio:>6.2f}")
    print(f"bound: kubernetes within {BOUND}x the rules of cluster-wide")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
