"""The garbage collector's policy (kube_manager/plumbing/gcpolicy.py): what a bulk phase leaves is collected
once and frozen; the embedded config API freezes what survives a full collection; the daemon settles
the heap once the work a resync queued is done, not before, and thaws it when its term ends."""
from __future__ import annotations

import gc
import platform
import weakref
from typing import Any, Iterator, List

import gevent
import gevent.event
import pytest

from kube_manager.plumbing import gcpolicy
from kube_manager.service.heap_settler import settle_after_resyncs
from kube_manager.reconciler.workqueue import WorkQueue
from tests.support.waiting import wait_green


class Node:
    def __init__(self) -> None:
        self.other: Any = None


@pytest.fixture
def thawed() -> Iterator[None]:
    """Each test starts and ends with nothing frozen and no callback of ours."""
    gc.unfreeze()
    yield
    while gcpolicy._freeze_survivors in gc.callbacks:
        gc.callbacks.remove(gcpolicy._freeze_survivors)
    gc.unfreeze()


def cycle() -> "weakref.ref[Node]":
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_settle_collects_the_cycles_left_behind_and_freezes_what_lives(thawed: None) -> None:
    dead = cycle()
    kept = [Node() for _ in range(100)]
    gcpolicy.settle()
    assert dead() is None
    assert gcpolicy.frozen() >= len(kept)
    # A frozen object is still freed by reference counting once nothing refers to it.
    probe = weakref.ref(kept[0])
    kept.clear()
    assert probe() is None


def test_what_an_offline_command_leaves_is_not_collected_before_the_exit(thawed: None) -> None:
    """The translator's graph holds cycles: once the answer is written, the collector must not
    walk and free it piece by piece (the process's exit hands it back to the kernel whole)."""
    with gcpolicy.collector_paused():
        left = cycle()
        gcpolicy.leave_to_exit()
    gc.collect()
    assert left() is not None
    gc.unfreeze()  # back in view, the cycle is garbage as it should be
    gc.collect()
    assert left() is None


def test_a_settled_dict_of_atoms_stays_out_of_the_young_generation_when_it_grows(thawed: None) -> None:
    """A full pass would untrack it (nothing in it can be in a cycle), and the first tuple added
    would put it back, whole, into generation 0: every young collection would walk it again."""
    owners = {("firewall-rule", ("pm", f"rule-{i}")): ("ns", f"np-{i}") for i in range(1000)}

    def add() -> None:
        owners[("firewall-rule", ("pm", f"rule-{len(owners)}"))] = ("ns", f"np-{len(owners)}")
    gc.collect()
    gc.collect()
    assert not gc.is_tracked(owners)  # what full passes do to it
    add()  # the cold start's writes: tracked again, in the young generation
    assert any(young is owners for young in gc.get_objects(0))
    gcpolicy.settle()
    add()  # an event
    assert not any(young is owners for young in gc.get_objects(0))


def test_a_tracked_dict_of_atoms_is_never_untracked_so_it_stays_frozen_as_it_grows(thawed: None) -> None:
    positions = gcpolicy.TrackedDict((("firewall-policy", ("pm", f"p{i}")), i) for i in range(1000))
    plain = dict(positions)
    gc.collect()
    gc.collect()
    assert not gc.is_tracked(plain) and gc.is_tracked(positions)  # full passes untrack only the plain one
    gcpolicy.settle()
    positions[("firewall-policy", ("pm", f"p{len(positions)}"))] = len(positions)  # an event
    plain[("firewall-policy", ("pm", f"p{len(plain)}"))] = len(plain)
    young = gc.get_objects(0)
    assert any(o is plain for o in young) and not any(o is positions for o in young)


def test_survivors_of_a_full_collection_are_frozen_young_ones_are_not(thawed: None) -> None:
    gcpolicy.freeze_after_full_collections()
    gcpolicy.freeze_after_full_collections()  # idempotent
    assert gc.callbacks.count(gcpolicy._freeze_survivors) == 1
    gc.collect(0)
    assert gcpolicy.frozen() == 0
    dead = cycle()
    gc.collect()
    assert dead() is None and gcpolicy.frozen() > 0


def test_the_daemon_settles_the_heap_once_a_resyncs_work_is_done_and_thaws_it_at_the_terms_end(monkeypatch: pytest.MonkeyPatch) -> None:
    settled: List[int] = []
    monkeypatch.setattr(gcpolicy, "settle", lambda: settled.append(1))
    monkeypatch.setattr(gcpolicy, "thaw", lambda: settled.append(0))
    queue: WorkQueue[str] = WorkQueue()  # the reconciler's own kind of work queue
    end, resynced = gevent.event.Event(), gevent.event.Event()
    queue.add("work")
    settler = gevent.spawn(settle_after_resyncs, queue, end, resynced)
    try:
        resynced.set()
        gevent.idle()  # the settler runs until it blocks on the queue
        assert settled == []  # the resync's work is still queued
        assert queue.get(timeout=1) == "work"
        queue.done("work")
        wait_green(lambda: settled == [1], "the heap settled")
        gevent.idle()
        assert settled == [1]  # once per resync, not again while nothing happens
        resynced.set()
        wait_green(lambda: settled == [1, 1], "the heap settled after the next resync")
        end.set()
        wait_green(lambda: settler.dead, "the settler ending with the term")
        assert settled == [1, 1, 0]  # thawed as the term ends
    finally:
        settler.kill()


def test_settle_gives_the_c_allocators_free_pages_back(monkeypatch: pytest.MonkeyPatch, thawed: None) -> None:
    """Memory (issue 12): after a bulk phase glibc's free pages go back to the system; where the C
    library has no malloc_trim, settling still works."""
    calls: List[int] = []
    monkeypatch.setattr(gcpolicy, "_TRIM", lambda pad: calls.append(pad) or 1)
    gcpolicy.settle()
    assert calls == [0]
    monkeypatch.setattr(gcpolicy, "_TRIM", None)
    gcpolicy.settle()
    assert calls == [0] and gc.get_freeze_count() > 0


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_glibc_s_malloc_trim_is_found_and_called() -> None:
    """On glibc (the daemon's Linux images) the call is found."""
    assert gcpolicy._TRIM is not None
    gcpolicy.release_free_memory()


def test_a_start_s_imports_run_with_the_collector_paused_then_frozen(thawed: None) -> None:
    """`pause_for_start` / `started` (the `run` command around its imports): the collector off in
    between, what was built frozen as it is after (no collection: a cycle made meanwhile stays),
    the collector on again; `started` alone, or a second time, changes nothing."""
    try:
        gcpolicy.pause_for_start()
        assert not gc.isenabled()
        kept = cycle()
        gcpolicy.started()
        assert gc.isenabled() and gc.get_freeze_count() > 0
        gc.collect()
        assert kept() is not None  # frozen, not collected
        frozen = gc.get_freeze_count()
        gcpolicy.started()
        assert gc.isenabled() and gc.get_freeze_count() == frozen
    finally:
        gc.enable()


def test_a_start_under_a_paused_collector_leaves_it_paused(thawed: None) -> None:
    """A caller that paused the collector itself keeps it paused: the start neither turns it on
    nor freezes."""
    gc.disable()
    try:
        gcpolicy.pause_for_start()
        gcpolicy.started()
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()
