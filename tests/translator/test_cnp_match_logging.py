"""Logging of rule matches on ClusterNetworkPolicies (SPEC 15): the annotation logs the tier blocks'
rules whose action the policy decides (its Accepts and Denies; a Pass decides nothing), a rule
decided by two policies logs if either asks, a bad value is reported, and a change of the
annotation rewrites only the rules it concerns. Rules are named here by what they match: the block,
the action, and each end's namespace (`*` for any pod, `iso` for an isolation tag)."""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping, Optional, Set

import pytest

from kube_manager.translator import ClusterTranslator
from kube_manager.translator.match_logging import ANNOTATION
from tests.support.builders import cluster_policy, cnp_rule, namespace, namespace_named, pod
from tests.support.schema_oracle import assert_schema_valid

NAME_LABEL = "namespace.kubernetes.io__slash__metadata.name="
GUARD_DENY, GUARD_ACCEPT = "admin deny c>a", "admin pass b>a"
FLOOR_DENIES = {"admin deny *>a", "baseline deny *>a"}  # the Pass of `hand` continued into `floor`


def guard() -> Dict[str, Any]:
    """Admin 10 on namespace a: Deny from c, Accept from b."""
    return cluster_policy("guard", "Admin", 10, namespace_named("a"),
                          ingress=[cnp_rule("Deny", namespace_named("c")), cnp_rule("Accept", namespace_named("b"))])


def hand() -> Dict[str, Any]:
    """Admin 20 on namespace a: Pass from every namespace (to what follows: `floor`)."""
    return cluster_policy("hand", "Admin", 20, namespace_named("a"), ingress=[cnp_rule("Pass", {"namespaces": {}})])


def floor() -> Dict[str, Any]:
    """Baseline 10 on namespace a: Deny from every namespace."""
    return cluster_policy("floor", "Baseline", 10, namespace_named("a"), ingress=[cnp_rule("Deny", {"namespaces": {}})])


def out() -> Dict[str, Any]:
    """Admin 5 on namespace b: Accept towards a (met with guard's Accept from b on the other end)."""
    return cluster_policy("out", "Admin", 5, namespace_named("b"),
                          egress=[cnp_rule("Accept", namespace_named("a"), direction="egress")])


def annotated(manifest: Dict[str, Any], value: Optional[str]) -> Dict[str, Any]:
    manifest = copy.deepcopy(manifest)
    if value is not None:
        manifest["metadata"]["annotations"] = {ANNOTATION: value}
    return manifest


def _end(body: Mapping[str, Any]) -> str:
    tags = body.get("tags") or []
    named = [tag[len(NAME_LABEL):] for tag in tags if tag.startswith(NAME_LABEL)]
    isolated = ["iso"] if any("isolated" in tag for tag in tags) else []
    return "&".join(isolated + named) or "*"


def described(fq_name: Any, body: Mapping[str, Any]) -> str:
    block = fq_name[-1].split("--")[1].rsplit("-", 1)[0]
    return f"{block} {body['action_list']['simple_action']} {_end(body['endpoint_1'])}>{_end(body['endpoint_2'])}"


def block_rules(t: ClusterTranslator) -> Dict[str, Mapping[str, Any]]:
    """The tier blocks' rules by description (each description names one rule here)."""
    found = {}
    for fq_name, body in t.desired()["firewall-rule"].items():
        if fq_name[-1].startswith("k8s--") and not fq_name[-1].startswith("k8s--isolat"):
            name = described(fq_name, body)
            assert name not in found, name
            found[name] = body
    return found


def logged(t: ClusterTranslator) -> Set[str]:
    return {name for name, body in block_rules(t).items() if body["action_list"].get("log")}


def translator(modes: Mapping[str, Optional[str]], policies: List[Any]) -> ClusterTranslator:
    t = ClusterTranslator()
    for name in "abc":
        t.upsert("Namespace", namespace(name))
        t.upsert("Pod", pod(name, "p", f"10.0.0.{ord(name) - ord('a') + 1}", app="p"))
    for make in policies:
        manifest = make()
        t.upsert("ClusterNetworkPolicy", annotated(manifest, modes.get(manifest["metadata"]["name"])))
    t.flush()
    return t


