#!/usr/bin/env python3
"""Translation benchmark: full and incremental, on synthetic clusters up to Antrea's XLarge shape.

Antrea's largest in-memory NetworkPolicy benchmark has 25,000 namespaces, each with 4 pods and 3
NetworkPolicies (100,000 pods, 75,000 policies). The clusters here have that shape; each
namespace's policies use pod, namespace and ipBlock peers and several ports:

- `web`: pods app=web admit app=web and app=db pods of the namespace on TCP 80 and 443;
- `db`: pods app=db admit app=web pods and namespaces of their team on TCP 5432, and may reach
  an ipBlock with an except (one of 256) on TCP and UDP 53;
- `default-deny`: every pod isolated both ways, with DNS to kube-system allowed.

That is 9 pass rules, 5 deny rules and 3 firewall policies per namespace (350,000 rules for XLarge).

Each size runs in its own process, so that peak memory (ru_maxrss) belongs to that size alone:
the wall time and peak memory of `translate()` over the whole cluster (and, apart, the memory the
input manifests held before it started, and the translator's own: peak minus inputs), then the time
of single NetworkPolicy changes (`upsert` + `flush`) on a ClusterTranslator holding
that cluster.

    python bench/bench_translate.py --max-size small      # seconds
    python bench/bench_translate.py                       # up to xlarge (a few minutes)
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from kube_manager.translator import ClusterTranslator, translate  # noqa: E402

SIZES = {"small": 250, "medium": 2_500, "large": 10_000, "xlarge": 25_000}  # namespaces
TARGET_SECONDS, TARGET_MIB, TARGET_CHANGE_MS = 3.1, 1400, 1.0


def cluster(namespaces: int) -> Dict[str, List[Dict[str, Any]]]:
    """Namespace, Pod and NetworkPolicy manifests of the synthetic cluster."""
    result: Dict[str, List[Dict[str, Any]]] = {"namespaces": [], "pods": [], "policies": []}
    for i in range(namespaces):
        ns = f"ns-{i:05d}"
        result["namespaces"].append({"metadata": {"name": ns, "uid": f"ns-uid-{i}",
                                                  "labels": {"team": f"team-{i % 50}", "env": "prod"}}})
        for j, app in enumerate(("web", "web", "db", "db")):
            address = 4 * i + j
            result["pods"].append({
                "metadata": {"name": f"{app}-{j}", "namespace": ns, "uid": f"pod-uid-{i}-{j}",
                             "labels": {"app": app, "version": "v1", "pod-template-hash": f"{address:08x}"}},
                "spec": {"containers": [{"name": app, "ports": [{"name": "http", "containerPort": 8080}]}]},
                "status": {"podIP": f"10.{address >> 16 & 255}.{address >> 8 & 255}.{address & 255}"},
            })
        block = i % 256
        result["policies"] += [
            {"metadata": {"name": "web", "namespace": ns, "uid": f"np-uid-{i}-0"}, "spec": {
                "podSelector": {"matchLabels": {"app": "web"}},
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}},
                                      {"podSelector": {"matchLabels": {"app": "db"}}}],
                             "ports": [{"protocol": "TCP", "port": 80}, {"protocol": "TCP", "port": 443}]}]}},
            {"metadata": {"name": "db", "namespace": ns, "uid": f"np-uid-{i}-1"}, "spec": {
                "podSelector": {"matchLabels": {"app": "db"}},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}},
                                      {"namespaceSelector": {"matchLabels": {"team": f"team-{i % 50}"}}}],
                             "ports": [{"protocol": "TCP", "port": 5432}]}],
                "egress": [{"to": [{"ipBlock": {"cidr": f"172.{16 + block % 16}.{block}.0/24",
                                                "except": [f"172.{16 + block % 16}.{block}.128/25"]}}],
                            "ports": [{"protocol": "TCP", "port": 53}, {"protocol": "UDP", "port": 53}]}]}},
            {"metadata": {"name": "default-deny", "namespace": ns, "uid": f"np-uid-{i}-2"}, "spec": {
                "podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                "egress": [{"to": [{"namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": "kube-system"}}}],
                    "ports": [{"protocol": "UDP", "port": 53}]}]}},
        ]
    return result


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def changes(translator: ClusterTranslator, objects: Dict[str, List[Dict[str, Any]]], count: int) -> Dict[str, Any]:
    """Time single NetworkPolicy updates (a port changes) and a pod relabel, each with its pop."""
    policies = objects["policies"]
    timings: List[float] = []  # wall
    cpu_timings: List[float] = []  # CPU of this process: without the preemption of a shared machine
    for k in range(count):
        manifest = json.loads(json.dumps(policies[(k * 7919) % len(policies)]))
        spec = manifest["spec"]
        blocks = spec.get("ingress") or spec.get("egress")
        blocks[0]["ports"] = [{"protocol": "TCP", "port": 1000 + k}]
        start, cpu_start = time.perf_counter(), time.process_time()
        translator.upsert("NetworkPolicy", manifest)
        result = translator.flush()
        timings.append(time.perf_counter() - start)
        cpu_timings.append(time.process_time() - cpu_start)
        assert result.changed or result.added, "the change must show"
    pod_timings: List[float] = []
    for k in range(count):
        manifest = json.loads(json.dumps(objects["pods"][(k * 104729) % len(objects["pods"])]))
        manifest["metadata"]["labels"]["app"] = "db" if manifest["metadata"]["labels"]["app"] == "web" else "web"
        start = time.perf_counter()
        translator.upsert("Pod", manifest)
        translator.flush()
        pod_timings.append(time.perf_counter() - start)
    timings.sort()
    cpu_timings.sort()
    return {"policy_median_ms": 1000 * statistics.median(timings),
            "policy_p99_ms": 1000 * timings[int(0.99 * (len(timings) - 1))],
            "policy_cpu_p99_ms": 1000 * cpu_timings[int(0.99 * (len(cpu_timings) - 1))],
            "pod_median_ms": 1000 * statistics.median(pod_timings)}


def worker(size: str, count: int) -> Dict[str, Any]:
    objects = cluster(SIZES[size])
    gc.collect()
    before = peak_mib()
    start, cpu_start = time.perf_counter(), time.process_time()
    translation = translate({"Namespace": objects["namespaces"],
                             "Pod": objects["pods"],
                             "NetworkPolicy": objects["policies"]})
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    peak = peak_mib()
    result = {"size": size, "namespaces": SIZES[size], "pods": len(objects["pods"]),
              "policies": len(objects["policies"]), "rules": len(translation.firewall_rules),
              "tags": len(translation.tags), "seconds": seconds, "cpu_seconds": cpu_seconds, "peak_mib": peak,
              "inputs_mib": before, "load": os.getloadavg()[0]}
    del translation
    gc.collect()
    translator = ClusterTranslator()
    for group, kind in (("namespaces", "Namespace"), ("pods", "Pod"), ("policies", "NetworkPolicy")):
        for manifest in objects[group]:
            translator.upsert(kind, manifest)
    translator.flush()
    # As the daemon does after its initial lists: the long-lived state leaves the collector's view,
    # so a collection during an event does not rescan a million objects.
    gc.collect()
    gc.freeze()
    result.update(changes(translator, objects, count))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-size", choices=list(SIZES), default="xlarge", help="largest cluster to run")
    parser.add_argument("--changes", type=int, default=200, help="incremental changes timed per size")
    parser.add_argument("--worker", choices=list(SIZES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.changes)))
        return 0
    sizes = list(SIZES)[: list(SIZES).index(args.max_size) + 1]
    print(f"{'size':<7} {'namespaces':>10} {'pods':>8} {'policies':>8} {'rules':>8} {'full s':>7} {'cpu s':>6} "
          f"{'peak MiB':>8} {'inputs MiB':>10} {'own MiB':>7} {'NP change ms (median/p99/cpu p99)':>34} "
          f"{'pod change ms':>13} "
          f"{'load':>5}")
    for size in sizes:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", size,
                               "--changes", str(args.changes)], capture_output=True, text=True)
        if proc.returncode:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        r = json.loads(proc.stdout)
        print(f"{r['size']:<7} {r['namespaces']:>10,} {r['pods']:>8,} {r['policies']:>8,} {r['rules']:>8,} "
              f"{r['seconds']:>7.2f} {r['cpu_seconds']:>6.2f} {r['peak_mib']:>8.0f} {r['inputs_mib']:>10.0f} "
              f"{r['peak_mib'] - r['inputs_mib']:>7.0f} "
              f"{r['policy_median_ms']:>12.3f} / {r['policy_p99_ms']:<7.3f} / {r['policy_cpu_p99_ms']:<7.3f}"
              f"{r['pod_median_ms']:>13.3f} "
              f"{r['load']:>5.1f}")
    print(f"targets (xlarge): full within {TARGET_SECONDS} s and {TARGET_MIB} MiB, one change under "
          f"{TARGET_CHANGE_MS} ms; 'cpu s' is the process's CPU time, 'load' the 1-minute load average"
          " (the machine has 2 cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
