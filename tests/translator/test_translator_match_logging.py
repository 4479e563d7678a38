"""Logging of rule matches in the translator (SPEC 15): the annotation on a namespace or a
ClusterNetworkPolicy sets `action_list.log` on exactly the rules it concerns; a change of it reports
only those as changed; a bad value logs nothing and is an error of the policies concerned."""
from __future__ import annotations

import copy
from typing import Any, Dict, Optional, Set

import pytest

from kube_manager.translator import ClusterTranslator, translate
from kube_manager.translator.match_logging import ANNOTATION
from tests.support.translator_reads import policy_errors
from tests.support.builders import allow_from, cluster_policy, cnp_rule, namespace, namespace_named, policy

PM = "default-policy-management"
PASS_RULE, DENY_RULE = "k8s-n-ingress-np-0-podSelector-0-0", "k8s-n-ingress-np-denyall"
OTHER_PASS, OTHER_DENY = "k8s-m-ingress-np-0-podSelector-0-0", "k8s-m-ingress-np-denyall"


def annotated(manifest: Dict[str, Any], value: Optional[str]) -> Dict[str, Any]:
    manifest = copy.deepcopy(manifest)
    if value is not None:
        manifest["metadata"]["annotations"] = {ANNOTATION: value}
    return manifest


def logged(t: ClusterTranslator) -> Set[str]:
    return {fq[-1] for fq, body in t.desired()["firewall-rule"].items() if body["action_list"].get("log")}


@pytest.mark.parametrize("value, logs, error", [
    (None, set(), False),
    ("deny", {DENY_RULE}, False),
    ("allow", {PASS_RULE}, False),
    ("all", {PASS_RULE, DENY_RULE}, False),
    ("DENY", set(), True),   # values are exact
    ("", set(), True),
])
def test_a_namespace_s_value_logs_the_rules_of_its_policies_only(value: Optional[str], logs: Set[str], error: bool) -> None:
    t = ClusterTranslator()
    for name in ("n", "m"):
        t.upsert("Namespace", annotated(namespace(name), value) if name == "n" else namespace(name))
        t.upsert("NetworkPolicy", policy(name, "np", allow_from("a", "b")))
    t.flush()
    assert logged(t) == logs
    assert any(ANNOTATION in e for e in policy_errors(t, "n", "np")) == error
    assert policy_errors(t, "m", "np") == ()


@pytest.mark.parametrize("before, after, changed", [
    (None, "deny", {DENY_RULE}),
    ("deny", "all", {PASS_RULE}),
    ("all", "allow", {DENY_RULE}),
    ("allow", None, {PASS_RULE}),
    ("deny", "deny", set()),
])
def test_a_change_of_the_value_changes_only_the_rules_it_concerns(before: Optional[str], after: Optional[str],
                                                                   changed: Set[str]) -> None:
    t = ClusterTranslator()
    t.upsert("Namespace", annotated(namespace("n"), before))
    t.upsert("NetworkPolicy", policy("n", "np", allow_from("a", "b")))
    t.flush()
    t.upsert("Namespace", annotated(namespace("n"), after))
    report = t.flush()
    assert {fq[-1] for kind, fq in report.changed} == changed
    assert not report.added and not report.removed


def test_translate_reads_the_annotations_as_the_daemon_does() -> None:
    result = translate({"Namespace": [annotated(namespace("n"), "all")],
                        "NetworkPolicy": [policy("n", "np", allow_from("a", "b"))]}).to_dict()
    logs = {rule["fq_name"][-1] for rule in result["firewall_rules"] if rule["action_list"].get("log")}
    added = {rule["fq_name"][-1] for rule in result["firewall_rules"] if rule["fq_name"][-1].startswith("k8s--")}
    assert added and logs == {PASS_RULE, DENY_RULE}  # the NetworkPolicy's own rules, not the ones semantics adds


def test_a_namespace_rejected_after_it_was_read_forgets_its_logging_as_a_fresh_translation_does() -> None:
    good = annotated(namespace("n"), "all")
    bad = copy.deepcopy(good)
    bad["metadata"]["labels"] = {"team": ["not", "a", "string"]}
    np = policy("n", "np", allow_from("a", "b"))
    t = ClusterTranslator()
    t.upsert("Namespace", good)
    t.upsert("NetworkPolicy", np)
    t.flush()
    assert logged(t) == {PASS_RULE, DENY_RULE}
    t.upsert("Namespace", bad)
    t.flush()
    assert logged(t) == set()
    assert t.translation().to_dict() == translate({"Namespace": [bad], "NetworkPolicy": [np]}).to_dict()
