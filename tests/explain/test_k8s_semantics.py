"""The Kubernetes reference verdict (kube_manager.explain.k8s_semantics), rule by rule.

These pin the oracle that `explain` and the conformance test trust, so each test states the
NetworkPolicy API rule it checks.
"""
from __future__ import annotations

import ipaddress
from typing import Any, Dict, List

import pytest

from tests.support.builders import namespace, pod, policy
from tests.conformance.cluster import OUTSIDE_IP, pod_ip, xyz_cluster
from kube_manager.explain.k8s_semantics import (Endpoint, Invalid, KubernetesModel,
                                                   compile_selector)


def build(policies: List[Dict[str, Any]], extra_pods=(), extra_namespaces=()) -> KubernetesModel:
    cluster = xyz_cluster(policies)
    return KubernetesModel.build(cluster.objects["Namespace"] + list(extra_namespaces),
                                 cluster.objects["Pod"] + list(extra_pods), cluster.objects["NetworkPolicy"])


def end(model: KubernetesModel, text: str) -> Endpoint:
    if "/" in text:
        found = model.pod(*text.split("/"))
        return Endpoint(found, found.ip)
    return Endpoint(None, ipaddress.ip_address(text))


def allowed(model: KubernetesModel, src: str, dst: str, port: int = 80, protocol: str = "TCP") -> bool:
    return model.verdict(end(model, src), end(model, dst), port, protocol).allowed


def ingress(ns: str, name: str, rules: list, selector=None, **extra) -> Dict[str, Any]:
    return policy(ns, name, {"podSelector": selector or {}, "ingress": rules, **extra})


def egress(ns: str, name: str, rules: list, selector=None, **extra) -> Dict[str, Any]:
    return policy(ns, name, {"podSelector": selector or {}, "egress": rules,
                             "policyTypes": ["Egress"], **extra})


POD_A = {"matchLabels": {"pod": "a"}}


# ---- label selectors -------------------------------------------------------------------------

@pytest.mark.parametrize("expression,labels,expected", [
    ({"key": "pod", "operator": "In", "values": ["a", "b"]}, {"pod": "b"}, True),
    ({"key": "pod", "operator": "In", "values": ["a", "b"]}, {"pod": "c"}, False),
    ({"key": "pod", "operator": "In", "values": ["a"]}, {}, False),
    ({"key": "pod", "operator": "NotIn", "values": ["a"]}, {"pod": "b"}, True),
    ({"key": "pod", "operator": "NotIn", "values": ["a"]}, {"pod": "a"}, False),
    ({"key": "pod", "operator": "NotIn", "values": ["a"]}, {}, True),  # absent key satisfies NotIn
    ({"key": "pod", "operator": "Exists"}, {"pod": ""}, True),
    ({"key": "pod", "operator": "Exists"}, {"other": "x"}, False),
    ({"key": "pod", "operator": "DoesNotExist"}, {"other": "x"}, True),
    ({"key": "pod", "operator": "DoesNotExist"}, {"pod": "a"}, False),
])
def test_match_expression_operators(expression, labels, expected):
    assert compile_selector({"matchExpressions": [expression]}).matches(labels) is expected


def test_selector_requires_every_label_and_expression():
    selector = compile_selector({"matchLabels": {"app": "web", "tier": "fe"},
                                 "matchExpressions": [{"key": "env", "operator": "NotIn",
                                                       "values": ["prod"]}]})
    assert selector.matches({"app": "web", "tier": "fe", "env": "dev"})
    assert not selector.matches({"app": "web", "tier": "fe", "env": "prod"})
    assert not selector.matches({"app": "web", "env": "dev"})


def test_qualified_keys_and_empty_values_are_valid():
    selector = compile_selector({"matchLabels": {"kubernetes.io/metadata.name": "x", "flag": ""}})
    assert selector.matches({"kubernetes.io/metadata.name": "x", "flag": ""})
    assert not selector.matches({"kubernetes.io/metadata.name": "x"})


def test_empty_and_null_selectors_match_everything():
    assert compile_selector({}).matches({})
    assert compile_selector(None).matches({"any": "thing"})


@pytest.mark.parametrize("raw", [
    {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]},
    {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
    {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
    {"matchExpressions": [{"operator": "Exists"}]},
    {"matchLabels": {"a": 1}},
    {"matchLabels": ["a"]},
    {"matchLabel": {"a": "b"}},
    {"matchLabels": {"-a": "x"}},
    {"matchLabels": {"a": "x y"}},
    {"matchLabels": {"UPPER.example/a": "x"}},
    {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["-x"]}]},
])
def test_malformed_selectors_are_invalid(raw):
    with pytest.raises(Invalid):
        compile_selector(raw)


