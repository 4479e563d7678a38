#!/usr/bin/env python
"""Daemon benchmark: every daemon figure of issue 12 side by side, from one run.

For each size (NetworkPolicies:pods; namespaces of 100 pods, as `bench_reconcile.synthetic` makes
them), a child process of its own (so that its memory is its own) runs the daemon's path -
`EventDispatcher` -> `Reconciler` -> `VncClient` over HTTP -> the embedded config API in a process of its
own with `--latency` added to every answer - and reports:

- cold start: the reconciler writing everything (from its first listing to convergence), beside a
  bare `VncClient` writing the same objects (one POST each, in dependency waves: tags, address
  groups, rules, policies, the APS) and the same `set-tag` calls, at the same concurrency, on a
  fresh server with the same VMIs; their ratio is what the daemon adds;
- restart with nothing changed: a new DB, cache and reconciler on the converged server, from the
  first event to convergence (translation included): requests, writes and time;
- one NetworkPolicy event to its last write (a new policy at a time, `--events` of them): p50, p99
  (with `--json`, each event's time, and the count and mean round trip of each kind of request, as
  for the cold start, which also reports the config API's CPU per request); the median of each of
  its stages (the dispatch, the four round trips in a row and the daemon's gaps between them); and
  its floor, the same requests sent again by a bare client right after each event in the best order
  make before break allows (`event_stages.py`);
- `/explain` over HTTP on introspect: the first question of an explainer nobody prepared (the index
  built whole by it); then as the daemon once converged: the index built ahead in steps between
  events (its time and longest step), the first question, p50 and p99 of questions on an unchanged
  DB, then the first question after a change (one new NetworkPolicy: the index is brought up to
  date with what the translator's change report named);
- memory: this process's RSS (translator, DB, reconciler, client, and the synthetic manifests,
  reported apart) after the translation of the initial lists and after the cold start, and its peak.

`--cache-sizes` adds sizes measured without a config API (the watch events through `EventDispatcher` and
the translator only): `/explain` and memory where a full cold start would take too long.

`--steady-sizes` measures the daemon's steady-state memory where a cold start would take an hour,
such as XLarge (75000:100000, ~538,000 objects), in minutes: the synthetic manifests are streamed
into the cache (`SyntheticStream`: made as they are read, so the bench's input is NOT counted),
then a reconciler "restarts" against `HeldConfigApi`, a config API that already holds exactly the
desired state, answering its listings from memory as decoded JSON (no HTTP, no server process):
`db.actual`, the reconciler's indexes and the VMI index are filled by listing, as after a restart,
and nothing is written (a write fails the run). Reported: RSS after the translation (translator,
records, desired state), after convergence (the whole daemon state: what an operator sees once a
started daemon has converged), after the daemon's `gcpolicy.settle()` that follows, and the peak
(the listing's transient copy included); with `--tracemalloc`, the 25 lines holding most of the
live memory then.

    python bench/bench_daemon.py [--sizes 150:600,1500:6000] [--cache-sizes 5000:20000] [--events 30]
                                 [--semantics kubernetes|cluster-wide] [--json]
    python bench/bench_daemon.py --sizes "" --steady-sizes 15000:20000,75000:100000 [--tracemalloc]
    python bench/bench_daemon.py --real-kube [--real-kube-policies 750] [--events 20] (bench_real_kube.py:
                                 the daemon process against a real kube-apiserver beside the emulator)

Figures depend on the machine's load; compare CPU per request and ratios between versions.
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
import tracemalloc  # noqa: E402
from typing import Any, Callable, Dict, List, Optional, Tuple  # noqa: E402

import gevent  # noqa: E402
import requests  # noqa: E402
from gevent.pool import Pool  # noqa: E402

from bench_reconcile import (RequestCount, SyntheticStream, feed, policy,  # noqa: E402
                             populate_vmis, synthetic)
from event_stages import STAGES, EventClock, medians, realtime, replay_floor  # noqa: E402
from held_config_api import HeldConfigApi  # noqa: E402
from replay_floor import Call, in_a_row, record_calls, replay, vmi_uuid_map  # noqa: E402
from bench_vnc_client import embedded_server  # noqa: E402

from introspect.app import create_app  # noqa: E402
from kube_manager.service.dispatcher import EventDispatcher  # noqa: E402
from introspect.explain import db_explainer  # noqa: E402
from introspect.server import IntrospectServer  # noqa: E402
from kube_manager.plumbing import gcpolicy  # noqa: E402
from kube_manager.records.db import Database  # noqa: E402
from kube_manager.service.pipeline import build_pipeline  # noqa: E402
from kube_manager.reconciler.pods import VMI, tag_changes  # noqa: E402
from kube_manager.settings import ReconcilerSettings  # noqa: E402
from vnc_client.client import VncClient  # noqa: E402

WAVES = ("tag", "address-group", "firewall-rule", "firewall-policy", "application-policy-set")
EXPLAIN_QUESTIONS = 30


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory (or its peak, VmHWM) in MB, from /proc (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def by_request(count: RequestCount, since: Dict[str, int]) -> Dict[str, List[Any]]:
    """Requests per kind (method and path template) since `since` (counts then): [count, mean ms]."""
    found: Dict[str, List[Any]] = {}
    for kind, seconds in sorted(count.seconds.items()):
        new = seconds[since.get(kind, 0):]
        if new:
            found[kind] = [len(new), round(statistics.mean(new) * 1000, 2)]
    return found


def percentile(values: List[float], fraction: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 1)


PAGE_LIMIT = ReconcilerSettings().list_page_limit  # --page-limit
SEMANTICS = "kubernetes"  # --semantics
REALTIME = False  # --realtime-events


def reconciler_settings(concurrency: int) -> ReconcilerSettings:
    """The daemon's reconciler settings, with the page size of the run (`--page-limit`)."""
    return ReconcilerSettings(concurrency=concurrency, list_page_limit=PAGE_LIMIT)