@pytest.mark.parametrize("modes, logs", [
    ({}, set()),
    ({"guard": "deny"}, {GUARD_DENY}),
    ({"guard": "allow"}, {GUARD_ACCEPT}),
    ({"guard": "all"}, {GUARD_DENY, GUARD_ACCEPT}),  # not its Accept met with b's isolation: the NetworkPolicies deny that
    ({"hand": "all"}, set()),  # a Pass decides nothing
    ({"floor": "deny"}, FLOOR_DENIES),  # hand's Pass met with floor's Deny is floor's
    ({"floor": "allow"}, set()),
    ({"guard": "allow", "floor": "deny"}, {GUARD_ACCEPT} | FLOOR_DENIES),
])
def test_a_policy_logs_the_rules_whose_action_it_decides(modes: Dict[str, str], logs: Set[str]) -> None:
    t = translator(modes, [guard, hand, floor])
    assert logged(t) == logs
    assert {"admin deny iso&b>a", "admin deny *>iso&a", "admin deny iso>a", "admin pass *>a"} <= set(block_rules(t))
    for body in block_rules(t).values():
        assert_schema_valid("firewall-rule", body)


@pytest.mark.parametrize("modes", [{"out": "allow"}, {"guard": "allow"}, {"out": "all", "guard": "deny"}])
def test_a_rule_two_policies_decide_logs_if_either_asks(modes: Dict[str, str]) -> None:
    t = translator(modes, [guard, out])
    assert GUARD_ACCEPT in logged(t)  # b's egress Accept met with a's ingress Accept: one rule


def test_a_rule_neither_of_its_policies_asks_for_does_not_log() -> None:
    t = translator({"out": "deny", "guard": "deny"}, [guard, out])
    assert logged(t) == {GUARD_DENY}


@pytest.mark.parametrize("value", ["DENY", "", "none"])
def test_a_bad_value_logs_nothing_and_is_reported(value: str) -> None:
    t = translator({"guard": value}, [guard, hand, floor])
    assert logged(t) == set()
    status = t.status_of("ClusterNetworkPolicy", "", "guard")
    assert status is not None and status.firewall_policy is not None  # still enforced
    reported = [e for e in t.errors() if e["name"] == "guard"]
    assert [e["reason"] for e in reported] == list(status.errors) and ANNOTATION in status.errors[0]
    assert repr(value) in status.errors[0]
    assert not any(e["name"] in ("hand", "floor") for e in t.errors())


def test_a_policy_rejected_whole_reports_a_bad_value_too() -> None:
    manifest = annotated(cluster_policy("broken", "Admin", 5000, namespace_named("a")), "loud")
    t = ClusterTranslator()
    t.upsert("ClusterNetworkPolicy", manifest)
    t.flush()
    status = t.status_of("ClusterNetworkPolicy", "", "broken")
    assert status is not None and status.firewall_policy is None
    assert any(ANNOTATION in reason for reason in status.errors)


@pytest.mark.parametrize("before, after, changed", [
    (None, "deny", {GUARD_DENY}),
    ("deny", "all", {GUARD_ACCEPT}),
    ("all", "allow", {GUARD_DENY}),
    ("allow", None, {GUARD_ACCEPT}),
    ("all", "bad", {GUARD_DENY, GUARD_ACCEPT}),
    ("deny", "deny", set()),
])
def test_a_change_of_the_value_rewrites_only_the_rules_it_concerns(before: Optional[str], after: Optional[str],
                                                                   changed: Set[str]) -> None:
    t = translator({"guard": before}, [guard, hand, floor])
    t.upsert("ClusterNetworkPolicy", annotated(guard(), after))
    report = t.flush()
    rules = t.desired()["firewall-rule"]
    assert {described(fq, rules[fq]) for kind, fq in report.changed} == changed
    assert not report.added and not report.removed


def test_removing_the_annotation_restores_the_bodies() -> None:
    plain = translator({}, [guard, hand, floor, out])
    t = translator({"guard": "all", "floor": "deny", "out": "allow"}, [guard, hand, floor, out])
    assert logged(t)
    for make in (guard, floor, out):
        t.upsert("ClusterNetworkPolicy", make())
    t.flush()
    assert t.desired() == plain.desired()
