"""The per-key coalescing work queue and the per-key backoff of the reconciler."""
from __future__ import annotations

import gevent
import pytest

from kube_manager.reconciler.workqueue import ShutDown, WorkQueue


def test_repeated_adds_of_a_waiting_key_coalesce():
    queue: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "a", "a", "c", "b"):
        queue.add(key)
    assert len(queue) == 3
    assert [queue.get(timeout=0), queue.get(timeout=0), queue.get(timeout=0)] == ["a", "b", "c"]
    assert queue.get(timeout=0) is None


def test_key_added_while_held_is_requeued_after_done_and_never_handed_out_twice():
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    held = queue.get(timeout=0)
    queue.add("a")
    queue.add("a")
    assert queue.get(timeout=0) is None  # not handed to a second worker while held
    queue.done(held)
    assert queue.get(timeout=0) == "a"
    queue.done("a")
    assert queue.is_idle()


def test_get_blocks_until_a_key_arrives():
    queue: WorkQueue[int] = WorkQueue()
    getter = gevent.spawn(queue.get, 5)
    gevent.sleep(0)  # let the getter block
    assert not getter.ready()
    queue.add(7)
    assert getter.get(timeout=5) == 7


def test_add_after_schedules_later_and_an_earlier_add_wins():
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("slow", 60)
    assert len(queue) == 0 and queue.scheduled == 1 and not queue.is_idle()
    queue.add("slow")  # a fresh event does not wait for the old backoff
    assert queue.scheduled == 0
    assert queue.get(timeout=0) == "slow"


def test_add_after_fires_and_keeps_the_earliest_schedule():
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("k", 60)
    queue.add_after("k", 0.01)  # earlier: replaces
    queue.add_after("k", 30)    # later: ignored
    assert queue.get(timeout=5) == "k"
    queue.done("k")
    assert queue.scheduled == 0
    assert queue.wait_idle(timeout=1)


def test_wait_idle_waits_for_held_keys():
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    key = queue.get(timeout=0)
    assert not queue.wait_idle(timeout=0.01)
    gevent.spawn_later(0.01, queue.done, key)
    assert queue.wait_idle(timeout=5)


def test_shut_down_wakes_blocked_getters_and_drops_scheduled_keys():
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("later", 60)
    getters = [gevent.spawn(queue.get) for _ in range(3)]
    gevent.sleep(0)
    queue.shut_down()
    gevent.joinall(getters, timeout=5)
    assert all(isinstance(g.exception, ShutDown) for g in getters)
    assert queue.scheduled == 0
    queue.add("ignored")
    with pytest.raises(ShutDown):
        queue.get(timeout=0)


def test_depth_observer_sees_every_change():
    depths = []
    queue: WorkQueue[str] = WorkQueue(on_depth=depths.append)
    queue.add("a")
    queue.add("b")
    queue.get(timeout=0)
    assert depths[-1] == 1 and max(depths) == 2
