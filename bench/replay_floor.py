"""The cold start's replay floor and the round trips in a row, for `bench_daemon.py`.

The floor: the daemon's own cold-start requests (recorded by `bench_daemon.Daemon(record=True)`)
sent again, same bodies, by a bare `VncClient` at the same concurrency into a fresh embedded config
API, a kind of request (method and path template) at a time in the order the daemon first sent
each, each kind's requests all answered before the next kind's start. What the daemon adds to a
cold start is its wall time over this one's.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

from gevent.pool import Pool

from bench_reconcile import RequestCount
from kube_manager.reconciler.pods import VMI
from vnc_client.client import VncClient

# One request the daemon sent: method, path, path template, query, JSON body.
Call = Tuple[str, str, str, Optional[Dict[str, str]], Any]


def record_calls(client: VncClient) -> List[Call]:
    """From now on, every request `client` sends is appended to the list returned."""
    calls: List[Call] = []
    send = client._call

    def recording(method: str, path: str, template: str, *, params: Optional[Dict[str, str]] = None,
                  json_body: Any = None) -> Any:
        calls.append((method, path, template, params, json_body))
        return send(method, path, template, params=params, json_body=json_body)
    client._call = recording  # type: ignore[method-assign]
    return calls


def in_a_row(spans: List[Tuple[float, float]]) -> int:
    """The longest chain of requests each sent after the previous one's answer came (the round
    trips in a row that bound a change's latency), from each request's (start, end)."""
    chain: List[Tuple[float, int]] = []  # (end, longest chain ending with that request)
    for start, end in sorted(spans, key=lambda span: span[1]):
        chain.append((end, 1 + max((n for done, n in chain if done <= start), default=0)))
    return max((n for _, n in chain), default=0)


def replay(url: str, calls: List[Call], vmi_uuids: Dict[str, str], concurrency: int) -> Dict[str, Any]:
    """The replay floor: the daemon's own cold-start requests (same bodies) sent by a bare client
    at the same concurrency, a kind (method and path template) at a time in the order the daemon
    first sent each, each kind's requests all answered before the next kind's start; `vmi_uuids`
    maps the recording server's VMI uuids to this server's (the only ids a cold start sends)."""
    waves: Dict[str, List[Call]] = {}
    for call in calls:
        body = call[4]
        if call[2] == "/set-tag":
            body = {**body, "obj_uuid": vmi_uuids[body["obj_uuid"]]}
        waves.setdefault(f"{call[0]} {call[2]}", []).append((call[0], call[1], call[2], call[3], body))
    count = RequestCount()
    failures = [0]
    with VncClient(url, concurrency=concurrency, observer=count) as client:
        def send(call: Call) -> None:
            try:
                client._call(call[0], call[1], call[2], params=call[3], json_body=call[4])
            except Exception:
                failures[0] += 1
        pool = Pool(concurrency)
        started, cpu = time.perf_counter(), time.process_time()
        for wave in waves.values():
            pool.map(send, wave)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"wall_s": round(wall, 2), "requests": count.requests, "failed": failures[0],
            "cpu_ms_per_request": round(cpu * 1000 / max(1, count.requests), 3), "kinds": list(waves)}


def vmi_uuid_map(old_url: str, new_url: str) -> Dict[str, str]:
    """VMI uuid on the old server -> the VMI of the same VM (pod) on the new one."""
    def by_vm(url: str) -> Dict[str, str]:
        with VncClient(url) as client:
            vmis = client.list(VMI, detail=True, fields=["virtual_machine_refs"])
        return {ref["uuid"]: vmi["uuid"] for vmi in vmis for ref in vmi.get("virtual_machine_refs", [])}
    old, new = by_vm(old_url), by_vm(new_url)
    return {vmi: new[vm] for vm, vmi in old.items()}
