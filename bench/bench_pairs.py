#!/usr/bin/env python3
"""What the `kubernetes` mode's pair rules cost (SPEC 14), against `cluster-wide` in the same run.

- `rules`: firewall rules (and, of them, pair rules) per NetworkPolicy in both modes on the random
  team-based mix (exact_shapes.py) at each `--namespaces`;
- `time`: the whole `contrail-kube-manager translate -f DUMP -o json` command in both modes, each
  in its own process, beside `json.load` of the same dump, on a shape at each size;
- `event`: the translator's cost of one NetworkPolicy change and of one pod relabelled (`upsert` +
  `flush`, the daemon's path) on the egress-heavy shape, in both modes;
- `classes`: what rules that follow classes of pods would write on the mix, beside the pair rules:
  the classes (pods no selector tells apart) and the (class, class, port) triples the independent
  Kubernetes model allows between isolated pods, one rule each under classes (docs/mapping.md).

The machine is shared: compare the ratios measured in one run, not absolute seconds across runs.

    python bench/bench_pairs.py rules --namespaces 100 200 400 1000 [--running 2]
    python bench/bench_pairs.py time --shape egress --namespaces 500 5000
    python bench/bench_pairs.py time --shape antrea --namespaces 5000      # 15,000 NPs / 20,000 pods
    python bench/bench_pairs.py event --namespaces 5000 [--shape mix]
    python bench/bench_pairs.py classes --namespaces 50 100 200
    python bench/bench_pairs.py dumps DIR --shape mix --namespaces 100     # keep the dumps (for cmp)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

import exact_shapes  # noqa: E402
from cluster_dumps import antrea_dump  # noqa: E402

MODES = ("cluster-wide", "kubernetes")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)


def write_dump(shape: str, namespaces: int, directory: str, seed: int = 1,
               running: int = len(exact_shapes.APPS)) -> str:
    sparse = f"-running{running}" if shape == "mix" and running < len(exact_shapes.APPS) else ""
    path = os.path.join(directory, f"{shape}-{namespaces}{sparse}.json")
    if not os.path.exists(path):
        if shape == "mix":
            dump = exact_shapes.random_mix(namespaces, seed, running=running)
        else:
            dump = antrea_dump(namespaces) if shape == "antrea" else exact_shapes.SHAPES[shape](namespaces)
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(dump, stream)
    return path


SAVE: List[str] = []  # --save: a directory keeping every output, for `cmp` across versions


def run_translate(path: str, semantics: str) -> Tuple[float, bytes]:
    """Wall seconds of the whole command, and its output."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(ROOT))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kube_manager", "translate", "-f", path, "-o", "json",
                           "--semantics", semantics], capture_output=True, env=env, check=True)
    seconds = time.perf_counter() - start
    for directory in SAVE:
        name = os.path.basename(path).rsplit(".", 1)[0]
        with open(os.path.join(directory, f"{name}-{semantics}.json"), "wb") as stream:
            stream.write(proc.stdout)
    return seconds, proc.stdout


def load_seconds(path: str) -> float:
    """`json.load` of the dump, in a fresh process as the command runs (interpreter start included)."""
    code = "import json,sys; json.load(open(sys.argv[1], encoding='utf-8'))"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, path], check=True)
    return time.perf_counter() - start


def count_rules(output: bytes) -> Tuple[int, int, int]:
    """(firewall rules, pair rules, NetworkPolicy firewall policies) of a `-o json` output."""
    data = json.loads(output)
    rules = [rule["fq_name"][-1] for rule in data["firewall_rules"]]
    cluster = data["cluster_name"]
    policies = [p for p in data["firewall_policies"] if not p["fq_name"][-1].startswith(f"{cluster}--")
                and p["fq_name"][-1] not in (f"{cluster}-denyall", f"{cluster}-allowall")]
    return len(rules), sum(f"{cluster}--pair-" in name for name in rules), len(policies)


