"""SPEC 13 and 14's mapping of ClusterNetworkPolicies: the blocks and their sequences in the APS, the
names, differences of services made by order (never a numeric protocol), fail-closed handling of
what cannot be enforced or is invalid, and the upstream conformance policy on the official schema."""
from __future__ import annotations

import copy
import os
import subprocess
import sys

import pytest

from tests.support.cnp_support import cluster, cnp
from kube_manager.offline.manifests import load_manifests
from kube_manager.translator import ClusterTranslator, translate
from kube_manager.explain.flow import ContrailEvaluator, NumericProtocol
from tests.support.schema_oracle import assert_translation_valid, policies_by_name, rules
from tests.support.paths import REPO

ROOT = str(REPO)
HOUSE_A = {"namespaces": {"matchLabels": {"house": "a"}}}
FROM_B = [{"namespaces": {"matchLabels": {"house": "b"}}}]
EVERYONE = [{"namespaces": {}}]


def _run(*policies, network_policies=(), semantics="cluster-wide"):
    namespaces, pods = cluster()
    result = translate({"Namespace": namespaces,
                        "Pod": pods,
                        "NetworkPolicy": list(network_policies),
                        "ClusterNetworkPolicy": list(policies)}, semantics=semantics).to_dict()
    assert_translation_valid(result)
    return result


def _aps(result):
    return [(ref["attr"]["sequence"], ref["to"][-1]) for ref in result["application_policy_set"]["firewall_policy_refs"]]


NP = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": "ns-a"},
      "spec": {"podSelector": {}}}


def _allowed(result, src, dst, protocol, port):
    evaluator = ContrailEvaluator(result)
    return evaluator.evaluate(evaluator.workload(*src), evaluator.workload(*dst), port, protocol).allowed


@pytest.mark.parametrize("semantics, isolation", [("cluster-wide", []), ("kubernetes", [("0.5", "k8s--isolation"), ("0.6", "k8s--isolation-deny")])])
def test_the_blocks_take_their_places_in_the_aps_around_the_network_policy_tier(semantics, isolation):
    result = _run(cnp("guard", "Admin", 7, HOUSE_A, ingress=[{"action": "Deny", "from": FROM_B}]),
                  cnp("floor", "Baseline", 1000, HOUSE_A, ingress=[{"action": "Accept", "from": EVERYONE}]),
                  network_policies=[NP], semantics=semantics)
    assert [(s, n) for s, n in _aps(result) if not n.startswith("k8s-ns-a")] == [
        ("0.1", "k8s--admin"), *isolation, ("0.7", "k8s--baseline-np"), ("2.0", "k8s-denyall"),
        ("2.1", "k8s--baseline"), ("3.0", "k8s-allowall")]
    assert all(name.startswith("k8s--admin-") or name.startswith("k8s--baseline-")
               for name in rules(result) if name.startswith("k8s--") and "isolat" not in name)
    assert set(policies_by_name(result)) >= {"k8s--admin", "k8s--baseline-np", "k8s--baseline"}


def test_no_tier_objects_without_cluster_network_policies():
    for directory in ("demo", "wiki"):
        manifests = load_manifests([os.path.join(ROOT, "examples", directory)])
        assert not manifests.objects["ClusterNetworkPolicy"]
        result = translate(manifests.objects, semantics="cluster-wide").to_dict()
        assert not [name for _, name in _aps(result) if "--" in name]


@pytest.mark.parametrize("semantics", ["cluster-wide", "kubernetes"])
def test_egress_tcp_an_accept_before_a_deny_keeps_its_port_open(semantics):
    """Upstream's `egress-tcp` (Admin, priority 6): Accept to the peer's TCP 8080, then Deny to it
    everything. The difference is made by order: no numeric protocol, no rule per protocol."""
    house_b = [{"namespaces": {"matchLabels": {"house": "b"}}}]
    result = _run(cnp("egress-tcp", "Admin", 6, HOUSE_A, egress=[
        {"action": "Accept", "to": house_b, "protocols": [{"tcp": {"destinationPort": {"number": 8080}}}]},
        {"action": "Deny", "to": house_b}]), semantics=semantics)
    assert _allowed(result, ("ns-a", "web"), ("ns-b", "web"), "tcp", 8080)
    for protocol, port in (("tcp", 80), ("udp", 8080), ("sctp", 8080)):
        assert not _allowed(result, ("ns-a", "web"), ("ns-b", "web"), protocol, port)
    assert _allowed(result, ("ns-a", "web"), ("ns-c", "web"), "udp", 53)
    assert {r["service"]["protocol"] for r in result["firewall_rules"]} <= {"any", "tcp"}
    assert len(rules(result)) <= 6


