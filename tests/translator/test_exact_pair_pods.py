"""SPEC 14's pair rules follow the pods: a pair is written only while some current pod matches each
of its ends that is a set of pods, and pods arriving, relabelled, given an IP or deleted after the
policies bring pairs in and out incrementally. Every result is compared with a translation of the
final state from scratch, and every verdict with the independent Kubernetes model
(`kube_manager/explain/k8s_semantics.py`, through `semantics_support.wrong`)."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube_manager.offline.manifests import Manifests
from kube_manager.translator import ClusterTranslator, translate
from kube_manager.translator.exact import realised
from tests.conformance.cluster import NAMESPACES, POD_NAMES, pod_ip, serve_ports
from tests.explain.test_explain_random import NAMESPACE_LABELS, block, pod_selectors, policy_sets
from tests.support.builders import namespace, pod, policy
from tests.support.semantics_support import wrong

PROBES = [("TCP", 80), ("UDP", 81)]
POD_KEYS = [f"{ns}/{name}" for ns in NAMESPACES for name in POD_NAMES]


def pair_rules(translation: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return [rule for rule in translation["firewall_rules"] if "--pair-" in rule["fq_name"][1]]


def client_server(pods: List[Dict[str, Any]], a: str = "a", b: str = "b") -> Dict[str, List[Dict[str, Any]]]:
    """`a`'s `client` pods may send to `b`'s `server` pods on TCP 80, which admit `a`; both
    namespaces isolated both ways, so only a pair rule lets a flow from `a` to `b` through."""
    def named(name: str) -> Dict[str, Any]:
        return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}
    return {
        "Namespace": [namespace(a), namespace(b)],
        "Pod": pods,
        "NetworkPolicy": [
            policy(a, "out", {"podSelector": {"matchLabels": {"app": "client"}}, "policyTypes": ["Ingress", "Egress"],
                              "egress": [{"to": [{**named(b), "podSelector": {"matchLabels": {"app": "server"}}}],
                                          "ports": [{"port": 80}]}]}),
            policy(b, "in", {"podSelector": {"matchLabels": {"app": "server"}}, "policyTypes": ["Ingress", "Egress"],
                             "ingress": [{"from": [named(a)], "ports": [{"port": 80}]}]})]}


CLIENT = pod("a", "client", "10.1.0.1", {"app": "client"})
SERVER = pod("b", "server", "10.1.0.2", {"app": "server"})


def loaded(objects: Mapping[str, List[Dict[str, Any]]]) -> ClusterTranslator:
    translator = ClusterTranslator(semantics="kubernetes")
    for kind in ("Namespace", "Pod", "NetworkPolicy"):
        for manifest in objects.get(kind, ()):
            translator.upsert(kind, manifest)
    translator.flush()
    return translator


def test_a_pair_no_pod_realises_is_not_written():
    assert pair_rules(translate(client_server([CLIENT]), semantics="kubernetes").to_dict()) == []
    assert pair_rules(translate(client_server([SERVER]), semantics="kubernetes").to_dict()) == []
    (kept,) = pair_rules(translate(client_server([CLIENT, SERVER]), semantics="kubernetes").to_dict())
    assert "app=client" in kept["endpoint_1"]["tags"] and "app=server" in kept["endpoint_2"]["tags"]


@pytest.mark.parametrize("steps, expected", [
    ([("Pod", SERVER)], 1),  # the server arrives after the policies
    ([("Pod", SERVER), ("delete", SERVER)], 0),
    ([("Pod", SERVER), ("Pod", pod("b", "server", "10.1.0.2", {"app": "cache"}))], 0),  # relabelled away
    ([("Pod", pod("b", "server", "10.1.0.2", {"app": "cache"})), ("Pod", SERVER)], 1),  # relabelled in
    ([("Pod", SERVER), ("Pod", pod("b", "second", "10.1.0.3", {"app": "server"})), ("delete", SERVER)], 1),
])
def test_pods_after_the_policies_bring_their_pairs_in_and_out(steps: List[Tuple[str, Dict[str, Any]]],
                                                               expected: int):
    translator = loaded(client_server([CLIENT]))
    present: Dict[str, Dict[str, Any]] = {"client": CLIENT}
    for kind, manifest in steps:
        name = manifest["metadata"]["name"]
        if kind == "delete":
            translator.delete("Pod", "b", name)
            del present[name]
        else:
            translator.upsert("Pod", manifest)
            present[name] = manifest
        translator.flush()
    found = translator.translation().to_dict()
    assert len(pair_rules(found)) == expected
    final = client_server(list(present.values()))
    assert found == translate(final, semantics="kubernetes").to_dict()
    assert not wrong(Manifests(final), "kubernetes", [("TCP", 80)])


def test_a_pod_event_looks_at_the_ends_of_its_namespace_only(monkeypatch: pytest.MonkeyPatch):
    """Many namespaces' pairs; one pod's arrival evaluates the ends filed under its namespace and
    labels, whatever the size of the cluster."""
    looked: List[str] = []
    holds = realised._Conditions.holds

    def counting(self: Any, candidate: Any, labels: Mapping[str, str]) -> bool:
        looked.append(candidate.namespace)
        return holds(self, candidate, labels)
    monkeypatch.setattr(realised._Conditions, "holds", counting)
    for size in (4, 40):
        objects: Dict[str, List[Dict[str, Any]]] = {"Namespace": [], "Pod": [], "NetworkPolicy": []}
        for i in range(size):
            client = pod(f"a{i}", "client", f"10.1.{i}.1", {"app": "client"})
            for kind, manifests in client_server([client], f"a{i}", f"b{i}").items():
                objects[kind] += manifests
        translator = loaded(objects)
        assert pair_rules(translator.translation().to_dict()) == []
        looked.clear()
        translator.upsert("Pod", pod("b3", "server", "10.2.0.2", {"app": "server"}))
        translator.flush()
        assert set(looked) == {"b3"} and len(looked) <= 2
        assert len(pair_rules(translator.translation().to_dict())) == 1


# --- random pods after random policies --------------------------------------------------------

labels = st.dictionaries(st.sampled_from(["pod", "tier", "Tier_X", "canary"]),
                         st.sampled_from(["a", "b", "c", "web", "db", "1", "2", ""]), max_size=3)
namespace_labels = st.fixed_dictionaries({"ns": st.sampled_from(["x", "y", "z"]),
                                          "team": st.sampled_from(["blue", "", "red"])})
# Policies isolating both ways with egress and ingress rules, so that pairs meet, beside any
# policies at all.
pairing = st.lists(st.tuples(st.sampled_from(NAMESPACES), st.builds(
    lambda selected, ingress, egress: {"podSelector": selected, "policyTypes": ["Ingress", "Egress"],
                                       "ingress": ingress, "egress": egress},
    pod_selectors, st.lists(block("from"), min_size=1, max_size=2), st.lists(block("to"), min_size=1, max_size=2))),
    min_size=2, max_size=4).map(lambda drawn: [policy(ns, f"p{i}", spec) for i, (ns, spec) in enumerate(drawn)])
# ("Pod", key, labels or None (deleted), with an IP?) or ("Namespace", name, labels)
steps = st.lists(st.one_of(
    st.tuples(st.just("Pod"), st.sampled_from(POD_KEYS), st.one_of(st.none(), labels), st.booleans()),
    st.tuples(st.just("Namespace"), st.sampled_from(NAMESPACES), namespace_labels)), min_size=1, max_size=10)


def pod_manifest(key: str, pod_labels: Mapping[str, str], with_ip: bool) -> Dict[str, Any]:
    ns, name = key.split("/")
    return pod(ns, name, pod_ip(ns, name) if with_ip else None, pod_labels, serve_ports())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(pairing, policy_sets), st.sets(st.sampled_from(POD_KEYS)), steps,
       st.sampled_from(["kubernetes", "cluster-wide"]))
def test_pods_changing_after_the_policies_keep_the_pairs_exact(policies, initial, changes, semantics):
    """The policies and some pods are loaded, then pods arrive (some without an IP yet), are
    relabelled or deleted and namespaces relabelled, one flush each; the pods still without an IP
    get theirs last. The live translator ends as a translation from scratch of the final state,
    which decides every flow as Kubernetes does."""
    spaces = {name: dict(found) for name, found in NAMESPACE_LABELS.items()}
    pods: Dict[str, Dict[str, Any]] = {key: pod_manifest(key, {"pod": key[-1]}, True) for key in sorted(initial)}
    translator = ClusterTranslator(semantics=semantics)
    for manifest in [namespace(n, **spaces[n]) for n in NAMESPACES] + list(pods.values()):
        translator.upsert(manifest["kind"], manifest)
    for manifest in policies:
        translator.upsert("NetworkPolicy", manifest)
    translator.flush()
    addressless: Dict[str, Mapping[str, str]] = {}
    for change in changes:
        if change[0] == "Namespace":
            _, name, found = change
            spaces[name] = found
            translator.upsert("Namespace", namespace(name, **found))
        else:
            _, key, pod_labels, with_ip = change
            addressless.pop(key, None)
            if pod_labels is None:
                if pods.pop(key, None) is not None:
                    translator.delete("Pod", *key.split("/"))
            else:
                pods[key] = pod_manifest(key, pod_labels, with_ip)
                translator.upsert("Pod", pods[key])
                if not with_ip:
                    addressless[key] = pod_labels
        translator.flush()
    for key, pod_labels in addressless.items():
        pods[key] = pod_manifest(key, pod_labels, True)
        translator.upsert("Pod", pods[key])
    translator.flush()
    final = Manifests({"Namespace": [namespace(n, **spaces[n]) for n in NAMESPACES],
                       "Pod": [pods[key] for key in sorted(pods)], "NetworkPolicy": policies})
    assert translator.translation().to_dict() == translate(final.objects, semantics=semantics).to_dict()
    if pods:
        found = wrong(final, semantics, PROBES)
        assert not found, [str(cell) for cell in found[:5]]

