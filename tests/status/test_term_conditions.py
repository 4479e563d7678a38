"""A ClusterNetworkPolicy's conditions across terms and queued writes (SPEC 15: no status write when
nothing changed, `lastTransitionTime` moves only with the status): a new leader writes nothing
before its start-up resync has said where its objects stand (a standby's states are all pending),
and then only what differs from what Kubernetes holds; a conditions write overtaken while queued
sends the latest conditions, never the state it was queued with. Kubernetes is an emulated API
server's store, in process; the jobs run in the order the outbox would send them."""
from __future__ import annotations

from typing import Dict, Tuple

import pytest

from kube_manager.records.db import PENDING, REJECTED, SYNCED, ClusterPolicyRecord, PolicyStatus
from kube_manager.status.publisher import StatusPublisher
from simulators.kube_api.store import KubeStore
from tests.support.builders import cluster_policy
from tests.support.kept_outbox import KeptOutbox, StoreApis, said, send_status

ERRORS = ["spec.ingress[1]: not a valid CIDR"]


@pytest.fixture
def kube() -> StoreApis:
    return StoreApis(KubeStore())


def made(kube: StoreApis, name: str = "guard") -> str:
    """A ClusterNetworkPolicy `name` created in Kubernetes; the uid the API server gave it."""
    manifest = cluster_policy(name, ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}], uid=None)
    return kube.store.create(manifest)["metadata"]["uid"]


def record(uid: str, state: str, name: str = "guard") -> ClusterPolicyRecord:
    """A partly rejected ClusterNetworkPolicy's record, its objects in the given state."""
    return ClusterPolicyRecord(uid, "", name, generation=1, status=PolicyStatus(["fp"], state=state, errors=list(ERRORS)))


def held(kube: StoreApis, name: str = "guard") -> Dict[str, Tuple[str, str, str]]:
    """The conditions Kubernetes holds: (status, reason, lastTransitionTime) by type."""
    conditions = (kube.store.get("clusternetworkpolicies", "", name).get("status") or {}).get("conditions") or []
    return {c["type"]: (c["status"], c["reason"], c["lastTransitionTime"]) for c in conditions}


def leader(clock: str, identity: str) -> "tuple[StatusPublisher, KeptOutbox]":
    outbox = KeptOutbox()
    publisher = StatusPublisher(outbox, lambda: clock)
    publisher.lists_in = True
    publisher.lead(None, lambda: None, identity)
    return publisher, outbox


def test_a_new_leader_writes_no_condition_before_its_resync_and_none_that_already_stands(kube: StoreApis) -> None:
    uid = made(kube)
    first, first_outbox = leader("T1", "first")
    first.term_resynced()
    first.policy_observed(record(uid, REJECTED), settled=True)  # programmed, part of it rejected
    assert send_status(first_outbox, kube) == [True]
    standing = held(kube)
    assert standing["Programmed"] == ("True", "Programmed", "T1")
    writes = kube.store.status_writes

    # The standby translated the policy; no reconciler of its own has said where its objects stand.
    outbox = KeptOutbox()
    second = StatusPublisher(outbox, lambda: "T2")
    mine = record(uid, PENDING)
    second.policy_observed(mine, settled=False)
    first.stand_by()
    second.lead(None, lambda: None, "second")
    assert said(outbox) == ["InvalidPolicy"]  # what stands is said again; no conditions yet
    send_status(outbox, kube)
    mine.status.state = REJECTED  # the start-up resync's push: the objects are all there
    second.policy_observed(mine, settled=True)
    assert said(outbox) == []
    second.term_resynced()
    assert said(outbox) == ["status"]
    assert send_status(outbox, kube) == [False]  # read, compared with what stands, not written
    assert kube.store.status_writes == writes and held(kube) == standing


def test_a_standby_never_queues_conditions_and_a_term_queues_them_once(kube: StoreApis) -> None:
    outbox = KeptOutbox()
    publisher = StatusPublisher(outbox, lambda: "T")
    publisher.term_resynced()  # not leading: nothing
    publisher.policy_observed(record(made(kube), SYNCED), settled=True)
    assert said(outbox) == []
    publisher.lead(None, lambda: None, "me")
    publisher.term_resynced()
    publisher.term_resynced()
    assert said(outbox) == ["InvalidPolicy", "status"]


def test_a_conditions_write_overtaken_while_queued_sends_the_latest(kube: StoreApis) -> None:
    publisher, outbox = leader("T", "me")
    publisher.term_resynced()
    mine = record(made(kube), PENDING)
    publisher.policy_observed(mine, settled=True)
    mine.status.state = REJECTED  # programmed before the first write's turn came
    publisher.policy_observed(mine, settled=True)
    assert said(outbox) == ["InvalidPolicy", "status", "Synced", "status"]
    assert send_status(outbox, kube) == [True, False]  # the latest first, then nothing left to say
    assert kube.store.status_writes == 1 and held(kube)["Programmed"] == ("True", "Programmed", "T")


@pytest.mark.parametrize("delete_heard", [True, False], ids=["deleted then created", "replaced between two lists"])
def test_a_conditions_write_for_a_policy_gone_or_replaced_sends_nothing(kube: StoreApis, delete_heard: bool) -> None:
    publisher, outbox = leader("T", "me")
    publisher.term_resynced()
    publisher.policy_observed(record(made(kube), SYNCED), settled=True)
    if delete_heard:
        publisher.policy_forgotten("ClusterNetworkPolicy", ("", "guard"))
    kube.store.delete("clusternetworkpolicies", "", "guard")
    publisher.policy_observed(record(made(kube), SYNCED), settled=True)  # the same name, another object
    assert send_status(outbox, kube) == [False, True] and kube.store.status_writes == 1
