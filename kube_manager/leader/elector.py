"""client-go's leader election (tools/leaderelection) over a Lease, as greenlets in the daemon's hub.

One attempt (`try_acquire_or_renew`) reads the Lease and
- creates it when it does not exist;
- leaves it alone when another holder's lease is still valid, judged by *local* time: the lease
  expires `leaseDurationSeconds` after this instance last saw the record change, never by the
  (remote) times written in it, so clock skew between hosts does not matter;
- otherwise (absent holder, released, expired, or our own) replaces it with us as holder, counting a
  transition when the holder changes. The replace carries the resourceVersion read, so of two
  candidates only one wins; the other's 409 is just a failed attempt.

A standby attempts every retry period (with a little jitter so candidates do not move in step), and
also right when the lease it observes expires, so a killed leader is replaced within the lease
duration plus about one retry period of observation lag. A
leader renews every retry period; failed renewals are retried until `renew_deadline` after the last
successful one *started*, then it steps down at once: the write gate closes (it also closes by
itself at that moment, see `gate`), and the daemon abandons its in-flight work. A leader that reads
another holder in the Lease steps down at once too. `release` (on SIGTERM) clears the holder, so that
a standby takes over at its next attempt, about one retry period later.

Deviation from client-go, on purpose: the standby's jitter is up to 20 % of the retry period (client-go
waits up to 2.2 periods), so that a handover takes about one retry period as SPEC section 12 asks.
"""
from __future__ import annotations

import logging
import random
import time
from dataclasses import replace
from typing import Callable, Optional, Protocol, Tuple

import gevent.event

from kube_manager.records.db import LeaderStatus
from kube_manager.observability.logging_setup import kv
from kube_manager.settings import LeaderElectionSettings

from .gate import WriteGate
from .lock import LeaseRecord, LockError, micro_time

log = logging.getLogger(__name__)

JITTER = 0.2           # a standby waits retry_period * (1 + up to JITTER) between attempts
MIN_REQUEST_TIMEOUT = 0.05
EXPIRY_MARGIN = 0.01   # an attempt this long after the observed expiry finds the lease expired
RELEASED_DURATION = 1  # seconds a released record asks others to wait, as client-go writes
MISSING_NAMESPACE_REPEAT = 300.0  # seconds between warnings that the Lease's namespace is missing


class Lock(Protocol):
    """The lock record store (`lock.LeaseLock` fits)."""

    def describe(self) -> str: ...

    def get(self, timeout: float) -> Optional[Tuple[LeaseRecord, str]]: ...

    def create(self, record: LeaseRecord, timeout: float) -> str: ...

    def update(self, record: LeaseRecord, timeout: float) -> str: ...


# on_transition(is_leader): called once per change of role, after the gate moved.
TransitionHook = Callable[[bool], None]