# ---- isolation and policyTypes ---------------------------------------------------------------

def test_no_policy_allows_everything():
    model = build([])
    assert allowed(model, "x/a", "y/b")
    assert allowed(model, OUTSIDE_IP, "x/a")


def test_ingress_isolation_only_affects_selected_pods():
    model = build([ingress("x", "deny-a", [], selector=POD_A)])
    assert not allowed(model, "y/a", "x/a")
    assert allowed(model, "y/a", "x/b")
    assert allowed(model, "x/a", "y/a")  # egress from x/a is not isolated


def test_default_policy_types_add_egress_only_when_egress_rules_exist():
    with_egress = policy("x", "p", {"podSelector": {}, "egress": [{"to": [{"podSelector": {}}]}]})
    model = build([with_egress])
    assert not allowed(model, "x/a", "y/a")      # egress isolated: only x pods allowed
    to_x_b = model.verdict(end(model, "x/a"), end(model, "x/b"), 80, "TCP")
    assert to_x_b.egress.isolated and to_x_b.egress.allowed
    assert to_x_b.ingress.isolated and not to_x_b.ingress.allowed  # Ingress is always defaulted
    assert not allowed(model, "y/a", "x/a")
    only_ingress = policy("x", "p", {"podSelector": {}, "egress": []})
    assert allowed(build([only_ingress]), "x/a", "y/a")


def test_blocks_of_unlisted_direction_are_ignored():
    spec = {"podSelector": {}, "policyTypes": ["Egress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]}
    model = build([policy("x", "p", spec)])
    assert allowed(model, "y/c", "x/a")          # ingress not isolated, its block ignored
    assert not allowed(model, "x/a", "y/c")      # egress isolated with no rules


def test_egress_and_ingress_must_both_allow():
    model = build([egress("x", "to-y", [{"to": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}}]}]),
                   ingress("y", "from-z", [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "z"}}}]}])])
    verdict = model.verdict(end(model, "x/a"), end(model, "y/a"), 80, "TCP")
    assert verdict.egress.allowed and verdict.egress.allowing == ("x/to-y",)
    assert not verdict.ingress.allowed and verdict.ingress.isolating == ("y/from-z",)
    assert not verdict.allowed
    assert allowed(model, "z/a", "y/a")