class Daemon:
    """The daemon's path on one DB: cache, reconciler and client, with the request counter, each
    request's (start, end) in `spans` and, with `record`, each request itself in `calls`."""

    def __init__(self, url: str, concurrency: int, record: bool = False) -> None:
        pipeline = build_pipeline("k8s", "k8s", semantics=SEMANTICS)
        self.db, self.cache = pipeline.db, pipeline.cache
        self.count = RequestCount()
        self.spans: List[Tuple[float, float]] = []

        def observe(method: str, template: str, status: Optional[int], seconds: float) -> None:
            self.count(method, template, status, seconds)
            now = time.monotonic()
            self.spans.append((now - seconds, now))

        self.client = VncClient(url, concurrency=concurrency, observer=observe)
        self.calls: List[Call] = record_calls(self.client) if record else []
        self.reconciler = pipeline.connect(self.client, reconciler_settings(concurrency))

    def converge(self, cluster: Any, translated_hook: Callable[[], Any] = lambda: None) -> Tuple[float, float, float]:
        """Feed the cluster, start, resync, wait: (translation seconds, reconcile seconds, CPU
        seconds of this process while reconciling)."""
        started = time.perf_counter()
        feed(self.cache, cluster)
        translated = time.perf_counter()
        gcpolicy.settle()  # as the daemon does after its initial lists
        translated_hook()
        cpu = time.process_time()
        self.reconciler.start()
        self.reconciler.resync()
        if not self.reconciler.wait_converged(7200):
            raise SystemExit(f"did not converge: {self.reconciler.summary()}")
        reconciled, cpu = time.perf_counter() - translated, time.process_time() - cpu
        gcpolicy.settle()  # as the daemon does once a resync's work is done
        return translated - started, reconciled, cpu

    def close(self) -> None:
        self.reconciler.stop()
        self.client.close()


def bare_client(url: str, desired: Dict[str, Dict[Any, Dict[str, Any]]], pods: Dict[Any, Any],
                concurrency: int) -> Dict[str, Any]:
    """The same objects and set-tag calls, written by a bare client with no bookkeeping."""
    count = RequestCount()
    with VncClient(url, concurrency=concurrency, observer=count) as client:
        pool = Pool(concurrency)
        started, cpu = time.perf_counter(), time.process_time()
        for obj_type in WAVES:
            bodies = list(desired.get(obj_type, {}).values())
            pool.map(lambda body, t=obj_type: client.create(t, body), bodies)
        vmis = client.list(VMI, detail=True, fields=["virtual_machine_refs"])
        vmi_of = {ref["uuid"]: vmi["uuid"] for vmi in vmis for ref in vmi.get("virtual_machine_refs", [])}

        def tag(record: Any) -> None:
            changes = tag_changes(set(), set(record.tags), lambda _t: True)
            if changes:
                client.set_tags(VMI, vmi_of[record.uid], changes)
        pool.map(tag, list(pods.values()))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"wall_s": round(wall, 2), "requests": count.requests, "writes": count.writes,
            "cpu_ms_per_request": round(cpu * 1000 / count.requests, 3)}


