"""What kube-manager writes to Kubernetes passes the real API server's validation, as the emulator
now applies it (Event rules and immutability, the ClusterNetworkPolicy status schema, versions):
each Event the recorder makes, its series, and each conditions write, sent by the jobs themselves
through the official client."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Iterator, List, Tuple

import pytest
from kubernetes import client

from kube_manager.kube.client_factory import api_client_for_url
from kube_manager.status.publisher import ConditionsWrite
from kube_manager.status.recorder import EventRecorder, EventWrite
from kube_manager.status.verdicts import NOTE_LIMIT, EventSpec, PolicyFacts, conditions_of, truncated
from simulators.kube_api.runner import EmulatorRunner
from tests.support.builders import cluster_policy, namespace

LONG = "p" * 253  # the longest name a policy can have


@pytest.fixture
def kube() -> Iterator[EmulatorRunner]:
    with EmulatorRunner() as runner:
        runner.store.create(namespace("shop"))
        yield runner


def apis(kube: EmulatorRunner) -> Any:
    api = api_client_for_url(kube.url)
    return SimpleNamespace(events=client.EventsV1Api(api), custom=client.CustomObjectsApi(api))


# (the policy, the identity of the daemon, the note): each must make an Event the server accepts
EVENTS: List[Tuple[PolicyFacts, str, str]] = [
    (PolicyFacts("NetworkPolicy", "shop", "p", "u1", 1, "parked", (), ("r: no",), True), "host_1", "r: no"),
    (PolicyFacts("ClusterNetworkPolicy", "", "c", "u2", 1, "rejected", ("x",), (), True), "host_1", "x"),
    (PolicyFacts("NetworkPolicy", "shop", LONG, "u3", 1, "parked", (), (), True), "h" * 300, "n"),
    (PolicyFacts("NetworkPolicy", "shop", "q", "u4", 1, "parked", (), (), True), "host_1",
     truncated("é" * NOTE_LIMIT)),
]


@pytest.mark.parametrize("facts,identity,note", EVENTS, ids=["namespaced", "cluster-scoped", "long names",
                                                              "note at the limit"])
def test_each_event_and_its_series_is_accepted(kube: EmulatorRunner, facts: PolicyFacts, identity: str,
                                               note: str) -> None:
    sent: List[EventWrite] = []
    recorder = EventRecorder(sent.append, identity)
    for _ in range(3):  # a create, then two series patches
        recorder.record(facts, EventSpec("Warning", "WriteFailed", "Write", note))
    for write in sent:
        assert write.run(apis(kube), 5.0)
    (held,) = kube.call(lambda store: store.events.list(sent[0].namespace))
    assert held["series"]["count"] == 3 and held["note"] == note


def test_a_series_whose_event_is_gone_is_created_with_its_series(kube: EmulatorRunner) -> None:
    sent: List[EventWrite] = []
    recorder = EventRecorder(sent.append, "host_1")
    facts = EVENTS[0][0]
    for _ in range(2):
        recorder.record(facts, EventSpec("Warning", "WriteFailed", "Write", "r: no"))
    assert sent[1].run(apis(kube), 5.0)  # the first was never sent: the patch finds nothing
    (held,) = kube.call(lambda store: store.events.list("shop"))
    assert held["series"]["count"] == 2


def write_conditions(kube: EmulatorRunner, name: str, uid: str, state: str) -> ConditionsWrite:
    facts = PolicyFacts("ClusterNetworkPolicy", "", name, uid, 1, state, (), (), True)
    wanted = tuple(conditions_of(facts))
    return ConditionsWrite(name, uid, lambda: wanted, lambda: "2026-01-01T00:00:00Z")


def test_conditions_are_accepted_and_keep_another_controller_s(kube: EmulatorRunner) -> None:
    made = kube.store.create(cluster_policy("c", priority=10, ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}]))
    other = {"type": "example.com/Seen", "status": "True", "reason": "Seen", "message": "seen",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}
    kube.store.update_status("clusternetworkpolicies", "c", {"status": {"conditions": [other]}}, patch=True)
    assert write_conditions(kube, "c", made["metadata"]["uid"], "synced").run(apis(kube), 5.0)
    held = kube.store.get("clusternetworkpolicies", "", "c")["status"]["conditions"]
    assert sorted(c["type"] for c in held) == ["Accepted", "Programmed", "example.com/Seen"]


def test_a_conflict_reads_again_once(kube: EmulatorRunner) -> None:
    made = kube.store.create(cluster_policy("c", priority=10, ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}]))
    real = apis(kube)
    reads = []

    class RacingCustom:
        """Another write lands between the first read and its patch."""

        def get_cluster_custom_object_status(self, *args: Any, **kwargs: Any) -> Any:
            held = real.custom.get_cluster_custom_object_status(*args, **kwargs)
            reads.append(held["metadata"]["resourceVersion"])
            if len(reads) == 1:
                kube.store.update(kube.store.get("clusternetworkpolicies", "", "c"))  # the version moves
            return held

        def patch_cluster_custom_object_status(self, *args: Any, **kwargs: Any) -> Any:
            return real.custom.patch_cluster_custom_object_status(*args, **kwargs)

    job = write_conditions(kube, "c", made["metadata"]["uid"], "synced")
    assert job.run(SimpleNamespace(events=real.events, custom=RacingCustom()), 5.0)
    assert len(reads) == 2 and reads[0] != reads[1]
    assert len(kube.store.get("clusternetworkpolicies", "", "c")["status"]["conditions"]) == 2
