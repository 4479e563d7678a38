"""The Events' aggregation (SPEC 15, as client-go's recorder): a repeat of (object, reason, note)
within 10 minutes is the same Event's series; after a longer quiet, a new Event."""
from __future__ import annotations

from typing import List

from kube_manager.status.recorder import EventRecorder, EventWrite
from kube_manager.status.verdicts import EventSpec, PolicyFacts

NP = PolicyFacts("NetworkPolicy", "shop", "p", "u1", 1, "parked", (), ("r: no",), True)
CNP = PolicyFacts("ClusterNetworkPolicy", "", "c", "u2", 1, "rejected", ("x",), (), True)
FAILED = EventSpec("Warning", "WriteFailed", "Write", "r: no")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def recorder() -> "tuple[EventRecorder, List[EventWrite], Clock]":
    sent: List[EventWrite] = []
    clock = Clock()
    return EventRecorder(sent.append, "host_1", clock=clock), sent, clock


def test_a_repeat_within_the_window_counts_in_the_series_of_the_first_event() -> None:
    rec, sent, clock = recorder()
    rec.record(NP, FAILED)
    clock.now += 599
    rec.record(NP, FAILED)
    clock.now += 599  # measured from the last occurrence
    rec.record(NP, FAILED)
    assert [(w.name, w.count) for w in sent] == [(sent[0].name, 1), (sent[0].name, 2), (sent[0].name, 3)]
    assert sent[0].body["regarding"] == {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                         "namespace": "shop", "name": "p", "uid": "u1"}
    assert sent[0].body["reportingInstance"] == "host_1" and sent[0].namespace == "shop"


def test_after_a_longer_quiet_or_with_another_note_a_new_event() -> None:
    rec, sent, clock = recorder()
    rec.record(NP, FAILED)
    rec.record(NP, EventSpec("Warning", "WriteFailed", "Write", "other"))
    clock.now += 601
    rec.record(NP, FAILED)
    assert [w.count for w in sent] == [1, 1, 1] and len({w.name for w in sent}) == 3


def test_cluster_network_policy_events_go_to_default() -> None:
    rec, sent, _clock = recorder()
    rec.record(CNP, EventSpec("Warning", "InvalidPolicy", "Translate", "x"))
    assert sent[0].namespace == "default" and "namespace" not in sent[0].body["regarding"]


class FakeEvents:
    def __init__(self, missing: bool = False) -> None:
        self.calls: List[str] = []
        self.missing = missing

    def patch_namespaced_event(self, name, namespace, body, **_):  # noqa: ANN001 - the client's signature
        from kubernetes.client.exceptions import ApiException
        self.calls.append(f"patch {body['series']['count']}")
        if self.missing:
            raise ApiException(status=404)

    def create_namespaced_event(self, namespace, body, **_):  # noqa: ANN001
        self.calls.append(f"create {body.get('series', {}).get('count', 1)}")


class Apis:
    def __init__(self, events: FakeEvents) -> None:
        self.events = events


def test_a_series_patch_whose_event_is_gone_creates_it_with_its_series() -> None:
    rec, sent, _clock = recorder()
    rec.record(NP, FAILED)
    rec.record(NP, FAILED)
    present, gone = FakeEvents(), FakeEvents(missing=True)
    for write in sent:
        write.run(Apis(present), 1.0)
        write.run(Apis(gone), 1.0)
    assert present.calls == ["create 1", "patch 2"]
    assert gone.calls == ["create 1", "patch 2", "create 2"]