def event_latency(daemon: Daemon, cluster: Any, events: int, url: str, concurrency: int,
                  priority: List[int]) -> Dict[str, Any]:
    """New NetworkPolicies one at a time on the converged cluster: event -> last write, the
    requests of each and the round trips in a row among them, its stages, and after each its floor
    (`event_stages.py`: the same requests from a bare client in the best order)."""
    times: List[float] = []
    floors: List[float] = []
    stages: List[Dict[str, float]] = []
    requests_per_event: List[int] = []
    rows: List[int] = []
    n_namespaces = len(cluster.objects["Namespace"])
    since = {kind: len(seconds) for kind, seconds in daemon.count.seconds.items()}
    clock = EventClock(daemon.client)
    with VncClient(url, concurrency=concurrency) as bare, realtime(priority):
        pool = Pool(concurrency)
        for e in range(events):
            before = daemon.count.requests
            daemon.spans.clear()
            clock.sent.clear()
            started = time.monotonic()
            daemon.cache.on_event("networkpolicies", "ADDED", policy(f"ns-{e % n_namespaces}", f"extra-{e}", e))
            dispatched = time.monotonic()
            if not daemon.reconciler.wait_converged(120):
                raise SystemExit(f"event {e} did not converge: {daemon.reconciler.summary()}")
            times.append((daemon.reconciler.counters.last_write_at - started) * 1000)
            requests_per_event.append(daemon.count.requests - before)
            rows.append(in_a_row(daemon.spans))
            stages.append(clock.stages(started, dispatched))
            floors.append(replay_floor(bare, list(clock.sent), f"-floor-{e}", pool))
    return {"events": events, "p50_ms": percentile(times, 0.5), "p99_ms": percentile(times, 0.99),
            "max_ms": round(max(times), 1), "requests_per_event": round(statistics.mean(requests_per_event), 2),
            "round_trips_in_a_row": round(statistics.mean(rows), 2), "round_trips_in_a_row_max": max(rows),
            "floor_p50_ms": percentile(floors, 0.5), "floor_p99_ms": percentile(floors, 0.99),
            "stages_p50_ms": medians(stages), "times_ms": [round(t, 1) for t in times],
            "floors_ms": [round(t, 1) for t in floors], "by_request": by_request(daemon.count, since)}


def explain_latency(db: Database, cluster: Any, cache: EventDispatcher) -> Dict[str, Any]:
    """`/explain?format=json` over HTTP: the first question of an explainer nobody prepared (the
    index built whole by it: a standby's, or a question before the daemon converged); then, as
    the daemon does once converged, an explainer prepared in steps between events (how long,
    and the longest step: what an event could wait), its first question, an unchanged DB, and
    the first question after a change (a new NetworkPolicy through the cache), when the
    operator asks."""
    pods = cluster.objects["Pod"]

    def asking(server: IntrospectServer) -> Callable[[int], float]:
        def ask(i: int) -> float:
            src, dst = pods[(7 * i) % len(pods)]["metadata"], pods[(13 * i + 1) % len(pods)]["metadata"]
            started = time.perf_counter()
            reply = requests.get(f"{server.url}/explain", timeout=600, params={
                "format": "json", "from": f"{src['namespace']}/{src['name']}",
                "to": f"{dst['namespace']}/{dst['name']}", "port": "80", "protocol": "TCP"})
            if reply.status_code != 200:
                raise SystemExit(f"/explain answered {reply.status_code}: {reply.text[:200]}")
            return (time.perf_counter() - started) * 1000
        return ask

    def serving(explain: Any) -> IntrospectServer:
        server = IntrospectServer("127.0.0.1", 0, create_app(db, explain=explain))
        server.start()
        return server

    server = serving(db_explainer(db, "k8s", change_observers=cache.status.change_observers))
    try:
        first = asking(server)(0)
    finally:
        server.stop(1)
    gcpolicy.settle()  # that explainer and its index are gone
    explain = db_explainer(db, "k8s", change_observers=cache.status.change_observers)  # as the daemon wires it
    steps: List[float] = []
    mark = [time.perf_counter()]

    def pause() -> None:
        steps.append(time.perf_counter() - mark[0])
        gevent.sleep(0)
        mark[0] = time.perf_counter()

    started = time.perf_counter()
    explain.prepare(pause)
    prepared_s = time.perf_counter() - started
    server = serving(explain)
    try:
        ask = asking(server)
        first_prepared = ask(0)
        times = [ask(i) for i in range(1, EXPLAIN_QUESTIONS + 1)]
        change = policy("ns-0", "explain-change", 1)
        change["metadata"]["uid"] = "explain-change"
        cache.on_event("networkpolicies", "ADDED", change)
        after_change = ask(EXPLAIN_QUESTIONS + 1)
    finally:
        server.stop(1)
    return {"first_ms": round(first, 1), "prepare_s": round(prepared_s, 2), "prepare_steps": len(steps),
            "prepare_step_max_ms": round(max(steps, default=0.0) * 1000, 1),
            "first_prepared_ms": round(first_prepared, 1),
            "p50_ms": percentile(times, 0.5), "p99_ms": percentile(times, 0.99),
            "after_change_ms": round(after_change, 1)}


