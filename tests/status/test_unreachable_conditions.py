"""A leader whose start-up resync cannot read the config API (SPEC 15): each ClusterNetworkPolicy's
conditions then say what is known without it (`Accepted` from the translation, `Programmed` False /
ConfigAPIUnreachable), never over a `Programmed True` Kubernetes holds for the same generation, and
the term's own resync, once in, puts the right ones. Kubernetes is an emulated API server's store,
in process; the jobs run in the order the outbox would send them."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pytest

from kube_manager.records.db import PENDING, REJECTED, SYNCED, ClusterPolicyRecord, PolicyStatus
from kube_manager.status.publisher import StatusPublisher
from kube_manager.status.verdicts import CONFIG_API_UNREACHABLE, PolicyFacts, conditions_of
from simulators.kube_api.store import KubeStore
from tests.support.builders import cluster_policy
from tests.support.kept_outbox import KeptOutbox, StoreApis, said, send_status

ERRORS = ["spec.ingress[1]: not a valid CIDR"]
CNP = "clusternetworkpolicies"
Held = Tuple[str, str, str, int]  # status, reason, lastTransitionTime, observedGeneration


@pytest.fixture
def kube() -> StoreApis:
    return StoreApis(KubeStore())


def made(kube: StoreApis, generation: int) -> str:
    """ClusterNetworkPolicy `guard` at `generation` (a change of its spec per generation); its uid."""
    uid = kube.store.create(cluster_policy("guard", priority=1, uid=None))["metadata"]["uid"]
    for priority in range(2, generation + 1):
        kube.store.apply(cluster_policy("guard", priority=priority, uid=uid))
    assert kube.store.get(CNP, "", "guard")["metadata"]["generation"] == generation
    return uid


def hold(kube: StoreApis, programmed: Optional[Held], accepted: bool = False) -> None:
    """What an earlier leader wrote of `guard` (partly rejected): `Programmed` as given (nothing
    when None), with `Accepted` if asked, at the same time and generation."""
    if programmed is not None:
        status, reason, since, generation = programmed
        state = SYNCED if status == "True" else PENDING
        facts = PolicyFacts("ClusterNetworkPolicy", "", "guard", "", generation, state, tuple(ERRORS), (), True)
        written = [dict(c, lastTransitionTime=since) for c in conditions_of(facts)]
        assert written[1]["reason"] == reason
        conditions = written if accepted else written[1:]
        kube.store.update_status(CNP, "guard", {"status": {"conditions": conditions}}, patch=True)


def held(kube: StoreApis) -> Dict[str, Held]:
    conditions: List[Dict[str, Any]] = (kube.store.get(CNP, "", "guard").get("status") or {}).get("conditions") or []
    return {c["type"]: (c["status"], c["reason"], c["lastTransitionTime"], c["observedGeneration"]) for c in conditions}


def new_leader(kube: StoreApis, uid: str, generation: int) -> "tuple[StatusPublisher, KeptOutbox, ClusterPolicyRecord]":
    """A standby that translated `guard` (partly rejected: its other parts have objects) and then
    began a term: no reconciler of its own has spoken, so its state is pending."""
    outbox = KeptOutbox()
    publisher = StatusPublisher(outbox, lambda: "NOW")
    mine = ClusterPolicyRecord(uid, "", "guard", generation=generation,
                               status=PolicyStatus(["fp"], state=PENDING, errors=list(ERRORS)))
    publisher.policy_observed(mine, settled=False)
    publisher.lists_in = True
    publisher.lead(None, lambda: None, "me")
    return publisher, outbox, mine


UNREACHABLE = ("False", CONFIG_API_UNREACHABLE)
# (held Programmed, the policy's generation now, Programmed while the config API cannot be read)
CASES = {
    "programmed at this generation": (("True", "Programmed", "T0", 1), 1, ("True", "Programmed", "T0", 1)),
    "programmed at an older generation": (("True", "Programmed", "T0", 1), 2, (*UNREACHABLE, "NOW", 2)),
    "pending at this generation": (("False", "Pending", "T0", 1), 1, (*UNREACHABLE, "T0", 1)),
    "never written": (None, 1, (*UNREACHABLE, "NOW", 1)),
}


@pytest.mark.parametrize("before, generation, meanwhile", CASES.values(), ids=CASES.keys())
def test_conditions_while_the_config_api_cannot_be_read_then_after_the_resync(
        kube: StoreApis, before: Optional[Held], generation: int, meanwhile: Held) -> None:
    uid = made(kube, generation)
    hold(kube, before)
    publisher, outbox, mine = new_leader(kube, uid, generation)
    assert said(outbox) == ["InvalidPolicy"]  # judged without the config API, said at once
    publisher.term_unreachable("VncConnectionError")
    writes = kube.store.status_writes
    assert send_status(outbox, kube) == [True]  # Accepted, held by none before
    assert held(kube) == {"Accepted": ("False", "PartiallyInvalid", "NOW", generation), "Programmed": meanwhile}
    if meanwhile[1] == CONFIG_API_UNREACHABLE:
        message = kube.store.get(CNP, "", "guard")["status"]["conditions"][1]["message"]
        assert "VncConnectionError" in message
    publisher.term_unreachable("VncConnectionError")  # the next attempt fails the same way
    assert said(outbox) == []

    mine.status.state = REJECTED  # the term's start-up resync is in: the objects are all there
    publisher.policy_observed(mine, settled=True)
    publisher.term_resynced()
    send_status(outbox, kube)
    since = meanwhile[2] if meanwhile[0] == "True" else "NOW"
    assert held(kube)["Programmed"] == ("True", "Programmed", since, generation)
    assert kube.store.status_writes - writes == (0 if before == meanwhile else 1) + 1


def test_a_programmed_true_that_stands_is_never_written_while_the_config_api_cannot_be_read(kube: StoreApis) -> None:
    uid = made(kube, 1)
    hold(kube, ("True", "Programmed", "T0", 1), accepted=True)
    writes = kube.store.status_writes
    publisher, outbox, mine = new_leader(kube, uid, 1)
    publisher.term_unreachable("VncConnectionError")
    publisher.term_unreachable("ServerError")  # another cause: queued again, and still not written
    mine.status.state = REJECTED
    publisher.policy_observed(mine, settled=True)
    publisher.term_resynced()
    assert send_status(outbox, kube) == [False, False, False]
    assert kube.store.status_writes == writes


def test_a_policy_that_writes_nothing_is_judged_without_the_config_api(kube: StoreApis) -> None:
    uid = made(kube, 1)
    outbox = KeptOutbox()
    publisher = StatusPublisher(outbox, lambda: "NOW")
    publisher.lead(None, lambda: None, "me")
    publisher.term_unreachable("VncConnectionError")
    whole = ClusterPolicyRecord(uid, "", "guard", generation=1, status=PolicyStatus([], state=REJECTED, errors=ERRORS))
    publisher.policy_observed(whole, settled=False)
    send_status(outbox, kube)
    assert held(kube) == {"Accepted": ("False", "Invalid", "NOW", 1), "Programmed": ("False", "Invalid", "NOW", 1)}


def test_a_standby_or_a_resynced_term_ignores_an_unreachable_config_api(kube: StoreApis) -> None:
    uid = made(kube, 1)
    outbox = KeptOutbox()
    publisher = StatusPublisher(outbox, lambda: "NOW")
    publisher.term_unreachable("VncConnectionError")  # not leading: nothing
    record = ClusterPolicyRecord(uid, "", "guard", generation=1, status=PolicyStatus(["fp"], state=SYNCED))
    publisher.policy_observed(record, settled=True)
    assert said(outbox) == []
    publisher.lead(None, lambda: None, "me")
    publisher.term_resynced()
    publisher.term_unreachable("VncConnectionError")  # a later resync's failure: the term's states stand
    assert said(outbox) == ["status"]
    send_status(outbox, kube)
    assert held(kube)["Programmed"][:2] == ("True", "Programmed")
