"""Staged policies in the translator (SPEC 17): translated and kept apart, nothing emitted.

Each case compares the translator's desired objects with a translation of the cluster in which the
policy is absent (staged) or present without the annotation (enforced, a misspelt value included),
so that staging is exactly a delete and promoting exactly a create, for both policy kinds and both
semantics.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional

import pytest

from kube_manager.handlers.cluster_network_policy import trim_cluster_network_policy
from kube_manager.handlers.network_policy import trim_network_policy
from kube_manager.translator import ClusterTranslator, translate
from kube_manager.translator.staged_policies import STAGED_ANNOTATION, StagedStatus, enforced
from tests.support.builders import cluster_policy, cnp_rule, namespace, namespace_named, pod, policy

SEMANTICS = ("kubernetes", "cluster-wide")


def annotated(manifest: Dict[str, Any], value: Optional[str]) -> Dict[str, Any]:
    copied = copy.deepcopy(manifest)
    if value is not None:
        copied["metadata"].setdefault("annotations", {})[STAGED_ANNOTATION] = value
    return copied


BASE = {"Namespace": [namespace("x", team="x"), namespace("y", team="y")],
        "Pod": [pod("x", "a", "10.0.1.1", {"app": "a"}), pod("y", "b", "10.0.2.1", {"app": "b"})],
        "NetworkPolicy": [policy("y", "allow-a", {"podSelector": {},
                                                   "ingress": [{"from": [{"namespaceSelector": {}}]}]})]}
DENY_ALL = policy("x", "deny-all", {"podSelector": {}, "policyTypes": ["Ingress"]})
ADMIN_DENY = cluster_policy("isolate-y", "Admin", 5, namespace_named("y"),
                            ingress=[cnp_rule("Deny", namespace_named("x"))])
CASES = [("NetworkPolicy", DENY_ALL), ("ClusterNetworkPolicy", ADMIN_DENY)]


def manifests(extra: List[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    objects: Dict[str, List[Dict[str, Any]]] = {kind: list(items) for kind, items in BASE.items()}
    for manifest in extra:
        objects.setdefault(manifest["kind"], []).append(manifest)
    return objects


def objects_of(translation_dict: Dict[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in translation_dict.items() if key not in ("errors", "staged")}


def live(semantics: str, extra: List[Dict[str, Any]]) -> ClusterTranslator:
    translator = ClusterTranslator(semantics=semantics)
    for kind, items in manifests(extra).items():
        for manifest in items:
            translator.upsert(kind, manifest)
    translator.flush()
    return translator


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("kind,manifest", CASES)
def test_a_staged_policy_emits_nothing_and_is_listed_apart(semantics, kind, manifest):
    staged = translate(manifests([annotated(manifest, "true")]), semantics=semantics).to_dict()
    absent = translate(manifests([]), semantics=semantics).to_dict()
    assert objects_of(staged) == objects_of(absent)
    name = manifest["metadata"]["name"]
    assert staged["staged"] == [{"kind": kind, "namespace": manifest["metadata"].get("namespace", ""), "name": name}]
    assert "staged" not in absent  # a cluster without staged policies reads as before


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("kind,manifest", CASES)
def test_staging_is_a_delete_and_promoting_a_create(semantics, kind, manifest):
    translator = live(semantics, [manifest])
    enforced_objects = translate(manifests([manifest]), semantics=semantics).to_dict()
    absent = translate(manifests([]), semantics=semantics).to_dict()
    assert objects_of(translator.translation().to_dict()) == objects_of(enforced_objects)
    identity = (manifest["metadata"].get("namespace", ""), manifest["metadata"]["name"])

    translator.upsert(kind, annotated(manifest, "true"))
    changes = translator.flush()
    assert objects_of(translator.translation().to_dict()) == objects_of(absent)
    assert changes.removed, "staging an enforced policy removes its objects"
    assert isinstance(translator.status_of(kind, *identity), StagedStatus)
    assert [(p.kind, p.namespace, p.name) for p in translator.staged()] == [(kind, *identity)]

    translator.upsert(kind, annotated(manifest, None))
    translator.flush()
    assert objects_of(translator.translation().to_dict()) == objects_of(enforced_objects)
    assert translator.staged() == ()
    assert translator.status_of(kind, *identity).firewall_policy is not None


@pytest.mark.parametrize("kind,manifest", CASES)
def test_a_misspelt_value_enforces_the_policy_and_is_reported(kind, manifest):
    translator = live("kubernetes", [annotated(manifest, "True ")])
    assert objects_of(translator.translation().to_dict()) == objects_of(translate(manifests([manifest])).to_dict())
    identity = (manifest["metadata"].get("namespace", ""), manifest["metadata"]["name"])
    reasons = [e["reason"] for e in translator.errors() if (e["kind"], e["namespace"], e["name"]) == (kind, *identity)]
    assert len(reasons) == 1 and "'True '" in reasons[0] and "enforced" in reasons[0]
    status = translator.status_of(kind, *identity)
    assert status.firewall_policy is not None and reasons[0] in status.errors
    translator.upsert(kind, manifest)  # corrected: the error goes
    translator.flush()
    assert not [e for e in translator.errors() if e["name"] == identity[1]]


def test_a_staged_policy_is_validated():
    bad = annotated(policy("x", "bad", {"podSelector": {}, "ingress": [{"ports": [{"port": "no such port!"}]}]}), "true")
    translator = live("kubernetes", [bad])
    reasons = [e["reason"] for e in translator.errors() if e["name"] == "bad"]
    assert reasons and translator.status_of("NetworkPolicy", "x", "bad").errors == tuple(reasons)
    assert objects_of(translator.translation().to_dict()) == objects_of(translate(manifests([])).to_dict())


def test_a_staged_policy_deleted_is_forgotten():
    translator = live("kubernetes", [annotated(DENY_ALL, "true")])
    translator.delete("NetworkPolicy", "x", "deny-all")
    translator.flush()
    assert translator.staged() == () and translator.status_of("NetworkPolicy", "x", "deny-all") is None


@pytest.mark.parametrize("trim,manifest", [(trim_network_policy, DENY_ALL), (trim_cluster_network_policy, ADMIN_DENY)])
def test_the_trimmers_keep_the_annotation(trim, manifest):
    full = annotated(manifest, "true")
    full["metadata"]["annotations"]["unrelated"] = "x"
    assert trim(full)["metadata"]["annotations"] == {STAGED_ANNOTATION: "true"}
    assert "annotations" not in trim(manifest)["metadata"]


def test_enforced_drops_only_the_annotation():
    full = annotated(DENY_ALL, "true")
    full["metadata"]["annotations"]["other"] = "kept"
    assert enforced(full)["metadata"]["annotations"] == {"other": "kept"}
    assert "annotations" not in enforced(annotated(DENY_ALL, "true"))["metadata"]
    assert full["metadata"]["annotations"][STAGED_ANNOTATION] == "true"  # a copy
