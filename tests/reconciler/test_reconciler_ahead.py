"""`ahead`: a resync's reads made one ahead of their use, results in order, failures where they belong."""
from __future__ import annotations

from contextlib import closing
from typing import Callable, List

import gevent
import gevent.event
import pytest

from kube_manager.reconciler.ahead import ahead


def recorder(log: List[str]) -> Callable[[str], Callable[[], str]]:
    def call(name: str) -> Callable[[], str]:
        def run() -> str:
            log.append(f"start {name}")
            gevent.sleep(0.001)  # an answer to wait for, as a config API read has
            log.append(f"end {name}")
            return name
        return run
    return call


def test_results_come_in_order_and_the_next_call_is_under_way_before_the_current_result_is_used():
    log: List[str] = []
    call = recorder(log)
    for result in ahead([call("a"), call("b"), call("c")]):
        log.append(f"use {result}")
    assert [e for e in log if e.startswith("use")] == ["use a", "use b", "use c"]
    # b went out before a was used, c before b was used: the caller's work overlaps the next call
    assert log.index("start b") < log.index("use a")
    assert log.index("start c") < log.index("use b")
    # never more than one call ahead: c only starts once a is handed out
    assert log.index("start c") > log.index("end a")


def test_a_failed_call_is_raised_where_its_result_would_have_been_and_the_call_under_way_is_cancelled():
    log: List[str] = []
    call = recorder(log)
    released = gevent.event.Event()

    def fails() -> str:
        raise ValueError("config API said no")

    def slow() -> str:
        released.wait()
        log.append("slow finished")
        return "slow"

    results = ahead([call("a"), fails, slow, call("never")])
    assert next(results) == "a"
    with pytest.raises(ValueError, match="config API said no"):
        next(results)
    released.set()
    gevent.sleep(0.01)
    assert "slow finished" not in log and "start never" not in log


def test_a_caller_that_stops_early_cancels_the_call_under_way():
    log: List[str] = []
    call = recorder(log)
    released = gevent.event.Event()

    def slow() -> str:
        log.append("slow started")
        released.wait()
        log.append("slow finished")
        return "slow"

    with closing(ahead([call("a"), slow, call("c")])) as results:
        assert next(results) == "a"
    released.set()
    gevent.sleep(0.01)
    assert "slow started" in log and "slow finished" not in log and "start c" not in log


def test_no_calls_no_results():
    assert list(ahead([])) == []
