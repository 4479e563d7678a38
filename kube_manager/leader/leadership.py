"""Terms of leadership, as the daemon sees them: when may it write, and when must it stop.

With `leader_elect = true` a `LeaderElector` runs in a greenlet; each time it acquires the Lease a
term begins (a new write-gate epoch), and the term ends the moment the Lease is lost. With
`leader_elect = false` one term begins at once and lasts until the process stops: a single writer
without a Lease, for one instance alone (the embedded demo, tests).

The daemon waits for a term (`wait_term`), writes only through a client bound to that term's epoch,
and watches `term_end`, which is set when the term is lost or when the daemon stops (`halt`).
"""
from __future__ import annotations

import logging
import socket
import uuid
from typing import TYPE_CHECKING, Callable, Optional

import gevent
import gevent.event

from kube_manager.records.db import LeaderStatus
from kube_manager.observability.logging_setup import kv
from kube_manager.settings import OperatorSettings

from .elector import LeaderElector
from .gate import WriteGate

if TYPE_CHECKING:  # the client is needed only to elect, so it is imported only then
    from kubernetes.client import ApiClient

log = logging.getLogger(__name__)


def default_identity() -> str:
    """client-go's `<hostname>_<random>`: unique per process, readable by people."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class Leadership:
    """The daemon's terms; see the module docstring."""

    def __init__(self, settings: OperatorSettings, status: LeaderStatus, *,
                 on_transition: Optional[Callable[[bool], None]] = None, identity: str = "") -> None:
        self.settings = settings
        self.status = status
        self.gate = WriteGate()
        self.identity = identity or default_identity()
        self.enabled = settings.election.enabled
        self._on_transition = on_transition
        self._leading = gevent.event.Event()
        self.term_end = gevent.event.Event()
        self.elector: Optional[LeaderElector] = None
        self._greenlet: Optional[gevent.Greenlet] = None
        status.enabled, status.identity = self.enabled, self.identity
        status.namespace, status.name = settings.election.namespace, settings.lease_name

    def start(self, api_client: ApiClient) -> None:
        """Begin: elect through the Lease over `api_client`, or lead at once without election."""
        if not self.enabled:
            log.info("leader election disabled: this instance writes alone", extra=kv(identity=self.identity))
            self.gate.open()
            self.status.is_leader, self.status.leader, self.status.transitions = True, self.identity, 1
            self._transition(True)
            return
        from .lock import LeaseLock
        settings = self.settings
        lock = LeaseLock(api_client, settings.election.namespace, settings.lease_name)
        self.elector = LeaderElector(lock, settings.election, self.identity, self.gate, self.status,
                                     on_transition=self._transition)
        self._greenlet = gevent.spawn(self.elector.run)

    def wait_term(self, stop: gevent.event.Event, timeout: Optional[float] = None) -> Optional[int]:
        """Block until a term begins; its epoch, or None when `stop` is set or `timeout` passes."""
        gevent.wait([stop, self._leading], timeout=timeout, count=1)
        if stop.is_set() or not self._leading.is_set():
            return None
        return self.gate.epoch

    def halt(self) -> None:
        """The daemon stops: the current term's waits end (writes stay allowed until `release`)."""
        self.term_end.set()

    def release(self) -> None:
        """Stop electing and give the Lease up; called once the reconciler stopped writing."""
        if self.elector is not None:
            self.elector.stop()
        if self._greenlet is not None:
            self._greenlet.kill(timeout=1)
        if self.elector is not None:
            self.elector.release()
        self.gate.close()

    def _transition(self, leading: bool) -> None:
        if leading:
            self.term_end = gevent.event.Event()
            self._leading.set()
        else:
            self._leading.clear()
            self.term_end.set()
        if self._on_transition is not None:
            self._on_transition(leading)
