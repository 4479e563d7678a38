#!/usr/bin/env python3
"""Offline commands against the time of parsing their input (issue 12 targets, SPEC 8).

On the two dumps of cluster_dumps.py (written to --dir once, then reused):

- `translate -f antrea.json -o json` end to end (a fresh `contrail-kube-manager` process, output to
  /dev/null) against `json.load` of the same file in a fresh process: target within 3x;
- `-o yaml` and `-o table` of the same dump, with the size of what they print;
- `explain` on the kubectl-style dump against its `json.load`: target within 3x;
- the translation core per NetworkPolicy (`translate()` alone, in-process, input already loaded) on
  the 5,000-namespace shape and on bench_translate.py's XLarge shape: target 41 us (Antrea, Go).

Every figure is given as wall time and as CPU time (user + system of that process): the machine
is shared, and CPU time is what the process itself costs. Peak memory is the process's ru_maxrss.

    python bench/bench_offline.py                 # about a minute, XLarge included
    python bench/bench_offline.py --no-xlarge     # without the 25,000-namespace core run
    python bench/bench_offline.py --whole --repeat 5 [--against OTHER_TREE]

`--whole` measures only the whole `translate -f antrea.json -o json` command, in both modes,
interleaved with `json.load` of the dump `--repeat` times, and gives the best of each with its ratio
to the best `json.load` of the same run (the machine is shared: the best is the run least disturbed);
`--against` adds the same rows for another source tree (e.g. an export of the commit before), run
alternately with this one.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, os.pardir)
sys.path[:0] = [HERE, ROOT]

from cluster_dumps import write  # noqa: E402

TARGET_RATIO, TARGET_US_PER_POLICY = 3.0, 41.0
PARSE = "import json, sys\nwith open(sys.argv[1]) as f: json.load(f)"


def measure(argv: List[str], stdin: Any = None, tree: str = ROOT) -> Dict[str, float]:
    """Wall, CPU (user + system) and peak RSS of one child process; its output goes to /dev/null."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([tree, os.environ.get("PYTHONPATH", "")]))
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        # `python -m` puts the working directory first on sys.path: run in the tree measured
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE, stdin=stdin, env=env, cwd=tree)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        errors = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):  # explain answers 1 for a dropped flow
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {errors}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "mib": usage.ru_maxrss / 1024}


def output_size(argv: List[str]) -> int:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(argv, capture_output=True, env=env, check=True)
    return len(done.stdout)


