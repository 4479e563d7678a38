"""SPEC 7 and 11 as properties: arbitrary JSON at any field of a namespace, pod or NetworkPolicy
never raises in the translator (bulk or incremental) nor in `explain`, and the valid objects beside
it still translate to what they would be without it (tests/support/poison_support.py says exactly how)."""
from __future__ import annotations

import pytest
from hypothesis import given

from kube_manager.offline.manifests import Manifests
from kube_manager.translator import ClusterTranslator, translate
from kube_manager.explain.explainer import Explainer
from kube_manager.translator import render as render_module
from hypothesis import strategies as st

from kube_manager.translator.cnp.parse import cnp_key
from tests.support.translator_reads import policy_objects
from tests.support.poison_support import (CLEAN, JSON_VALUES, POISONS, VALID_KEYS, VALID_NAMESPACES, VALID_PODS, VALID_POLICIES,
                            assert_others_converge, cluster_with, fuzz, identify, paths, poison_at)
from tests.support.builders import pod, policy
from tests.support.cnp_support import cnp

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop



@fuzz(400)
@given(POISONS)
def test_no_value_anywhere_raises_and_the_valid_objects_translate_as_without_it(poison):
    kind, manifest = poison
    result = translate(cluster_with(kind, manifest)).to_dict()
    assert_others_converge(kind, manifest, result, CLEAN)


def _upsert(translator: ClusterTranslator, kind: str, manifest) -> None:
    translator.upsert(kind, manifest)


def _delete(translator: ClusterTranslator, kind: str, manifest) -> None:
    translator.delete(*identify(kind, manifest))


@fuzz(250)
@given(POISONS)
def test_incremental_upsert_and_delete_of_a_poisoned_object_never_raise_and_leave_no_trace(poison):
    kind, manifest = poison
    translator = ClusterTranslator()
    for kind_, group in (("Namespace", VALID_NAMESPACES), ("Pod", VALID_PODS), ("NetworkPolicy", VALID_POLICIES)):
        for valid in group:
            _upsert(translator, kind_, valid)
    translator.flush()
    _upsert(translator, kind, manifest)  # as a watch event after the valid ones
    translator.flush()
    assert translator.translation().to_dict() == translate(cluster_with(kind, manifest)).to_dict()
    _delete(translator, kind, manifest)
    translator.flush()
    if identify(kind, manifest) not in VALID_KEYS:  # else it replaced (then removed) a valid object
        assert translator.translation().to_dict() == CLEAN


def test_policy_types_holding_a_list_rejects_that_policy_whole_and_nothing_else():
    bad = policy("n", "bad", {"podSelector": {}, "policyTypes": [["Ingress"]]})
    result = translate({"NetworkPolicy": [bad, policy("n", "ok", {"podSelector": {}})]}).to_dict()
    assert [e["reason"] for e in result["errors"]] == [
        "spec.policyTypes[0]: expected a string, got list; the policy is rejected whole"]
    assert [p["fq_name"][-1] for p in result["firewall_policies"]] == ["k8s--isolation", "k8s--isolation-deny", "k8s-allowall", "k8s-denyall", "k8s-n-ok"]


@pytest.mark.parametrize("field, value, reason", [
    (("metadata", "namespace"), ["a"], "metadata.namespace: expected a string, got list"),
    (("metadata", "name"), 7, "metadata.name: expected a string, got int"),
    (("metadata", "labels"), ["app=web"], "metadata.labels: expected an object, got list"),
    (("spec", "hostNetwork"), "true", "spec.hostNetwork: expected a boolean, got str"),
    (("status", "podIP"), 10, "status.podIP: expected a string, got int"),
    (("spec", "containers"), {"name": "c"}, "spec.containers: expected a list, got dict"),
])
def test_a_pod_whose_identity_labels_or_ip_are_mistyped_is_rejected_with_the_field_named(field, value, reason):
    bad = pod("n", "bad", "10.0.0.9", {"app": "x"})
    bad.setdefault(field[0], {})[field[1]] = value
    result = translate({"Pod": [bad, pod("n", "ok", "10.0.0.1")]}).to_dict()
    assert [w["name"] for w in result["workloads"]] == ["ok"]
    assert [e["reason"] for e in result["errors"]] == [reason]


