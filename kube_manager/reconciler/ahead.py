"""Calls made one ahead of their use: what lets a resync's listings overlap.

A resync reads the config API type by type and folds each answer into what it believes before the
next (so only one decoded listing or two are held at a time, not every type's at once). Made one
after the other, the config API would render each listing while this process waits, and this
process would decode and fold it while the config API idles. With the next call already under way
(a greenlet) while the caller works on the current answer, the two sides work at the same time.
"""
from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Callable, Deque, Generator, Iterable, Optional, Tuple, TypeVar, cast

import gevent

T = TypeVar("T")


def _outcome(call: Callable[[], T]) -> Tuple[Optional[T], Optional[Exception]]:
    """The call's result or its exception, so that a failed call is raised by the caller (where
    the resync handles it), not reported by the hub as a greenlet that died."""
    try:
        return call(), None
    except Exception as exc:  # noqa: BLE001 - re-raised by `ahead` in the caller
        return None, exc


def ahead(calls: Iterable[Callable[[], T]]) -> Generator[T, None, None]:
    """The results of `calls`, in order, the next call started before the current result is
    handed out. An exception is raised where its result would have been; a caller that stops
    early (or fails) cancels the call under way."""
    waiting = iter(calls)
    started: Deque["gevent.Greenlet[Tuple[Optional[T], Optional[Exception]]]"] = deque(
        gevent.spawn(_outcome, call) for call in islice(waiting, 1))
    try:
        while started:
            current = started.popleft()
            started.extend(gevent.spawn(_outcome, call) for call in islice(waiting, 1))
            gevent.sleep(0)  # the next call goes out (until it waits for its answer) before we work
            result, exc = current.get()
            if exc is not None:
                raise exc
            yield cast(T, result)
    finally:
        for greenlet in started:
            greenlet.kill(block=False)
