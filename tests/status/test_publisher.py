"""The publisher acts on differences of the records' facts, during a term only (SPEC 15): Synced
once per generation (none for what the initial lists brought), nothing for an observation that
changes nothing, a stale state after a flush never taken for programmed."""
from __future__ import annotations

from kube_manager.records.db import PENDING, REJECTED, SYNCED, ClusterPolicyRecord, PolicyRecord, PolicyStatus
from kube_manager.status.publisher import StatusPublisher
from tests.support.kept_outbox import KeptOutbox as Outbox, said


def leading() -> "tuple[StatusPublisher, Outbox]":
    outbox = Outbox()
    publisher = StatusPublisher(outbox, lambda: "T")
    publisher.lead(None, lambda: None, "me")
    publisher.term_resynced()  # past the term's start-up resync
    return publisher, outbox


def test_synced_once_per_generation_and_never_from_a_state_left_before_a_flush() -> None:
    publisher, outbox = leading()
    publisher.lists_in = True
    record = PolicyRecord("u", "shop", "p", generation=1,
                          status=PolicyStatus(["fp"], state=PENDING))
    publisher.policy_observed(record, settled=False)
    record.status.state = SYNCED
    publisher.policy_observed(record, settled=True)
    publisher.policy_observed(record, settled=True)  # a resync: same facts
    assert said(outbox) == ["Synced"]
    record.generation = 2  # spec changed; the record still says synced until the reconciler speaks
    publisher.policy_observed(record, settled=False)
    assert said(outbox) == ["Synced"]
    publisher.policy_observed(record, settled=True)
    assert said(outbox) == ["Synced", "Synced"]


def test_no_synced_for_what_the_initial_lists_brought_and_nothing_said_while_standing_by() -> None:
    outbox = Outbox()
    publisher = StatusPublisher(outbox, lambda: "T")
    record = PolicyRecord("u", "shop", "p", generation=3,
                          status=PolicyStatus(["fp"], state=REJECTED, errors=["bad"]))
    publisher.policy_observed(record, settled=True)  # a standby: nothing
    assert said(outbox) == []
    publisher.lead(None, lambda: None, "me")  # a term: what stands is reported, not Synced
    assert said(outbox) == ["InvalidPolicy"]
    publisher.lists_in = True
    publisher.policy_observed(record, settled=True)
    assert said(outbox) == ["InvalidPolicy"]


def test_a_cluster_network_policy_s_conditions_are_queued_only_when_they_change() -> None:
    publisher, outbox = leading()
    record = ClusterPolicyRecord("u", "", "c", generation=1,
                                 status=PolicyStatus(["fp"], state=PENDING))
    publisher.policy_observed(record, settled=True)
    record.status.state = SYNCED
    publisher.policy_observed(record, settled=True)
    publisher.policy_observed(record, settled=True)
    assert said(outbox) == ["status", "status"]
    publisher.policy_forgotten("ClusterNetworkPolicy", ("", "c"))
    publisher.policy_observed(record, settled=True)  # created again: reported again
    assert said(outbox) == ["status", "status", "status"]
