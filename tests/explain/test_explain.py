"""`explain` on a hand-made translation of the seed's cluster-wide example, and its error handling.

The wiki's example: Policy 1 lets y/a send to x/a; Policy 2 lets x/a receive only from x/b. Contrail
allows y/a -> x/a (Policy 1 is honoured cluster-wide) where Kubernetes drops it.
"""
from __future__ import annotations

import copy
from typing import Any, Dict

import pytest

from tests.support.builders import namespace, pod
from tests.conformance.cluster import ManifestSet, wiki_example_policies
from tests.conformance.contrail import (ANY, firewall_policy, rule, tags, translation, workload)
from kube_manager.explain.explainer import (CLUSTER_WIDE, MISMATCH, ExplainError, Explainer,
                                             cluster_wide_policies, explain)
from kube_manager.explain.k8s_semantics import SideVerdict, Verdict

APP = "application=k8s"
X_A = [APP, "namespace=x", "pod=a"]
X_B = [APP, "namespace=x", "pod=b"]
Y_A = [APP, "namespace=y", "pod=a"]


def manifests() -> ManifestSet:
    return ManifestSet({"Namespace": [namespace("x", ns="x"), namespace("y", ns="y")],
                        "Pod": [pod("x", "a", "10.244.1.10", {"pod": "a"}), pod("x", "b", "10.244.1.11", {"pod": "b"}),
              pod("y", "a", "10.244.2.10", {"pod": "a"}), pod("y", "twin", "10.244.2.10", {"pod": "t"}),
              pod("y", "new", "10.244.2.99", {"pod": "n"})], "NetworkPolicy": wiki_example_policies()})


def contrail() -> Dict[str, Any]:
    """What the translator emits for manifests() (y/new has no workload yet)."""
    rules = [
        rule("k8s-y-egress-p1-0-podSelector-0-0", tags(*Y_A), tags(APP, "namespace.ns=x", "pod=a")),
        rule("k8s-x-ingress-p2-0-podSelector-0-0", tags(*X_B), tags(*X_A)),
        rule("k8s-x-ingress-p2-denyall", ANY, tags(*X_A), "deny"),
        rule("k8s-y-egress-p1-denyall", tags(*Y_A), ANY, "deny"),
        rule("k8s-allowall-ingress", ANY, tags(APP)),
        rule("k8s-allowall-egress", tags(APP), ANY),
    ]
    policies = [
        (firewall_policy("k8s-y-p1", [("k8s-y-egress-p1-0-podSelector-0-0", "00000.0")]), "1.1"),
        (firewall_policy("k8s-x-p2", [("k8s-x-ingress-p2-0-podSelector-0-0", "00000.0")]), "1.2"),
        (firewall_policy("k8s-denyall", [("k8s-x-ingress-p2-denyall", "1.5"),
                                         ("k8s-y-egress-p1-denyall", "1.6")]), "2.0"),
        (firewall_policy("k8s-allowall", [("k8s-allowall-ingress", "00000.0"),
                                          ("k8s-allowall-egress", "00001.0")]), "3.0"),
    ]
    workloads = [workload("x", "a", "10.244.1.10", *X_A, "namespace.ns=x"),
                 workload("x", "b", "10.244.1.11", *X_B, "namespace.ns=x"),
                 workload("y", "a", "10.244.2.10", *Y_A, "namespace.ns=y"),
                 workload("y", "twin", "10.244.2.10", APP, "namespace=y", "namespace.ns=y")]
    return translation(policies, rules, workloads)


@pytest.fixture(scope="module")
def explainer() -> Explainer:
    return Explainer(contrail(), manifests(), semantics=CLUSTER_WIDE)


def test_cluster_wide_deviation_names_the_policies(explainer):
    result = explainer.explain("y/a", "x/a", 80, "TCP")
    assert result["allowed"] is True and result["kubernetes_allowed"] is False
    assert result["deviation"] == CLUSTER_WIDE
    assert result["policies"] == ["y/p1", "x/p2"]
    assert result["rule"] == "k8s-y-egress-p1-0-podSelector-0-0"
    assert result["policy"] == "k8s-y-p1" and result["action"] == "pass"
    assert result["kubernetes"]["egress"] == {"isolated": True, "allowed": True,
                                              "policies": ["y/p1"], "allowed_by": ["y/p1"],
                                              "tier": "NetworkPolicy", "rule": None}
    assert result["kubernetes"]["ingress"]["allowed"] is False
    assert "cluster-wide" in result["reason"]


def test_agreeing_verdicts_have_no_deviation(explainer):
    allowed = explainer.explain("x/b", "x/a", 81, "udp")
    assert (allowed["allowed"], allowed["kubernetes_allowed"], allowed["deviation"]) == (True, True, None)
    assert allowed["rule"] == "k8s-x-ingress-p2-0-podSelector-0-0" and allowed["policies"] == []
    denied = explainer.explain("y/a", "x/b", 80, "TCP")
    assert (denied["allowed"], denied["kubernetes_allowed"], denied["deviation"]) == (False, False, None)
    assert denied["rule"] == "k8s-y-egress-p1-denyall" and denied["action"] == "deny"
    assert explainer.explain("x/b", "y/a", 80, "TCP")["rule"] == "k8s-allowall-ingress"