def core_worker(shape: str, path: str) -> Dict[str, Any]:
    """translate() alone on manifests already in memory: seconds (wall, CPU) per NetworkPolicy."""
    from kube_manager.offline.manifests import load_manifests
    from kube_manager.translator import translate
    if shape == "xlarge":
        from bench_translate import SIZES, cluster
        objects = cluster(SIZES["xlarge"])
        namespaces, pods, policies = objects["namespaces"], objects["pods"], objects["policies"]
    else:
        loaded = load_manifests([path])
        namespaces, pods, policies = loaded.objects["Namespace"], loaded.objects["Pod"], loaded.objects["NetworkPolicy"]
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start, cpu_start = time.perf_counter(), time.process_time()
    translation = translate({"Namespace": namespaces, "Pod": pods, "NetworkPolicy": policies})
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return {"policies": len(policies), "rules": len(translation.firewall_rules), "wall": wall, "cpu": cpu,
            "inputs_mib": before, "mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def core(shape: str, path: str) -> Dict[str, Any]:
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--core-worker", shape, path],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout)


def ensure(directory: str, shape: str) -> str:
    path = os.path.abspath(os.path.join(directory, f"{shape}.json"))
    if not os.path.exists(path):
        write(shape, path, 5000 if shape == "antrea" else 300)
    return path


def row(name: str, m: Dict[str, float], base: Dict[str, float], target: str = "") -> str:
    ratio = f"{m['wall'] / base['wall']:5.1f}x / {m['cpu'] / base['cpu']:4.1f}x" if base else " " * 14
    return f"{name:<44} {m['wall']:7.2f} {m['cpu']:7.2f} {m['mib']:8.0f}   {ratio}  {target}"


def whole_command(antrea: str, trees: List[str], repeat: int, out: Any) -> Dict[str, Any]:
    """The best of `repeat` interleaved runs of json.load and of the command in both modes, per tree."""
    runs: Dict[Tuple[str, str], List[Dict[str, float]]] = {}
    for _ in range(repeat):
        for tree in trees:
            runs.setdefault((tree, "json.load"), []).append(measure([sys.executable, "-c", PARSE, antrea], tree=tree))
            for mode in ("kubernetes", "cluster-wide"):
                argv = [sys.executable, "-m", "kube_manager", "translate", "-f", antrea, "-o", "json",
                        "--semantics", mode]
                runs.setdefault((tree, mode), []).append(measure(argv, tree=tree))
    figures: Dict[str, Any] = {}
    for tree in trees:
        best = {what: {key: min(m[key] for m in found) for key in ("wall", "cpu", "mib")}
                for (where, what), found in runs.items() if where == tree}
        print(f"{os.path.abspath(tree)} (best of {repeat})", file=out)
        for what, m in best.items():
            base = {} if what == "json.load" else best["json.load"]
            print(row(f"  {what}", m, base, f"within {TARGET_RATIO:g}x" if base else ""), file=out)
        figures[os.path.abspath(tree)] = best
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default="/tmp/kube-manager-bench", help="where the dumps are written once")
    parser.add_argument("--no-xlarge", action="store_true", help="skip the XLarge translation core run")
    parser.add_argument("--whole", action="store_true", help="only the whole translate command, both modes")
    parser.add_argument("--repeat", type=int, default=1, help="with --whole: runs of each, the best is kept")
    parser.add_argument("--against", metavar="TREE", help="with --whole: also measure this source tree")
    parser.add_argument("--json", action="store_true", help="the table on stderr, the figures as JSON on stdout")
    parser.add_argument("--core-worker", nargs=2, metavar=("SHAPE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.core_worker:
        print(json.dumps(core_worker(*args.core_worker)))
        return 0
    out = sys.stderr if args.json else sys.stdout
    figures: Dict[str, Any] = {}

    def show(name: str, m: Dict[str, float], base: Dict[str, float], target: str = "", key: str = "") -> None:
        print(row(name, m, base, target), file=out)
        if key:
            figures[key] = m

    os.makedirs(args.dir, exist_ok=True)
    if args.whole:
        antrea = ensure(args.dir, "antrea")
        print(f"antrea.json {os.path.getsize(antrea) / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f} on"
              f" {os.cpu_count()} cores", file=out)
        print(f"{'measure':<44} {'wall s':>7} {'cpu s':>7} {'peak MiB':>8}   {'vs json.load':>14}  target", file=out)
        figures = whole_command(antrea, [ROOT] + ([args.against] if args.against else []), args.repeat, out)
        print(f"load average after: {os.getloadavg()[0]:.1f}", file=out)
        if args.json:
            print(json.dumps(figures))
        return 0
    antrea, kubectl = ensure(args.dir, "antrea"), ensure(args.dir, "kubectl")
    cli = [sys.executable, "-m", "kube_manager"]
    print(f"antrea.json {os.path.getsize(antrea) / 1e6:.1f} MB, kubectl.json {os.path.getsize(kubectl) / 1e6:.1f} MB;"
          f" load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", file=out)
    print(f"{'measure':<44} {'wall s':>7} {'cpu s':>7} {'peak MiB':>8}   {'vs json.load':>14}  target", file=out)
    parse_a = measure([sys.executable, "-c", PARSE, antrea])
    show("json.load antrea.json (5,000 namespaces)", parse_a, {}, key="parse_antrea")
    json_a = measure(cli + ["translate", "-f", antrea, "-o", "json"])
    show("translate -o json", json_a, parse_a, f"within {TARGET_RATIO:g}x", key="translate_json")
    with open(antrea, "rb") as stdin:
        show("translate -f - -o json (standard input)", measure(cli + ["translate", "-f", "-", "-o", "json"],
                                                                stdin=stdin), parse_a, key="translate_stdin")
    for output in ("yaml", "table"):
        size = output_size(cli + ["translate", "-f", antrea, "-o", output]) / 1e6
        show(f"translate -o {output} ({size:.1f} MB)", measure(cli + ["translate", "-f", antrea, "-o", output]),
             parse_a, key=f"translate_{output}")
    parse_k = measure([sys.executable, "-c", PARSE, kubectl])
    show("json.load kubectl.json (300 namespaces)", parse_k, {}, key="parse_kubectl")
    flow = ["--from", "team-001/web-0017f9c6d5b-00000", "--to", "team-001/api-0017f9c6d5b-00001", "--port", "8080"]
    show("explain", measure(cli + ["explain", "-f", kubectl] + flow), parse_k, f"within {TARGET_RATIO:g}x",
         key="explain")
    show("translate -o json", measure(cli + ["translate", "-f", kubectl, "-o", "json"]), parse_k)
    shapes: List[Tuple[str, str]] = [("5,000 namespaces", "antrea")] + ([] if args.no_xlarge else
                                                                        [("XLarge (25,000)", "xlarge")])
    print(f"\n{'translation core (translate() alone)':<44} {'wall s':>7} {'cpu s':>7} {'peak MiB':>8}"
          f" {'us/NP wall / cpu':>18}  target", file=out)
    for label, shape in shapes:
        r = figures[f"core_{shape}"] = core(shape, antrea)
        per = 1e6 / r["policies"]
        print(f"{label + ': ' + format(r['policies'], ',') + ' NetworkPolicies':<44} {r['wall']:7.2f} {r['cpu']:7.2f}"
              f" {r['mib']:8.0f} {r['wall'] * per:8.1f} / {r['cpu'] * per:6.1f}    {TARGET_US_PER_POLICY:g} us or less"
              f" (inputs {r['inputs_mib']:.0f} MiB)", file=out)
    figures["load"] = os.getloadavg()[0]
    print(f"load average after: {figures['load']:.1f}", file=out)
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
