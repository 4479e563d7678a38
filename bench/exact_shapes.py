#!/usr/bin/env python3
"""Cluster dumps that stress the `kubernetes` mode's pair rules (SPEC 14), deterministic by seed.

- `mix`: the random team-based mix. Every namespace (labelled with one of `--teams` teams) has four
  pods and three NetworkPolicies isolating both ways (one selects every pod, two an app); each
  policy has one ingress and one egress TCP rule whose peer is, at random, a pod selector, a team's
  namespaces, or both. Egress meets ingress across namespaces, so this is where pairs multiply.
  With `--running N` each namespace runs pods of N of the four apps only (the same policies), so
  that some policies select no pod and some peers match none.
- `egress`: the egress-heavy shape. Every namespace is isolated both ways with DNS egress to
  kube-system; each namespace's `client` app may reach the next namespace's `server` app on TCP
  8080, and each `server` admits the namespaces of its team on TCP 8080. The output is linear;
  a translator that meets every egress rule with every ingress rule is not.

Both are one JSON `List`, what `contrail-kube-manager translate -f DUMP` reads.

    python bench/exact_shapes.py mix /tmp/mix-200.json --namespaces 200 [--seed 1] [--running 2]
    python bench/exact_shapes.py egress /tmp/egress-500.json --namespaces 500
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from typing import Any, Dict, List

APPS = ("web", "api", "db", "cache")
DNS = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
       "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}


def _namespace(name: str, labels: Dict[str, str]) -> Dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _pod(namespace: str, name: str, labels: Dict[str, str], address: int) -> Dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "status": {"podIP": f"10.{address >> 16 & 255}.{address >> 8 & 255}.{address & 255}"}}


def _policy(namespace: str, name: str, spec: Dict[str, Any]) -> Dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _kube_system() -> List[Dict[str, Any]]:
    return [_namespace("kube-system", {"kubernetes.io/metadata.name": "kube-system"}),
            _pod("kube-system", "coredns", {"k8s-app": "kube-dns"}, 0xFF0002)]


def _dump(items: List[Dict[str, Any]]) -> Dict[str, Any]:
    order = {"Namespace": 0, "Pod": 1, "NetworkPolicy": 2}
    items.sort(key=lambda item: order[item["kind"]])
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


MIX_PORTS = (80, 443, 8080)  # the mix's rules pick one each


def random_mix(namespaces: int, seed: int = 1, teams: int = 5, running: int = len(APPS)) -> Dict[str, Any]:
    """The random team-based mix (module docstring); `running`: how many of the apps each
    namespace runs a pod of (drawn apart, so the policies are the same whatever it is)."""
    rng = random.Random(seed)
    runs = random.Random(f"{seed}-running")
    items = _kube_system()
    for i in range(namespaces):
        ns = f"ns-{i:04d}"
        items.append(_namespace(ns, {"kubernetes.io/metadata.name": ns, "team": f"t{i % teams}"}))
        apps = APPS if running >= len(APPS) else runs.sample(APPS, running)
        items += [_pod(ns, f"{app}-0", {"app": app}, 4 * i + j) for j, app in enumerate(APPS) if app in apps]

    def peer() -> Dict[str, Any]:
        kind = rng.choice(("pods", "team", "both"))
        found: Dict[str, Any] = {}
        if kind in ("team", "both"):
            found["namespaceSelector"] = {"matchLabels": {"team": f"t{rng.randrange(teams)}"}}
        if kind in ("pods", "both"):
            found["podSelector"] = {"matchLabels": {"app": rng.choice(APPS)}}
        return found

    for i in range(namespaces):
        ns = f"ns-{i:04d}"
        for k in range(3):
            own = {} if k == 0 else {"matchLabels": {"app": rng.choice(APPS)}}
            items.append(_policy(ns, f"np-{k}", {
                "podSelector": own, "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [peer()], "ports": [{"protocol": "TCP", "port": rng.choice(MIX_PORTS)}]}],
                "egress": [{"to": [peer()], "ports": [{"protocol": "TCP", "port": rng.choice(MIX_PORTS)}]}]}))
    return _dump(items)


def egress_heavy(namespaces: int, teams: int = 20) -> Dict[str, Any]:
    """The egress-heavy shape (module docstring)."""
    items = _kube_system()
    for i in range(namespaces):
        ns, following = f"app-{i:05d}", f"app-{(i + 1) % namespaces:05d}"
        items.append(_namespace(ns, {"kubernetes.io/metadata.name": ns, "team": f"t{i % teams}"}))
        items += [_pod(ns, role, {"role": role}, 2 * i + j) for j, role in enumerate(("client", "server"))]
        items += [
            _policy(ns, "default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "egress": [{
                "to": [DNS], "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}]}),
            _policy(ns, "client-out", {"podSelector": {"matchLabels": {"role": "client"}}, "policyTypes": ["Egress"],
                                       "egress": [{"to": [{"namespaceSelector": {"matchLabels": {
                                           "kubernetes.io/metadata.name": following}},
                                           "podSelector": {"matchLabels": {"role": "server"}}}],
                                           "ports": [{"port": 8080}]}]}),
            _policy(ns, "server-in", {"podSelector": {"matchLabels": {"role": "server"}}, "ingress": [{
                "from": [{"namespaceSelector": {"matchLabels": {"team": f"t{i % teams}"}}}],
                "ports": [{"port": 8080}]}]}),
        ]
    return _dump(items)


SHAPES = {"mix": random_mix, "egress": egress_heavy}


def write(shape: str, path: str, namespaces: int, seed: int = 1, running: int = len(APPS)) -> None:
    dump = random_mix(namespaces, seed, running=running) if shape == "mix" else egress_heavy(namespaces)
    with open(path, "w", encoding="utf-8") as stream:
        json.dump(dump, stream)
        stream.write("\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shape", choices=list(SHAPES))
    parser.add_argument("path")
    parser.add_argument("--namespaces", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1, help="the random mix's seed")
    parser.add_argument("--running", type=int, default=len(APPS), help="the random mix's apps run per namespace")
    args = parser.parse_args()
    write(args.shape, args.path, args.namespaces, args.seed, args.running)
    print(f"{args.path}: {os.path.getsize(args.path) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