class LeaderElector:
    """One candidate; `run` in a greenlet, `stop` then `release` at shutdown."""

    def __init__(self, lock: Lock, settings: LeaderElectionSettings, identity: str, gate: WriteGate,
                 status: LeaderStatus, *,
                 on_transition: Optional[TransitionHook] = None, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], str] = micro_time, rng: Callable[[float, float], float] = random.uniform) -> None:
        self.lock = lock
        self.settings = settings
        self.identity = identity
        self.gate = gate
        self.status = status
        self._on_transition = on_transition
        self._clock = clock
        self._wall = wall
        self._rng = rng
        self._observed = LeaseRecord()
        self._observed_raw: Optional[str] = None
        self._observed_at = 0.0
        self._renewed_at = 0.0   # clock() when the last successful attempt started
        self._leading = False
        self._warned_at: Optional[float] = None  # clock() of the last warning that the namespace is missing
        self.epoch = 0           # the gate's epoch of the current (or last) term
        self._stop = gevent.event.Event()
        status.enabled, status.identity = True, identity

    # --- state ---------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def term_deadline(self) -> float:
        """clock() at which the current term ends unless renewed."""
        return self._renewed_at + self.settings.renew_deadline

    # --- one attempt ---------------------------------------------------------------------------

    def try_acquire_or_renew(self, timeout: float) -> bool:
        """One client-go attempt, all of it within `timeout` seconds; True when we hold the Lease."""
        started = self._clock()
        deadline = started + timeout
        now = self._wall()
        ours = LeaseRecord(holder=self.identity, lease_duration=self.settings.lease_duration,
                           acquire_time=now, renew_time=now)
        creating = False
        try:
            found = self.lock.get(self._left(deadline))
            if found is None:
                creating = True
                self._observe(ours, self.lock.create(ours, self._left(deadline)))
                return self._succeeded(started)
            record, raw = found
            if raw != self._observed_raw:
                self._observe(record, raw)
            if record.holder and record.holder != self.identity and self._lease_valid():
                return False
            if record.holder == self.identity:
                ours = replace(ours, acquire_time=record.acquire_time or now, transitions=record.transitions)
            else:
                ours = replace(ours, transitions=record.transitions + 1)
            self._observe(ours, self.lock.update(ours, self._left(deadline)))
            return self._succeeded(started)
        except LockError as exc:
            self.status.last_error = str(exc)
            if creating and exc.status == 404:
                self._namespace_missing(str(exc))
            else:
                log.info("lease attempt failed", extra=kv(lease=self.lock.describe(), error=str(exc),
                                                         leader=self._leading))
            return False

    def _namespace_missing(self, error: str) -> None:
        """A create answered 404: the Lease's namespace does not exist, and no attempt can succeed
        until the operator creates it or names another. Said at WARNING at once and then every
        MISSING_NAMESPACE_REPEAT seconds (attempts come every retry period), and kept in the status
        for /readyz."""
        namespace = self.lock.describe().partition("/")[0]
        self.status.blocked = (f"the Lease's namespace {namespace!r} does not exist: create it "
                               f"(kubectl create namespace {namespace}) or set leader_elect_namespace "
                               "to an existing one")
        now = self._clock()
        if self._warned_at is not None and now - self._warned_at < MISSING_NAMESPACE_REPEAT:
            log.debug("lease attempt failed", extra=kv(lease=self.lock.describe(), error=error))
            return
        self._warned_at = now
        log.warning("leader election cannot create its Lease: no instance can lead or write", extra=kv(
            lease=self.lock.describe(), namespace=namespace, error=error,
            fix=f"kubectl create namespace {namespace}, or set leader_elect_namespace"))

    def _left(self, deadline: float) -> float:
        left = deadline - self._clock()
        if left <= 0:
            raise LockError("no time left in this attempt")
        return max(MIN_REQUEST_TIMEOUT, left)

    def _observe(self, record: LeaseRecord, raw: Optional[str]) -> None:
        self._observed, self._observed_raw, self._observed_at = record, raw, self._clock()
        self.status.leader = record.holder

    def _lease_valid(self) -> bool:
        return self._observed_at + self._observed.lease_duration > self._clock()

    def _succeeded(self, started: float) -> bool:
        self._renewed_at = started
        self.status.last_renew_at = time.time()
        self.status.last_error = self.status.blocked = ""
        self._warned_at = None
        return True

    # --- the loops -----------------------------------------------------------------------------

    def run(self) -> None:
        """Acquire, lead until the lease is lost, start again; until `stop`."""
        settings = self.settings
        log.info("leader election started", extra=kv(lease=self.lock.describe(), identity=self.identity,
                                                     lease_duration=settings.lease_duration,
                                                     renew_deadline=settings.renew_deadline,
                                                     retry_period=settings.retry_period))
        while not self._stop.is_set():
            if self.try_acquire_or_renew(settings.renew_deadline):
                self._start_term()
                self._renew_until_lost()
            else:
                self._stop.wait(self._standby_wait())

    def _standby_wait(self) -> float:
        """Until the next attempt: a retry period (plus jitter), or less when the lease seen will
        expire sooner, so that a dead leader is replaced at its expiry, not up to a period later."""
        period = self.settings.retry_period
        wait = self._rng(period, period * (1 + JITTER))
        if self._observed.holder:
            expires_in = self._observed_at + self._observed.lease_duration - self._clock()
            wait = min(wait, max(0.0, expires_in) + EXPIRY_MARGIN)
        return wait

    def _start_term(self) -> None:
        self._leading = True
        self.epoch = self.gate.open(self.term_deadline)
        log.info("became the leader", extra=kv(lease=self.lock.describe(), identity=self.identity,
                                               term=self.epoch, lease_transitions=self._observed.transitions))
        self._transition(True)

    def _renew_until_lost(self) -> None:
        period = self.settings.retry_period
        while not self._stop.wait(period):
            while True:
                left = self.term_deadline - self._clock()
                if left <= 0:
                    self._step_down("not renewed within the renew deadline")
                    return
                if self.try_acquire_or_renew(left):
                    self.gate.extend(self.term_deadline)
                    break
                if self._observed.holder != self.identity:
                    self._step_down(f"the lease is held by {self._observed.holder or 'nobody'}")
                    return
                if self._stop.wait(min(period, max(0.0, self.term_deadline - self._clock()))):
                    return

    def _step_down(self, reason: str) -> None:
        self.gate.close()
        self._leading = False
        log.warning("leadership lost, writes stopped", extra=kv(lease=self.lock.describe(), term=self.epoch,
                                                                reason=reason))
        self._transition(False)

    def _transition(self, leading: bool) -> None:
        self.status.is_leader = leading
        self.status.transitions += 1
        if self._on_transition is not None:
            self._on_transition(leading)

    # --- shutdown ------------------------------------------------------------------------------

    def stop(self) -> None:
        """End `run` (the term is over for the caller; call `release` once writes have stopped)."""
        self._stop.set()

    def release(self) -> bool:
        """Give the Lease up if we hold it: holder cleared, so a standby takes it at its next try."""
        was_leading = self._leading
        self.gate.close()
        if was_leading:
            self._leading = False
            self._transition(False)
        if self._observed.holder != self.identity:
            return False
        now = self._wall()
        released = LeaseRecord(holder="", lease_duration=RELEASED_DURATION, acquire_time=now, renew_time=now,
                               transitions=self._observed.transitions)
        try:
            try:
                self._observe(released, self.lock.update(released, self.settings.retry_period))
            except LockError as exc:
                # A renewal cut short by the stop may have landed after all: read the Lease again,
                # and release it if it is still ours.
                found = self.lock.get(self.settings.retry_period) if exc.status == 409 else None
                if found is None or found[0].holder != self.identity:
                    raise
                released = replace(released, transitions=found[0].transitions)
                self._observe(released, self.lock.update(released, self.settings.retry_period))
        except LockError as exc:
            log.warning("lease not released", extra=kv(lease=self.lock.describe(), error=str(exc)))
            return False
        log.info("lease released", extra=kv(lease=self.lock.describe(), identity=self.identity))
        return True
