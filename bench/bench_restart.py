#!/usr/bin/env python
"""A restart with nothing changed, taken apart: its CPU, what it waited for, and its memory.

One cold start of the daemon's path (`bench_daemon.Daemon`: the cache, the reconciler, the client
over HTTP) fills an embedded config API in a process of its own (`--latency` added to every
answer), as `bench_daemon.py` does; then each restart runs in a fresh process of its own, from one
of the checkouts given with `--tree` in turn (PYTHONPATH=DIR; `.` is this one), against that same
converged config API: the lists translated (`feed`), then a resync to convergence (0 writes,
checked). Reported per restart:

- wall time, split into the translation and the resync; this process's CPU for each; the time it
  waited for a core (`/proc/self/schedstat`: what the machine's other work cost it); what is left,
  wall less CPU less that wait, is the time it sat waiting for the config API's answers; and the
  config API's own CPU meanwhile (rendering the listings);
- RSS (less the bench's own manifests) after the translation, its peak during the resync (the peak
  is reset once the lists are translated: the listings' pages held at once, the first page of every
  listing asked for before the translation, see reconciler/paging.py), once converged and once
  settled as the daemon settles;
- with `--explain`: the RSS once `/explain`'s rule index is built ahead (`explain_index_built`,
  not settled), then once every namespace's policies are compiled too and settled
  (`explain_prepared`), as the daemon does once its start-up writes are done
  (`LiveExplainer.prepare`), against the RSS settled before; the build's CPU and its own peak;
- with `--no-early`: the first listings are not sent ahead of the translation (what the head start
  costs in memory and saves in time).

    python bench/bench_restart.py [--size 15000:20000] [--restarts 3] [--tree . --tree /path/to/main]
                                  [--explain] [--no-early]

The figures move with the machine's load; compare the trees of one run, and the CPU first.
"""
from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402 - after monkey-patching, on purpose
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Any, Dict, List  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _server_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run_queue_wait() -> float:
    """Seconds this process has waited for a core since it started (Linux schedstat)."""
    with open("/proc/self/schedstat") as schedstat:
        return int(schedstat.read().split()[1]) / 1e9


