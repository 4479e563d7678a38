"""The /readyz config API probe: bounded (a hanging config API is an answer within the timeout),
and cached so that a scrape storm costs the config API one request per ttl."""
from __future__ import annotations

import socket
from typing import List

import gevent
import pytest

from introspect.health import CachedProbe
from vnc_client.client import VncClient
from vnc_client.errors import VncConnectionError


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_answers_are_reused_within_the_ttl_errors_included():
    clock, calls = Clock(), []

    def probe() -> bool:
        calls.append(clock.now)
        if len(calls) == 2:
            raise VncConnectionError("no answer within 2 s")
        return True
    cached = CachedProbe(probe, ttl=2.0, clock=clock)
    assert cached() and cached()
    clock.now += 1.9
    assert cached() and calls == [100.0]
    clock.now += 0.1
    for _ in range(3):
        with pytest.raises(VncConnectionError, match="no answer"):
            cached()
    assert calls == [100.0, 102.0]
    clock.now += 2.0
    assert cached() and len(calls) == 3


def test_concurrent_callers_share_the_call_in_flight():
    calls: List[int] = []

    def slow_probe() -> bool:
        calls.append(1)
        gevent.sleep(0.05)
        return True
    cached = CachedProbe(slow_probe, ttl=2.0)
    callers = [gevent.spawn(cached) for _ in range(5)]
    gevent.joinall(callers, timeout=5, raise_error=True)
    assert [c.value for c in callers] == [True] * 5 and calls == [1]


def test_the_client_probe_gives_up_on_a_server_that_never_answers():
    with socket.socket() as listener:  # the kernel accepts the connection; nobody answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        client = VncClient(["127.0.0.1"], listener.getsockname()[1])
        with pytest.raises(VncConnectionError, match=r"GET http://127\.0\.0\.1:\d+/: no answer within 0\.2 s"):
            client.probe(0.2)
        client.close()
