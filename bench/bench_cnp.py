#!/usr/bin/env python3
"""ClusterNetworkPolicy benchmark (SPEC 13): how many rules the subtraction emits, and what one
policy change costs in the incremental translator.

1. Rules: each upstream conformance base policy (a checkout's `conformance/base`, `--upstream`)
   translated alone on the four houses of examples/cnp/cluster.yaml; then the worst case: K Pass
   rules, each on its own subject label, its own peer label and its own port, followed by one Deny
   of everything. Each Pass overlaps the Deny and every piece left so far partly in all three
   dimensions, so each one splits every piece into three (subject outside it, peer outside it,
   ports outside it): about 3^K pieces of TCP, UDP and SCTP ranges, plus every other IP protocol
   (one rule per protocol number, 253), which the Passes do not touch. Past 4,096 firewall rules
   from one written rule, the Deny is emitted whole (fail closed).
2. Time: a bench_translate cluster (`--namespaces`, 4 pods and 3 NetworkPolicies each) with 20
   Admin and 5 Baseline policies; the median time of one Admin policy change as
   `upsert` + `flush`: its priority moved (to the end of the tier and back), or
   its rules swapped (its Deny first and back: a piece "every pod but its team's" comes or goes, a
   selector tag on every pod of the cluster); and of one pod change when a tier resolves a named
   port (such a tier is re-rendered on pod changes).

    python bench/bench_cnp.py --upstream /path/to/network-policy-api/conformance/base
"""
from __future__ import annotations

import argparse
import copy
import logging
import os
import re
import statistics
import sys
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))
sys.path.insert(0, HERE)

from bench_translate import cluster  # noqa: E402
from kube_manager.offline.manifests import Manifests, load_manifests, parse_documents  # noqa: E402
from kube_manager.translator import ClusterTranslator, translate  # noqa: E402

HOUSES = os.path.join(HERE, os.pardir, "examples", "cnp", "cluster.yaml")
HOST_PORT = re.compile(r"\{\{ index \.HostNetworkPorts (\d) \}\}")


def cnp(name: str, tier: str, priority: int, subject: Dict[str, Any], **rules: Any) -> Dict[str, Any]:
    return {"kind": "ClusterNetworkPolicy", "metadata": {"name": name},
            "spec": {"tier": tier, "priority": priority, "subject": subject, **rules}}


def cnp_rules(result: Dict[str, Any]) -> int:
    return sum(1 for rule in result["firewall_rules"] if rule["fq_name"][-1].startswith("k8s--"))


def upstream_counts(directory: str) -> None:
    houses = load_manifests([HOUSES])
    for root, _, names in sorted(os.walk(directory)):
        for name in sorted(names):
            if not name.endswith(".yaml") or name == "manifests.yaml":
                continue
            with open(os.path.join(root, name), encoding="utf-8") as stream:  # Go templates: host ports
                text = HOST_PORT.sub(lambda m: str(34345 + int(m.group(1))), stream.read())
            manifests = Manifests()
            for document in parse_documents(text.encode(), name):
                if isinstance(document, dict):
                    manifests.add(document)
            if not manifests.objects["ClusterNetworkPolicy"]:
                continue
            result = translate({"Namespace": houses.objects["Namespace"],
                                "Pod": houses.objects["Pod"],
                                "NetworkPolicy": manifests.objects["NetworkPolicy"],
                                "ClusterNetworkPolicy": manifests.objects["ClusterNetworkPolicy"]}).to_dict()
            written = sum(len(p["spec"].get("ingress") or ()) + len(p["spec"].get("egress") or ())
                          for p in manifests.objects["ClusterNetworkPolicy"])
            print(f"  {os.path.relpath(os.path.join(root, name), directory)}: {written} rules written,"
                  f" {cnp_rules(result)} firewall rules")