def _reset_peak() -> None:
    """VmHWM from now on (Linux: clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")


def one_restart(url: str, server_pid: int, size: str, early: bool, explain: bool) -> Dict[str, Any]:
    """A child: one restart against the converged config API at `url` (this process's product
    code is PYTHONPATH's)."""
    import gevent
    from bench_daemon import Daemon, rss_mb
    from bench_reconcile import feed, synthetic
    from kube_manager.plumbing import gcpolicy
    if not early:
        from kube_manager.reconciler.resync import Resync
        Resync.send_early = lambda self: None  # type: ignore[method-assign]
    policies, pods = (int(n) for n in size.split(":"))
    base = rss_mb()
    cluster = synthetic(policies, pods)
    manifests = rss_mb() - base
    daemon = Daemon(url, 8)
    gcpolicy.settle()
    load, server_cpu, waited = os.getloadavg()[0], _server_cpu(server_pid), _run_queue_wait()
    started, cpu = time.perf_counter(), time.process_time()
    feed(daemon.cache, cluster)
    translated, translate_cpu = time.perf_counter(), time.process_time()
    gcpolicy.settle()  # as the daemon does after its initial lists
    memory = {"translated": rss_mb()}
    _reset_peak()
    resync_started, resync_cpu = time.perf_counter(), time.process_time()
    daemon.reconciler.start()
    daemon.reconciler.resync()
    if not daemon.reconciler.wait_converged(3600) or daemon.count.writes:
        raise SystemExit(f"not a restart with nothing changed: {daemon.reconciler.summary()}")
    ended, end_cpu = time.perf_counter(), time.process_time()
    waited, server_cpu = _run_queue_wait() - waited, _server_cpu(server_pid) - server_cpu
    memory.update(resync_peak=rss_mb("VmHWM"), converged=rss_mb())
    gcpolicy.settle()  # as the daemon does once a resync's work is done
    memory["settled"] = rss_mb()
    wall = (translated - started) + (ended - resync_started)
    cpu_s = (translate_cpu - cpu) + (end_cpu - resync_cpu)
    result: Dict[str, Any] = {
        "load": round(load, 2), "wall_s": round(wall, 3), "translate_s": round(translated - started, 3),
        "resync_s": round(ended - resync_started, 3), "cpu_s": round(cpu_s, 3),
        "translate_cpu_s": round(translate_cpu - cpu, 3), "resync_cpu_s": round(end_cpu - resync_cpu, 3),
        "run_queue_wait_s": round(waited, 3), "blocked_s": round(wall - cpu_s - waited, 3),
        "config_api_cpu_s": round(server_cpu, 3), "requests": daemon.count.requests, "writes": daemon.count.writes}
    if explain:
        from introspect.explain import db_explainer
        explainer = db_explainer(daemon.db, "k8s", change_observers=daemon.cache.status.change_observers)
        _reset_peak()
        cpu = time.process_time()

        def pause() -> None:  # the RSS once the rule index is built, before the namespaces are compiled
            if "explain_index_built" not in memory and explainer._building is None:
                memory["explain_index_built"] = rss_mb()
            gevent.sleep(0)
        explainer.prepare(pause)
        result["explain_prepare_cpu_s"] = round(time.process_time() - cpu, 3)
        memory["explain_prepare_peak"] = rss_mb("VmHWM")
        gcpolicy.settle()
        memory["explain_prepared"] = rss_mb()
    result["rss_mb"] = {name: round(mb - manifests, 1) for name, mb in memory.items()}
    daemon.close()
    return result


def cold_start(srv: Any, size: str) -> Dict[str, Any]:
    """The daemon's path writes the cluster into the fresh config API `srv`: the cold start's
    figures."""
    from bench_daemon import Daemon, populate_vmis, synthetic
    policies, pods = (int(n) for n in size.split(":"))
    cluster = synthetic(policies, pods)
    populate_vmis(srv.url, cluster)
    daemon = Daemon(srv.url, 8)
    translate_s, wall_s, _cpu = daemon.converge(cluster)
    daemon.close()
    return {"translate_s": round(translate_s, 2), "wall_s": round(wall_s, 2)}


def summary(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Best (least) and median of each figure over one tree's restarts."""
    figures = ["wall_s", "cpu_s", "translate_cpu_s", "resync_cpu_s", "run_queue_wait_s", "blocked_s", "config_api_cpu_s"]
    found = {name: (min(r[name] for r in runs), statistics.median(r[name] for r in runs)) for name in figures}
    for name in runs[0]["rss_mb"]:
        found[f"rss {name}"] = (min(r["rss_mb"][name] for r in runs), statistics.median(r["rss_mb"][name] for r in runs))
    return found


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="15000:20000", help="NETWORKPOLICIES:PODS")
    parser.add_argument("--restarts", type=int, default=3, help="restarts of each tree, alternating")
    parser.add_argument("--tree", action="append", help="a checkout to restart from (repeatable; default .)")
    parser.add_argument("--latency", type=float, default=0.002, help="seconds the config API adds to every answer")
    parser.add_argument("--explain", action="store_true", help="also build /explain's index ahead and weigh it")
    parser.add_argument("--no-early", action="store_true", help="no first listings sent before the translation")
    parser.add_argument("--json", action="store_true", help="print every restart's figures as JSON")
    parser.add_argument("--one", nargs=3, metavar=("URL", "PID", "SIZE"), help=argparse.SUPPRESS)  # a child
    args = parser.parse_args(argv)
    if args.one:
        url, pid, size = args.one
        print(json.dumps(one_restart(url, int(pid), size, not args.no_early, args.explain)))
        return 0
    from bench_daemon import embedded_server
    trees = [os.path.abspath(tree) for tree in args.tree or ["."]]
    runs: Dict[str, List[Dict[str, Any]]] = {tree: [] for tree in trees}
    with embedded_server("process", args.latency) as srv:
        cold = cold_start(srv, args.size)
        for _ in range(args.restarts):
            for tree in trees:
                command = [sys.executable, os.path.join(HERE, "bench_restart.py"), "--one", srv.url, str(srv.pid),
                           args.size] + ["--no-early"] * args.no_early + ["--explain"] * args.explain
                child = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True,
                                       env={**os.environ, "PYTHONPATH": tree})
                runs[tree].append(json.loads(child.stdout.strip().splitlines()[-1]))
                print(f"{tree}: {runs[tree][-1]}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps({"size": args.size, "cold_start": cold, "restarts": runs}, indent=2))
        return 0
    print(f"{args.size}: cold start {cold['translate_s']} s translation + {cold['wall_s']} s writes")
    for tree, tree_runs in runs.items():
        print(f"{tree} ({len(tree_runs)} restarts, load {min(r['load'] for r in tree_runs)}-"
              f"{max(r['load'] for r in tree_runs)}): best / median")
        for name, (best, median) in summary(tree_runs).items():
            print(f"  {name:<28} {best:>10} {median:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
