#!/usr/bin/env python
"""The daemon's start as an operator sees it: `contrail-kube-manager run --once` as a process,
cold and then restarted with nothing changed, on the emulated Kubernetes API server and the
embedded config API (the e2e rig, tests/support/e2e_support.py) loaded with `bench_reconcile`'s
synthetic cluster (NetworkPolicies:pods, namespaces of 100 pods).

`bench_daemon.py` times the daemon's path inside one process (from the first event to
convergence); this one adds what a process pays before that: the interpreter, the imports, the
settings, the Kubernetes client's set-up. For each size: the cold start (launch to exit, everything
written), then `--restarts` restarts (launch to exit, nothing written), reported each and at best,
with the best restart's ratio to the cold start, and, from the restarts' logs, the time from launch
to the daemon's first log line (interpreter and imports), to "waiting for the initial lists" (the
clients made, the lists asked) and to "resync done", with the process's CPU (user and system): the
best run's, and the median of each over the restarts. Beside them, in the same run (a floor process
after each round of restarts), the floor of such a restart (`start_floor.py`): a process that only
patches, makes the Kubernetes client, lists what the restart lists and exits, with the official
client and without it (plain `http.client`), each at best and as a ratio to the cold start.

`--tree DIR` runs the daemon from another checkout of the repository (PYTHONPATH=DIR), so that
two versions can be compared within one run, alternating (`--tree` repeatable; `.` is this one).

    python bench/bench_start.py [--sizes 750:1000] [--restarts 5] [--tree . --tree /path/to/main]

Set PYTHONPYCACHEPREFIX (and clear PYTHONDONTWRITEBYTECODE) to time imports from cached bytecode, as an
installed package runs; the figures move with the machine's load: compare the trees of one run.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))  # tests/ as a package

from bench_reconcile import synthetic  # noqa: E402
from start_floor import VARIANTS, floor_spec, run_floor, timed  # noqa: E402
from kube_manager.offline.manifests import Manifests  # noqa: E402
from tests.support.e2e_support import Environment  # noqa: E402

MILESTONES = {"first_line": None, "lists_asked": "waiting for the initial lists", "resynced": "resync done"}
ONCE_TIMEOUT = 1800
FLOOR_NAMES = {"official": "with the official client", "plain": "plain http.client, no official client"}


def _stamp(line: str) -> Optional[float]:
    """The wall-clock time of a log line (its ISO timestamp in UTC), or None."""
    try:
        return datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return None


def once(env: Environment, tree: str) -> Dict[str, Any]:
    """One `run --once` from `tree`: wall seconds from launch to exit, and to each milestone."""
    config = env.config_file()
    root = os.path.abspath(tree)  # `-m` puts the working directory first on sys.path
    launched = time.time()
    wall, cpu, done = timed([sys.executable, "-m", "kube_manager", "run", "-c", config, "--once",
                             "--once-timeout", str(ONCE_TIMEOUT), "--leader-elect", "false"],
                            {**os.environ, "PYTHONPATH": root}, cwd=root)
    os.unlink(config)
    if done.returncode != 0:
        raise SystemExit(f"run --once from {tree} exited {done.returncode}:\n{done.stderr[-3000:]}")
    lines = done.stderr.splitlines()
    found: Dict[str, Any] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
    for name, text in MILESTONES.items():
        line = next((l for l in lines if _stamp(l) is not None and (text is None or text in l)), None)
        stamp = _stamp(line) if line else None
        found[name + "_s"] = round(stamp - launched, 2) if stamp else None
    return found


def one_size(policies: int, pods: int, restarts: int, trees: List[str]) -> Dict[str, Any]:
    cluster = synthetic(policies, pods)
    env = Environment(Manifests({kind: list(objects) for kind, objects in cluster.objects.items()}))
    try:
        cold = once(env, trees[0])
        written = sum(env.vnc.counters.writes_by_agent().values())
        with tempfile.NamedTemporaryFile("w", prefix="start-floor-", suffix=".json") as spec:
            json.dump(floor_spec(env.kube.url, env.vnc.url), spec)
            spec.flush()
            runs: Dict[str, List[Dict[str, Any]]] = {tree: [] for tree in trees}
            floors: Dict[str, List[Dict[str, Any]]] = {variant: [] for variant in VARIANTS}
            for _ in range(restarts):
                for tree in trees:  # alternating, against the neighbours' load
                    runs[tree].append(once(env, tree))
                for variant in VARIANTS:
                    floors[variant].append(run_floor(spec.name, variant))
        restart_writes = sum(env.vnc.counters.writes_by_agent().values()) - written
    finally:
        env.close()
    result: Dict[str, Any] = {"policies": policies, "pods": pods, "cold_start": cold, "restart_writes": restart_writes}
    for tree, found in runs.items():
        result[tree] = {"restarts_s": [run["wall_s"] for run in found], **_summary(found, cold)}
    for variant, found in floors.items():
        result["floor_" + variant] = {"runs_s": [run["wall_s"] for run in found], **_summary(found, cold)}
    return result


def _summary(found: List[Dict[str, Any]], cold: Dict[str, Any]) -> Dict[str, Any]:
    """The best run (least wall time), its ratio to the cold start, and the median of each figure."""
    best = min(found, key=lambda run: run["wall_s"])
    return {"best": best, "best_vs_cold_start": round(best["wall_s"] / cold["wall_s"], 3),
            "median": {name: round(statistics.median(run[name] for run in found), 2)
                       for name in best if all(run[name] is not None for run in found)}}


def report(result: Dict[str, Any], trees: List[str]) -> str:
    cold = result["cold_start"]
    out = [f"{result['policies']} NetworkPolicies / {result['pods']} pods: cold start (from {trees[0]}) "
           f"{cold['wall_s']} s (lists asked at {cold['lists_asked_s']} s, CPU {cold['cpu_s']} s); writes by all restarts: {result['restart_writes']}"]
    for tree in trees:
        found = result[tree]
        best = found["best"]
        median = found["median"]
        out.append(f"  {tree}: restarts {found['restarts_s']} s; best {best['wall_s']} s = "
                   f"{found['best_vs_cold_start']} of the cold start; first log line {best['first_line_s']} s, "
                   f"lists asked {best['lists_asked_s']} s, resync done {best['resynced_s']} s, CPU {best['cpu_s']} s; "
                   f"medians: " + ", ".join(f"{name[:-2]} {value} s" for name, value in median.items()))
    for variant in VARIANTS:
        floor = result["floor_" + variant]
        out.append(f"  floor, {FLOOR_NAMES[variant]}: runs {floor['runs_s']} s; best {floor['best']['wall_s']} s = "
                   f"{floor['best_vs_cold_start']} of the cold start, CPU {floor['best']['cpu_s']} s; "
                   f"medians: wall {floor['median']['wall_s']} s, cpu {floor['median']['cpu_s']} s")
    return "\n".join(out)


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="750:1000", help="NetworkPolicies:pods, comma-separated")
    parser.add_argument("--restarts", type=int, default=5, help="restarts per tree and size")
    parser.add_argument("--tree", action="append", help="a checkout to run the daemon from (repeatable; default .)")
    args = parser.parse_args(argv)
    trees = args.tree or ["."]
    for size in args.sizes.split(","):
        policies, pods = (int(part) for part in size.split(":"))
        print(report(one_size(policies, pods, args.restarts, trees), trees), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