def test_policies_are_additive():
    model = build([ingress("x", "from-b", [{"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]),
                   ingress("x", "from-c", [{"from": [{"podSelector": {"matchLabels": {"pod": "c"}}}]}])])
    verdict = model.verdict(end(model, "x/c"), end(model, "x/a"), 80, "TCP")
    assert verdict.ingress.isolating == ("x/from-b", "x/from-c")
    assert verdict.ingress.allowing == ("x/from-c",)
    assert not allowed(model, "x/a", "x/a")


# ---- peers -----------------------------------------------------------------------------------

def test_pod_selector_peer_is_limited_to_the_policy_namespace():
    model = build([ingress("x", "p", [{"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}])])
    assert allowed(model, "x/b", "x/a")
    assert not allowed(model, "y/b", "x/a")
    assert not allowed(model, OUTSIDE_IP, "x/a")


def test_namespace_selector_uses_namespace_labels_and_the_name_label():
    model = build([ingress("x", "p", [{"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "y"}}}]}])])
    assert allowed(model, "y/c", "x/a")
    assert not allowed(model, "z/c", "x/a")
    assert not allowed(model, "x/b", "x/a")


def test_empty_namespace_selector_is_every_pod_but_no_outside_address():
    model = build([ingress("x", "p", [{"from": [{"namespaceSelector": {}}]}])])
    assert allowed(model, "z/c", "x/a")
    assert not allowed(model, OUTSIDE_IP, "x/a")


def test_combined_selectors_need_both():
    model = build([ingress("x", "p", [{"from": [
        {"namespaceSelector": {"matchLabels": {"ns": "y"}},
         "podSelector": {"matchLabels": {"pod": "b"}}}]}])])
    assert allowed(model, "y/b", "x/a")
    assert not allowed(model, "y/a", "x/a")
    assert not allowed(model, "x/b", "x/a")


def test_missing_or_empty_peers_allow_every_source():
    for rules in ([{}], [{"from": []}], [{"ports": [{"port": 80}]}]):
        model = build([ingress("x", "p", rules)])
        assert allowed(model, OUTSIDE_IP, "x/a")
        assert allowed(model, "z/c", "x/a")


def test_ip_block_matches_pod_ips_minus_excepts():
    block = {"ipBlock": {"cidr": "10.244.0.0/16", "except": [f"{pod_ip('y', 'b')}/32"]}}
    model = build([ingress("x", "p", [{"from": [block]}])])
    assert allowed(model, "y/a", "x/a")
    assert not allowed(model, "y/b", "x/a")
    assert not allowed(model, OUTSIDE_IP, "x/a")
    assert allowed(build([ingress("x", "p", [{"from": [{"ipBlock": {"cidr": "192.0.2.0/24"}}]}])]),
                   OUTSIDE_IP, "x/a")


def test_ip_block_host_bits_are_masked_and_ipv6_is_separate():
    model = build([egress("x", "p", [{"to": [{"ipBlock": {"cidr": f"{pod_ip('y', 'a')}/4"}}]}])])
    assert allowed(model, "x/a", "z/c")  # 10.x/4 is 0.0.0.0/4
    v6 = pod("y", "v6", "fd00::5", {"pod": "v6"})
    model = build([egress("x", "p", [{"to": [{"ipBlock": {"cidr": "fd00::/64"}}]}])], [v6])
    assert allowed(model, "x/a", "y/v6")
    assert not allowed(model, "x/a", "y/a")


def test_pod_without_ip_never_matches_an_ip_block():
    pending = pod("y", "pending", labels={"pod": "p"})
    model = build([ingress("x", "p", [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}])], [pending])
    assert not allowed(model, "y/pending", "x/a")


# ---- ports -----------------------------------------------------------------------------------

def test_port_protocol_defaults_to_tcp():
    model = build([ingress("x", "p", [{"ports": [{"port": 81}]}])])
    assert allowed(model, "y/a", "x/a", 81, "TCP")
    assert not allowed(model, "y/a", "x/a", 81, "UDP")
    assert not allowed(model, "y/a", "x/a", 80, "TCP")


def test_port_without_number_is_every_port_of_its_protocol():
    model = build([ingress("x", "p", [{"ports": [{"protocol": "UDP"}]}])])
    assert allowed(model, "y/a", "x/a", 81, "UDP")
    assert not allowed(model, "y/a", "x/a", 81, "TCP")


def test_missing_ports_allow_every_protocol():
    model = build([ingress("x", "p", [{"from": [{"namespaceSelector": {}}]}])])
    for protocol in ("TCP", "UDP", "SCTP"):
        assert allowed(model, "y/a", "x/a", 8080, protocol)


def test_end_port_is_an_inclusive_range():
    model = build([ingress("x", "p", [{"ports": [{"port": 80, "endPort": 81, "protocol": "SCTP"}]}])])
    assert allowed(model, "y/a", "x/a", 80, "SCTP")
    assert allowed(model, "y/a", "x/a", 81, "SCTP")
    assert not allowed(model, "y/a", "x/a", 82, "SCTP")


def test_named_port_resolves_on_the_ingress_destination():
    odd = pod("x", "odd", "10.244.1.99", {"pod": "a"}, [("serve-81-tcp", 8081, "TCP")])
    model = build([ingress("x", "p", [{"ports": [{"port": "serve-81-tcp"}]}], selector=POD_A)], [odd])
    assert allowed(model, "y/a", "x/a", 81)
    assert not allowed(model, "y/a", "x/a", 80)
    assert allowed(model, "y/a", "x/odd", 8081)
    assert not allowed(model, "y/a", "x/odd", 81)
    assert not allowed(model, "y/a", "x/a", 81, "UDP")  # the name is bound to TCP


def test_named_port_resolves_on_the_egress_peer_and_never_outside():
    odd = pod("y", "odd", "10.244.2.99", {"pod": "odd"}, [("serve-80-tcp", 8080, "TCP")])
    model = build([egress("x", "p", [{"ports": [{"port": "serve-80-tcp"}]}])], [odd])
    assert allowed(model, "x/a", "y/b", 80)
    assert allowed(model, "x/a", "y/odd", 8080)
    assert not allowed(model, "x/a", "y/odd", 80)
    assert not allowed(model, "x/a", OUTSIDE_IP, 80)


# ---- invalid input (SPEC section 11, fail closed) --------------------------------------------

@pytest.mark.parametrize("bad_peer", [
    {"ipBlock": {"cidr": "10.0.0.0/33"}},
    {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}},
    {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/8"]}},
    {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}},
    {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}},
    {"podSelektor": {}},
    None,
])
def test_invalid_peer_matches_nothing_but_siblings_still_work(bad_peer):
    model = build([ingress("x", "p", [{"from": [bad_peer, {"podSelector": POD_A}]}])])
    assert allowed(model, "x/a", "x/b")
    assert not allowed(model, "y/a", "x/b")
    assert not allowed(model, OUTSIDE_IP, "x/b")
    assert model.rejections() and model.rejections()[0].namespace == "x"


@pytest.mark.parametrize("bad_port", [
    {"port": 80, "endPort": 79},
    {"port": "serve-80-tcp", "endPort": 81},
    {"port": 80, "protocol": "ICMP"},
    {"port": "Bad_Name"},
    {"port": 0},
    {"prot": 80},
])
def test_block_whose_ports_are_all_invalid_allows_nothing(bad_port):
    model = build([ingress("x", "p", [{"ports": [bad_port]}])])
    for port in (79, 80, 81):
        assert not allowed(model, "y/a", "x/a", port)


def test_null_port_entry_is_every_tcp_port():
    model = build([ingress("x", "p", [{"ports": [None]}])])
    assert allowed(model, "y/a", "x/a", 443, "TCP")
    assert not allowed(model, "y/a", "x/a", 443, "UDP")


def test_misspelt_block_field_never_opens_the_block():
    model = build([ingress("x", "p", [{"form": [{"podSelector": {}}]}])])
    assert not allowed(model, "x/b", "x/a")


@pytest.mark.parametrize("spec", [
    {"podSelector": {"matchExpressions": [{"key": "pod", "operator": "In"}]}},
    {"podSelector": {}, "policyTypes": ["Sideways"]},
])
def test_policy_with_invalid_selection_is_ignored_whole(spec):
    model = build([policy("x", "p", spec)])
    assert allowed(model, "y/a", "x/a")
    assert model.policies("x") == []
    assert len(model.rejections()) == 1


def test_namespaces_known_only_from_pods_get_the_name_label():
    lonely = pod("w", "a", "10.244.9.1", {"pod": "a"})
    model = build([ingress("x", "p", [{"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "w"}}}]}])], [lonely])
    assert allowed(model, "w/a", "x/a")
    extra_labels = namespace("q", team="blue")
    model = KubernetesModel.build([extra_labels], [], [])
    assert model.namespace_labels["q"] == {"team": "blue", "kubernetes.io/metadata.name": "q"}


# ---- a namespace's policies compiled together ------------------------------------------------

_BLOCK = {"from": [{"podSelector": POD_A}], "ports": [{"protocol": "TCP", "port": 80}]}


@pytest.mark.parametrize("changed", [
    {"ingress": [{**_BLOCK, "ports": [{"protocol": "TCP", "port": 81}]}]},
    {"ingress": [{**_BLOCK, "ports": [{"protocol": "UDP", "port": 80}]}]},
    {"ingress": [{**_BLOCK, "ports": [{"protocol": "TCP", "port": 80, "endPort": 90}]}]},
    {"ingress": [{**_BLOCK, "ports": [{"protocol": "TCP", "port": "http"}]}]},
    {"ingress": [{**_BLOCK, "from": [{"namespaceSelector": POD_A}]}]},
    {"ingress": [{**_BLOCK, "from": [{"namespaceSelector": {}, "podSelector": POD_A}]}]},
    {"ingress": [{**_BLOCK, "from": [{"podSelector": {"matchExpressions": [
        {"key": "pod", "operator": "NotIn", "values": ["a"]}]}}]}]},
    {"ingress": [{**_BLOCK, "from": [{"ipBlock": {"cidr": "10.0.0.0/24", "except": ["10.0.0.0/25"]}}]}]},
    {"ingress": [{**_BLOCK, "from": [{"ipBlock": {"cidr": "10.0.0.0/24"}}]}]},
    {"ingress": [{}, _BLOCK]},  # the same block at another index
    {"ingress": [{**_BLOCK, "ports": []}]},
    {"ingress": [_BLOCK], "podSelector": {"matchLabels": {"pod": "b"}}},
    {"egress": [{"to": _BLOCK["from"], "ports": _BLOCK["ports"]}], "policyTypes": ["Egress"]},
])
def test_policies_compiled_together_share_only_equal_parts(changed):
    """A namespace's policies are compiled together, their equal selectors, peers, ports and
    blocks made one object: a policy differing from another in one field compiles to what it
    compiles to alone, and what the two have alike is one object."""
    from kube_manager.explain.k8s_semantics import compile_namespace, compile_policy
    manifests = [ingress("x", "first", [_BLOCK], selector=POD_A),
                 policy("x", "second", {"podSelector": POD_A, "ingress": [_BLOCK], **changed})]
    together, rejected = compile_namespace("x", manifests)
    alone = [compile_policy(manifest)[0] for manifest in manifests]
    assert together == alone and not rejected
    assert together[0] != together[1]
    if "podSelector" not in changed:
        assert together[0].selector is together[1].selector
