"""The one way tests wait: poll a condition until it holds, failing with what was awaited after a
deadline. Never a bare sleep as synchronisation."""
from __future__ import annotations

import functools
import time
from typing import Any, Callable

import gevent

DEADLINE = 10.0  # seconds any awaited condition may take before the test fails


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = DEADLINE,
               sleep: Callable[[float], None] = time.sleep) -> Any:
    """Poll `predicate` until it is truthy and return its value; fail naming `what` after `timeout`.

    `sleep` is `gevent.sleep` where the awaited work runs in greenlets of the test's own hub
    (`wait_green`)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        sleep(0.01)


# Poll while letting the greenlets of the test's hub (reconciler workers, electors) run.
wait_green = functools.partial(wait_until, sleep=gevent.sleep)