def one_size(policies: int, pods: int, concurrency: int, latency: float, events: int, bare: bool,
             repeat: int) -> Dict[str, Any]:
    base = rss_mb()
    cluster = synthetic(policies, pods)
    manifests_mb = rss_mb() - base
    result: Dict[str, Any] = {"policies": policies, "pods": pods, "namespaces": len(cluster.objects["Namespace"]),
                              "concurrency": concurrency, "latency_s": latency}
    daemon_walls: List[float] = []
    bare_runs: List[Dict[str, Any]] = []
    for _ in range(repeat - 1):  # extra rounds, alternating, against the neighbours' load
        with embedded_server("process", latency) as srv:
            populate_vmis(srv.url, cluster)
            extra = Daemon(srv.url, concurrency)
            daemon_walls.append(round(extra.converge(cluster)[1], 2))
            extra.close()
        if bare:
            with embedded_server("process", latency) as srv:
                populate_vmis(srv.url, cluster)
                bare_runs.append(bare_client(srv.url, extra.db.desired, extra.db.pods, concurrency))
    with embedded_server("process", latency) as srv:
        populate_vmis(srv.url, cluster)
        daemon = Daemon(srv.url, concurrency, record=bare)
        server_cpu: List[float] = []
        translate_s, reconcile_s, cpu_s = daemon.converge(
            cluster, lambda: (result.update(translated_rss=rss_mb()), server_cpu.append(srv.cpu_seconds() or 0.0)))
        server_cpu_s = (srv.cpu_seconds() or 0.0) - server_cpu[0]
        result["cold_start"] = {"translate_s": round(translate_s, 2), "wall_s": round(reconcile_s, 2),
                                "requests": daemon.count.requests, "writes": daemon.count.writes,
                                "cpu_ms_per_request": round(cpu_s * 1000 / daemon.count.requests, 3),
                                "server_cpu_ms_per_request": round(server_cpu_s * 1000 / daemon.count.requests, 3),
                                "objects": sum(len(v) for v in daemon.db.desired.values()),
                                "by_request": by_request(daemon.count, {})}
        result["memory_mb"] = {"translated": round(result.pop("translated_rss"), 1), "rss": round(rss_mb(), 1),
                               "peak": round(rss_mb("VmHWM"), 1), "manifests": round(manifests_mb, 1)}
        cold_calls, daemon.calls = daemon.calls, []
        if bare:
            with embedded_server("process", latency) as fresh:
                populate_vmis(fresh.url, cluster)
                floor = replay(fresh.url, cold_calls, vmi_uuid_map(srv.url, fresh.url), concurrency)
            result["replay_floor"] = floor
            result["cold_start"]["vs_replay_floor"] = round(reconcile_s / floor["wall_s"], 2)
        del cold_calls
        restart = Daemon(srv.url, concurrency)
        # From the first event to convergence, as the cold start is timed (not the settling after)
        restart_s = sum(restart.converge(cluster)[:2])
        result["restart"] = {"wall_s": round(restart_s, 2),
                             "requests": restart.count.requests, "writes": restart.count.writes}
        restart.close()
        priority = [os.getpid(), srv.pid] if REALTIME and srv.pid else []
        result["event"] = event_latency(daemon, cluster, events, srv.url, concurrency, priority) if events else None
        result["explain"] = explain_latency(daemon.db, cluster, daemon.cache)
        desired = {t: dict(objects) for t, objects in daemon.db.desired.items()}
        records = dict(daemon.db.pods)
        daemon.close()
    daemon_walls.append(result["cold_start"]["wall_s"])
    result["cold_start"]["walls_s"] = daemon_walls
    if bare:
        with embedded_server("process", latency) as srv:
            populate_vmis(srv.url, cluster)
            bare_runs.append(bare_client(srv.url, desired, records, concurrency))
        result["bare_client"] = min(bare_runs, key=lambda run: run["wall_s"])
        result["bare_client"]["walls_s"] = [run["wall_s"] for run in bare_runs]
        result["cold_start"]["vs_bare_client"] = round(min(daemon_walls) / result["bare_client"]["wall_s"], 2)
    return result


