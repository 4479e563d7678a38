"""Test and benchmark knobs of the embedded server: added latency, injected faults, request counters.

All three are shared between the server (possibly in its own thread) and the test code driving it,
so their state is guarded by real OS locks; none of their methods ever yields to gevent.

Faults are decided per request, before the request is handled (an injected fault never changes the
store): first any explicitly queued ones (`fail_next`, `drop_next`), then at random with the
configured rates from a seeded generator, so a run with a given seed is reproducible.
"""
from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from gevent.monkey import get_original

_Lock = get_original("_thread", "allocate_lock")

FAIL = "fail"
DROP = "drop"
DROPPED = 0  # the status recorded for a request whose connection was dropped


@dataclass(frozen=True)
class ServerOptions:
    """Behaviour of the embedded server beyond the real API (defaults: a plain, fast server)."""

    latency: float = 0.0  # seconds added before every answer
    fail_rate: float = 0.0  # share of requests answered 503 Service Unavailable
    drop_rate: float = 0.0  # share of requests whose connection is closed without an answer
    seed: Optional[int] = None  # seed of the fault decisions (None: unpredictable)

    def __post_init__(self) -> None:
        if self.latency < 0:
            raise ValueError(f"latency must not be negative, got {self.latency}")
        for name in ("fail_rate", "drop_rate"):
            rate = getattr(self, name)
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {rate}")
        if self.fail_rate + self.drop_rate > 1.0:
            raise ValueError("fail_rate + drop_rate must not exceed 1")


class DropConnection(Exception):
    """Raised by the app so that the server's handler closes the connection without answering."""


class FaultInjector:
    """Latency and fault decisions; reconfigurable while the server runs."""

    def __init__(self, options: ServerOptions = ServerOptions()) -> None:
        self._lock = _Lock()
        self._options = options
        self._random = random.Random(options.seed)
        self._queued: List[Tuple[str, int]] = []  # (kind, status) consumed first, in order
        self._refused: Dict[str, Tuple[int, str]] = {}  # name part -> (4xx status, message)

    @property
    def options(self) -> ServerOptions:
        return self._options

    def configure(self, *, latency: Optional[float] = None, fail_rate: Optional[float] = None,
                  drop_rate: Optional[float] = None) -> None:
        """Change latency or fault rates from now on (unspecified ones keep their value)."""
        with self._lock:
            old = self._options
            self._options = replace(old, latency=old.latency if latency is None else latency,
                                    fail_rate=old.fail_rate if fail_rate is None else fail_rate,
                                    drop_rate=old.drop_rate if drop_rate is None else drop_rate)

    def fail_next(self, count: int = 1, status: int = 503) -> None:
        """Answer the next `count` requests with `status` (a 5xx) and a plain-text body."""
        if not 500 <= status <= 599:
            raise ValueError(f"an injected failure must be a 5xx status, got {status}")
        with self._lock:
            self._queued.extend([(FAIL, status)] * count)

    def drop_next(self, count: int = 1) -> None:
        """Close the connection of the next `count` requests without answering."""
        with self._lock:
            self._queued.extend([(DROP, DROPPED)] * count)

    def refuse_creates(self, name_part: str, status: int = 400, message: str = "refused") -> None:
        """Answer every create of an object whose name contains `name_part` with `status` (a 4xx:
        a refusal for good, which kube-manager parks) and `message`, until `clear`."""
        if not 400 <= status <= 499:
            raise ValueError(f"a refusal must be a 4xx status, got {status}")
        with self._lock:
            self._refused[name_part] = (status, message)

    def refusal(self, name: str) -> Optional[Tuple[int, str]]:
        """The refusal of a create of an object named `name`, if one was asked for."""
        with self._lock:
            return next((answer for part, answer in self._refused.items() if part in name), None)

    def clear(self) -> None:
        """Forget queued faults and refusals and set both rates to 0 (latency stays)."""
        with self._lock:
            self._queued.clear()
            self._refused.clear()
            self._options = replace(self._options, fail_rate=0.0, drop_rate=0.0)

    def decide(self) -> Tuple[Optional[str], int]:
        """The fault for the request being handled: (FAIL, status), (DROP, 0) or (None, 0)."""
        with self._lock:
            if self._queued:
                return self._queued.pop(0)
            options = self._options
            if not options.fail_rate and not options.drop_rate:
                return None, 0
            draw = self._random.random()
        if draw < options.fail_rate:
            return FAIL, 503
        if draw < options.fail_rate + options.drop_rate:
            return DROP, DROPPED
        return None, 0

    @property
    def latency(self) -> float:
        return self._options.latency


class RequestCounters:
    """How many requests the server saw, by (method, route), by status, and how many could write.

    Routes are templates, the same the REST client reports: `/`, `/<plural>`, `/<type>/{uuid}`,
    `/fqname-to-id` and the other action paths; unknown paths count as `<unknown>`. A dropped
    connection counts under status 0.
    """

    def __init__(self) -> None:
        self._lock = _Lock()
        self._by_route: Counter = Counter()
        self._by_status: Counter = Counter()
        self._writes = 0
        self._writes_by_agent: Counter = Counter()
        self._last_write_by_agent: Dict[str, float] = {}

    def record(self, method: str, route: str, status: int, *, write: bool = False, agent: str = "",
               at: Optional[float] = None) -> None:
        """Count one request; `write` marks requests that may change the store (create, update,
        delete, ref-update, set-tag), whatever their outcome; `agent` is the client's User-Agent and
        `at` the time.time() the request arrived."""
        with self._lock:
            self._by_route[(method, route)] += 1
            self._by_status[status] += 1
            self._writes += write
            if write:
                self._writes_by_agent[agent] += 1
                self._last_write_by_agent[agent] = time.time() if at is None else at

    def snapshot(self) -> Dict[Tuple[str, str], int]:
        """{(method, route): count} of every request so far."""
        with self._lock:
            return dict(self._by_route)

    def statuses(self) -> Dict[int, int]:
        with self._lock:
            return dict(self._by_status)

    def count(self, method: Optional[str] = None, route: Optional[str] = None) -> int:
        """Requests matching a method and/or a route (None matches any)."""
        with self._lock:
            return sum(n for (m, r), n in self._by_route.items()
                       if (method is None or m == method) and (route is None or r == route))

    def writes(self) -> int:
        """Requests that asked for a change (the read-only POSTs such as fqname-to-id excluded)."""
        with self._lock:
            return self._writes

    def writes_by_agent(self) -> Dict[str, int]:
        """Write requests by User-Agent: which of several kube-managers wrote."""
        with self._lock:
            return dict(self._writes_by_agent)

    def last_write_by_agent(self) -> Dict[str, float]:
        """When the latest write request of each User-Agent arrived (time.time())."""
        with self._lock:
            return dict(self._last_write_by_agent)

    def reset(self) -> None:
        with self._lock:
            self._by_route.clear()
            self._by_status.clear()
            self._writes = 0
            self._writes_by_agent.clear()
            self._last_write_by_agent.clear()
