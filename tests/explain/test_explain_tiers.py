"""`explain` and `what-if` know the ClusterNetworkPolicy tiers (SPEC 6 and 13): the Kubernetes
verdict per direction with the deciding tier and rule, the trace of each tier's policies, the
`cluster-wide` flag where an Accept at one end admits what a later tier at the other end drops,
and `explain -f` reading ClusterNetworkPolicies from manifests. On the x/y/z cluster, translated
for real."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Sequence

import yaml

from tests.support.builders import NAME_LABEL, cluster_policy, cnp_rule, namespace_named, policy
from tests.conformance.cluster import ManifestSet, xyz_cluster
from kube_manager.cli.main import main
from kube_manager.explain.explainer import CLUSTER_WIDE, Explainer
from kube_manager.explain.text import render
from kube_manager.explain.whatif import what_if
from kube_manager.translator import translate


def cnp(name: str, tier: str, subject_ns: str, direction: str, action: str, peer_ns: str,
        priority: int = 5, rule_name: str = "") -> Dict[str, Any]:
    rule = cnp_rule(action, namespace_named(peer_ns), direction=direction, name=rule_name)
    return cluster_policy(name, tier, priority, namespace_named(subject_ns), uid=None, **{direction: [rule]})


def cluster(cnps: Sequence[Dict[str, Any]], nps: Sequence[Dict[str, Any]] = ()) -> ManifestSet:
    base = xyz_cluster(list(nps))
    base.objects["ClusterNetworkPolicy"] = list(cnps)
    return base


def explain(manifests: ManifestSet, src: str, dst: str, port: int = 80) -> Dict[str, Any]:
    translation = translate(manifests.objects, cluster_name="k8s")
    return Explainer(translation.to_dict(), manifests, "k8s", translation.selectors).explain(
        src, dst, port, "TCP")


ALLOW_FROM_Y = policy("x", "from-y", {"podSelector": {}, "ingress": [
    {"from": [{"namespaceSelector": {"matchLabels": {NAME_LABEL: "y"}}}]}]})
DENY_ALL_INGRESS_Y = policy("y", "deny-all", {"podSelector": {}, "policyTypes": ["Ingress"]})


def steps(result: Dict[str, Any], side: str) -> List[Any]:
    return [(s["kind"], s["policy"], s["allows"]) for s in result["trace"] if s["side"] == side]


def test_an_admin_deny_wins_over_an_allowing_network_policy_and_says_which_rule():
    manifests = cluster([cnp("no-y", "Admin", "x", "ingress", "Deny", "y", rule_name="keep-y-out")],
                        [ALLOW_FROM_Y])
    result = explain(manifests, "y/a", "x/a")
    assert result["allowed"] is False and result["kubernetes_allowed"] is False
    assert result["deviation"] is None
    ingress = result["kubernetes"]["ingress"]
    assert ingress["tier"] == "Admin" and ingress["allowed"] is False
    assert ingress["rule"] == {"tier": "Admin", "policy": "no-y", "priority": 5, "index": 0,
                               "rule": "keep-y-out", "action": "Deny", "fail_closed": None}
    assert ingress["allowed_by"] == ["x/from-y"]  # the NetworkPolicy's own view, overruled
    # The trace: the Admin tier first, then the NetworkPolicy.
    assert steps(result, "ingress") == [("ClusterNetworkPolicy", "no-y", False),
                                        ("NetworkPolicy", "x/from-y", True)]
    block = result["trace"][0]["blocks"][0]
    assert block["action"] == "Deny" and block["rule"] == "keep-y-out"
    assert block["reason"] == ("denies: y/a is one of the pods in namespaces "
                               "kubernetes.io/metadata.name=y; every port")
    text = render(result)
    assert ("ingress at the destination: DROP (Admin tier: ClusterNetworkPolicy no-y rule 0 "
            "keep-y-out (Deny))") in text
    assert "egress at the source: allow (no tier decides: default allow)" in text
    assert "ClusterNetworkPolicy no-y: DENIES" in text


def test_an_admin_accept_at_one_end_never_opens_a_network_policy_deny_at_the_other():
    manifests = cluster([cnp("let-x-out", "Admin", "x", "egress", "Accept", "y")],
                        [DENY_ALL_INGRESS_Y])
    result = explain(manifests, "x/a", "y/b")
    assert result["allowed"] is False and result["kubernetes_allowed"] is False
    assert result["deviation"] is None
    assert result["kubernetes"]["egress"]["tier"] == "Admin"
    assert result["kubernetes"]["ingress"]["tier"] == "NetworkPolicy"


def test_a_network_policy_allow_never_opens_a_baseline_deny_at_the_other_end():
    egress = policy("x", "to-y", {"podSelector": {}, "policyTypes": ["Egress"],
                                  "egress": [{"to": [{"namespaceSelector": {}}]}]})
    manifests = cluster([cnp("base", "Baseline", "y", "ingress", "Deny", "x")], [egress])
    result = explain(manifests, "x/a", "y/a")
    assert result["allowed"] is False and result["kubernetes_allowed"] is False
    assert result["deviation"] is None
    assert result["kubernetes"]["ingress"]["tier"] == "Baseline"
    alone = explain(cluster([cnp("base", "Baseline", "y", "ingress", "Deny", "x")]), "x/a", "y/a")
    assert alone["allowed"] is False and alone["deviation"] is None


def test_a_baseline_accept_never_beats_a_network_policy_deny_at_the_other_end():
    manifests = cluster([cnp("base", "Baseline", "x", "egress", "Accept", "y")],
                        [DENY_ALL_INGRESS_Y])
    result = explain(manifests, "x/a", "y/a")
    assert result["allowed"] is False and result["kubernetes_allowed"] is False
    assert result["deviation"] is None


def test_a_pass_hands_over_and_the_trace_says_it_does_not_decide():
    manifests = cluster([cnp("hand-over", "Admin", "x", "ingress", "Pass", "y")], [ALLOW_FROM_Y])
    result = explain(manifests, "y/a", "x/a")
    assert result["allowed"] is True and result["kubernetes_allowed"] is True
    assert result["kubernetes"]["ingress"]["tier"] == "NetworkPolicy"
    assert steps(result, "ingress")[0] == ("ClusterNetworkPolicy", "hand-over", None)
    assert result["trace"][0]["blocks"][0]["action"] == "Pass"


def test_the_trace_marks_rules_after_the_tiers_first_match_as_not_reached():
    manifests = cluster([cnp("first", "Admin", "x", "ingress", "Pass", "y", priority=1),
                         cnp("second", "Admin", "x", "ingress", "Deny", "y", priority=2)])
    result = explain(manifests, "y/a", "x/a")
    assert result["allowed"] is True and result["kubernetes_allowed"] is True
    assert steps(result, "ingress") == [("ClusterNetworkPolicy", "first", None),
                                        ("ClusterNetworkPolicy", "second", None)]
    assert result["trace"][1]["blocks"][0]["reason"].startswith(
        "not reached (rule 0 of first matches first): denies:")


def test_explain_reads_cluster_network_policies_from_manifests(tmp_path: Path, capsys):
    base = xyz_cluster()
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(base.objects["Namespace"] + base.objects["Pod"]),
                                           encoding="utf-8")
    (tmp_path / "cnp.yaml").write_text(yaml.safe_dump(
        cnp("no-y", "Admin", "x", "ingress", "Deny", "y")), encoding="utf-8")
    status = main(["explain", "-f", str(tmp_path), "--from", "y/a", "--to", "x/a", "--port", "80",
                   "-o", "json"])
    out = capsys.readouterr().out
    assert status == 1
    result = json.loads(out)
    assert result["kubernetes"]["ingress"]["rule"]["policy"] == "no-y"
    assert result["deviation"] is None and result["policy"] is not None


def test_what_if_an_admin_deny_is_added():
    before = cluster([])
    change = ManifestSet({"ClusterNetworkPolicy": [cnp("no-y", "Admin", "x", "ingress", "Deny", "y")]})
    result = what_if(before, change)
    closed = {(c.source, c.destination) for c in result.changes}
    assert ("y/a", "x/b") in closed and ("x/a", "y/b") not in closed
    assert all(c.contrail == (True, False) and c.kubernetes == (True, False) for c in result.changes)
    assert result.affected_pods == 9  # a ClusterNetworkPolicy may reach any pod


def test_a_cluster_network_policy_rejected_whole_is_named():
    bad = cnp("typo", "Middle", "x", "ingress", "Deny", "y")
    result = explain(cluster([bad]), "y/a", "x/a")
    assert result["allowed"] is True and result["kubernetes_allowed"] is True
    assert result["rejected_policies"] == ["typo"]
    assert "rejected whole, so selecting nothing: typo" in render(result)
