"""Objects that go and come back: the incremental translator (as the daemon drives it) ends each
case as a batch `translate()` of the final state (pod tags, every desired object), its change
reports add up to that state, and every verdict is Kubernetes' (`semantics_support.wrong`), in
both semantics.

The x/y/z cluster of the random explain tests with policies that use every kind of selector tag
(expressions, namespace-selector scopes, named ports, ipBlocks over pod IPs) and, under
`kubernetes`, pair rules. A pod re-added must be re-added as it was: one re-added without its
container ports has no named port, so it rightly loses the named-port selector tags (the last
case), which a harness that re-adds a pod by another manifest than the final state's mistakes
for a missing tag.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple

import pytest

from kube_manager.offline.manifests import Manifests
from kube_manager.translator import ClusterTranslator, translate
from tests.conformance.cluster import pod_ip
from tests.explain.test_explain_random import POD_LABELS, cluster
from tests.support.builders import namespace, pod, policy
from tests.support.semantics_support import wrong
from tests.translator.test_translator_incremental import Mirror

PROBES = [("TCP", 80), ("UDP", 81)]
POLICIES = [
    policy("x", "expressions", {
        "podSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "db"]}]},
        "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [
                                  {"key": "team", "operator": "In", "values": ["blue", "red"]}]},
                               "podSelector": {"matchExpressions": [{"key": "canary", "operator": "Exists"}]}}],
                     "ports": [{"port": "serve-80-tcp"}]}]}),
    policy("y", "networks", {
        "podSelector": {}, "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "blue"}}}]}],
        "egress": [{"to": [{"ipBlock": {"cidr": "10.244.1.0/24", "except": [f"{pod_ip('x', 'b')}/32"]}}],
                    "ports": [{"port": 80}, {"port": 81, "protocol": "UDP"}]}]}),
    policy("z", "named", {  # z/c names its ports the other way: 80 there, 81 elsewhere
        "podSelector": {"matchLabels": {"pod": "c"}}, "policyTypes": ["Egress"],
        "egress": [{"ports": [{"port": "serve-81-tcp"}]}]}),
]
BASE = cluster(POLICIES).objects
Event = Tuple[Any, ...]  # ("upsert", kind, manifest) or ("delete", kind, namespace, name)


def base(kind: str, namespace_name: str, name: str) -> Dict[str, Any]:
    """The base cluster's manifest of one object."""
    return next(m for m in BASE[kind] if (m["metadata"].get("namespace", ""), m["metadata"]["name"])
                == (namespace_name, name))


def with_changes(manifest: Dict[str, Any], labels: Any = None, ip: Any = None, uid: Any = None) -> Dict[str, Any]:
    changed = copy.deepcopy(manifest)
    if labels is not None:
        changed["metadata"]["labels"] = labels
    if ip is not None:
        changed["status"]["podIP"] = ip
    if uid is not None:
        changed["metadata"]["uid"] = uid
    return changed


def upsert(kind: str, manifest: Dict[str, Any]) -> Event:
    return ("upsert", kind, manifest)


def delete(kind: str, namespace_name: str, name: str) -> Event:
    return ("delete", kind, namespace_name, name)


