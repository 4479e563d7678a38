"""`/livez` and `/readyz`: what systemd watchdogs and Kubernetes probes ask of kube-manager.

Liveness (SPEC section 7, "silence is a fault") fails when the gevent loop stopped beating, or a
watch made no progress (an event, a bookmark, a completed list or a watch the server accepted) for 2
minutes. A silent watch is restarted after `watch_silence_timeout` (90 s) and the restart counts, so
a healthy daemon makes progress well within the limit even on a quiet cluster; a watch that still
makes none cannot reach the API server for that long, and a restart is then the operator's best bet.

Readiness needs every initial list done and the config API answering now: `CachedProbe` wraps a
bounded request (the daemon's: `GET /` with a 2 s timeout) so that a config API that accepts
connections and never answers makes /readyz 503 within the probe's timeout, with a line saying
why, and a scrape storm costs the config API one request per `ttl`.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

import gevent.lock

from kube_manager.records.db import Database
from kube_manager.settings import HealthSettings
from kube_manager.status.pair_bound import PAIR_RULES_BOUND
from introspect.redact import Redactor

log = logging.getLogger(__name__)

# Answers whether the config API is reachable now: True/False, or raises with the reason.
ConfigApiProbe = Callable[[], bool]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def liveness(db: Database, policy: HealthSettings, now: float) -> List[Check]:
    age = now - db.loop_heartbeat_at
    checks = [Check("loop", age <= policy.heartbeat_timeout,
                    f"last heartbeat {age:.1f} s ago (limit {policy.heartbeat_timeout:g} s)")]
    for name, status in sorted(db.kube_connections.items()):
        if status.absent:  # no watch to stall: looked for again at each resync
            checks.append(Check(f"watch:{name}", True, "not served (CRD not installed)"))
            continue
        idle = now - (status.last_progress_at or db.started_at)
        checks.append(Check(f"watch:{name}", idle <= policy.watch_stall_timeout,
                            f"last event, bookmark, list or watch restart {idle:.1f} s ago "
                            f"(limit {policy.watch_stall_timeout:g} s)"))
    return checks


class CachedProbe:
    """A `ConfigApiProbe` that asks `probe` at most once per `ttl` seconds: callers within `ttl`
    get the last answer (or its exception again), and concurrent callers wait for the one call
    in flight instead of each sending their own."""

    def __init__(self, probe: ConfigApiProbe, ttl: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._probe = probe
        self._ttl = ttl
        self._clock = clock
        self._lock = gevent.lock.Semaphore()
        self._last: Optional[Tuple[float, bool, Optional[Exception]]] = None

    def __call__(self) -> bool:
        with self._lock:
            if self._last is None or self._clock() - self._last[0] >= self._ttl:
                try:
                    answer: Tuple[bool, Optional[Exception]] = (bool(self._probe()), None)
                except Exception as exc:  # the answer, to be given to every caller within ttl
                    answer = (False, exc)
                self._last = (self._clock(), *answer)
            _at, reachable, error = self._last
        if error is not None:
            raise error
        return reachable


def readiness(db: Database, probe: Optional[ConfigApiProbe], redactor: Redactor) -> List[Check]:
    checks = [Check(f"initial-list:{name}", status.initial_list_done,
                    "done" if status.initial_list_done else
                    "initial list not done yet" + (f": {status.last_error}" if status.last_error else ""))
              for name, status in sorted(db.kube_connections.items())]
    if not checks:
        checks.append(Check("initial-list", False, "no Kubernetes watch has started"))
    checks.append(_config_api_check(db, probe, redactor))
    checks.append(leader_check(db))
    checks.append(pair_rules_check(db))
    return checks


def pair_rules_check(db: Database) -> Check:
    """Always ok: past its bound every pair rule is still written (SPEC 14), so the line is a hint
    for the operator, not a reason to take the instance out of service."""
    status = db.pair_rules
    if not status.over:
        return Check("pair-rules", True, f"{status.total} pair rules (bound {status.bound or 'none'})")
    return Check("pair-rules", True, f"{status.total} pair rules, above exact_pair_rules_bound {status.bound}:"
                 f" all written; see the Warning Events {PAIR_RULES_BOUND} on the NetworkPolicies that contribute most")


def leader_check(db: Database) -> Check:
    """Ok in either role: a standby is ready (it watches and translates, so it can take over at
    once); the line says which role this instance has. Failed when no instance can ever lead (the
    Lease's namespace does not exist), with the fix."""
    leader = db.leader
    if not leader.enabled:
        return Check("leader-election", True, "disabled (single writer)")
    if leader.blocked:
        return Check("leader-election", False, leader.blocked)
    if leader.is_leader:
        return Check("leader-election", True, "leader")
    return Check("leader-election", True, f"standby (leader: {leader.leader or 'none'})")


def _config_api_check(db: Database, probe: Optional[ConfigApiProbe], redactor: Redactor) -> Check:
    if probe is None:
        status = db.vnc_connection
        detail = "connected" if status.connected else (
            "not connected" + (f": {redactor.text(status.last_error)}" if status.last_error else ""))
        return Check("config-api", status.connected, detail)
    try:
        reachable = bool(probe())
    except Exception as exc:  # the probe's failure is the answer, whatever its type
        log.info("config API probe failed: %s", redactor.text(str(exc)))
        return Check("config-api", False, f"unreachable: {redactor.text(str(exc)) or type(exc).__name__}")
    return Check("config-api", reachable, "reachable" if reachable else "probe reports unreachable")


def render_text(checks: List[Check], what: str) -> str:
    """The Kubernetes `?verbose` style: one `[+]`/`[-]` line per check, then the verdict."""
    lines = [f"[{'+' if check.ok else '-'}]{check.name} {'ok' if check.ok else 'failed'}: {check.detail}"
             for check in checks]
    lines.append(f"{what} check passed" if all(c.ok for c in checks) else f"{what} check failed")
    return "\n".join(lines) + "\n"