def cache_only(policies: int, pods: int) -> Dict[str, Any]:
    """The watch events through the cache and translator, no config API: /explain and memory."""
    base = rss_mb()
    cluster = synthetic(policies, pods)
    manifests_mb = rss_mb() - base
    pipeline = build_pipeline("k8s", "k8s", semantics=SEMANTICS)
    db = pipeline.db
    started = time.perf_counter()
    feed(pipeline.cache, cluster)
    translate_s = time.perf_counter() - started
    gcpolicy.settle()
    memory = {"translated": round(rss_mb(), 1), "peak": round(rss_mb("VmHWM"), 1), "manifests": round(manifests_mb, 1)}
    return {"policies": policies, "pods": pods, "namespaces": len(cluster.objects["Namespace"]), "cache_only": True,
            "cold_start": {"translate_s": round(translate_s, 2)}, "memory_mb": memory,
            "explain": explain_latency(db, cluster, pipeline.cache)}


def steady(policies: int, pods: int, trace: bool) -> Dict[str, Any]:
    """The daemon's steady state after a restart against a config API holding exactly the desired
    state (see the module docstring): memory, with nothing of the bench's input held."""
    if trace:
        tracemalloc.start()
    cluster = SyntheticStream(policies, pods)
    pipeline = build_pipeline("k8s", "k8s", semantics=SEMANTICS)
    started = time.perf_counter()
    feed(pipeline.cache, cluster)
    translate_s = time.perf_counter() - started
    gcpolicy.settle()  # as the daemon does after its initial lists
    translated = rss_mb()
    api = HeldConfigApi(pipeline.db)
    reconciler = pipeline.connect(api, reconciler_settings(8))  # type: ignore[arg-type]
    started = time.perf_counter()
    reconciler.start()
    reconciler.resync()
    if not reconciler.wait_converged(3600) or api.unexpected:
        raise SystemExit(f"not steady: {reconciler.summary()}; calls besides listings: {api.unexpected[:5]}")
    restart_s = time.perf_counter() - started
    converged = rss_mb()
    gcpolicy.settle()  # as the daemon does once a resync's work is done
    memory = {"translated": round(translated, 1), "rss": round(converged, 1), "settled": round(rss_mb(), 1),
              "peak": round(rss_mb("VmHWM"), 1), "manifests": 0.0}
    result: Dict[str, Any] = {"policies": policies, "pods": pods, "namespaces": cluster.n_namespaces,
                              "steady": True, "memory_mb": memory,
                              "cold_start": {"translate_s": round(translate_s, 2),
                                             "objects": sum(len(v) for v in pipeline.db.desired.values())},
                              "restart": {"wall_s": round(restart_s, 2), "requests": api.listings, "writes": 0}}
    if trace:
        top = tracemalloc.take_snapshot().statistics("lineno")[:25]
        result["tracemalloc_mb"] = [[str(stat.traceback[0]), round(stat.size / 2**20, 1), stat.count] for stat in top]
    reconciler.stop()
    return result


