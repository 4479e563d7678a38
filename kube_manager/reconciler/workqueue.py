"""A per-key coalescing work queue for gevent workers.

The semantics are those of client-go's workqueue, because they are what makes a level-triggered
reconciler both correct and cheap:

- a key waiting in the queue is there once, however many events named it (ten label changes of a
  pod before a worker gets to it cost one reconcile);
- a key is never handed to two workers at once; if it is added while a worker holds it, it is
  marked dirty and queued again when that worker calls `done`, so the last event is never lost;
- `add_after` schedules a key for later (retry backoff, pods whose VMI is not there yet) without
  holding a worker; an earlier `add` of the same key wins, so a fresh event is not delayed by an old
  failure.

Everything runs in one gevent hub, so plain sets suffice; waiting is on gevent events, never sleeps.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Deque, Dict, Generic, Hashable, Optional, Set, TypeVar

import gevent
import gevent.event

K = TypeVar("K", bound=Hashable)

# depth observer: called with the number of keys waiting whenever it changes (metrics gauge).
DepthObserver = Callable[[int], None]


class ShutDown(Exception):
    """`get` was called on (or woken by) a queue that is shutting down."""


class WorkQueue(Generic[K]):
    """FIFO of distinct keys; see the module docstring for the coalescing rules."""

    def __init__(self, on_depth: Optional[DepthObserver] = None) -> None:
        self._order: Deque[K] = deque()
        self._queued: Set[K] = set()
        self._processing: Set[K] = set()
        self._dirty: Set[K] = set()
        self._timers: Dict[K, "tuple[float, gevent.Greenlet]"] = {}
        self._ready = gevent.event.Event()
        self._idle = gevent.event.Event()
        self._idle.set()
        self._shutting_down = False
        self._on_depth = on_depth

    # --- producers -------------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Queue `key` unless it already waits; if a worker holds it, queue it again after `done`."""
        if self._shutting_down:
            return
        self._cancel_timer(key)
        if key in self._queued:
            return
        if key in self._processing:
            self._dirty.add(key)
            return
        self._queued.add(key)
        self._order.append(key)
        self._changed()

    def add_after(self, key: K, delay: float) -> None:
        """Queue `key` in `delay` seconds (at once when `delay` <= 0). If it is already scheduled
        earlier, or already waiting, nothing changes."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        if key in self._queued:
            return
        due = _now() + delay
        current = self._timers.get(key)
        if current is not None:
            if current[0] <= due:
                return
            current[1].kill(block=False)
        self._timers[key] = (due, gevent.spawn_later(delay, self._fire, key))
        self._changed()

    # --- consumers -------------------------------------------------------------------------

    def get(self, timeout: Optional[float] = None) -> Optional[K]:
        """The next key, which the caller now holds until `done(key)`. Blocks until one is there;
        returns None on timeout; raises ShutDown once the queue is shut down."""
        while not self._order:
            if self._shutting_down:
                raise ShutDown()
            self._ready.clear()
            if not self._ready.wait(timeout):
                return None
        key = self._order.popleft()
        self._queued.discard(key)
        self._processing.add(key)
        self._changed()
        return key

    def done(self, key: K) -> None:
        """Release a key taken with `get`; a key added meanwhile is queued again now."""
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)
        self._changed()

    # --- state -----------------------------------------------------------------------------

    def __len__(self) -> int:
        """Keys waiting to be taken (not those held by workers nor those scheduled for later)."""
        return len(self._order)

    @property
    def scheduled(self) -> int:
        """Keys scheduled for later with `add_after`."""
        return len(self._timers)

    def is_idle(self) -> bool:
        """Nothing waiting, held or scheduled."""
        return not (self._order or self._processing or self._timers)

    def wait_idle(self, timeout: Optional[float] = None) -> bool:
        """Block until nothing is waiting, held or scheduled; False on timeout."""
        return bool(self._idle.wait(timeout))

    def shut_down(self) -> None:
        """Stop accepting keys, drop scheduled ones and wake every blocked `get` with ShutDown."""
        self._shutting_down = True
        for _due, timer in self._timers.values():
            timer.kill(block=False)
        self._timers.clear()
        self._order.clear()
        self._queued.clear()
        self._ready.set()
        self._changed()

    # --- internals -------------------------------------------------------------------------

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)
        self._changed()

    def _cancel_timer(self, key: K) -> None:
        entry = self._timers.pop(key, None)
        if entry is not None and entry[1] is not gevent.getcurrent():
            entry[1].kill(block=False)

    def _changed(self) -> None:
        if self._order:
            self._ready.set()
        if self.is_idle():
            self._idle.set()
        else:
            self._idle.clear()
        if self._on_depth is not None:
            self._on_depth(len(self._order))


def _now() -> float:
    return gevent.get_hub().loop.now()
