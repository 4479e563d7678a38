"""Calls made ahead of their use: what lets a resync's listings overlap.

A resync reads the config API type by type and folds each answer into what it believes before the
next (so only one decoded listing or two are held at a time, not every type's at once). Made one
after the other, the config API would render each listing while this process waits, and this
process would decode and fold it while the config API idles. With the next call already under way
(a greenlet) while the caller works on the current answer, the two sides work at the same time.

A head start sends the first calls before the caller wants any answer: a restart's first resync
sends its first listings before the initial lists are translated, so that the config API renders
them meanwhile (reconciler/core.py, `Reconciler.initial_lists_in`).
"""
from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Callable, Deque, Generic, Iterable, Iterator, Optional, Tuple, TypeVar, cast

import gevent

T = TypeVar("T")

Outcome = Tuple[Optional[T], Optional[Exception]]


def _outcome(call: Callable[[], T]) -> "Outcome[T]":
    """The call's result or its exception, so that a failed call is raised by the caller (where
    the resync handles it), not reported by the hub as a greenlet that died."""
    try:
        return call(), None
    except Exception as exc:  # noqa: BLE001 - re-raised by `Ahead` in the caller
        return None, exc


class Ahead(Generic[T]):
    """The results of `calls`, in order, the next call started before the current result is
    handed out (and the first `head_start` calls at once). An exception is raised where its result
    would have been; a caller that stops early (`close`), or meets a failure, cancels the calls
    under way."""

    def __init__(self, calls: Iterable[Callable[[], T]], head_start: int = 0) -> None:
        self._waiting: Iterator[Callable[[], T]] = iter(calls)
        self._started: Deque["gevent.Greenlet[Outcome[T]]"] = deque()
        self._start(head_start)

    def _start(self, count: int) -> None:
        self._started.extend(gevent.spawn(_outcome, call) for call in islice(self._waiting, count))

    def __iter__(self) -> "Ahead[T]":
        return self

    def __next__(self) -> T:
        if not self._started:
            self._start(1)
        if not self._started:
            raise StopIteration
        current = self._started.popleft()
        if not self._started:
            self._start(1)
            gevent.sleep(0)  # the next call goes out (until it waits for its answer) before we work
        try:
            result, exc = current.get()
        except BaseException:
            self.close()
            raise
        if exc is not None:
            self.close()
            raise exc
        return cast(T, result)

    def close(self) -> None:
        for greenlet in self._started:
            greenlet.kill(block=False)
        self._started.clear()
        self._waiting = iter(())


def ahead(calls: Iterable[Callable[[], T]], head_start: int = 0) -> Ahead[T]:
    """`Ahead(calls, head_start)`: see there."""
    return Ahead(calls, head_start)