def report(results: List[Dict[str, Any]]) -> str:
    """The figures of every size side by side, one row per figure."""
    def cold(name: str) -> Callable[[Dict[str, Any]], Any]:
        return lambda r: r["cold_start"].get(name, "-")

    rows: List[Tuple[str, Callable[[Dict[str, Any]], Any]]] = [
        ("namespaces / pods / NetworkPolicies", lambda r: f"{r['namespaces']} / {r['pods']} / {r['policies']}"),
        ("objects written at cold start", cold("objects")),
        ("translation of the initial lists (s)", cold("translate_s")),
        ("cold start: daemon writes, each run (s)", cold("walls_s")),
        ("cold start: bare client, each run (s)", lambda r: r.get("bare_client", {}).get("walls_s", "-")),
        ("cold start: daemon / bare client (best runs)", cold("vs_bare_client")),
        ("cold start: replay floor (s) / daemon vs floor", lambda r: "-" if "replay_floor" not in r else
         f"{r['replay_floor']['wall_s']} / {r['cold_start']['vs_replay_floor']}"),
        ("cold start CPU per request: daemon / bare (ms)", lambda r: "{} / {}".format(
            r["cold_start"].get("cpu_ms_per_request", "-"), r.get("bare_client", {}).get("cpu_ms_per_request", "-"))),
        ("cold start config API CPU per request (ms)", cold("server_cpu_ms_per_request")),
        ("cold start: requests (writes)", lambda r: "-" if "requests" not in r["cold_start"] else
         f"{r['cold_start']['requests']} ({r['cold_start']['writes']})"),
        ("restart, nothing changed (s)", lambda r: r.get("restart", {}).get("wall_s", "-")),
        ("restart: requests (writes)", lambda r: "-" if "restart" not in r else
         f"{r['restart']['requests']} ({r['restart']['writes']})"),
        ("restart / best cold start (translation + writes)", lambda r: "-" if "walls_s" not in r["cold_start"] else round(
            r["restart"]["wall_s"] / (r["cold_start"]["translate_s"] + min(r["cold_start"]["walls_s"])), 3)),
        ("event -> last write p50 (ms)", lambda r: (r.get("event") or {}).get("p50_ms", "-")),
        ("event -> last write p99 (ms)", lambda r: (r.get("event") or {}).get("p99_ms", "-")),
        ("event: floor p50 / p99 (ms; its requests, bare client)", lambda r: "-" if not r.get("event") else
         f"{r['event']['floor_p50_ms']} / {r['event']['floor_p99_ms']}"),
        *[(f"  event stage, median (ms): {stage}", lambda r, stage=stage: (r.get("event") or {}).get(
            "stages_p50_ms", {}).get(stage, "-")) for stage in STAGES],
        ("requests per event", lambda r: (r.get("event") or {}).get("requests_per_event", "-")),
        ("round trips in a row per event: mean / max", lambda r: "-" if not r.get("event") else
         f"{r['event']['round_trips_in_a_row']} / {r['event']['round_trips_in_a_row_max']}"),
        ("/explain first question, index built whole (ms)", lambda r: r.get("explain", {}).get("first_ms", "-")),
        ("/explain built ahead, between events: s / longest step (ms)", lambda r: "-" if "explain" not in r else
         f"{r['explain']['prepare_s']} / {r['explain']['prepare_step_max_ms']}"),
        ("/explain first question, index built ahead (ms)", lambda r: r.get("explain", {}).get("first_prepared_ms", "-")),
        ("/explain first after a change (ms)", lambda r: r.get("explain", {}).get("after_change_ms", "-")),
        ("/explain p50 / p99, unchanged DB (ms)", lambda r: "-" if "explain" not in r else
         f"{r['explain']['p50_ms']} / {r['explain']['p99_ms']}"),
        ("RSS after translation (MB)", lambda r: r["memory_mb"]["translated"]),
        ("RSS after cold start (steady: restart) / peak (MB)",
         lambda r: f"{r['memory_mb'].get('rss', '-')} / {r['memory_mb']['peak']}"),
        ("  steady: once settled as the daemon does (MB)", lambda r: r["memory_mb"].get("settled", "-")),
        ("  of which synthetic manifests (MB)", lambda r: r["memory_mb"]["manifests"]),
    ]
    width = max(len(name) for name, _ in rows)
    lines = []
    for name, value in rows:
        lines.append(f"{name:<{width}}  " + "  ".join(f"{str(value(r)):>24}" for r in results))
    return "\n".join(lines)