X_A, X_B, Y_A, Z_C = (base("Pod", *key) for key in (("x", "a"), ("x", "b"), ("y", "a"), ("z", "c")))
NETWORKS = base("NetworkPolicy", "y", "networks")
EXPRESSIONS = base("NetworkPolicy", "x", "expressions")
# Each case: flushes, each a list of events.
CASES: Dict[str, List[List[Event]]] = {
    "a pod deleted, then re-added": [[delete("Pod", "y", "a")], [upsert("Pod", Y_A)]],
    "a pod deleted and re-added in one flush": [[delete("Pod", "y", "a"), upsert("Pod", Y_A)]],
    "a pod deleted after a namespace relabel, then re-added": [
        [upsert("Namespace", namespace("x", ns="x", team="red"))], [delete("Pod", "x", "a")], [upsert("Pod", X_A)]],
    "a pod re-added with other labels": [
        [delete("Pod", "y", "a")], [upsert("Pod", with_changes(Y_A, labels={"pod": "a", "tier": "db"}))]],
    "a pod re-added with other labels in one flush": [
        [delete("Pod", "x", "a"), upsert("Pod", with_changes(X_A, labels={"pod": "a", "canary": ""}))]],
    "a pod re-created under its name with a new uid": [[upsert("Pod", with_changes(Y_A, uid="another"))]],
    "a pod deleted, then re-created with a new uid": [
        [delete("Pod", "y", "a")], [upsert("Pod", with_changes(Y_A, uid="another"))]],
    "a namespace deleted, then re-created": [[delete("Namespace", "", "x")], [upsert("Namespace", base("Namespace", "", "x"))]],
    "a namespace deleted and re-created with other labels in one flush": [
        [delete("Namespace", "", "y"), upsert("Namespace", namespace("y", ns="y", team="blue"))]],
    "a namespace and its pods deleted, then re-created": [
        [delete("Pod", "x", "a"), delete("Pod", "x", "b"), delete("Pod", "x", "c"), delete("Namespace", "", "x")],
        [upsert("Namespace", base("Namespace", "", "x")), upsert("Pod", X_A), upsert("Pod", X_B)]],
    "a policy deleted and re-added in one flush": [[delete("NetworkPolicy", "y", "networks"), upsert("NetworkPolicy", NETWORKS)]],
    "a policy deleted, then re-added": [[delete("NetworkPolicy", "x", "expressions")], [upsert("NetworkPolicy", EXPRESSIONS)]],
    "a policy deleted, a pod it selects re-added, the policy back": [
        [delete("NetworkPolicy", "x", "expressions"), delete("Pod", "x", "a")], [upsert("Pod", X_A)],
        [upsert("NetworkPolicy", EXPRESSIONS)]],
    "a pod moving IP into an except": [[upsert("Pod", with_changes(X_A, ip=pod_ip("x", "b")))]],
    "a pod moving IP out of the networks, deleted, re-added in them": [
        [upsert("Pod", with_changes(X_A, ip="10.244.9.9"))], [delete("Pod", "x", "a")],
        [upsert("Pod", with_changes(X_A, ip="10.244.1.99"))]],
    "a pod re-added without its container ports": [
        [delete("Pod", "x", "a")], [upsert("Pod", pod("x", "a", pod_ip("x", "a"), POD_LABELS["x/a"]))]],
}


def final_state(flushes: List[List[Event]]) -> Manifests:
    state = {kind: {(m["metadata"].get("namespace", ""), m["metadata"]["name"]): m for m in manifests}
             for kind, manifests in BASE.items()}
    for events in flushes:
        for event in events:
            if event[0] == "upsert":
                manifest = event[2]
                state[event[1]][(manifest["metadata"].get("namespace", ""), manifest["metadata"]["name"])] = manifest
            else:
                state[event[1]].pop((event[2], event[3]), None)
    return Manifests({kind: list(found.values()) for kind, found in state.items()})


@pytest.mark.parametrize("semantics", ["kubernetes", "cluster-wide"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_object_gone_and_back_ends_as_a_batch_translation_of_the_final_state(case, semantics):
    translator = ClusterTranslator(semantics=semantics)
    mirror = Mirror()
    for kind, manifests in BASE.items():
        for manifest in manifests:
            translator.upsert(kind, copy.deepcopy(manifest))
    mirror.apply(translator)
    for events in CASES[case]:
        for event in events:
            if event[0] == "upsert":
                translator.upsert(event[1], copy.deepcopy(event[2]))
            else:
                translator.delete(*event[1:])
        mirror.apply(translator)
    final = final_state(CASES[case])
    batch = translate(final.objects, semantics=semantics)
    assert translator.translation().to_dict() == batch.to_dict()
    mirror.check(translator)
    found = wrong(final, semantics, PROBES)
    assert not found, [str(cell) for cell in found[:5]]


def test_a_pod_re_added_without_its_container_ports_loses_the_named_port_tag():
    """What the report of a missing selector tag after a re-add was: the re-added manifest had no
    ports, so the tag standing for `serve-81-tcp` -> 81 no longer holds it, in both translations."""
    readded = pod("x", "a", pod_ip("x", "a"), POD_LABELS["x/a"])
    translator = ClusterTranslator()
    for kind, manifests in BASE.items():
        for manifest in manifests:
            translator.upsert(kind, manifest)
    translator.flush()
    named = {tag for tag, origin in translator.selectors().items() if "serve-81-tcp" in str(origin)}
    before = set(translator.pod_tags("x", "a") or ())
    translator.delete("Pod", "x", "a")
    translator.flush()
    translator.upsert("Pod", readded)
    translator.flush()
    after = set(translator.pod_tags("x", "a") or ())
    assert named & before and not named & after
    assert translator.translation().to_dict() == translate(
        final_state(CASES["a pod re-added without its container ports"]).objects).to_dict()