def test_outside_addresses(explainer):
    inbound = explainer.explain("192.0.2.1", "x/a", 80, "TCP")
    assert inbound["from"] == {"pod": None, "ip": "192.0.2.1", "tags": []}
    assert (inbound["allowed"], inbound["kubernetes_allowed"]) == (False, False)
    outbound = explainer.explain("x/a", "2001:db8::1", 443, "TCP")
    assert outbound["allowed"] and outbound["rule"] == "k8s-allowall-egress"
    unrelated = explainer.explain("192.0.2.1", "192.0.2.2", 443, "TCP")
    assert unrelated["allowed"] and not unrelated["under_aps"] and unrelated["rule"] is None
    assert "not under the APS" in unrelated["reason"]


def test_a_pod_ip_is_that_pod(explainer):
    result = explainer.explain("10.244.1.11", "x/a", 80, "TCP")
    assert result["from"] == {"pod": "x/b", "ip": "10.244.1.11", "tags": sorted(X_B + ["namespace.ns=x"])}
    assert result["allowed"] and result["kubernetes_allowed"]


def test_pod_without_workload_has_no_tags(explainer):
    result = explainer.explain("y/new", "x/b", 80, "TCP")
    assert result["from"] == {"pod": "y/new", "ip": "10.244.2.99", "tags": []}
    assert result["allowed"] and result["kubernetes_allowed"]


def test_a_disagreement_not_explained_by_cluster_wide_is_a_mismatch():
    broken = contrail()
    broken["firewall_policies"][2]["firewall_rule_refs"].pop(0)  # lose x/a's ingress deny
    result = Explainer(broken, manifests()).explain("192.0.2.1", "x/a", 80, "TCP")
    assert result["allowed"] and not result["kubernetes_allowed"]
    assert result["deviation"] == MISMATCH
    assert result["policies"] == ["x/p2"]
    assert "bug" in result["reason"]
    denied_wrongly = copy.deepcopy(contrail())
    denied_wrongly["firewall_rules"][1]["service"]["protocol"] = "udp"
    result = Explainer(denied_wrongly, manifests()).explain("x/b", "x/a", 80, "TCP")
    assert (result["allowed"], result["kubernetes_allowed"], result["deviation"]) == (False, True, MISMATCH)


def test_cluster_wide_condition_in_both_orientations():
    allow_out = SideVerdict(True, ("s/out",), ("s/out",))
    deny_in = SideVerdict(True, ("d/in",), ())
    assert cluster_wide_policies(Verdict(allow_out, deny_in)) == ["s/out", "d/in"]
    allow_in = SideVerdict(True, ("d/in",), ("d/in",))
    deny_out = SideVerdict(True, ("s/out",), ())
    assert cluster_wide_policies(Verdict(deny_out, allow_in)) == ["d/in", "s/out"]
    open_side = SideVerdict(False)
    assert cluster_wide_policies(Verdict(open_side, deny_in)) is None   # nothing allows it
    assert cluster_wide_policies(Verdict(allow_out, allow_in)) is None  # nothing to deviate from


@pytest.mark.parametrize("src,dst,port,protocol,message", [
    ("x/zz", "x/a", 80, "TCP", "no such pod"),
    ("x/a/b", "x/a", 80, "TCP", "expected NS/POD or an IP"),
    ("/a", "x/a", 80, "TCP", "expected NS/POD or an IP"),
    ("x/a", "10.0.0.300", 80, "TCP", "expected NS/POD or an IP"),
    ("10.0.0.0/8", "x/a", 80, "TCP", "not a network"),
    ("", "x/a", 80, "TCP", "expected NS/POD or an IP"),
    ("10.244.2.10", "x/a", 80, "TCP", "several pods (y/a, y/twin)"),
    ("x/a", "x/b", 80, "ICMP", "unknown protocol"),
    ("x/a", "x/b", 0, "TCP", "invalid port"),
    ("x/a", "x/b", "http", "TCP", "invalid port"),
    ("x/a", "x/b", 65536, "TCP", "invalid port"),
])
def test_bad_input_is_a_clear_error(explainer, src, dst, port, protocol, message):
    with pytest.raises(ExplainError, match=message.replace("(", r"\(").replace(")", r"\)")):
        explainer.explain(src, dst, port, protocol)


def test_one_shot_function_matches_the_explainer(explainer):
    assert explain(contrail(), manifests(), "y/a", "x/a", "80", "tcp", semantics=CLUSTER_WIDE) == \
        explainer.explain("y/a", "x/a", 80, "TCP")