def test_a_mistyped_named_port_entry_names_no_port_and_keeps_the_pod():
    web = pod("n", "web", "10.0.0.1", {"app": "web"}, [("http", 80, "TCP")])
    web["spec"]["containers"].append({"name": "d", "ports": [{"name": ["http"], "containerPort": "81"}, 5]})
    named = policy("n", "np", {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [{"ports": [{"port": "http"}]}]})
    result = translate({"Pod": [web], "NetworkPolicy": [named]}).to_dict()
    assert [w["name"] for w in result["workloads"]] == ["web"] and result["errors"] == []
    rule = next(r for r in result["firewall_rules"] if r["fq_name"][-1].startswith("k8s-n-ingress-np-0"))
    assert rule["service"]["dst_ports"] == {"start_port": 80, "end_port": 80}


def test_an_unexpected_error_rendering_one_policy_rejects_only_that_policy(monkeypatch, caplog):
    original = render_module.PolicyRenderer.render

    def failing(self, parsed, index, label):
        if parsed.name == "boom":
            raise KeyError("a translator bug")
        return original(self, parsed, index, label)
    monkeypatch.setattr(render_module.PolicyRenderer, "render", failing)
    translator = ClusterTranslator()
    translator.upsert("NetworkPolicy", policy("n", "boom", {"podSelector": {}}))
    translator.upsert("NetworkPolicy", policy("n", "ok", {"podSelector": {}}))
    translator.flush()
    result = translator.translation().to_dict()
    assert [p["fq_name"][-1] for p in result["firewall_policies"]] == ["k8s--isolation", "k8s--isolation-deny", "k8s-allowall", "k8s-denyall", "k8s-n-ok"]
    assert result["errors"] == [{"kind": "NetworkPolicy", "namespace": "n", "name": "boom",
                                 "reason": "internal error: KeyError: 'a translator bug'"}]
    assert policy_objects(translator, "n", "boom") is None
    records = [r for r in caplog.records if getattr(r, "kv_fields", {}).get("name") == "boom"]
    assert len(records) == 1 and records[0].exc_info is not None
    assert records[0].kv_fields["kind"] == "NetworkPolicy" and records[0].kv_fields["namespace"] == "n"
    monkeypatch.setattr(render_module.PolicyRenderer, "render", original)
    translator.upsert("NetworkPolicy", policy("n", "boom", {"podSelector": {"matchLabels": {"fixed": "yes"}}}))
    translator.flush()
    assert translator.errors() == [] and policy_objects(translator, "n", "boom") is not None


def test_an_unexpected_error_reading_one_pod_rejects_only_that_pod(monkeypatch):
    from kube_manager.translator import pods

    original = pods.parse_pod

    def failing(manifest, cache=None):
        if manifest["metadata"]["name"] == "boom":
            raise RuntimeError("a translator bug")
        return original(manifest, cache)
    monkeypatch.setattr(pods, "parse_pod", failing)
    result = translate({"Pod": [pod("n", "boom", "10.0.0.1"), pod("n", "ok", "10.0.0.2")]}).to_dict()
    assert [w["name"] for w in result["workloads"]] == ["ok"]
    assert result["errors"] == [{"kind": "Pod", "namespace": "n", "name": "boom",
                                 "reason": "internal error: RuntimeError: a translator bug"}]


def test_a_rejection_is_logged_once_until_its_reason_changes(caplog):
    translator = ClusterTranslator()
    bad = policy("n", "bad", {"podSelector": {}, "policyTypes": [["Ingress"]]})
    for _ in range(3):
        translator.upsert("NetworkPolicy", bad)
        translator.flush()
    translator.upsert("NetworkPolicy", policy("n", "bad", {"podSelector": {}, "policyTypes": ["ingress"]}))
    translator.flush()
    lines = [r for r in caplog.records if getattr(r, "kv_fields", {}).get("name") == "bad"]
    assert [r.kv_fields["reason"].split(":")[0] for r in lines] == ["spec.policyTypes[0]", "spec.policyTypes[0]"]
    assert "expected a string" in lines[0].kv_fields["reason"] and "not Ingress or Egress" in lines[1].kv_fields["reason"]


FLOWS = [("b/client", "a/web", 80, "TCP"), ("a/web", "a/db", 5432, "TCP"), ("a/db", "10.2.0.1", 443, "TCP")]


