"""SPEC 14's pair rules are bounded by what the cluster's namespaces are: a pair whose end meets a
namespace with a namespace label it does not carry is not written, and namespace changes bring such
pairs in and out as they happen. Every verdict is checked against the independent Kubernetes model
(`kube_manager/explain/k8s_semantics.py`, through `semantics_support.wrong`)."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube_manager.offline.manifests import Manifests
from kube_manager.translator import ClusterTranslator, translate
from tests.explain.test_explain_random import NAMESPACE_LABELS, POD_LABELS, cluster, policy_sets
from tests.support.builders import namespace, pod, policy
from tests.support.semantics_support import wrong

PROBES = [("TCP", 80), ("UDP", 81)]
TEAM_PEER = {"namespaceSelector": {"matchLabels": {"team": "red"}}}


def pair_rules(translation: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [rule for rule in translation["firewall_rules"] if "--pair-" in rule["fq_name"][1]]


def red_cluster(client_team: str) -> Manifests:
    """`client` (namespace a, team `client_team`) may send to red namespaces; `server` (namespace b,
    team red) admits red namespaces. Both isolated both ways, so only a pair rule opens a -> b."""
    return Manifests({
        "Namespace": [namespace("a", team=client_team), namespace("b", team="red")],
        "Pod": [pod("a", "client", "10.1.0.1", {"app": "client"}), pod("b", "server", "10.1.0.2", {"app": "server"})],
        "NetworkPolicy": [
            policy("a", "out", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                                "egress": [{"to": [TEAM_PEER], "ports": [{"port": 80}]}]}),
            policy("b", "in", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                               "ingress": [{"from": [TEAM_PEER], "ports": [{"port": 80}]}]})]})


def test_a_pair_meeting_a_namespace_with_a_label_it_lacks_is_not_written():
    blue = translate(red_cluster("blue").objects, semantics="kubernetes").to_dict()
    red = translate(red_cluster("red").objects, semantics="kubernetes").to_dict()
    assert pair_rules(blue) == []  # `namespace=a & namespace.team=red`: a is blue
    (kept,) = pair_rules(red)
    assert "namespace=a" in kept["endpoint_1"]["tags"] and "namespace.team=red" in kept["endpoint_1"]["tags"]
    for team in ("blue", "red"):
        assert not wrong(red_cluster(team), "kubernetes", [("TCP", 80)])


def test_relabelling_a_namespace_brings_its_pairs_in_and_out():
    translator = ClusterTranslator(semantics="kubernetes")
    for kind, manifests in red_cluster("blue").objects.items():
        for manifest in manifests:
            translator.upsert(kind, manifest)
    translator.flush()
    assert pair_rules(translator.translation().to_dict()) == []
    for team, expected in (("red", 1), ("blue", 0), ("red", 1)):
        translator.upsert("Namespace", namespace("a", team=team))
        translator.flush()
        found = translator.translation().to_dict()
        assert len(pair_rules(found)) == expected
        assert found == translate(red_cluster(team).objects, semantics="kubernetes").to_dict()


def test_a_namespace_appearing_after_its_pods_brings_its_pairs():
    """Without its manifest, namespace a has only its name label (implicit); the manifest adds red."""
    translator = ClusterTranslator(semantics="kubernetes")
    objects = red_cluster("red").objects
    for kind, manifests in objects.items():
        for manifest in manifests:
            if manifest["metadata"]["name"] != "a" or kind != "Namespace":
                translator.upsert(kind, manifest)
    translator.flush()
    assert pair_rules(translator.translation().to_dict()) == []
    translator.upsert("Namespace", namespace("a", team="red"))
    translator.flush()
    assert translator.translation().to_dict() == translate(objects, semantics="kubernetes").to_dict()


namespace_labels = st.fixed_dictionaries({
    "ns": st.sampled_from(["x", "y", "z"]), "team": st.sampled_from(["blue", "", "red"])})
churn = st.lists(st.one_of(
    st.tuples(st.just("Namespace"), st.sampled_from(["x", "y", "z"]), namespace_labels),
    st.tuples(st.just("Pod"), st.sampled_from(sorted(POD_LABELS)), st.booleans())), min_size=1, max_size=8)


def churned(policies: List[Dict[str, Any]], steps: List[Tuple[str, str, Any]]) -> Manifests:
    """The random cluster after `steps`: namespaces relabelled, pods gone (False) or back (True)."""
    labels = {name: dict(found) for name, found in NAMESPACE_LABELS.items()}
    present = dict.fromkeys(POD_LABELS, True)
    for kind, name, change in steps:
        if kind == "Namespace":
            labels[name] = change
        else:
            present[name] = change
    base = cluster(policies)
    return Manifests({"Namespace": [namespace(n, **labels[n]) for n in ("x", "y", "z")],
                      "Pod": [p for p in base.objects["Pod"]
                              if present[f"{p['metadata']['namespace']}/{p['metadata']['name']}"]],
                      "NetworkPolicy": base.objects["NetworkPolicy"]})


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy_sets, churn, st.sampled_from(["kubernetes", "cluster-wide"]))
def test_namespace_and_pod_churn_keeps_the_pairs_exact_and_incremental(policies, steps, semantics):
    """Each step is applied to a live translator and flushed; it ends as a batch translation of the
    final state, which decides every flow as Kubernetes does. A pod that comes back comes back as
    the cluster had it (the same manifest, named ports included): the final state says so."""
    base = cluster(policies).objects
    pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in base["Pod"]}
    translator = ClusterTranslator(semantics=semantics)
    for kind, manifests in base.items():
        for manifest in manifests:
            translator.upsert(kind, manifest)
    translator.flush()
    for kind, name, change in steps:
        if kind == "Namespace":
            translator.upsert("Namespace", namespace(name, **change))
        elif change:
            translator.upsert("Pod", pods[name])
        else:
            translator.delete("Pod", *name.split("/"))
        translator.flush()
    final = churned(policies, steps)
    assert translator.translation().to_dict() == translate(final.objects, semantics=semantics).to_dict()
    if final.objects["Pod"]:
        found = wrong(final, semantics, PROBES)
        assert not found, [str(c) for c in found[:5]]
