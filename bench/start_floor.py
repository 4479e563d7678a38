#!/usr/bin/env python
"""The floor of a restart with nothing changed, for `bench_start.py`: the least a Python process
can do for it, timed as the daemon's restart is (launch to exit, the process's CPU).

A fresh interpreter that patches with gevent as the daemon does (`plumbing/gevent_patch.py`),
builds the Kubernetes client the daemon builds from its settings (`kubernetes_api_server` and
`kubernetes_api_port`: plain HTTP, no identity, the same `Configuration` with `retries = False` and
the same pool size, `kube/client_factory.py`), lists the Kubernetes kinds the daemon watches from
the same emulated API server (the daemon's page size, following `continue`, each kind in a greenlet
of its own, as the watchers do), sends the config API listings a restart's resync sends (the same
GETs, recorded from the product's resync, over one keep-alive `http.client` connection, while the
Kubernetes lists are under way), decodes every answer as the daemon does (orjson), and exits: no
comparing, no writes.

Two variants: `official` goes through the official client (`import kubernetes`, whose package
imports its config loaders, the typed client and their dependencies, and its `ApiClient`'s urllib3
pool, as `kube/raw_requests.py` does); `plain` asks the Kubernetes API over `http.client` too, the
floor of a daemon that would not use the official client at all.

    python bench/start_floor.py --child SPEC.json official|plain   (a child; bench_start.py runs it)
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

VARIANTS = ("official", "plain")


def timed(command: List[str], env: Dict[str, str], cwd: Optional[str] = None) -> Tuple[float, float, Any]:
    """Run `command` to its end: (wall seconds, the child's CPU seconds, the CompletedProcess);
    the caller's other children must have ended (their CPU would count)."""
    import resource
    import subprocess
    import time
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    launched = time.time()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    wall = time.time() - launched
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done


# --- the parent's side: what the floor asks, and one timed floor --------------------------------

def floor_spec(kube_url: str, vnc_url: str) -> Dict[str, Any]:
    """What a restart lists: the Kubernetes collections the daemon watches with its page size, and
    the config API GETs (path and query) of one resync's listings, recorded from the product's own
    resync against `vnc_url` (nothing is compared, nothing written)."""
    from contextlib import closing

    from replay_floor import record_calls
    from kube_manager.reconciler.pods import VMI
    from kube_manager.reconciler.resync import LIST_ORDER
    from kube_manager.service.pipeline import build_pipeline
    from kube_manager.settings import WatchSettings
    from vnc_client.client import VncClient

    pipeline = build_pipeline()
    with VncClient(vnc_url) as client:
        calls = record_calls(client)
        _since, walk = pipeline.connect(client).resyncs._list_all()
        with closing(walk):
            for obj_type in (VMI, *LIST_ORDER):
                for _page in walk.pages(obj_type):
                    pass
    collections = [kind.resource.api_prefix + "/" + kind.resource.name for kind in pipeline.kinds]
    return {"kube_url": kube_url, "page_size": WatchSettings().page_size, "collections": collections,
            "vnc_url": vnc_url, "vnc_gets": [[path, params or {}] for method, path, _t, params, _b in calls
                                             if method == "GET"]}


def run_floor(spec_path: str, variant: str) -> Dict[str, Any]:
    """One floor process: wall seconds from launch to exit, and its CPU."""
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
    wall, cpu, done = timed([sys.executable, os.path.abspath(__file__), "--child", spec_path, variant],
                            {**os.environ, "PYTHONPATH": root})
    if done.returncode != 0:
        raise SystemExit(f"the {variant} floor exited {done.returncode}:\n{done.stderr[-3000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


# --- the child: nothing above is imported before it runs ----------------------------------------

def _child(spec_path: str, variant: str) -> int:
    import gc

    gc.disable()  # the least: no collection at all (the daemon pauses it for its start's imports)
    from kube_manager.plumbing import gevent_patch  # the daemon's `patch_all`: entry points read once

    gevent_patch.patch_all()
    import http.client
    from urllib.parse import urlencode, urlsplit

    import gevent
    import orjson

    with open(spec_path) as stream:
        spec = json.load(stream)

    def plain_getter(url: str) -> Any:
        address = urlsplit(url)
        connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port)

        def get(path: str) -> Any:
            connection.request("GET", path, headers={"Accept": "application/json"})
            answer = connection.getresponse()
            body = answer.read()
            if answer.status != 200:
                raise SystemExit(f"GET {path}: {answer.status}")
            return orjson.loads(body)
        return get

    if variant == "official":
        from kubernetes import client  # what `from kubernetes import client` brings, as the daemon's does

        configuration = client.Configuration()
        configuration.retries = False
        configuration.connection_pool_maxsize = 8
        configuration.host = spec["kube_url"]
        api_client = client.ApiClient(configuration)

        def kube_getter(url: str) -> Any:
            def get(path: str) -> Any:
                answer = api_client.rest_client.pool_manager.request(
                    "GET", configuration.host + path, headers={"Accept": "application/json"}, preload_content=False)
                try:
                    if answer.status != 200:
                        raise SystemExit(f"GET {path}: {answer.status}")
                    return orjson.loads(answer.data)
                finally:
                    answer.release_conn()
            return get
    else:
        kube_getter = plain_getter

    def list_collection(path: str) -> None:
        get = kube_getter(spec["kube_url"])
        query: Dict[str, Any] = {"limit": spec["page_size"]}
        while True:
            page = get(f"{path}?{urlencode(query)}")
            query["continue"] = (page.get("metadata") or {}).get("continue")
            if not query["continue"]:
                return

    def list_config_api() -> None:
        get = plain_getter(spec["vnc_url"])
        for path, params in spec["vnc_gets"]:
            get(f"{path}?{urlencode(params)}" if params else path)

    greenlets = [gevent.spawn(list_collection, path) for path in spec["collections"]]
    greenlets.append(gevent.spawn(list_config_api))
    gevent.joinall(greenlets, raise_error=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child" and sys.argv[3] in VARIANTS:
        sys.exit(_child(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
