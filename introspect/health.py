"""`/livez` and `/readyz`: what systemd watchdogs and Kubernetes probes ask of kube-manager.

Liveness fails only when a restart would help: the gevent loop stopped beating, or a watch holds a
connection on which nothing (not even a bookmark) arrived for far longer than any server timeout,
meaning the client-side timeout did not fire. An API server that is down is not a liveness failure
(a restart would not bring it back); it shows in readiness, which needs every initial list done and
the config API reachable.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, List, Optional

from kube_manager.db import Database
from introspect.redact import Redactor

log = logging.getLogger(__name__)

# Answers whether the config API is reachable now: True/False, or raises with the reason.
ConfigApiProbe = Callable[[], bool]


@dataclass(frozen=True)
class HealthPolicy:
    """Thresholds of the health checks, in seconds."""

    # The loop records a heartbeat every few seconds; this many seconds without one is a hang.
    heartbeat_timeout: float = 30.0
    # Watches time out server-side after 5 to 10 minutes and get bookmarks in between; a connected
    # watch silent for this long is stuck.
    watch_stall_timeout: float = 900.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def liveness(db: Database, policy: HealthPolicy, now: float) -> List[Check]:
    age = now - db.loop_heartbeat_at
    checks = [Check("loop", age <= policy.heartbeat_timeout,
                    f"last heartbeat {age:.1f} s ago (limit {policy.heartbeat_timeout:g} s)")]
    for name, status in sorted(db.kube_connections.items()):
        if not status.connected:
            continue  # reconnecting with backoff is progress, not a hang
        silent = now - (status.last_event_at or db.started_at)
        checks.append(Check(f"watch:{name}", silent <= policy.watch_stall_timeout,
                            f"last event {silent:.1f} s ago (limit {policy.watch_stall_timeout:g} s)"))
    return checks


def readiness(db: Database, probe: Optional[ConfigApiProbe], redactor: Redactor) -> List[Check]:
    checks = [Check(f"initial-list:{name}", status.initial_list_done,
                    "done" if status.initial_list_done else "initial list not done yet")
              for name, status in sorted(db.kube_connections.items())]
    if not checks:
        checks.append(Check("initial-list", False, "no Kubernetes watch has started"))
    checks.append(_config_api_check(db, probe, redactor))
    return checks


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