def test_a_deny_after_a_pass_leaves_the_passed_traffic_to_the_network_policies():
    allow_from_b = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                    "metadata": {"name": "from-b", "namespace": "ns-a"},
                    "spec": {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"house": "b"}}}]}]}}
    result = _run(cnp("p", "Admin", 1, HOUSE_A, ingress=[{"action": "Pass", "from": FROM_B},
                                                        {"action": "Deny", "from": EVERYONE}]),
                  network_policies=[allow_from_b], semantics="kubernetes")
    assert _allowed(result, ("ns-b", "web"), ("ns-a", "web"), "tcp", 80)
    assert not _allowed(result, ("ns-c", "web"), ("ns-a", "web"), "tcp", 80)


def test_examples_translate_into_few_rules_on_named_protocols_only():
    manifests = load_manifests([os.path.join(ROOT, "examples", "cnp")])
    for semantics in ("cluster-wide", "kubernetes"):
        result = translate(manifests.objects, semantics=semantics).to_dict()
        assert {r["service"]["protocol"] for r in result["firewall_rules"]} <= {"any", "tcp", "udp", "sctp"}
        assert len(result["firewall_rules"]) < 150  # 803 when a Deny minus an Accept listed every protocol


def test_the_evaluation_refuses_a_numeric_protocol():
    result = _run(cnp("p", "Admin", 1, HOUSE_A, ingress=[{"action": "Deny", "from": FROM_B}]))
    (rule,) = [r for n, r in rules(result).items() if n.startswith("k8s--admin-")]
    rule["service"] = dict(rule["service"], protocol="0")  # Contrail would read it as any
    with pytest.raises(NumericProtocol):
        ContrailEvaluator(result)


def test_cnp_names_cannot_meet_network_policy_names():
    # A NetworkPolicy "admin" in namespace "k8s-" is impossible (namespaces end alphanumeric); one
    # named "admin" in namespace "k8s" gives k8s-k8s-admin, and a namespace never starts with "-".
    result = _run(cnp("x", "Admin", 1, HOUSE_A, ingress=[{"action": "Deny", "from": FROM_B}]),
                  network_policies=[{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                     "metadata": {"name": "admin", "namespace": "k8s"}, "spec": {"podSelector": {}}}])
    names = [name for _, name in _aps(result)]
    assert "k8s-k8s-admin" in names and "k8s--admin" in names


@pytest.mark.parametrize("peer", [{"nodes": {}}, {"domainNames": ["example.com"]}, {}, {"networks": ["10.0.0.0/33"]},
                                  {"namespaces": {}, "networks": ["10.0.0.0/8"]}, {"bogus": {}}])
def test_an_unenforceable_or_invalid_peer_fails_closed(peer):
    accept = _run(cnp("p", "Admin", 1, HOUSE_A, egress=[{"action": "Accept", "to": [peer]}]))
    assert not [n for n in rules(accept) if n.startswith("k8s--admin-")], "an Accept matches nothing"
    assert "fails closed" in accept["errors"][0]["reason"] and accept["errors"][0]["kind"] == "ClusterNetworkPolicy"
    for action in ("Deny", "Pass"):
        denied = _run(cnp("p", "Admin", 1, HOUSE_A, egress=[{"action": action, "to": [peer]}]))
        (rule,) = [r for n, r in rules(denied).items() if n.startswith("k8s--admin-")]
        assert rule["action_list"]["simple_action"] == "deny"
        assert rule["endpoint_2"] == {"any": True} and rule["service"]["protocol"] == "any"
        assert "application=k8s" in rule["endpoint_1"]["tags"]  # still only the subject's traffic


@pytest.mark.parametrize("spec_change, reason", [
    ({"tier": "Middle"}, "spec.tier"), ({"priority": 1001}, "spec.priority"), ({"priority": "1"}, "spec.priority"),
    ({"subject": {}}, "spec.subject"), ({"subject": {"namespaces": {}, "pods": {"podSelector": {}}}}, "spec.subject")])
