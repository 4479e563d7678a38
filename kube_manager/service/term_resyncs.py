"""A term's resyncs: the wait for the initial lists, the start-up resync, then one resync every
`kube_timer_interval` (or at once on SIGHUP) until the term ends.

The start-up resync waits for the first list of every resource: before that, the picture of the
cluster is incomplete and garbage collection would delete what is merely not listed yet. It is
retried with backoff while the config API cannot be read, and each failure is told to the status
publisher, whose conditions then say so rather than nothing (SPEC 15). The daemon (daemon.py)
begins and abandons the terms; what happens inside one, between its reconciler being connected and
its end, is here. Nothing here is in an event's path: the watchers deliver to the dispatcher
directly.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, List

import gevent
import gevent.event

from kube_manager.observability.logging_setup import kv
from kube_manager.plumbing import gcpolicy
from kube_manager.service.heap_settler import settle_after_resyncs, when_drained
from kube_manager.service.pipeline import Pipeline
from kube_manager.settings import ReconcilerSettings
from kube_manager.status.publisher import StatusPublisher
from vnc_client.errors import VncError
from vnc_client.ratelimit import ExponentialRateLimiter

log = logging.getLogger(__name__)


class TermResyncs:
    """The resyncs of each term as leader, one term after another; see the module docstring."""

    def __init__(self, pipeline: Pipeline, pace: ReconcilerSettings, status: StatusPublisher,
                 stop: gevent.event.Event, prepare_explain: Callable[[], None]) -> None:
        """`prepare_explain`: /explain's index built ahead, run once a term's start-up work is written."""
        self.pipeline = pipeline
        self.db = pipeline.db
        self.pace = pace
        self.status = status
        self.stop = stop
        self.prepare_explain = prepare_explain
        self.resync_now = gevent.event.Event()
        self.lists_done = gevent.event.Event()
        self.resynced_once = False
        self.failure = ""  # the class of the last resync's error
        self.look_again: List[Callable[[], None]] = []  # the watchers' of absent CRDs, at each resync

    def await_lists(self) -> None:
        """Once the first list of every resource is in (and translated), leader or not: the
        watchers deliver to the dispatcher directly, which says so (`lists_applied`)."""
        cache = self.pipeline.cache
        gevent.wait([cache.lists_applied, self.stop], count=1)
        if not cache.lists_applied.is_set():
            return  # stopped first
        log.info("initial lists done", extra=kv(
            namespaces=len(self.db.namespaces), pods=len(self.db.pods),
            network_policies=len(self.db.network_policies),
            cluster_network_policies=len(self.db.cluster_network_policies)))
        # The cluster's state lives as long as the process: out of the collector's view, a
        # collection during an event no longer walks millions of long-lived objects.
        gcpolicy.settle()
        self.status.lists_in = True
        self.lists_done.set()

    def wait_for_lists(self, end: gevent.event.Event) -> bool:
        """In a term: wait for the first list of every resource; False if the term ends first."""
        if not self.lists_done.is_set():
            log.info("waiting for the initial lists", extra=kv(kinds=",".join(self.pipeline.kinds.names())))
        gevent.wait([self.lists_done, end, self.stop], count=1)
        return self.lists_done.is_set() and not end.is_set() and not self.stop.is_set()

    def first_resync(self, end: gevent.event.Event) -> bool:
        """The start-up resync of a term, retried with backoff while the config API is unreachable;
        False when the term ends first."""
        backoff = ExponentialRateLimiter(self.pace.start_retry_base, self.pace.start_retry_cap)
        while not end.is_set():
            if self.resync():
                self.status.term_resynced()  # conditions from the term's sync states, not a standby's guess
                return not end.is_set()
            self.status.term_unreachable(self.failure)
            delay = backoff.when("start-up resync")
            log.warning("config API not reachable at start, will retry", extra=kv(retry_in=delay))
            end.wait(delay)
        return False

    def resync(self) -> bool:
        """One full resync of the term's reconciler; False when the config API could not be read."""
        reconciler = self.pipeline.reconciler
        assert reconciler is not None
        for look_again in self.look_again:
            look_again()
        try:
            reconciler.resync()
        except VncError as exc:
            log.warning("resync failed", extra=kv(error=f"{type(exc).__name__}: {exc}"))
            self.db.vnc_connection.last_error = f"{type(exc).__name__}: {exc}"
            self.failure = type(exc).__name__
            return False
        self.resynced_once = True
        return True

    def serve(self, end: gevent.event.Event) -> None:
        """Resync every kube_timer_interval (or on SIGHUP) until the term ends."""
        interval = self.pace.resync_interval
        next_at = time.monotonic() + interval
        resynced = gevent.event.Event()
        resynced.set()  # the term's first resync
        reconciler = self.pipeline.reconciler
        assert reconciler is not None
        helpers = [gevent.spawn(settle_after_resyncs, reconciler.queue, end, resynced),
                   gevent.spawn(when_drained, reconciler.queue, end, self.prepare_explain)]
        try:
            while not end.is_set():
                timeout = max(0.0, next_at - time.monotonic())
                woken = gevent.wait([end, self.resync_now], timeout=timeout, count=1)
                if end.is_set():
                    return
                if woken:
                    self.resync_now.clear()
                if self.resync():
                    resynced.set()
                next_at = time.monotonic() + interval
        finally:
            gevent.killall(helpers)