def rules_table(sizes: List[int], directory: str, seed: int, running: int) -> None:
    print(f"{'namespaces':>10} {'NPs':>6} {'cluster-wide':>12} {'kubernetes':>10} {'pairs':>8} "
          f"{'rules/NP cw':>11} {'rules/NP k8s':>12} {'k8s/cw':>6}")
    for namespaces in sizes:
        path = write_dump("mix", namespaces, directory, seed, running)
        counts = {mode: count_rules(run_translate(path, mode)[1]) for mode in MODES}
        (cw, _, nps), (k8s, pairs, _) = counts["cluster-wide"], counts["kubernetes"]
        print(f"{namespaces:>10,} {nps:>6,} {cw:>12,} {k8s:>10,} {pairs:>8,} {cw / nps:>11.2f} {k8s / nps:>12.2f} "
              f"{k8s / cw:>6.2f}")


def time_table(shape: str, sizes: List[int], directory: str) -> None:
    print(f"{'shape':<7} {'namespaces':>10} {'json.load s':>11} {'cw s':>7} {'k8s s':>7} {'k8s/cw':>6} "
          f"{'cw/load':>7} {'k8s/load':>8} {'rules cw':>9} {'rules k8s':>9}")
    for namespaces in sizes:
        path = write_dump(shape, namespaces, directory)
        load = load_seconds(path)
        found = {mode: run_translate(path, mode) for mode in MODES}
        (cw, cw_out), (k8s, k8s_out) = found["cluster-wide"], found["kubernetes"]
        print(f"{shape:<7} {namespaces:>10,} {load:>11.2f} {cw:>7.2f} {k8s:>7.2f} {k8s / cw:>6.2f} "
              f"{cw / load:>7.2f} {k8s / load:>8.2f} {count_rules(cw_out)[0]:>9,} {count_rules(k8s_out)[0]:>9,}")


def event_costs(shape: str, namespaces: int, count: int, seed: int, running: int) -> None:
    """CPU ms of one NetworkPolicy change (a port moves) and of one pod change (a pod's role or app
    swapped) on a translator holding the egress shape or the mix."""
    import gc

    from kube_manager.translator import ClusterTranslator

    if shape == "mix":
        dump = exact_shapes.random_mix(namespaces, seed, running=running)
    else:
        dump = exact_shapes.egress_heavy(namespaces)
    policies = [item for item in dump["items"] if item["kind"] == "NetworkPolicy"]
    pods = [item for item in dump["items"] if item["kind"] == "Pod" and item["metadata"]["namespace"] != "kube-system"]

    def policy_change(k: int) -> Tuple[str, Dict[str, Any]]:
        manifest = json.loads(json.dumps(policies[(k * 7919) % len(policies)]))
        spec = manifest["spec"]
        blocks = spec.get("ingress") or spec.get("egress")
        blocks[0]["ports"] = [{"protocol": "TCP", "port": 1000 + k}]
        return "NetworkPolicy", manifest

    def pod_change(k: int) -> Tuple[str, Dict[str, Any]]:
        manifest = json.loads(json.dumps(pods[(k * 7919) % len(pods)]))
        labels = manifest["metadata"]["labels"]
        if "role" in labels:
            labels["role"] = "server" if labels["role"] == "client" else "client"
        else:
            labels["app"] = exact_shapes.APPS[(exact_shapes.APPS.index(labels["app"]) + 1 + k) % len(exact_shapes.APPS)]
        return "Pod", manifest

    print(f"{'mode':<13} {shape:>6} {'namespaces':>10} {'change':<14} {'cpu ms median':>13} {'p99':>8}")
    for mode in MODES:
        translator = ClusterTranslator(semantics=mode)
        for item in dump["items"]:
            translator.upsert(item["kind"], item)
        translator.flush()
        gc.collect()
        gc.freeze()
        for what, change in (("NetworkPolicy", policy_change), ("pod relabel", pod_change)):
            timings: List[float] = []
            for k in range(count):
                kind, manifest = change(k)
                start = time.process_time()
                translator.upsert(kind, manifest)
                translator.flush()
                timings.append(time.process_time() - start)
            timings.sort()
            print(f"{mode:<13} {shape:>6} {namespaces:>10,} {what:<14} {1000 * statistics.median(timings):>13.3f} "
                  f"{1000 * timings[int(0.99 * (len(timings) - 1))]:>8.3f}")
        gc.unfreeze()
        del translator


