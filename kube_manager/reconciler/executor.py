"""A bounded pool of gevent workers draining the work queue, with per-key retry backoff.

The pool size bounds the config API requests kube-manager has in flight (`vnc_max_concurrency`,
default 8): each worker handles one key at a time and each key's handling is sequential. A key that
fails is rescheduled with its own capped exponential backoff and the worker moves straight on, so a
rule the server keeps refusing, or a pod whose VMI does not exist yet, never holds back other keys.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Generic, Hashable, List, Optional, TypeVar

import gevent

from kube_manager.observability.logging_setup import kv
from vnc_client.ratelimit import ExponentialRateLimiter, half_jitter

from .workqueue import ShutDown, WorkQueue

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

# handler(key) -> True when the key is done (its backoff is forgotten), False to retry it later.
Handler = Callable[[K], bool]
# on_error(key, exception, retry_in_seconds): the key failed with an exception and will be retried.
ErrorHook = Callable[[K, BaseException, float], None]
# on_handled(key, seconds): timing of one handling, for metrics.
TimingHook = Callable[[K, float], None]


class Executor(Generic[K]):
    """`concurrency` workers taking keys from `queue` and running `handler` on each."""

    def __init__(self, queue: WorkQueue[K], handler: Handler, *, concurrency: int = 8,
                 backoff: Optional[ExponentialRateLimiter] = None, on_error: Optional[ErrorHook] = None,
                 on_handled: Optional[TimingHook] = None) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.queue = queue
        self.concurrency = concurrency
        self.backoff = backoff or ExponentialRateLimiter(0.2, 30.0, half_jitter)
        self._handler = handler
        self._on_error = on_error
        self._on_handled = on_handled
        self._workers: List[gevent.Greenlet] = []

    def start(self) -> None:
        if not self._workers:
            self._workers = [gevent.spawn(self._run, n) for n in range(self.concurrency)]

    def stop(self, timeout: float = 5.0) -> None:
        """Shut the queue down, let workers finish the key they hold, then kill what is left."""
        self.queue.shut_down()
        gevent.joinall(self._workers, timeout=timeout)
        gevent.killall([w for w in self._workers if not w.dead], block=True, timeout=1)
        self._workers = []

    def abandon(self) -> None:
        """Drop every queued key and kill the workers now, in the middle of what they hold: the
        work is never completed later (leadership lost; see kube_manager.leader)."""
        self.queue.shut_down()
        gevent.killall(self._workers, block=True, timeout=1)
        self._workers = []

    def retry_later(self, key: K) -> float:
        """Schedule `key` again after its backoff; returns the delay."""
        delay = self.backoff.when(key)
        self.queue.add_after(key, delay)
        return delay

    def _run(self, number: int) -> None:
        while True:
            try:
                key = self.queue.get()
            except ShutDown:
                return
            if key is None:
                continue
            started = time.monotonic()
            try:
                finished = self._handler(key)
            except gevent.GreenletExit:
                raise
            except Exception as exc:  # every failure is per key: log, back off, go on
                delay = self.retry_later(key)
                if self._on_error is not None:
                    self._on_error(key, exc, delay)
                else:
                    log.warning("work failed, will retry", extra=kv(key=str(key), error=str(exc),
                                                                      retry_in=round(delay, 3)))
            else:
                if finished:
                    self.backoff.forget(key)
                else:
                    self.retry_later(key)
            finally:
                self.queue.done(key)
                if self._on_handled is not None:
                    self._on_handled(key, time.monotonic() - started)
