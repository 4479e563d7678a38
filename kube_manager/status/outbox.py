"""The outbox of what kube-manager writes to Kubernetes about its policies (Events, status).

Never in the way of the work (SPEC 15): the publisher only queues, into a bounded queue drained by
the outbox's own greenlet, one request at a time, each bounded by `timeout`. When the queue is full
the newest job is dropped; an API server that refuses (403 without the RBAC rules) or hangs costs
its own greenlet time and nothing else: the config API writes go on beside it. Every failure is
counted, and logged at most once per `log_every` seconds (with how many were not logged).

A job writes only during the term it was queued in: the outbox is opened for a term (`open`, with
the term's write gate check) and closed when the term ends (`close`), which drops what is queued and
kills a request in flight; the gate is asked again right before each request.
"""
from __future__ import annotations

import functools
import logging
import time
from typing import Any, Callable, Optional, Protocol

import gevent
import gevent.queue

from kube_manager.observability.logging_setup import kv
from kube_manager.plumbing.refusal import refusal

log = logging.getLogger(__name__)

CAPACITY = 10000
TIMEOUT = 5.0     # seconds per request
LOG_EVERY = 60.0  # seconds between two failure lines


class OutboxJob(Protocol):
    target: str  # "event" | "status", the metrics' label

    def describe(self) -> str: ...

    def run(self, apis: Any, timeout: float) -> bool:
        """Send; False when nothing needed sending."""


class OutboxCounters(Protocol):
    """Where the outbox counts (kube_manager.observability.metrics.Metrics)."""

    def status_written(self, job: OutboxJob) -> None: ...

    def status_failed(self, target: str, reason: str) -> None: ...


class KubeApis:
    """The official client's APIs the jobs use, over one `ApiClient`, each made when a job first
    needs it: their import (pydantic models, in recent releases) is no part of a start, and a
    term that writes no status never pays it."""

    def __init__(self, api_client: Any) -> None:
        self._api_client = api_client

    @classmethod
    def over(cls, api_client: Any) -> "KubeApis":
        return cls(api_client)

    @functools.cached_property
    def events(self) -> Any:
        from kubernetes import client
        return client.EventsV1Api(self._api_client)

    @functools.cached_property
    def custom(self) -> Any:
        from kubernetes import client
        return client.CustomObjectsApi(self._api_client)


class StatusOutbox:
    """See the module docstring."""

    def __init__(self, counters: Optional[OutboxCounters] = None, *, capacity: int = CAPACITY,
                 timeout: float = TIMEOUT, log_every: float = LOG_EVERY) -> None:
        self._counters = counters
        self._capacity = capacity
        self._timeout = timeout
        self._log_every = log_every
        self._queue: Optional["gevent.queue.Queue[OutboxJob]"] = None
        self._worker: Optional[gevent.Greenlet] = None
        self._gate: Callable[[], None] = lambda: None
        self._apis: Any = None
        self._last_log = -float("inf")
        self._unlogged = 0

    @property
    def is_open(self) -> bool:
        return self._queue is not None

    def open(self, apis: Any, gate: Callable[[], None]) -> None:
        """A term begins: jobs are taken from now on, and sent while `gate()` does not raise."""
        self.close()
        self._apis, self._gate = apis, gate
        self._queue = gevent.queue.Queue(self._capacity)
        self._worker = gevent.spawn(self._drain, self._queue)

    def close(self) -> None:
        """The term is over: what is queued is dropped, a request in flight abandoned."""
        self._queue = None
        if self._worker is not None:
            self._worker.kill(block=False)
            self._worker = None

    def put(self, job: OutboxJob) -> None:
        """Queue `job` (never blocks); ignored between terms, dropped when the queue is full."""
        if self._queue is None:
            return
        try:
            self._queue.put_nowait(job)
        except gevent.queue.Full:
            self._failed(job, "dropped", "the outbox is full")

    def _drain(self, queue: "gevent.queue.Queue[OutboxJob]") -> None:
        while True:
            job = queue.get()
            try:
                self._gate()
                with gevent.Timeout(self._timeout):  # the client's timeout bounds each read, not the whole
                    written = job.run(self._apis, self._timeout)
            except gevent.Timeout:
                self._failed(job, "timeout", f"no answer within {self._timeout} s")
            except Exception as exc:  # a refusal, a broken connection, not the leader any more
                self._failed(job, "error", f"{type(exc).__name__}: {refusal(exc)}")
            else:
                if written and self._counters is not None:
                    self._counters.status_written(job)

    def _failed(self, job: OutboxJob, reason: str, error: str) -> None:
        if self._counters is not None:
            self._counters.status_failed(job.target, reason)
        now = time.monotonic()
        if now - self._last_log < self._log_every:
            self._unlogged += 1
            return
        log.warning("Kubernetes status write failed", extra=kv(
            what=job.describe(), reason=reason, error=error, not_logged_since_last=self._unlogged))
        self._last_log, self._unlogged = now, 0

