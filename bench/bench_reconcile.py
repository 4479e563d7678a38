#!/usr/bin/env python
"""Reconciler benchmark: cold start of a large cluster against the embedded config API, and the
latency from one NetworkPolicy event to its last write.

The path measured is the daemon's, built by `build_pipeline`: `EventDispatcher` (DB records +
incremental translator) -> `Reconciler` (pushing NetworkPolicy states to the records) ->
`VncClient` over real HTTP -> the embedded config API with `--latency` added to every answer (2 ms
by default, a LAN round trip to a busy contrail-api). The server runs in its own process, as
contrail-api does (`--server thread` runs it in this one, sharing the interpreter lock); each pod's
VM and VMI exist before the start, as the CNI would have made them. Requests are counted as sent,
by the client's observer hook (every HTTP attempt, retries included).

For each concurrency setting (`vnc_max_concurrency`) a fresh server and reconciler do a cold start:
one listing per type, then every object created and every VMI tagged. Reported: wall time, requests
the server saw, and that count divided by the minimum the objects need (one create per object, one
set-tag per VMI, one listing per type: 1.0 means no request was wasted, no object written twice).
Then, on the converged cluster, NetworkPolicies are added one at a time: the time from the event to
the reconciler having nothing left to do (its last write), and the requests each one cost.

    python bench/bench_reconcile.py [--policies 1000] [--pods 10000] [--concurrency 8,1] [--events 20]
"""
from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402 - after monkey-patching, on purpose
import gc  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from typing import Any, Dict, Iterable, Iterator, List, Optional, Union  # noqa: E402

from gevent.pool import Pool  # noqa: E402

from bench_vnc_client import embedded_server  # noqa: E402  (bench/ is on sys.path when run as a script)

from kube_manager.service.dispatcher import EventDispatcher  # noqa: E402
from kube_manager.handlers import KINDS  # noqa: E402
from kube_manager.offline.manifests import Manifests  # noqa: E402
from kube_manager.service.pipeline import build_pipeline  # noqa: E402
from kube_manager.reconciler.core import Reconciler  # noqa: E402
from kube_manager.reconciler.ownership import OWNED_TYPES  # noqa: E402
from kube_manager.settings import ReconcilerSettings  # noqa: E402
from vnc_client.client import VncClient  # noqa: E402

VN = ["default-domain", "default-project", "k8s-default-pod-network"]
APPS = 20  # distinct app labels per namespace


Cluster = Manifests  # namespaces, pods, network_policies, as the manifest loader holds them


def synthetic(policies: int, pods: int) -> Cluster:
    """`pods` pods and `policies` NetworkPolicies over namespaces of 100 pods; policies mix pod,
    namespace and ipBlock peers, several ports, both directions."""
    stream = SyntheticStream(policies, pods)
    return Cluster({"Namespace": list(stream.namespaces),
                    "Pod": list(stream.pods),
                    "NetworkPolicy": list(stream.network_policies)})


