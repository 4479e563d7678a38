"""The reference verdict's tiers (ClusterNetworkPolicy, SPEC 13), rule by rule.

Each test states the API rule it pins (upstream: kubernetes-sigs/network-policy-api,
apis/v1alpha2/clusternetworkpolicy_types.go), on the x/y/z cluster of the NetworkPolicy tests.
"""
from __future__ import annotations

import ipaddress
from typing import Any, Dict, Optional, Sequence

import pytest

from tests.support.builders import NAME_LABEL, cluster_policy, cnp_port, cnp_rule, namespace_named, pod, policy
from tests.conformance.cluster import OUTSIDE_IP, pod_ip, xyz_cluster
from kube_manager.explain.k8s_semantics import (DEFAULT_TIER, NETWORK_POLICY_TIER, Endpoint,
                                                KubernetesModel, Verdict)


def cnp(name: str, tier: str = "Admin", priority: int = 10, subject: Optional[Dict[str, Any]] = None,
        ingress: Sequence[Dict[str, Any]] = (), egress: Sequence[Dict[str, Any]] = ()) -> Dict[str, Any]:
    """`builders.cluster_policy` without a uid, its subject namespace x unless given."""
    return cluster_policy(name, tier, priority, subject or namespace_named("x"),
                          ingress=list(ingress) or None, egress=list(egress) or None, uid=None)


def build(cnps: Sequence[Dict[str, Any]], nps: Sequence[Dict[str, Any]] = (),
          extra_pods: Sequence[Dict[str, Any]] = ()) -> KubernetesModel:
    cluster = xyz_cluster(list(nps))
    return KubernetesModel.build(cluster.objects["Namespace"], cluster.objects["Pod"] + list(extra_pods),
                                 cluster.objects["NetworkPolicy"], cnps)


def end(model: KubernetesModel, text: str) -> Endpoint:
    if "/" in text:
        found = model.pod(*text.split("/"))
        assert found is not None
        return Endpoint(found, found.ip)
    return Endpoint(None, ipaddress.ip_address(text))


def verdict(model: KubernetesModel, src: str, dst: str, port: int = 80,
            protocol: str = "TCP") -> Verdict:
    return model.verdict(end(model, src), end(model, dst), port, protocol)


def allowed(model: KubernetesModel, src: str, dst: str, port: int = 80, protocol: str = "TCP") -> bool:
    return verdict(model, src, dst, port, protocol).allowed


ALLOW_Y_TO_X = policy("x", "allow-y", {"podSelector": {}, "ingress": [
    {"from": [{"namespaceSelector": {"matchLabels": {NAME_LABEL: "y"}}}]}]})


def test_admin_deny_beats_a_network_policy_that_allows():
    model = build([cnp("deny-y", ingress=[cnp_rule("Deny", namespace_named("y"), name="no-y")])], [ALLOW_Y_TO_X])
    result = verdict(model, "y/a", "x/a")
    assert not result.allowed
    assert result.ingress.tier == "Admin"
    decision = result.ingress.decision
    assert decision is not None and (decision.policy, decision.index, decision.rule,
                                     decision.action) == ("deny-y", 0, "no-y", "Deny")
    assert result.ingress.allowing == ("x/allow-y",)  # the NetworkPolicy still reports its view


def test_admin_accept_overrides_network_policy_isolation():
    deny_all = policy("x", "deny-all", {"podSelector": {}, "policyTypes": ["Ingress"]})
    model = build([cnp("let-z", ingress=[cnp_rule("Accept", namespace_named("z"))])], [deny_all])
    assert allowed(model, "z/a", "x/a")
    assert not allowed(model, "y/a", "x/a")  # no Admin rule matches: the NetworkPolicy decides
    assert verdict(model, "y/a", "x/a").ingress.tier == NETWORK_POLICY_TIER


def test_pass_goes_to_network_policies_then_baseline_then_default():
    admin = cnp("pass-y", ingress=[cnp_rule("Pass", namespace_named("y")), cnp_rule("Deny", namespace_named("y"))])
    baseline = cnp("base", tier="Baseline", ingress=[cnp_rule("Deny", namespace_named("y"))])
    # A NetworkPolicy selecting x decides once the Admin tier passes.
    assert allowed(build([admin, baseline], [ALLOW_Y_TO_X]), "y/a", "x/a")
    # Without one, the Baseline tier decides.
    result = verdict(build([admin, baseline]), "y/a", "x/a")
    assert not result.allowed and result.ingress.tier == "Baseline"
    # A Baseline Pass falls through to the default allow.
    passing = cnp("base", tier="Baseline", ingress=[cnp_rule("Pass", namespace_named("y")),
                                                    cnp_rule("Deny", namespace_named("y"))])
    result = verdict(build([admin, passing]), "y/a", "x/a")
    assert result.allowed and result.ingress.tier == DEFAULT_TIER


