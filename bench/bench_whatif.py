#!/usr/bin/env python3
"""What-if benchmark: how long `what-if` takes to review one change on a synthetic cluster.

The cluster is bench_translate's shape (per namespace: 4 pods, 3 NetworkPolicies with pod,
namespace and ipBlock peers), 300 namespaces by default (1,200 pods, 900 policies). Three changes
are reviewed, each on its own: a policy added (admit a team's namespaces on TCP 8080), one
replaced (the `db` policy's port), one deleted (a `default-deny`). For each: wall time of the
whole `what_if()` (and its CPU time, apart from a shared machine's preemption; both translations, the pairs with an affected end, every port class), the
pairs checked and the flows that change.

    python bench/bench_whatif.py                 # 300 namespaces
    python bench/bench_whatif.py --namespaces 1000
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_translate import cluster  # noqa: E402
from kube_manager.offline.manifests import Manifests  # noqa: E402
from kube_manager.explain.whatif import DELETE_ANNOTATION, DELETE_VALUE, what_if  # noqa: E402


def changes(objects: Dict[str, List[Dict[str, Any]]]) -> Dict[str, Manifests]:
    target = "ns-00007"
    added = {"kind": "NetworkPolicy", "metadata": {"name": "web-from-team", "namespace": target},
             "spec": {"podSelector": {"matchLabels": {"app": "web"}},
                      "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "team-3"}}}],
                                   "ports": [{"port": "http"}]}]}}
    replaced = copy.deepcopy(next(p for p in objects["policies"]
                                  if p["metadata"] == {**p["metadata"], "name": "db", "namespace": target}))
    replaced["spec"]["ingress"][0]["ports"] = [{"protocol": "TCP", "port": 5433}]
    deleted = {"kind": "NetworkPolicy",
               "metadata": {"name": "default-deny", "namespace": target,
                            "annotations": {DELETE_ANNOTATION: DELETE_VALUE}}}
    return {name: Manifests({"NetworkPolicy": [manifest]})
            for name, manifest in (("added", added), ("replaced", replaced), ("deleted", deleted))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--namespaces", type=int, default=300)
    args = parser.parse_args()
    objects = cluster(args.namespaces)
    manifests = Manifests({"Namespace": objects["namespaces"],
                           "Pod": objects["pods"],
                           "NetworkPolicy": objects["policies"]})
    print(f"cluster: {args.namespaces} namespaces, {len(objects['pods'])} pods, "
          f"{len(objects['policies'])} NetworkPolicies")
    for name, change in changes(objects).items():
        start, cpu_start = time.perf_counter(), time.process_time()
        result = what_if(manifests, change)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        print(f"{name:9s} {elapsed:6.2f} s wall {cpu:6.2f} s CPU  pairs checked {result.pairs_checked:6d}  "
              f"flows changed {len(result.changes):5d}  affected pods {result.affected_pods}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
