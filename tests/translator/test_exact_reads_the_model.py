"""The `kubernetes` mode builds its items from the translator's model, never from the rules the
`cluster-wide` renderer writes: a renderer writing its NetworkPolicy rules in another form leaves
every object of the exact mode as it was (pair rules, the isolation and tier blocks, the address
groups and selector tags they add), and the verdicts still match the independent Kubernetes model."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List

import pytest

from kube_manager.offline.manifests import Manifests
from kube_manager.translator import ClusterTranslator, translate
from kube_manager.translator.render import PolicyRenderer
from tests.support.builders import cluster_policy, cnp_rule, namespace, pod, policy
from tests.support.semantics_support import wrong

TEAM = {"namespaceSelector": {"matchLabels": {"team": "x"}}}
# Named ports that resolve uniformly and not, an ipBlock (its group shared with the pair rules), a
# selector that is not a plain conjunction of labels, a Baseline tier (the `baseline-np` block).
CLUSTER = Manifests({
    "Namespace": [namespace("a", team="x"), namespace("b", team="x")],
    "Pod": [pod("a", "web-1", "10.0.0.1", {"app": "web"}, [("http", 8080, "TCP")]),
            pod("a", "web-2", "10.0.0.2", {"app": "web"}, [("http", 8081, "TCP")]),
            pod("b", "api", "10.0.1.1", {"app": "api"}, [("http", 9090, "TCP")]),
            pod("b", "db", "10.0.1.2", {"app": "db"}, [("pg", 5432, "TCP")])],
    "NetworkPolicy": [
        policy("a", "web-in", {"podSelector": {"matchLabels": {"app": "web"}},
                               "ingress": [{"from": [TEAM, {"ipBlock": {"cidr": "10.0.0.0/8"}}],
                                            "ports": [{"port": "http"}, {"port": 443}]}]}),
        policy("a", "web-out", {"podSelector": {}, "policyTypes": ["Egress"],
                                "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "api"}}, **TEAM}],
                                            "ports": [{"port": "http"}]}]}),
        policy("b", "all", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                            "ingress": [{"from": [{"podSelector": {"matchExpressions": [
                                {"key": "app", "operator": "In", "values": ["web", "api"]}]}}, TEAM]}],
                            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}], "ports": [{"port": "http"}]},
                                       {"ports": [{"port": "pg"}]}]})],
    "ClusterNetworkPolicy": [cluster_policy("deny-x", "Baseline", 50, ingress=[cnp_rule("Deny", {"namespaces": {}})])],
})
PROBES = [("TCP", 8080), ("TCP", 8081), ("TCP", 9090), ("TCP", 443), ("TCP", 5432), ("UDP", 53)]


def _exact_objects(translation: Dict[str, Any]) -> Dict[str, List[Any]]:
    """The rules and policies named `<cluster>--...` (the exact mode's, never a NetworkPolicy's
    `<cluster>-<namespace>-...`), and every tag, address group and pod's tags."""
    found = {kind: translation[kind] for kind in ("tags", "address_groups", "workloads")}
    found.update((kind, [o for o in translation[kind] if "--" in o["fq_name"][-1]])
                 for kind in ("firewall_rules", "firewall_policies"))
    return found


def _reshaped_rule(body: Dict[str, Any]) -> Dict[str, Any]:
    """A rule written in another form: endpoints and service under other keys."""
    return {**body, "endpoint_1": {"other": body["endpoint_1"]}, "endpoint_2": {"other": body["endpoint_2"]},
            "service": {"other": body["service"]}}


def test_a_renderer_writing_other_bodies_changes_nothing_the_exact_mode_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    before = translate(CLUSTER.objects, semantics="kubernetes").to_dict()
    assert any("--pair-" in rule["fq_name"][-1] for rule in before["firewall_rules"])
    assert any("--baseline-np-" in rule["fq_name"][-1] for rule in before["firewall_rules"])
    render = PolicyRenderer.render

    def reshaped(self: PolicyRenderer, *args: Any) -> Any:
        rendering = render(self, *args)
        return dataclasses.replace(rendering, rule_bodies=tuple(_reshaped_rule(b) for b in rendering.rule_bodies))

    monkeypatch.setattr(PolicyRenderer, "render", reshaped)
    after = translate(CLUSTER.objects, semantics="kubernetes").to_dict()
    assert after["firewall_rules"] != before["firewall_rules"]  # the NetworkPolicies' rules did change
    assert _exact_objects(after) == _exact_objects(before)


def test_the_cluster_is_decided_as_kubernetes_decides() -> None:
    assert not wrong(CLUSTER, "kubernetes", PROBES)


@pytest.mark.parametrize("semantics", ["kubernetes", "cluster-wide"])
def test_pods_renumbering_a_named_port_move_the_exact_objects_as_a_fresh_translation(semantics: str) -> None:
    """The exact mode resolves named ports on the pods as they are when the NetworkPolicy source
    applies the policy again: each step ends where a translation of that state from scratch does."""
    translator = ClusterTranslator(semantics=semantics)
    for kind in ("Namespace", "Pod", "NetworkPolicy", "ClusterNetworkPolicy"):
        for manifest in CLUSTER.objects[kind]:
            translator.upsert(kind, manifest)
    translator.flush()
    pods = list(CLUSTER.objects["Pod"])
    steps = [pod("a", "web-2", "10.0.0.2", {"app": "web"}, [("http", 8080, "TCP")]),  # http now one number
             pod("b", "api", "10.0.1.1", {"app": "api"}, [("http", 8080, "TCP")]),
             pod("b", "db", "10.0.1.2", {"app": "db"}),  # pg resolves nowhere
             pod("b", "db", "10.0.1.2", {"app": "db"}, [("pg", 5433, "TCP")])]
    for step in steps:
        translator.upsert("Pod", step)
        translator.flush()
        pods = [step if p["metadata"]["name"] == step["metadata"]["name"] else p for p in pods]
        fresh = translate(dict(CLUSTER.objects, Pod=pods), semantics=semantics)
        assert translator.translation().to_dict() == fresh.to_dict()