def main(argv: "List[str] | None" = None) -> int:
    global PAGE_LIMIT, SEMANTICS, REALTIME
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="150:600,1500:6000",
                        help="comma list of NETWORKPOLICIES:PODS, each run in a process of its own")
    parser.add_argument("--concurrency", type=int, default=8, help="vnc_max_concurrency of daemon and bare client")
    parser.add_argument("--latency", type=float, default=0.002, help="seconds the server adds to every answer")
    parser.add_argument("--events", type=int, default=30, help="single-NetworkPolicy events timed per size")
    parser.add_argument("--cache-sizes", default="",
                        help="comma list of NETWORKPOLICIES:PODS measured without a config API (/explain, memory)")
    parser.add_argument("--steady-sizes", default="",
                        help="comma list of NETWORKPOLICIES:PODS whose steady-state memory is measured against "
                             "a config API held in memory (minutes at XLarge)")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="steady sizes: also list the lines holding most memory (slower, more memory)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare-client comparison")
    parser.add_argument("--repeat", type=int, default=1,
                        help="cold starts of daemon and bare client each, alternating; the best of each compared")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--realtime-events", action="store_true",
                        help="the events (only) with this process and its config API at real-time priority "
                             "(SCHED_FIFO; Linux, root): a quiet machine's figures on a busy one")
    parser.add_argument("--page-limit", type=int, default=PAGE_LIMIT,
                        help="objects per listing request at a resync (vnc_list_page_limit)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child: one size, JSON on stdout
    parser.add_argument("--one-cache", help=argparse.SUPPRESS)  # a child: one cache-only size
    parser.add_argument("--one-steady", help=argparse.SUPPRESS)  # a child: one steady-state size
    parser.add_argument("--semantics", default=SEMANTICS, choices=("kubernetes", "cluster-wide"),
                        help="policy_semantics of the daemon measured")
    parser.add_argument("--real-kube", action="store_true",
                        help="instead: cold start and event -> last write against a real API server and the emulator")
    parser.add_argument("--real-kube-policies", type=int, default=750, help="NetworkPolicies of --real-kube")
    args = parser.parse_args(argv)
    PAGE_LIMIT, SEMANTICS, REALTIME = args.page_limit, args.semantics, args.realtime_events
    if args.real_kube:
        command = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_real_kube.py"),
                   "--policies", str(args.real_kube_policies), "--events", str(args.events)]
        return subprocess.run(command + (["--json"] if args.json else [])).returncode
    if args.one:
        policies, pods = (int(n) for n in args.one.split(":"))
        print(json.dumps(one_size(policies, pods, args.concurrency, args.latency, args.events, not args.no_bare,
                                  args.repeat)))
        return 0
    if args.one_cache:
        policies, pods = (int(n) for n in args.one_cache.split(":"))
        print(json.dumps(cache_only(policies, pods)))
        return 0
    if args.one_steady:
        policies, pods = (int(n) for n in args.one_steady.split(":"))
        print(json.dumps(steady(policies, pods, args.tracemalloc)))
        return 0
    results = []
    runs = [("--one", size) for size in args.sizes.split(",") if size]
    runs += [("--one-cache", size) for size in args.cache_sizes.split(",") if size]
    runs += [("--one-steady", size) for size in args.steady_sizes.split(",") if size]
    for flag, size in runs:
        command = [sys.executable, os.path.abspath(__file__), flag, size, "--concurrency", str(args.concurrency),
                   "--latency", str(args.latency), "--events", str(args.events), "--repeat", str(args.repeat),
                   "--page-limit", str(args.page_limit), "--semantics", args.semantics]
        command += ["--no-bare"] if args.no_bare else []
        command += ["--tracemalloc"] if args.tracemalloc else []
        command += ["--realtime-events"] if args.realtime_events else []
        child = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
        results.append(json.loads(child.stdout.strip().splitlines()[-1]))
        if not args.json:
            print(f"size {size} done", file=sys.stderr, flush=True)
    print(json.dumps(results, indent=2) if args.json else report(results))
    for r in results if not args.json else ():
        for where, mb, count in r.get("tracemalloc_mb", ()):
            print(f"{r['policies']}:{r['pods']}  {mb:8.1f} MB  {count:>9} blocks  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