class SyntheticStream:
    """The manifests of `synthetic(policies, pods)`, made anew each time they are read and never
    held: what a memory measure feeds the daemon, so that the bench's own input is not counted as
    the daemon's (a held XLarge cluster is some hundreds of MB, and its strings would be shared with
    the daemon's records)."""

    def __init__(self, policies: int, pods: int) -> None:
        self.policies, self.pod_count = policies, pods
        self.n_namespaces = max(1, pods // 100)

    @property
    def objects(self) -> Dict[str, Iterator[Dict[str, Any]]]:
        """By kind, as `Cluster.objects`; each reading starts the manifests anew."""
        return {"Namespace": self.namespaces, "Pod": self.pods, "NetworkPolicy": self.network_policies}

    @property
    def namespaces(self) -> Iterator[Dict[str, Any]]:
        for n in range(self.n_namespaces):
            yield {"kind": "Namespace", "metadata": {
                "name": f"ns-{n}", "uid": f"ns-{n}", "labels": {"team": f"team-{n % 10}"}}}

    @property
    def pods(self) -> Iterator[Dict[str, Any]]:
        for i in range(self.pod_count):
            yield {"kind": "Pod", "metadata": {
                "namespace": f"ns-{i % self.n_namespaces}", "name": f"pod-{i}", "uid": f"00000000-0000-4000-8000-{i:012d}",
                "labels": {"app": f"app-{i % APPS}", "pod-template-hash": f"h{i}"}},
                "spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
                "status": {"podIP": f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"}}

    @property
    def network_policies(self) -> Iterator[Dict[str, Any]]:
        for p in range(self.policies):
            yield policy(f"ns-{p % self.n_namespaces}", f"np-{p}", p)


def policy(namespace: str, name: str, p: int) -> Dict[str, Any]:
    selected = {"matchLabels": {"app": f"app-{p % APPS}"}}
    peers = [{"podSelector": {"matchLabels": {"app": f"app-{(p + 1) % APPS}"}}},
             {"namespaceSelector": {"matchLabels": {"team": f"team-{p % 10}"}}}]
    if p % 4 == 0:
        peers.append({"ipBlock": {"cidr": f"172.{16 + p % 16}.0.0/16", "except": [f"172.{16 + p % 16}.1.0/24"]}})
    spec: Dict[str, Any] = {"podSelector": selected,
                            "ingress": [{"from": peers, "ports": [{"protocol": "TCP", "port": 80 + p % 5},
                                                                  {"protocol": "TCP", "port": 443}]}]}
    if p % 3 == 0:
        spec["policyTypes"] = ["Ingress", "Egress"]
        spec["egress"] = [{"to": [{"podSelector": {}}], "ports": [{"protocol": "UDP", "port": 53}]}]
    return {"kind": "NetworkPolicy", "metadata": {"namespace": namespace, "name": name, "uid": f"np-{p}"},
            "spec": spec}


def populate_vmis(url: str, cluster: Cluster) -> None:
    """What the CNI did before kube-manager starts: a VM (uuid = pod uid) and a VMI per pod."""
    with VncClient(url, concurrency=32) as client:
        client.create("virtual-network", {"fq_name": VN, "parent_type": "project"})
        Pool(32).map(lambda manifest: attach_vmi(client, manifest), cluster.objects["Pod"])


def attach_vmi(client: VncClient, manifest: Dict[str, Any]) -> None:
    """What the CNI does for one pod (in the network `populate_vmis` made)."""
    meta = manifest["metadata"]
    name = f"{meta['name']}__{meta['uid']}"
    client.create("virtual-machine", {"fq_name": [name], "uuid": meta["uid"]})
    client.create("virtual-machine-interface", {
        "fq_name": VN[:2] + [name], "parent_type": "project",
        "virtual_machine_refs": [{"to": [name], "uuid": meta["uid"]}], "virtual_network_refs": [{"to": VN}]})


class RequestCount:
    """The client's observer: every HTTP attempt, those that ask for a change, and how long each
    kind took (client-side: the round trip, server time included)."""

    READS = ("GET",)
    ACTIONS_THAT_READ = ("/fqname-to-id", "/id-to-fqname")

    def __init__(self) -> None:
        self.requests = 0
        self.writes = 0
        self.seconds: Dict[str, List[float]] = {}

    def __call__(self, method: str, template: str, status: Optional[int], seconds: float) -> None:
        self.requests += 1
        self.writes += method not in self.READS and template not in self.ACTIONS_THAT_READ
        self.seconds.setdefault(f"{method} {template}", []).append(seconds)


def feed(cache: EventDispatcher, cluster: "Union[Cluster, SyntheticStream]") -> None:
    """The initial lists, as the watchers deliver them: every registered kind's list ends with
    LISTED (kinds the synthetic cluster has none of, such as ClusterNetworkPolicies, with an empty
    list), or the cache would hold every event until that kind's list came."""
    objects_of: Dict[str, Iterable[Dict[str, Any]]] = {"namespaces": cluster.objects["Namespace"], "pods": cluster.objects["Pod"],
                  "networkpolicies": cluster.objects["NetworkPolicy"]}
    for resource in KINDS.names():
        for obj in objects_of.get(resource, ()):
            cache.on_event(resource, "ADDED", obj)
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})


@dataclass
class ColdStart:
    concurrency: int
    translate_s: float
    wall_s: float
    objects: int
    vmis: int
    requests: int
    writes: int
    minimum: int
    ratio: float
    requests_per_s: float
    cpu_ms_per_request: float                  # this process: reconciler + client
    server_cpu_ms_per_request: Optional[float]  # the server process (None: a thread of this one)


@dataclass
class EventLatency:
    events: int
    median_ms: float
    p95_ms: float
    max_ms: float
    requests_per_event: float
    request_ms: Dict[str, float]  # mean round trip per kind of request during the events


def run(cluster: Cluster, concurrency: int, latency: float, events: int,
        server: str) -> "tuple[ColdStart, Optional[EventLatency]]":
    with embedded_server(server, latency) as srv:
        url = srv.url
        populate_vmis(url, cluster)
        pipeline = build_pipeline("k8s", "k8s")
        db, cache = pipeline.db, pipeline.cache
        started = time.perf_counter()
        feed(cache, cluster)
        translate_s = time.perf_counter() - started
        gc.collect()  # as the daemon does after its initial lists
        gc.freeze()
        count = RequestCount()
        client = VncClient(url, concurrency=concurrency, observer=count)
        reconciler = pipeline.connect(client, ReconcilerSettings(concurrency=concurrency))
        server_cpu = srv.cpu_seconds()
        started, cpu = time.perf_counter(), time.process_time()
        reconciler.start()
        reconciler.resync()
        if not reconciler.wait_converged(3600):
            raise SystemExit(f"cold start did not converge: {reconciler.summary()}")
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        server_cpu = srv.cpu_seconds() - server_cpu if server_cpu is not None else None
        objects = sum(len(v) for v in db.desired.values())
        vmis = len(cluster.objects["Pod"])
        minimum = objects + vmis + len(OWNED_TYPES) + 1  # + the listings (5 types and the VMIs)
        cold = ColdStart(concurrency, round(translate_s, 2), round(wall, 2), objects, vmis, count.requests,
                         count.writes, minimum, round(count.requests / minimum, 4), round(count.requests / wall, 1),
                         round(cpu * 1000 / count.requests, 2),
                         None if server_cpu is None else round(server_cpu * 1000 / count.requests, 2))
        figures = measure_events(cache, reconciler, count, cluster, events) if events else None
        reconciler.stop()
        client.close()
        return cold, figures


def measure_events(cache: EventDispatcher, reconciler: Reconciler, count: RequestCount, cluster: Cluster,
                   events: int) -> EventLatency:
    """One new NetworkPolicy at a time on the converged cluster: event -> last write."""
    times: List[float] = []
    requests: List[int] = []
    n_namespaces = len(cluster.objects["Namespace"])
    count.seconds.clear()
    for e in range(events):
        before = count.requests
        started = time.monotonic()
        cache.on_event("networkpolicies", "ADDED", policy(f"ns-{e % n_namespaces}", f"extra-{e}", e))
        if not reconciler.wait_converged(60):
            raise SystemExit(f"event {e} did not converge: {reconciler.summary()}")
        times.append((reconciler.counters.last_write_at - started) * 1000)
        requests.append(count.requests - before)
    times.sort()
    return EventLatency(events, round(statistics.median(times), 1), round(times[int(0.95 * (len(times) - 1))], 1),
                        round(times[-1], 1), round(statistics.mean(requests), 2),
                        {kind: round(statistics.mean(s) * 1000, 1) for kind, s in sorted(count.seconds.items())})


def main(argv: "List[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--concurrency", default="8,1", help="comma list of vnc_max_concurrency values")
    parser.add_argument("--latency", type=float, default=0.002, help="seconds added to every answer")
    parser.add_argument("--events", type=int, default=20, help="single-policy events timed after the first run")
    parser.add_argument("--server", choices=("process", "thread"), default="process",
                        help="run the embedded config API in its own process (default) or a thread")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    cluster = synthetic(args.policies, args.pods)
    results: Dict[str, Any] = {"policies": args.policies, "pods": args.pods, "latency_s": args.latency,
                               "cold_start": [], "event_latency": None}
    for n, concurrency in enumerate(int(c) for c in args.concurrency.split(",")):
        cold, latency = run(cluster, concurrency, args.latency, args.events if n == 0 else 0, args.server)
        results["cold_start"].append(asdict(cold))
        if latency is not None:
            results["event_latency"] = {"concurrency": concurrency, **asdict(latency)}
        if not args.json:
            print(f"cold start, concurrency {cold.concurrency}: {cold.wall_s:.2f} s wall "
                  f"({cold.requests_per_s:.0f} req/s), {cold.requests} requests ({cold.writes} writes) "
                  f"for {cold.objects} objects + {cold.vmis} VMIs, minimum {cold.minimum}, "
                  f"ratio {cold.ratio:.4f}; CPU per request: {cold.cpu_ms_per_request} ms here, "
                  f"{cold.server_cpu_ms_per_request} ms in the server; "
                  f"translation of the events {cold.translate_s:.2f} s", flush=True)
            if latency is not None:
                print(f"one NetworkPolicy event -> last write (concurrency {concurrency}, {latency.events} events): "
                      f"median {latency.median_ms:.1f} ms, p95 {latency.p95_ms:.1f} ms, max {latency.max_ms:.1f} ms, "
                      f"{latency.requests_per_event:.2f} requests per event; mean round trip "
                      + ", ".join(f"{kind} {ms} ms" for kind, ms in latency.request_ms.items()), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
