"""When a leader settles its heap (gcpolicy.settle): once the work each resync queued has drained.

A resync builds the listing of what Contrail holds and, on a cold start, queues every write; once
that work is done, what it built lives as long as the term. Settling it then moves it out of the
collector's view, so that a collection during a later event walks only what changed since. When
the term ends the heap is thawed: the term's reconciler, client and workers, frozen with the rest,
hold reference cycles that only the collector can reclaim once they are dropped.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional, Protocol

import gevent
import gevent.event

from kube_manager.plumbing import gcpolicy
from kube_manager.observability.logging_setup import kv

log = logging.getLogger(__name__)

IDLE_POLL = 0.5  # how often a wait for the queue to drain looks at the term's end


class Drains(Protocol):
    def wait_idle(self, timeout: Optional[float] = None) -> bool: ...


def drained(queue: Drains, end: gevent.event.Event) -> bool:
    """Wait until the queue drains; False when `end` comes first."""
    while not queue.wait_idle(IDLE_POLL):
        if end.is_set():
            return False
    return not end.is_set()


def when_drained(queue: Drains, end: gevent.event.Event, work: Callable[[], None]) -> None:
    """Run `work` once the queue drains (the start-up resync's writes done), unless `end` comes
    first (a greenlet)."""
    if drained(queue, end):
        work()


def settle_after_resyncs(queue: Drains, end: gevent.event.Event, resynced: gevent.event.Event) -> None:
    """Settle once the queue drains after each `resynced`, until `end`; thaw at the end (a greenlet)."""
    try:
        while gevent.wait([end, resynced], count=1) and not end.is_set():
            resynced.clear()
            if not drained(queue, end):
                return
            gcpolicy.settle()
            log.debug("heap settled after a resync", extra=kv(frozen=gcpolicy.frozen()))
    finally:
        gcpolicy.thaw()