def test_baseline_applies_only_to_pods_no_network_policy_isolates():
    baseline = cnp("base", tier="Baseline", ingress=[cnp_rule("Accept", namespace_named("z"))])
    deny_all = policy("x", "deny-a", {"podSelector": {"matchLabels": {"pod": "a"}}})
    model = build([baseline], [deny_all])
    assert not allowed(model, "z/a", "x/a")  # isolated: the Baseline Accept is never reached
    assert allowed(model, "z/a", "x/b")


def test_lower_priority_first_and_equal_priorities_by_name():
    deny = cnp("b-deny", priority=5, ingress=[cnp_rule("Deny", namespace_named("y"))])
    accept = cnp("a-accept", priority=5, ingress=[cnp_rule("Accept", namespace_named("y"))])
    assert allowed(build([deny, accept]), "y/a", "x/a")  # same priority: "a-accept" first
    earlier = cnp("b-deny", priority=4, ingress=[cnp_rule("Deny", namespace_named("y"))])
    assert not allowed(build([earlier, accept]), "y/a", "x/a")


def test_rules_are_ordered_within_a_policy():
    y_peer = namespace_named("y")
    first_deny = cnp("p", ingress=[cnp_rule("Deny", y_peer), cnp_rule("Accept", y_peer)])
    first_accept = cnp("p", ingress=[cnp_rule("Accept", y_peer), cnp_rule("Deny", y_peer)])
    assert not allowed(build([first_deny]), "y/a", "x/a")
    assert allowed(build([first_accept], [policy("x", "deny", {"podSelector": {}})]), "y/a", "x/a")


def test_subject_pods_needs_both_selectors_and_directions_are_separate():
    subject = {"pods": {"namespaceSelector": {"matchLabels": {NAME_LABEL: "x"}},
                        "podSelector": {"matchLabels": {"pod": "a"}}}}
    model = build([cnp("p", subject=subject, egress=[cnp_rule("Deny", namespace_named("y"), direction="egress")])])
    assert not allowed(model, "x/a", "y/b")
    assert allowed(model, "x/b", "y/b")  # not the subject
    assert allowed(model, "y/b", "x/a")  # the policy has no ingress rules: ingress unaffected


def test_networks_match_pod_ips_and_outside_addresses_on_egress_only():
    egress = cnp("p", egress=[cnp_rule("Deny", {"networks": ["10.244.2.0/24", "192.0.2.0/24"]},
                                   direction="egress")])
    model = build([egress])
    assert not allowed(model, "x/a", "y/c")  # y's pods are in 10.244.2.0/24
    assert not allowed(model, "x/a", OUTSIDE_IP)
    assert allowed(model, "x/a", "z/a")
    # An ingress pods peer never matches an outside address.
    ingress = cnp("q", ingress=[cnp_rule("Deny", {"pods": {"namespaceSelector": {}, "podSelector": {}}})])
    model = build([ingress])
    assert allowed(model, OUTSIDE_IP, "x/a") and not allowed(model, "y/a", "x/a")


def test_ports_numbers_ranges_and_protocols():
    ranges = [{"udp": {"destinationPort": {"range": {"start": 80, "end": 81}}}}, cnp_port("tcp", 82)]
    model = build([cnp("p", ingress=[cnp_rule("Deny", namespace_named("y"), protocols=ranges)])])
    assert not allowed(model, "y/a", "x/a", 80, "UDP") and not allowed(model, "y/a", "x/a", 81, "UDP")
    assert allowed(model, "y/a", "x/a", 82, "UDP") and allowed(model, "y/a", "x/a", 80, "TCP")
    assert not allowed(model, "y/a", "x/a", 82, "TCP")


