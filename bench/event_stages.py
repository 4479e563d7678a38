"""One NetworkPolicy event, taken apart, and its floor, for `bench_daemon.py`.

The stages: every request the daemon sends is marked when sent and when answered, by what it is
(a pass rule's create, a deny rule's create, the firewall policy's create, its ref in the APS, a
deny rule's ref in `<cluster>-denyall`). An event's time then splits into the dispatch (the watch
event through the records, the translator and the status book, until the reconciler has its keys),
each of the four round trips in a row (the pass rules, from the first sent to the last answered;
the policy; the APS ref; the deny refs) and the gaps between them (the daemon's own work from one
answer to the next request).

The floor: the same requests, same bodies (their new objects renamed, so that they are created
again), sent by a bare `VncClient` to the same config API right after the event, in the best
order make before break allows: the pass rules at once; the policy with the deny rules beside it
(they are needed only two round trips later); the APS ref; the deny refs at once. What the daemon
adds to an event is its time over this one's; what is left of the floor is the config API's and
the client's.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Tuple

from gevent.pool import Pool

from vnc_client.client import VncClient

PASS, DENY_RULE, POLICY, APS_REF, DENY_REF = "pass rule", "deny rule", "policy", "APS ref", "deny ref"
STAGES = ("dispatch", "pass rules", "to policy", "policy", "to APS ref", "APS ref", "to deny refs", "deny refs")
# The floor's waves: each sent at once, each answered whole before the next.
FLOOR_WAVES = ((PASS,), (POLICY, DENY_RULE), (APS_REF,), (DENY_REF,))

# One request: what it is, method, path, template, query, JSON body, sent at, answered at.
Sent = Tuple[str, str, str, str, Optional[Dict[str, str]], Any, float, float]


def kind_of(template: str, body: Any) -> str:
    """What one request of a new NetworkPolicy's is (one of the five kinds above, or its template)."""
    if template == "/ref-update":
        return APS_REF if body.get("type") == "application-policy-set" else DENY_REF
    if template == "/firewall-rules":  # a create's body: {"firewall-rule": {...}}
        return DENY_RULE if body["firewall-rule"]["fq_name"][-1].endswith("denyall") else PASS
    return POLICY if template == "/firewall-policys" else template


class EventClock:
    """Marks every request `client` sends from now on, with what it is, when sent and answered."""

    def __init__(self, client: VncClient) -> None:
        self.sent: List[Sent] = []
        call = client._call

        def marked(method: str, path: str, template: str, *, params: Optional[Dict[str, str]] = None,
                   json_body: Any = None) -> Any:
            started = time.monotonic()
            try:
                return call(method, path, template, params=params, json_body=json_body)
            finally:
                self.sent.append((kind_of(template, json_body or {}), method, path, template, params, json_body,
                                  started, time.monotonic()))
        client._call = marked  # type: ignore[method-assign]

    def stages(self, started: float, dispatched: float) -> Dict[str, float]:
        """The event's stages in ms (see the module docstring), from its requests marked so far."""
        first: Dict[str, float] = {}
        last: Dict[str, float] = {}
        for kind, *_call, sent, answered in self.sent:
            first[kind] = min(first.get(kind, sent), sent)
            last[kind] = max(last.get(kind, answered), answered)
        points = [started, dispatched, first[PASS], last[PASS], first[POLICY], last[POLICY], first[APS_REF],
                  last[APS_REF], first[DENY_REF], last[DENY_REF]]
        spans = [(b - a) * 1000 for a, b in zip(points, points[1:])]
        # dispatch, its keys to the first request (counted with the dispatch), then the waves and gaps
        return dict(zip(STAGES, [spans[0] + spans[1]] + spans[2:]))


def replay_floor(client: VncClient, sent: List[Sent], suffix: str, pool: Pool) -> float:
    """The floor of one event (see the module docstring), in ms; `suffix` makes its names new."""
    created = {tuple(call[5][next(iter(call[5]))]["fq_name"]) for call in sent if call[0] in (PASS, DENY_RULE, POLICY)}
    started = time.monotonic()
    for wave in FLOOR_WAVES:
        calls = [call for call in sent if call[0] in wave]
        pool.map(lambda call: client._call(call[1], call[2], call[3], params=call[4],
                                           json_body=_renamed(call[5], suffix, created)), calls)
    return (time.monotonic() - started) * 1000


def _renamed(value: Any, suffix: str, names: Any) -> Any:
    """`value` with every fq_name of `names` given `suffix` (a new object's, and the refs to it)."""
    if isinstance(value, dict):
        return {key: _renamed(item, suffix, names) for key, item in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(item, str) for item in value) and tuple(value) in names:
            return value[:-1] + [value[-1] + suffix]
        return [_renamed(item, suffix, names) for item in value]
    return value


def medians(rows: List[Dict[str, float]]) -> Dict[str, float]:
    """Each stage's median over the events, in ms."""
    return {stage: round(statistics.median(row[stage] for row in rows), 2) for stage in rows[0]} if rows else {}


@contextmanager
def realtime(pids: List[int]) -> Iterator[None]:
    """`pids` (the bench and its config API) at real-time priority (SCHED_FIFO) meanwhile: on a
    machine other work keeps busy, what a quiet one would give them (Linux; root or CAP_SYS_NICE).
    Only for the events: a cold start at that priority would starve everything else for minutes."""
    for pid in pids:
        os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(10))
    try:
        yield
    finally:
        for pid in pids:
            try:
                os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
            except OSError as exc:  # the config API may be gone
                print(f"could not set {pid} back to normal priority: {exc}", file=sys.stderr)
