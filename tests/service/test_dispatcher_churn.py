"""Churn through the daemon's own path: events normalised as the watcher does (`SeenObjects`: a
pod re-created under its name is DELETED then ADDED), trimmed by the kinds' trimmers, applied by
`EventDispatcher` and its handlers to the incremental translator, the change reports handed to a
sink standing for the reconciler.

Whatever the sequence (objects deleted and re-added, pods re-created with a new uid, moving IP,
relabelled; namespaces deleted and re-created; policies gone and back), the translator ends as a
batch translation of the final state, and the sink was told of every pod whose tags or uid (the
virtual machine its tags go on) changed: what it last read of each pod is what it must tag now.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, Optional, Tuple

from hypothesis import given, settings
from hypothesis import strategies as st

from kube_manager.handlers import KINDS
from kube_manager.kube.seen import SeenObjects, trimmed_key
from kube_manager.records.db import Database
from kube_manager.service.dispatcher import EventDispatcher
from kube_manager.translator import ClusterTranslator, translate
from tests.translator.test_translator_incremental import (NAMESPACES, namespace_manifests, pod_manifests,
                                                          policy_manifests)

RESOURCES = {"Namespace": "namespaces", "Pod": "pods", "NetworkPolicy": "networkpolicies"}
PodSeen = Optional[Tuple[str, Optional[Tuple[str, ...]]]]  # (uid, tags) as last read, None: gone


class ReconcilerStandIn:
    """What a reconciler reads of a pod when told it changed: its record's uid and its tags."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.translator: Optional[ClusterTranslator] = None
        self.pods: Dict[Tuple[str, str], PodSeen] = {}

    def initial_lists_in(self) -> None:
        pass

    def refs_changed(self, changes: Any) -> None:
        pass

    def objects_changed(self, keys: Any) -> None:
        pass

    def pods_changed(self, keys: Any) -> None:
        assert self.translator is not None
        for key in keys:
            record = self.db.pods.get(key)
            self.pods[key] = None if record is None else (record.uid, self.translator.pod_tags(*key))


events = st.lists(st.one_of(
    st.tuples(st.just("Namespace"), namespace_manifests),
    st.tuples(st.just("Pod"), pod_manifests),
    st.tuples(st.just("NetworkPolicy"), policy_manifests),
    st.tuples(st.just("delete"), st.tuples(st.sampled_from(["Namespace", "Pod", "NetworkPolicy"]),
                                           st.sampled_from(NAMESPACES), st.sampled_from(["p0", "p1", "c", "b-c"])))),
    max_size=30)


@settings(max_examples=150, deadline=None)
@given(events, st.sampled_from(["kubernetes", "cluster-wide"]))
def test_any_churn_through_the_daemon_path_ends_as_the_batch_translation_with_every_pod_reported(steps, semantics):
    db = Database()
    reconciler = ReconcilerStandIn(db)
    translator = ClusterTranslator("k8s", "k8s", semantics=semantics)
    reconciler.translator = translator
    dispatcher = EventDispatcher(db, translator, reconciler)
    for resource in KINDS.names():
        dispatcher.on_event(resource, "LISTED", {"resourceVersion": "1"})
    seen = {resource: SeenObjects() for resource in RESOURCES.values()}
    state: Dict[str, Dict[Tuple[str, str], Any]] = {kind: {} for kind in RESOURCES}
    for op, arg in steps:
        if op == "delete":
            kind, namespace, name = arg
            key = ("", namespace) if kind == "Namespace" else (namespace, name)
            gone = state[kind].pop(key, None)
            if gone is None:
                continue
            resource = RESOURCES[kind]
            event = seen[resource].deleted(KINDS[resource].trimmer(copy.deepcopy(gone)))
            assert event is not None
            dispatcher.on_event(resource, *event)
        else:
            resource = RESOURCES[op]
            trimmed = KINDS[resource].trimmer(copy.deepcopy(arg))
            state[op][trimmed_key(trimmed)] = arg
            for event in list(seen[resource].upserted(trimmed)):
                dispatcher.on_event(resource, *event)
    batch = translate({kind: list(found.values()) for kind, found in state.items()}, semantics=semantics)
    assert translator.translation().to_dict() == batch.to_dict()
    for key in set(reconciler.pods) | set(db.pods):
        record = db.pods.get(key)
        expected: PodSeen = None if record is None else (record.uid, translator.pod_tags(*key))
        assert reconciler.pods.get(key) == expected, key