def test_a_policy_without_a_readable_tier_priority_or_subject_is_rejected_whole(spec_change, reason):
    manifest = cnp("p", "Admin", 1, HOUSE_A, ingress=[{"action": "Deny", "from": FROM_B}])
    manifest["spec"].update(spec_change)
    result = _run(manifest)
    assert not [n for _, n in _aps(result) if "--" in n]
    (error,) = result["errors"]
    assert error["name"] == "p" and reason in error["reason"] and "rejected whole" in error["reason"]


def test_a_misspelt_spec_field_names_what_was_likely_meant():
    manifest = cnp("p", "Admin", 1, HOUSE_A, ingress=[{"action": "Deny", "from": FROM_B}])
    manifest["spec"]["egres"] = manifest["spec"]["ingress"]
    (error,) = _run(manifest)["errors"]
    assert error["reason"] == "spec: unknown field 'egres' (did you mean 'egress'?); ignored"


def test_status_names_what_each_policy_emitted():
    translator = ClusterTranslator()
    namespaces, pods = cluster()
    for manifest in namespaces:
        translator.upsert("Namespace", manifest)
    for manifest in pods:
        translator.upsert("Pod", manifest)
    translator.upsert("ClusterNetworkPolicy", cnp("p", "Admin", 1, HOUSE_A, ingress=[
        {"action": "Accept", "from": FROM_B, "protocols": [{"destinationNamedPort": "nope"}]},
        {"action": "Deny", "from": FROM_B}]))
    translator.flush()
    status = translator.status_of("ClusterNetworkPolicy", "", "p")
    assert status is not None and status.firewall_policy == ("default-policy-management", "k8s--admin")
    (deny,) = status.deny_rules
    assert status.rules == () and deny[-1].startswith("k8s--admin-")
    assert "named port 'nope' resolves on no destination pod" in status.errors[0]
    assert translator.status_of("ClusterNetworkPolicy", "", "unknown") is None
    translator.upsert("ClusterNetworkPolicy", {"kind": "ClusterNetworkPolicy", "metadata": {"name": "Bad_Name"}})
    translator.flush()
    assert [e["name"] for e in translator.errors()] == ["Bad_Name", "p"]


def test_translate_command_reads_cluster_network_policies_and_the_upstream_combined_case():
    out = subprocess.run([sys.executable, "-m", "kube_manager", "translate", "-f", os.path.join(ROOT, "examples", "cnp"),
                          "-o", "json"], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert '"k8s--admin"' in out and '"k8s--baseline"' in out
    manifests = load_manifests([os.path.join(ROOT, "examples", "cnp")])
    result = translate(manifests.objects).to_dict()
    assert_translation_valid(result)
    assert result["errors"] == []


@pytest.mark.parametrize("semantics", ["cluster-wide", "kubernetes"])
def test_the_embedded_config_api_takes_every_object_of_the_example_in_write_order(semantics):
    from simulators.vnc_api.api import ConfigApi

    manifests = load_manifests([os.path.join(ROOT, "examples", "cnp")])
    result = translate(manifests.objects, semantics=semantics).to_dict()
    api = ConfigApi()
    for key, obj_type in (("tags", "tag"), ("address_groups", "address-group"), ("firewall_rules", "firewall-rule"),
                          ("firewall_policies", "firewall-policy")):
        for body in result[key]:
            api.create(obj_type, copy.deepcopy(body))
    api.create("application-policy-set", copy.deepcopy(result["application_policy_set"]))
    # every object is held, under its name, and each reference resolved to an object held
    for key, obj_type in (("tags", "tag"), ("address_groups", "address-group"), ("firewall_rules", "firewall-rule"),
                          ("firewall_policies", "firewall-policy")):
        assert [o["fq_name"] for o in api.dump(obj_type)] == sorted(b["fq_name"] for b in result[key])
    (aps,) = [o for o in api.dump("application-policy-set")
              if o["fq_name"] == result["application_policy_set"]["fq_name"]]
    policies = {o["uuid"]: o for o in api.dump("firewall-policy")}
    assert sorted(policies[ref["uuid"]]["fq_name"] for ref in aps["firewall_policy_refs"]) == \
        sorted(ref["to"] for ref in result["application_policy_set"]["firewall_policy_refs"])
    rules = {o["uuid"] for o in api.dump("firewall-rule")}
    assert all(ref["uuid"] in rules for p in policies.values() for ref in p.get("firewall_rule_refs", []))
