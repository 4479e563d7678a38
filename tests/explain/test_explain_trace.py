"""The `trace` of SPEC 6: per side, every policy selecting the pod, block by block, with a reason a
person can act on. Each test builds a small cluster where one thing does not match and checks the
trace names exactly that thing (and the selector tags it mentions are decoded)."""
from __future__ import annotations

from typing import Any, Dict, List

from tests.support.builders import namespace, pod, policy
from tests.conformance.cluster import ManifestSet
from kube_manager.explain.text import flow_errors, render
from kube_manager.translator import translate
from kube_manager.explain.explainer import Explainer


def cluster(*policies: Dict[str, Any]) -> ManifestSet:
    return ManifestSet({"Namespace": [namespace("x", team="x"), namespace("y", team="y")],
                        "Pod": [pod("x", "a", "10.0.1.1", {"app": "a"}),
              pod("x", "c", "10.0.1.3", {"app": "c"}),
              pod("y", "b", "10.0.2.2", {"app": "b"}, ports=[("http", 9091, "TCP")]),
              pod("y", "d", "10.0.2.4", {"app": "b"}, ports=[("http", 9090, "TCP")])], "NetworkPolicy": list(policies)})


def answer(manifests: ManifestSet, src: str, dst: str, port: int = 9090,
           semantics: str = "kubernetes") -> Dict[str, Any]:
    translation = translate(manifests.objects, semantics=semantics)
    return Explainer(translation.to_dict(), manifests, "k8s", translation.selectors, semantics).explain(
        src, dst, port, "TCP")


def steps(result: Dict[str, Any], side: str) -> List[Dict[str, Any]]:
    return [s for s in result["trace"] if s["side"] == side]


def only_block(result: Dict[str, Any], side: str, name: str) -> Dict[str, Any]:
    (step,) = [s for s in steps(result, side) if s["policy"] == name]
    (block,) = step["blocks"]
    return {"allows": step["allows"], **block}


B_FROM_X = policy("y", "b-from-x", {
    "podSelector": {"matchLabels": {"app": "b"}},
    "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "x"}},
                           "podSelector": {"matchLabels": {"app": "a"}}}],
                 "ports": [{"port": "http"}]}]})


def test_named_port_resolving_to_another_number():
    result = answer(cluster(B_FROM_X), "x/a", "y/b")
    assert result["allowed"] is False and result["kubernetes_allowed"] is False
    block = only_block(result, "ingress", "y/b-from-x")
    assert block == {"allows": False, "index": 0, "peer": True, "port": False,
                     "reason": 'port "http" is 9091 on y/b, not 9090'}
    # The same policy admits the pod that calls its port http 9090.
    ok = only_block(answer(cluster(B_FROM_X), "x/a", "y/d"), "ingress", "y/b-from-x")
    assert (ok["allows"], ok["peer"], ok["port"]) == (True, True, True)
    assert 'port "http" is 9090 on y/d' in ok["reason"]
    # The named-port selector tag y/b carries is decoded in the answer.
    decoded = result["selectors"]
    (tag,) = [t for t in decoded if "9091" in decoded[t]["text"]]
    assert tag in result["to"]["tags"]
    assert decoded[tag]["text"] == ('pods app=b in namespace y where port "http" (TCP) is 9091')
    assert decoded[tag]["selector"][1:] == ["http", "TCP", 9091]


def test_a_label_that_does_not_match():
    result = answer(cluster(B_FROM_X), "x/c", "y/d")
    block = only_block(result, "ingress", "y/b-from-x")
    assert (block["peer"], block["port"], block["allows"]) == (False, True, False)
    assert block["reason"] == "x/c (app=c) does not match podSelector app=a"


def test_a_namespace_selector_that_does_not_match():
    result = answer(cluster(B_FROM_X), "y/d", "y/d")
    block = only_block(result, "ingress", "y/b-from-x")
    assert (block["peer"], block["port"]) == (False, True)
    assert block["reason"] == ("namespace y (kubernetes.io/metadata.name=y,team=y) does not match "
                               "namespaceSelector team=x")


def test_an_ipblock_except():
    egress = policy("x", "a-out", {
        "podSelector": {"matchLabels": {"app": "a"}}, "policyTypes": ["Egress"],
        "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.2.0/24"]}}],
                    "ports": [{"port": 9090}]}]})
    result = answer(cluster(egress), "x/a", "y/b")
    assert result["allowed"] is False
    block = only_block(result, "egress", "x/a-out")
    assert (block["peer"], block["port"]) == (False, True)
    assert block["reason"] == "10.0.2.2 is in 10.0.0.0/16 but in its except 10.0.2.0/24"
    allowed = only_block(answer(cluster(egress), "x/a", "x/c"), "egress", "x/a-out")
    assert allowed["allows"] is True and "10.0.1.3 is in ipBlock 10.0.0.0/16" in allowed["reason"]


