"""The index of a long ref list, and planning from it: an event costs O(refs moved), not O(list)."""
from __future__ import annotations

from typing import List

from kube_manager.reconciler.diff import LONG_REF_LIST, RefUpdate, plan
from kube_manager.reconciler.reflists import RefListIndex
from tests.support.diff_support import FakeView, policy_body, ref, rule

FIELD = "firewall_rule_refs"


def index_of(desired: List[dict], actual: List[dict]) -> RefListIndex:
    index = RefListIndex(FIELD, "firewall-rule")
    index.load_desired(desired)
    index.load_actual(actual)
    return index


def seq(i: int) -> dict:
    return {"sequence": f"{i:05d}.0"}


def test_differences_follow_desired_and_actual_changes():
    a, b, c = rule("a"), rule("b"), rule("c")
    index = index_of([ref(a, "00000.0"), ref(b, "00001.0")], [ref(a, "00000.0"), ref(c, "00002.0")])
    assert index.differ == {b, c} and index.stale == {c}
    index.want(c, seq(2))
    assert index.differ == {b} and index.stale == set()
    index.hold(b, seq(9))  # held, but with another attr
    assert index.differ == {b}
    index.hold(b, seq(1))
    assert index.differ == set()
    index.unwant(a)
    assert index.differ == {a} and index.stale == {a}
    index.release(a)
    assert index.differ == set() and index.stale == set() and len(index) == 2


def test_listed_refs_that_read_as_desired_share_the_desired_targets_and_attrs():
    """The actual side of a long list holds nothing of the listing where it reads as desired (a
    listing's leftovers kept its memory); a ref that differs keeps its own attr."""
    a, b = rule("a"), rule("b")
    desired = [ref(a, "00000.0"), ref(b, "00001.0")]
    index = index_of(desired, [ref(a, "00000.0"), ref(b, "00009.0")])
    wanted = {target: target for target in index.desired}
    held = {target: target for target in index.actual}
    assert held[a] is wanted[a] and index.actual[a] is index.desired[a]
    assert index.actual[b] == seq(9) and index.differ == {b}


def test_the_actual_list_is_shared_and_stays_true_after_swap_removals():
    targets = [rule(f"r{i}") for i in range(6)]
    index = RefListIndex(FIELD, "firewall-rule")
    shared = index.load_actual([ref(t, f"{i:05d}.0") for i, t in enumerate(targets)])
    for gone in (targets[0], targets[3], targets[5]):
        index.release(gone)
    index.hold(rule("new"), seq(7))
    index.hold(targets[1], seq(8))  # re-attributed: still once
    held = {tuple(r["to"]): r["attr"] for r in shared}
    assert len(shared) == len(held) == 4
    assert held == {t[1]: a for t, a in index.actual.items()}
    assert held[targets[1][1]] == seq(8)


class CountingView(FakeView):
    """Counts the targets planning asks about."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.asked = 0

    def present(self, key):
        self.asked += 1
        return super().present(key)


def test_planning_an_indexed_list_looks_only_at_its_differences():
    rules = [rule(f"r{i:04d}") for i in range(2000)]
    desired = policy_body(*rules)
    actual = {**policy_body(*rules[:-1]), "uuid": "u"}
    index = index_of(desired[FIELD], actual[FIELD])
    view = CountingView(present=set(rules))
    step = plan(("firewall-policy", ("default-policy-management", "p")), desired, actual, view, {FIELD: index})
    assert step.action == "update" and step.body == {}
    assert step.ref_change == RefUpdate(FIELD, "ADD", rules[-1], seq(len(rules) - 1))
    assert view.asked == 1


def test_an_indexed_list_waits_for_held_back_refs_and_writes_many_moves_whole():
    rules = [rule(f"r{i:02d}") for i in range(LONG_REF_LIST * 3)]
    desired = policy_body(*rules)
    actual = {**policy_body(*rules[:LONG_REF_LIST]), "uuid": "u"}
    index = index_of(desired[FIELD], actual[FIELD])
    key = ("firewall-policy", ("default-policy-management", "p"))
    missing = rules[-1]
    step = plan(key, desired, actual, FakeView(present=set(rules) - {missing}, blocked={missing}),
                {FIELD: index})
    assert step.action == "update" and step.ref_change is None and not step.complete
    assert step.blocked == [missing]
    assert [r["to"][-1] for r in step.body[FIELD]] == [t[1][-1] for t in rules[:-1]]


def test_a_gated_removal_keeps_the_old_ref_in_a_whole_write():
    rules = [rule(f"r{i:02d}") for i in range(LONG_REF_LIST + 1)]
    old = rule("old")
    desired = policy_body(*rules)
    actual = {**policy_body(old), "uuid": "u"}
    index = index_of(desired[FIELD], actual[FIELD])
    gate = rule("deny")
    step = plan(("firewall-policy", ("default-policy-management", "p")), desired, actual,
                FakeView(present=set(rules), remove_gate=gate), {FIELD: index})
    assert step.action == "wait" and step.pending == [gate]  # waits for the gate before writing
    step = plan(("firewall-policy", ("default-policy-management", "p")), desired, actual,
                FakeView(present=set(rules), remove_gate=gate, blocked={gate}), {FIELD: index})
    assert step.action == "update" and step.blocked == [gate]
    assert step.body[FIELD][-1] == {"to": list(old[1]), "attr": {"sequence": "00000.0"}}


def test_a_write_while_a_resync_lists_survives_its_listing_and_none_is_noted_outside_one() -> None:
    """A write made while the resync lists is kept over the (older) listing; a write made before
    the listing began is what the listing reads. Only the first kind is noted: the writes of a cold
    start, after its listing, leave no map behind that would grow with the cluster."""
    from kube_manager.records.db import Database
    from kube_manager.reconciler.actual import ActualState
    from kube_manager.reconciler.ownership import TypeListing
    from kube_manager.translator.published import DesiredState

    rule = ("firewall-rule", ("pm", "r1"))
    other = ("firewall-rule", ("pm", "r2"))
    actual = ActualState(Database(), DesiredState({}), {}, lambda _key: None)
    since = actual.begin_listing()
    actual.set(rule, {"uuid": "u1", "comment": "written"})
    actual.load("firewall-rule", [TypeListing("firewall-rule", owned={rule[1]: {"uuid": "u1", "comment": "listed"}})], since)
    actual.loaded(since)
    assert actual.get(rule) == {"uuid": "u1", "comment": "written"}
    for n in range(100):  # a cold start's writes, after the listing
        actual.set(("firewall-rule", ("pm", f"w{n}")), {"uuid": f"w{n}"})
    actual.set(other, {"uuid": "u2", "comment": "written before the next listing"})
    assert actual._written_at == {}
    since = actual.begin_listing()
    actual.load("firewall-rule", [TypeListing("firewall-rule", owned={other[1]: {"uuid": "u2", "comment": "listed"}})], since)
    actual.loaded(since)
    assert actual.get(other) == {"uuid": "u2", "comment": "listed"}