def _verdicts(objects):
    translation = translate(objects)
    manifests = Manifests({kind: list(items) for kind, items in objects.items()})
    explainer = Explainer(translation.to_dict(), manifests, "k8s", translation.selectors)
    return [(r["allowed"], r["kubernetes_allowed"], r["rule"]) for r in
            (explainer.explain(*flow) for flow in FLOWS)]


CLEAN_VERDICTS = _verdicts({"Namespace": VALID_NAMESPACES, "Pod": VALID_PODS, "NetworkPolicy": VALID_POLICIES})


@fuzz(150)
@given(POISONS)
def test_explain_never_raises_and_flows_between_valid_pods_keep_their_verdict(poison):
    kind, manifest = poison
    key = identify(kind, manifest)
    verdicts = _verdicts(cluster_with(kind, manifest))  # raises nothing, whatever the poison
    if key not in VALID_KEYS and (key[1] == "zz" or (kind == "Namespace" and key[2] not in ("a", "b"))):
        assert verdicts == CLEAN_VERDICTS


# --- ClusterNetworkPolicy (SPEC 11 and 13) ---------------------------------------------------------

CNP_TEMPLATE = cnp("zz", "Admin", 5, {"pods": {"namespaceSelector": {"matchLabels": {"team": "x"}},
                                               "podSelector": {"matchExpressions": [{"key": "app", "operator": "In",
                                                                                     "values": ["web", "db"]}]}}},
                   ingress=[{"name": "a", "action": "Accept", "from": [{"namespaces": {"matchLabels": {"team": "y"}}}],
                             "protocols": [{"tcp": {"destinationPort": {"number": 80}}},
                                           {"destinationNamedPort": "http"}]},
                            {"action": "Deny", "from": [{"pods": {"namespaceSelector": {}, "podSelector": {}}}]}],
                   egress=[{"action": "Pass", "to": [{"networks": ["10.0.0.0/8"]}],
                            "protocols": [{"udp": {"destinationPort": {"range": {"start": 53, "end": 60}}}}]},
                           {"action": "Deny", "to": [{"networks": ["0.0.0.0/0"]}]}])
CNP_POISONS = st.sampled_from(paths(CNP_TEMPLATE) + [("spec", "egress", 0, "from"), ("spec", "subject", "nodes")]).flatmap(
    lambda path: JSON_VALUES.map(lambda value: poison_at(CNP_TEMPLATE, path, value)))


def _valid_network_policy_objects(result):
    return {o["fq_name"][-1]: o for key in ("firewall_rules", "firewall_policies") for o in result[key]
            if not o["fq_name"][-1].startswith("k8s--")}


@fuzz(400)
@given(CNP_POISONS)
def test_no_value_in_a_cluster_network_policy_raises_or_touches_the_network_policies(manifest):
    result = translate({"Namespace": VALID_NAMESPACES,
                        "Pod": VALID_PODS,
                        "NetworkPolicy": VALID_POLICIES,
                        "ClusterNetworkPolicy": [manifest]}).to_dict()
    assert _valid_network_policy_objects(result) == _valid_network_policy_objects(CLEAN)
    assert [e for e in result["errors"] if e["kind"] != "ClusterNetworkPolicy"] == CLEAN["errors"]
    cnp_errors = [e for e in result["errors"] if e["kind"] == "ClusterNetworkPolicy"]
    emitted = [r for r in result["application_policy_set"]["firewall_policy_refs"] if r["to"][-1].startswith("k8s--")]
    assert cnp_errors or emitted, "a policy that emits nothing says why"


@fuzz(200)
@given(CNP_POISONS)
def test_setting_and_removing_a_poisoned_cluster_network_policy_never_raises_and_leaves_no_trace(manifest):
    translator = ClusterTranslator()
    for kind, group in (("Namespace", VALID_NAMESPACES), ("Pod", VALID_PODS), ("NetworkPolicy", VALID_POLICIES)):
        for valid in group:
            translator.upsert(kind, valid)
    translator.flush()
    translator.upsert("ClusterNetworkPolicy", manifest)
    translator.flush()
    expected = translate({"Namespace": VALID_NAMESPACES,
                          "Pod": VALID_PODS,
                          "NetworkPolicy": VALID_POLICIES,
                          "ClusterNetworkPolicy": [manifest]})
    assert translator.translation().to_dict() == expected.to_dict()
    translator.delete("ClusterNetworkPolicy", "", cnp_key(manifest))
    translator.flush()
    assert translator.translation().to_dict() == CLEAN
