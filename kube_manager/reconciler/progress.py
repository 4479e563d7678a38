"""Where each work-queue key stands, and who waits for whom.

Every key has a progress state: absent (settled), ACTIVE (queued, running, or waiting for keys that
are themselves progressing) or BLOCKED (failed and backing off, waiting for a failed key, or
deferred to the next resync). A waiting key is parked on the keys it waits for (`park`) and woken
when the last of those is done, or as soon as a failed one recovers (`notify`), so nothing polls,
nothing holds a worker, and the APS waiting for a thousand policies is planned again once. A
waiting object treats an ACTIVE dependency as "wait" and a BLOCKED one as "do without for now"
(`progress`, a pure question). The keys whose sync state may have changed are collected for the
reconciler to push (`pop_changes`).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Set

from .actual import unlink
from .diff import ObjKey, Progress

ACTIVE = "active"
BLOCKED = "blocked"

Key = ObjKey  # a `PodKey` too: it has the same shape


class ProgressBook:
    """Progress states and waits; `enqueue(key)` looks at a key again, `left_active(key)` hears
    of a key that stopped being ACTIVE, `order` sorts the keys woken together."""

    def __init__(self, enqueue: Callable[[Key], None], left_active: Callable[[Key], None],
                 order: Callable[[Any], Any]) -> None:
        self._enqueue = enqueue
        self._left_active = left_active
        self._order = order
        self._status: Dict[Key, str] = {}
        self._waiting_on: Dict[Key, Set[Key]] = {}   # parked key -> the pending keys it waits for
        self._blocked_on: Dict[Key, Set[Key]] = {}   # parked key -> the failed keys it did without
        self._waiters: Dict[Key, Set[Key]] = {}
        self.deferred: Set[Key] = set()               # left alone until the next resync
        self._changes: Set[Key] = set()               # sync state may have changed since the last pop

    # --- reads ---------------------------------------------------------------------------------

    def status(self, key: Key) -> Optional[str]:
        return self._status.get(key)

    def unsettled(self) -> List[Key]:
        """The keys that have a progress state (by the reconciler's invariant: every key that is not
        settled, and only those)."""
        return list(self._status)

    def counts(self) -> Dict[str, int]:
        statuses = list(self._status.values())
        return {"active": statuses.count(ACTIVE), "blocked": statuses.count(BLOCKED), "deferred": len(self.deferred)}

    def progress(self, waiter: Key, key: Key, may_appear: bool) -> Progress:
        """How `key` is getting on, for `waiter`; `may_appear`: something will (or does) exist."""
        status = self._status.get(key)
        if status == BLOCKED:
            return Progress.BLOCKED
        if status == ACTIVE:
            return Progress.BLOCKED if self._reaches(key, waiter) else Progress.PENDING
        if not may_appear:
            return Progress.BLOCKED  # nobody will create it: do without it until things change
        return Progress.PENDING  # settled-looking but not as the waiter needs it: `park` looks again

    # --- changes -------------------------------------------------------------------------------

    def changed(self, key: Key) -> None:
        """The sync state of `key` may have changed (beyond its progress state: parked, cleared)."""
        self._changes.add(key)

    def pop_changes(self) -> Set[Key]:
        changes, self._changes = self._changes, set()
        return changes

    def activate(self, key: Key) -> None:
        if self._status.get(key) != ACTIVE:
            self._status[key] = ACTIVE
            self._changes.add(key)

    def set(self, key: Key, status: Optional[str]) -> None:
        """A new progress state (None: settled); what waited on `key` may move now."""
        before = self._status.get(key)
        if before != status:
            self._changes.add(key)
        if status is None:
            self._status.pop(key, None)
        else:
            self._status[key] = status
        if status != ACTIVE:
            self._left_active(key)
        if before != status and status != ACTIVE:
            self.notify(key)

    def defer(self, key: Key) -> None:
        self.deferred.add(key)
        self._changes.add(key)
        self.set(key, BLOCKED)

    def park(self, key: Key, pending: Iterable[Key], blocked: Iterable[Key], status: str) -> None:
        """`key` waits for `pending` (being written) and did without `blocked` (failed): it is
        looked at again when the last pending one is done, or as soon as a blocked one recovers."""
        self._waiting_on[key] = set(pending)
        self._blocked_on[key] = set(blocked)
        for target in self._waiting_on[key] | self._blocked_on[key]:
            self._waiters.setdefault(target, set()).add(key)
        self.set(key, status)
        for target in self._waiting_on[key]:  # settled-looking, yet not as `key` needs it: look again
            if target not in self._status:
                self._enqueue(target)

    def unpark(self, key: Key) -> None:
        for target in self._waiting_on.pop(key, set()) | self._blocked_on.pop(key, set()):
            unlink(self._waiters, target, key)

    def notify(self, key: Key) -> None:
        """`key` changed (written, settled, failed): wake the keys parked on it that can now move.
        A key waiting for several pending keys would only find the others still pending: planning
        it again then is wasted work (for the APS at a cold start, once per NetworkPolicy)."""
        waiters = self._waiters.pop(key, None)
        if not waiters:
            return  # nearly always (every listed object at a resync)
        for waiter in sorted(waiters, key=self._order):
            pending = self._waiting_on.get(waiter, set())
            pending.discard(key)
            if pending and key not in self._blocked_on.get(waiter, ()):
                continue
            self._enqueue(waiter)

    def _reaches(self, start: Key, goal: Key) -> bool:
        """Whether `start` waits, directly or not, on `goal` (a wait cycle if `goal` waits on it)."""
        seen, todo = {start}, [start]
        while todo:
            for nxt in self._waiting_on.get(todo.pop(), ()):
                if nxt == goal:
                    return True
                if nxt not in seen and self._status.get(nxt) == ACTIVE:
                    seen.add(nxt)
                    todo.append(nxt)
        return False
