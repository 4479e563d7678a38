#!/usr/bin/env python
"""The path of one NetworkPolicy event through the daemon's pipeline, traced: which product
modules it runs, and which calls cross from one room to another (and whether upstream).

The demo cluster (`examples/demo`) is loaded into a pipeline built by `build_pipeline`, whose
reconciler writes to the embedded config API over HTTP; once converged, one NetworkPolicy is
modified (`MODIFIED`, as the watcher delivers it) and everything runs until the reconciler has
nothing left to do. A profiler records every Python call in that time (in every greenlet).

Reported: the product modules that ran (kube_manager, vnc_client), the calls from a function of one
room (a package such as `kube_manager.reconciler`, or the `vnc_client` library) into another, by
pair, and those of them that go upstream (against watch -> dispatcher -> handlers -> translator ->
reconciler -> status -> client order, the status book after the reconciler because the reconciler
feeds it; the records, observability, settings and plumbing are passive and left out), module by
module: a read of a published read-only view (the translator's `DesiredState`, the reconciler's
`SyncStates`) is counted apart from the other upstream calls.

    python bench/event_path.py [--json]
"""
from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402 - after monkey-patching, on purpose
import copy  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections import Counter  # noqa: E402
from typing import Any, Dict, Optional, Set, Tuple  # noqa: E402

from kube_manager.offline.manifests import load_manifests  # noqa: E402
from kube_manager.service.pipeline import build_pipeline  # noqa: E402
from simulators.cni import CniEmulator  # noqa: E402
from simulators.vnc_api.runner import EmbeddedServer  # noqa: E402
from vnc_client.client import VncClient  # noqa: E402

# Downstream order of the rooms an event crosses.
ORDER = ("kube_manager.kube", "kube_manager.service", "kube_manager.handlers", "kube_manager.translator",
         "kube_manager.reconciler", "kube_manager.status", "vnc_client")  # the client: the end of the line
PASSIVE = ("kube_manager.records", "kube_manager.observability", "kube_manager.settings", "kube_manager.plumbing")
PUBLISHED = ("kube_manager.translator.published", "kube_manager.reconciler.core.SyncStates")
RESOURCES = {"Namespace": "namespaces", "Pod": "pods", "NetworkPolicy": "networkpolicies"}


def room(module: str) -> Optional[str]:
    if module.startswith("vnc_client"):
        return "vnc_client"
    if module.startswith("kube_manager."):
        return ".".join(module.split(".")[:2])
    return None


def trace_one_event(demo: str) -> Tuple[Set[str], Counter, Counter]:
    server = EmbeddedServer("127.0.0.1", 0)
    server.start()
    client = VncClient([server.host], server.port)
    pipeline = build_pipeline()
    reconciler = pipeline.connect(client)
    manifests = load_manifests([demo])
    cni = CniEmulator(client)
    for pod in manifests.objects["Pod"]:
        cni.attach(pod)  # each pod's VM and VMI, as the CNI makes them
    dispatcher = pipeline.cache
    for objects in (manifests.objects["Namespace"], manifests.objects["Pod"], manifests.objects["NetworkPolicy"]):
        for obj in objects:
            dispatcher.on_event(RESOURCES[obj["kind"]], "ADDED", copy.deepcopy(obj))
    for name in pipeline.kinds.names():
        dispatcher.on_event(name, "LISTED", {"resourceVersion": "1"})
    reconciler.resync()
    reconciler.start()
    assert reconciler.wait_converged(60), "the demo did not converge"
    modified = copy.deepcopy(manifests.objects["NetworkPolicy"][0])
    modified["spec"].setdefault("podSelector", {}).setdefault("matchLabels", {})["traced"] = "yes"
    modules: Set[str] = set()
    crossings: Counter = Counter()
    upstream: Counter = Counter()  # (caller module, callee module or published view)

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        target = room(callee)
        if target is None:
            return
        modules.add(callee)
        caller = frame.f_back
        source = room(caller.f_globals.get("__name__", "")) if caller is not None else None
        if source is None or source == target or source in PASSIVE or target in PASSIVE:
            return
        crossings[(source, target)] += 1
        if source in ORDER and target in ORDER and ORDER.index(target) < ORDER.index(source):
            owner = frame.f_locals.get("self")
            where = f"{callee}.{type(owner).__name__}" if owner is not None else callee
            upstream[(caller.f_globals["__name__"], where)] += 1

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        dispatcher.on_event("networkpolicies", "MODIFIED", modified)
        assert reconciler.wait_converged(60), "the event did not converge"
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    reconciler.stop()
    client.close()
    server.stop()
    return modules, crossings, upstream


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--demo", default="examples/demo")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    modules, crossings, upstream = trace_one_event(args.demo)
    views = {pair: n for pair, n in upstream.items() if pair[1].startswith(PUBLISHED)}
    result: Dict[str, Any] = {
        "modules": len(modules), "rooms": sorted({room(m) for m in modules}),
        "crossings": {f"{a} -> {b}": n for (a, b), n in sorted(crossings.items())},
        "upstream": {f"{a} -> {b}": n for (a, b), n in sorted(upstream.items()) if (a, b) not in views},
        "published_reads": {f"{a} -> {b}": n for (a, b), n in sorted(views.items())}}
    if args.json:
        print(json.dumps({**result, "module_names": sorted(modules)}, indent=1))
        return
    print(f"product modules run: {result['modules']}")
    print("calls between rooms:")
    for pair, n in result["crossings"].items():
        print(f"  {pair}: {n}")
    print("upstream calls:", ", ".join(f"{p} ({n})" for p, n in result["upstream"].items()) or "none")
    print("reads of a published view:", ", ".join(f"{p} ({n})" for p, n in result["published_reads"].items())
          or "none")


if __name__ == "__main__":
    main()