def worst_case(passes: int) -> Dict[str, Any]:
    """K Pass rules each overlapping the final Deny, and each other, partly in subject, peer and
    ports (independent labels, distinct ports): every piece meets every later Pass."""
    houses = load_manifests([HOUSES])
    rules: List[Dict[str, Any]] = [
        {"action": "Pass",
         "from": [{"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {f"peer-{i}": "y"}}}}],
         "protocols": [{"tcp": {"destinationPort": {"number": 1000 + i}}}]} for i in range(passes)]
    rules.append({"action": "Deny", "from": [{"namespaces": {}}]})
    subjects = [{"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {f"subject-{i}": "y"}}}}
                for i in range(passes)]
    policies = [cnp(f"pass-{i}", "Admin", 1, subjects[i], ingress=[rules[i]]) for i in range(passes)]
    policies.append(cnp("deny", "Admin", 2, {"namespaces": {}}, ingress=[rules[-1]]))
    started = time.perf_counter()
    result = translate({"Namespace": houses.objects["Namespace"],
                        "Pod": houses.objects["Pod"],
                        "ClusterNetworkPolicy": policies}).to_dict()
    return {"rules": cnp_rules(result), "seconds": round(time.perf_counter() - started, 3),
            "errors": [e["reason"][:60] for e in result["errors"]]}


def policies(teams: int) -> List[Dict[str, Any]]:
    found = []
    for i in range(20):
        team = {"namespaces": {"matchLabels": {"team": f"team-{i % teams}"}}}
        found.append(cnp(f"admin-{i}", "Admin", 10 + i, team, ingress=[
            {"action": "Accept", "from": [team], "protocols": [{"tcp": {"destinationPort": {"number": 80}}}]},
            {"action": "Pass", "from": [{"namespaces": {"matchLabels": {"env": "prod"}}}],
             "protocols": [{"destinationNamedPort": "http"}] if i == 0 else [{"tcp": {"destinationPort": {"number": 443}}}]},
            {"action": "Deny", "from": [{"namespaces": {}}]}]))
    for i in range(5):
        found.append(cnp(f"baseline-{i}", "Baseline", i, {"namespaces": {"matchLabels": {"team": f"team-{i}"}}},
                         ingress=[{"action": "Deny", "from": [{"namespaces": {"matchLabels": {"team": f"team-{i + 1}"}}}]}]))
    return found


def timed(action: Any, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def change_times(namespaces: int, runs: int) -> Dict[str, float]:
    manifests = cluster(namespaces)
    translator = ClusterTranslator()
    for namespace in manifests["namespaces"]:
        translator.upsert("Namespace", namespace)
    for pod in manifests["pods"]:
        translator.upsert("Pod", pod)
    for policy in manifests["policies"]:
        translator.upsert("NetworkPolicy", policy)
    cluster_policies = policies(50)
    for policy in cluster_policies:
        translator.upsert("ClusterNetworkPolicy", policy)
    started = time.perf_counter()
    translator.flush()
    first = time.perf_counter() - started
    state = {"n": 0}

    def change(variants: List[Dict[str, Any]]) -> Any:
        def apply() -> None:
            state["n"] += 1
            translator.upsert("ClusterNetworkPolicy", copy.deepcopy(variants[state["n"] % 2]))
            translator.flush()
        return apply

    moved = [copy.deepcopy(cluster_policies[5]) for _ in range(2)]
    moved[1]["spec"]["priority"] = 100  # from the middle of the tier to its end and back
    swapped = [copy.deepcopy(cluster_policies[5]) for _ in range(2)]
    swapped[1]["spec"]["ingress"] = list(reversed(swapped[1]["spec"]["ingress"]))  # Deny first, and back

    pod = copy.deepcopy(manifests["pods"][0])

    def pod_change() -> None:
        state["n"] += 1
        pod["metadata"]["labels"]["version"] = f"v{state['n']}"
        translator.upsert("Pod", pod)
        translator.flush()

    return {"first_flush_s": round(first, 3), "priority_change_ms": round(timed(change(moved), runs), 1),
            "rules_swapped_ms": round(timed(change(swapped), runs), 1), "pod_change_ms": round(timed(pod_change, runs), 1),
            "pods": len(manifests["pods"]), "network_policies": len(manifests["policies"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", help="a network-policy-api checkout's conformance/base directory")
    parser.add_argument("--worst", type=int, nargs="*", default=[1, 2, 4, 6, 7, 8], help="Pass rules before the Deny")
    parser.add_argument("--namespaces", type=int, default=2_500)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the fail-closed reports of the upstream policies
    if args.upstream and not os.path.isdir(args.upstream):
        parser.error(f"--upstream: {args.upstream} is not a directory")
    if args.upstream:
        print("upstream conformance policies, each on the four houses:")
        upstream_counts(args.upstream)
    print("worst case (K Pass rules, then Deny all):")
    for passes in args.worst:
        print(f"  K={passes}: {worst_case(passes)}")
    print(f"one change at {args.namespaces} namespaces: {change_times(args.namespaces, args.runs)}")


if __name__ == "__main__":
    main()