def test_a_cluster_wide_flow_names_allowing_and_isolating_policies_apart():
    isolate_a = policy("x", "a-isolated", {"podSelector": {"matchLabels": {"app": "a"}},
                                            "policyTypes": ["Egress"]})
    assert answer(cluster(B_FROM_X, isolate_a), "x/a", "y/d")["allowed"] is False  # under kubernetes
    result = answer(cluster(B_FROM_X, isolate_a), "x/a", "y/d", semantics="cluster-wide")
    assert (result["allowed"], result["kubernetes_allowed"]) == (True, False)
    assert result["deviation"] == "cluster-wide"
    assert result["policies"] == ["y/b-from-x", "x/a-isolated"]
    reason = result["reason"]
    assert ("y/b-from-x allows it at the destination's ingress, but the source's egress is "
            "isolated by x/a-isolated and none of them allows it") in reason
    assert "allowed by" not in reason  # the old text listed isolating policies as allowing ones
    (egress,) = steps(result, "egress")
    assert egress == {"side": "egress", "policy": "x/a-isolated", "kind": "NetworkPolicy",
                      "allows": False, "blocks": []}
    assert [s["allows"] for s in steps(result, "ingress")] == [True]


def test_a_pod_selected_by_no_policy_has_an_empty_side():
    result = answer(cluster(B_FROM_X), "x/a", "y/d")
    assert steps(result, "egress") == []
    assert result["allowed"] is True and result["deviation"] is None


def test_a_policy_not_isolating_the_side_does_not_decide():
    egress_only = policy("y", "b-out", {"podSelector": {}, "policyTypes": ["Egress"]})
    result = answer(cluster(B_FROM_X, egress_only), "x/a", "y/d")
    by_name = {s["policy"]: s for s in steps(result, "ingress")}
    assert by_name["y/b-out"]["allows"] is None and by_name["y/b-out"]["blocks"] == []
    assert by_name["y/b-from-x"]["allows"] is True


def test_each_side_in_aps_evaluation_order():
    names = [f"p{i}" for i in range(6)]
    policies = [policy("y", n, {"podSelector": {}, "ingress": [{"ports": [{"port": 1}]}]})
                for n in names]
    manifests = cluster(*policies)
    translation = translate(manifests.objects)
    refs = translation.application_policy_set["firewall_policy_refs"]
    aps_order = [ref["to"][-1] for ref in sorted(refs, key=lambda r: float(r["attr"]["sequence"]))]
    expected = [f"y/{n[len('k8s-y-'):]}" for n in aps_order if n.startswith("k8s-y-")]
    assert sorted(expected) == [f"y/{n}" for n in names]
    result = answer(manifests, "x/a", "y/b", 1)
    assert [s["policy"] for s in steps(result, "ingress")] == expected
    assert all(s["blocks"][0]["index"] == 0 and s["allows"] for s in steps(result, "ingress"))


def test_block_index_counts_rejected_blocks():
    bad_then_good = policy("y", "two", {
        "podSelector": {}, "ingress": [{"from": "not a list"}, {"ports": [{"port": 9090}]}]})
    result = answer(cluster(bad_then_good), "x/a", "y/b")
    (step,) = steps(result, "ingress")
    assert [b["index"] for b in step["blocks"]] == [1] and step["allows"] is True


def test_a_policy_rejected_whole_is_named_with_its_reason():
    broken = policy("y", "broken", {"podSelector": {"matchExpressions": [
        {"key": "app", "operator": "Sometimes"}]}, "ingress": [{}]})
    elsewhere = policy("x", "broken-too", {"podSelector": {"matchExpressions": [
        {"key": "app", "operator": "Sometimes"}]}})
    manifests = cluster(B_FROM_X, broken, elsewhere)
    result = answer(manifests, "y/d", "y/b")
    assert result["rejected_policies"] == ["y/broken"]  # x is neither end's namespace
    assert "y/broken" not in {s["policy"] for s in result["trace"]}
    translation = translate(manifests.objects)
    warnings = flow_errors(translation.errors, result)
    assert warnings and all(w.startswith("NetworkPolicy y/broken: ") for w in warnings)
    assert "rejected whole, so selecting nothing: y/broken" in render(result)