def classes_table(sizes: List[int], directory: str, seed: int, running: int) -> None:
    from kube_manager.explain.k8s_netpol import EGRESS, INGRESS
    from kube_manager.explain.k8s_semantics import Endpoint, KubernetesModel
    from kube_manager.explain.staged_classes import named_label_keys

    print(f"{'namespaces':>10} {'NPs':>6} {'pair rules':>10} {'pods':>6} {'classes':>7} {'class rules':>11} "
          f"{'class/pair':>10}")
    for namespaces in sizes:
        dump = exact_shapes.random_mix(namespaces, seed, running=running)
        objects: Dict[str, List[Dict[str, Any]]] = {}
        for item in dump["items"]:
            objects.setdefault(item["kind"], []).append(item)
        model = KubernetesModel.of(objects)
        keys = named_label_keys(model)
        representatives: Dict[Any, Endpoint] = {}
        for item in objects["Pod"]:
            pod = model.pod(item["metadata"]["namespace"], item["metadata"]["name"])
            assert pod is not None
            signature = (pod.namespace, tuple(sorted((k, v) for k, v in pod.labels.items() if k in keys)))
            representatives.setdefault(signature, Endpoint(pod, pod.ip))
        isolated = [end for end in representatives.values()
                    if model.peer_blocks(end.pod, EGRESS, end).policies and model.peer_blocks(end.pod, INGRESS, end).policies]
        allowed = 0
        for source in isolated:
            for destination in isolated:
                egress, ingress = model.pair(source, destination)
                allowed += sum(egress.side(destination, port, "TCP").allowed and
                               ingress.side(destination, port, "TCP").allowed for port in exact_shapes.MIX_PORTS)
        pairs = count_rules(run_translate(write_dump("mix", namespaces, directory, seed, running), "kubernetes")[1])[1]
        print(f"{namespaces:>10,} {len(objects['NetworkPolicy']):>6,} {pairs:>10,} {len(objects['Pod']):>6,} "
              f"{len(representatives):>7,} {allowed:>11,} {allowed / max(pairs, 1):>10.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("rules", "time", "event", "classes", "dumps"))
    parser.add_argument("directory", nargs="?", help="where dumps are kept (default: a temporary one)")
    parser.add_argument("--shape", choices=("mix", "egress", "antrea"), default="egress")
    parser.add_argument("--namespaces", type=int, nargs="+", default=[100, 200, 400, 1000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--running", type=int, default=len(exact_shapes.APPS),
                        help="the mix's apps run per namespace (exact_shapes.py)")
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--save", metavar="DIR", help="keep each translate output there")
    args = parser.parse_args()
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        SAVE.append(args.save)
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.directory or scratch
        os.makedirs(directory, exist_ok=True)
        if args.what == "rules":
            rules_table(args.namespaces, directory, args.seed, args.running)
        elif args.what == "time":
            time_table(args.shape, args.namespaces, directory)
        elif args.what == "classes":
            classes_table(args.namespaces, directory, args.seed, args.running)
        elif args.what == "event":
            for namespaces in args.namespaces:
                event_costs("mix" if args.shape == "mix" else "egress", namespaces, args.changes, args.seed,
                            args.running)
        else:
            for namespaces in args.namespaces:
                print(write_dump(args.shape, namespaces, directory, args.seed, args.running))
    return 0


if __name__ == "__main__":
    sys.exit(main())