def test_named_port_takes_the_container_ports_protocol_and_number():
    odd = pod("x", "d", "10.244.1.40", {"pod": "d"}, [("dns", 5353, "UDP")])
    named = [{"destinationNamedPort": "dns"}]
    model = build([cnp("p", ingress=[cnp_rule("Deny", namespace_named("y"), protocols=named)])], extra_pods=[odd])
    assert not allowed(model, "y/a", "x/d", 5353, "UDP")
    assert allowed(model, "y/a", "x/d", 5353, "TCP") and allowed(model, "y/a", "x/d", 53, "UDP")
    assert allowed(model, "y/a", "x/a", 5353, "UDP")  # x/a has no port "dns"


@pytest.mark.parametrize("bad_peer", [
    {"nodes": {"matchLabels": {"kubernetes.io/os": "linux"}}},
    {"domainNames": ["example.com"]},
    {},
    {"networks": ["not-a-cidr"]},
    {"namespaces": {}, "networks": ["10.0.0.0/8"]},
])
def test_unenforceable_or_invalid_parts_fail_closed(bad_peer):
    accept = cnp("p", egress=[cnp_rule("Accept", bad_peer, direction="egress")])
    model = build([accept], [policy("x", "deny", {"podSelector": {}, "policyTypes": ["Egress"]})])
    assert not allowed(model, "x/a", "y/a")  # the Accept matches nothing
    for action in ("Deny", "Pass"):
        model = build([cnp("p", egress=[cnp_rule(action, bad_peer, direction="egress")])])
        result = verdict(model, "x/a", OUTSIDE_IP, 443)
        assert not result.allowed  # denies all traffic of its subject in its direction
        assert result.egress.decision is not None and result.egress.decision.fail_closed
        assert allowed(model, "x/a", "y/a", 80, "UDP") is False
        assert allowed(model, "y/a", "x/a")  # the other direction is untouched
    reasons = model.rejections()
    assert [r.name for r in reasons] == ["p"] and reasons[0].reason.startswith("egress[0].to[0]")


@pytest.mark.parametrize("bad_protocols", [
    [], [{"tcp": {}}], [{"tcp": {"destinationPort": {"range": {"start": 90, "end": 80}}}}],
    [{"tcp": {"destinationPort": {"number": 80}}, "udp": {"destinationPort": {"number": 80}}}],
    [{"icmp": {}}],
])
def test_invalid_protocols_fail_closed(bad_protocols):
    model = build([cnp("p", ingress=[cnp_rule("Pass", namespace_named("y"), protocols=bad_protocols)])])
    assert not allowed(model, "z/a", "x/a", 9999, "SCTP")
    model = build([cnp("p", ingress=[cnp_rule("Accept", namespace_named("y"), protocols=bad_protocols)])],
                  [policy("x", "deny", {"podSelector": {}})])
    assert not allowed(model, "y/a", "x/a")


@pytest.mark.parametrize("spec_change", [
    {"tier": "Middle"}, {"priority": 1001}, {"priority": "1"}, {"subject": {}},
    {"subject": {"namespaces": {}, "pods": {"podSelector": {}}}}, {"subject": None},
])
def test_a_policy_with_an_invalid_tier_priority_or_subject_is_rejected_whole(spec_change):
    bad = cnp("bad", ingress=[cnp_rule("Deny", namespace_named("y"))])
    bad["spec"].update(spec_change)
    model = build([bad])
    assert allowed(model, "y/a", "x/a")
    assert [r.name for r in model.rejections()] == ["bad"]
    assert model.tier("Admin") == []


def test_outside_addresses_are_never_a_subject():
    everything = cnp_rule("Deny", {"networks": ["0.0.0.0/0"]}, direction="egress")
    model = build([cnp("p", subject={"namespaces": {}}, egress=[everything])])
    assert allowed(model, OUTSIDE_IP, pod_ip("x", "a"))
    assert not allowed(model, "x/a", "y/a")


def test_unknown_spec_fields_are_reported_and_a_rule_list_that_is_no_list_denies_its_direction():
    policy_ = cnp("odd", ingress=[cnp_rule("Accept", namespace_named("y"))])
    policy_["spec"]["ingres"] = [cnp_rule("Accept", namespace_named("z"))]
    policy_["spec"]["egress"] = {"not": "a list"}
    model = build([policy_])
    assert [r.reason for r in model.rejections()] == ["spec: unknown field 'ingres', ignored",
                                                      "spec.egress must be a list"]
    assert not allowed(model, "x/a", "y/a")  # egress denied whole
    assert allowed(model, "y/a", "z/a")  # not the subject
