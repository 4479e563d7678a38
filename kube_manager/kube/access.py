"""A refused connection to the API server said once, naming the setting to fix (SPEC 16).

A wrong CA, a token the API server does not accept (401) or an identity it forbids (403) is no
passing failure: every retry fails the same way until the operator changes a setting. The watchers
ask `AccessExplainer.explain` about each failure; for these it returns one line naming the
setting (`kubeconfig /x (certificate-authority): ...`, `[KUBERNETES] kubernetes_token_file /t: ...`), logged
once as an ERROR however many watchers meet it, and kept as the watch's last error so that
/readyz says why the daemon is not ready.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Optional, Set

import gevent.lock

from kube_manager.observability.logging_setup import kv
from kube_manager.plumbing.refusal import refusal

log = logging.getLogger(__name__)

_VERIFY_FAILED = "CERTIFICATE_VERIFY_FAILED"
_OPENSSL_REASON = re.compile(r"certificate verify failed: ([^()\]'\"]+)")


@dataclass(frozen=True)
class AccessSources:
    """The settings behind the CA the client trusts and the identity it presents, as an operator
    finds them (never their content)."""

    ca: str
    identity: str


def refused_access(exc: BaseException, sources: AccessSources) -> Optional[str]:
    """The line for a failure only a setting can fix; None for any other failure."""
    status = getattr(exc, "status", None)
    if status in (401, 403):
        what = "refused the identity" if status == 401 else "forbids the request"
        return f"{sources.identity}: the API server {what} ({refusal(exc)})"
    text = str(exc)
    if _VERIFY_FAILED in text:
        found = _OPENSSL_REASON.search(text)
        reason = found.group(1).strip() if found else "certificate verify failed"
        return (f"{sources.ca}: the API server's certificate does not verify against this CA "
                f"({reason})")
    return None


class AccessExplainer:
    """`refused_access` for the watchers of one client, each distinct line logged once."""

    def __init__(self, sources: AccessSources) -> None:
        self.sources = sources
        self._said: Set[str] = set()
        self._lock = gevent.lock.Semaphore()

    def explain(self, exc: BaseException) -> Optional[str]:
        line = refused_access(exc, self.sources)
        if line is not None:
            with self._lock:
                first = line not in self._said
                self._said.add(line)
            if first:
                log.error("Kubernetes API server refused access", extra=kv(error=line))
        return line
