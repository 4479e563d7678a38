"""The rule index kept up to date (kube_manager.explain.flow_index) against one built afresh.

A random sequence of translations, each made from the previous one by replacing some bodies (the
others shared, as the translator shares what it did not change), removing some, and changing the
APS's ref list in place or not: after each, the kept index must decide every flow as an evaluator
built from scratch over the same translation, with the same rules matching in the same order.
"""
from __future__ import annotations

import ipaddress
from typing import Any, Dict, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube_manager.explain.flow import ContrailEvaluator, Workload, translation_source
from kube_manager.explain.flow_index import RuleIndex
from tests.conformance.contrail import (ANY, address_group, firewall_policy, group, rule, service, tags,
                                        workload)

PM = "default-policy-management"
APP = "application=k8s"
ENDPOINTS = [ANY, tags(APP), tags(APP, "app=web"), tags("app=db"), tags(APP, "app=db", "team=red"),
             group("g0"), group("g1"), {"virtual_network": "x"}]
PREFIXES = ["10.0.0.0/24", "10.0.0.1/32", "10.0.1.0/24", "10.0.0.0/16", "fd00::/64"]
IPS = ["10.0.0.1", "10.0.0.2", "10.0.1.5", "fd00::1", None]
TAGS = [APP, "app=web", "app=db", "team=red", "team=blue"]
RULES, GROUPS, POLICIES, PODS = 6, 2, 3, 4

rule_bodies = st.builds(
    lambda i, ep1, ep2, action, port, direction, match: rule(
        f"r{i}", ep1, ep2, action, service("tcp", port, port) if port else None, direction, match),
    st.just(0), st.sampled_from(ENDPOINTS), st.sampled_from(ENDPOINTS), st.sampled_from(["pass", "deny"]),
    st.sampled_from([0, 80, 5432]), st.sampled_from([">", "<", "<>"]),
    st.sampled_from([(), ("team",)]))
sequences = st.sampled_from(["1.0", "2.0", "2.00", "10.5", "x"])  # "x": unreadable, ordered last


def _named(body: Dict[str, Any], name: str) -> Dict[str, Any]:
    return {**body, "fq_name": [PM, name], "name": name}


@st.composite
def next_translation(draw: Any, previous: Dict[str, Any]) -> Dict[str, Any]:
    """The previous translation with some bodies replaced or removed, the others shared."""
    def pick(kind: str, name: str, make: Any) -> List[Any]:
        kept = previous.get(kind, {}).get(name)
        choice = draw(st.sampled_from(["keep", "new", "gone"] if kept is not None else ["new", "gone"]))
        return [kept] if choice == "keep" else [make()] if choice == "new" else []

    state: Dict[str, Dict[str, Any]] = {"rules": {}, "groups": {}, "policies": {}, "workloads": {}}
    for i in range(RULES):
        for body in pick("rules", f"r{i}", lambda: _named(draw(rule_bodies), f"r{i}")):
            state["rules"][f"r{i}"] = body
    for i in range(GROUPS):
        for body in pick("groups", f"g{i}", lambda: address_group(
                f"g{i}", *draw(st.lists(st.sampled_from(PREFIXES), max_size=2, unique=True)))):
            state["groups"][f"g{i}"] = body
    for i in range(POLICIES):
        for body in pick("policies", f"p{i}", lambda: firewall_policy(f"p{i}", draw(st.lists(
                st.tuples(st.sampled_from([f"r{j}" for j in range(RULES + 1)]), sequences), max_size=5)))):
            state["policies"][f"p{i}"] = body
    for i in range(PODS):
        for body in pick("workloads", f"w{i}", lambda: workload(
                "ns", f"w{i}", draw(st.sampled_from(IPS)), *draw(st.lists(st.sampled_from(TAGS), unique=True)))):
            state["workloads"][f"w{i}"] = body
    refs = [{"to": [PM, name], "attr": {"sequence": seq}} for name, seq in draw(st.lists(
        st.tuples(st.sampled_from([f"p{i}" for i in range(POLICIES + 1)]), sequences), max_size=5))]
    aps = previous.get("aps")
    if aps is not None and draw(st.booleans()):
        kept = {(tuple(r["to"]), r["attr"]["sequence"]): r for r in aps["firewall_policy_refs"]}
        aps["firewall_policy_refs"][:] = [kept.get((tuple(r["to"]), r["attr"]["sequence"]), r) for r in refs]
    else:
        aps = {"fq_name": [PM, "k8s"], "firewall_policy_refs": refs}
    return {**state, "aps": aps}


def _as_translation(state: Dict[str, Any]) -> Dict[str, Any]:
    return {"cluster_name": "k8s", "application_policy_set": state["aps"],
            "firewall_policies": list(state["policies"].values()), "firewall_rules": list(state["rules"].values()),
            "address_groups": list(state["groups"].values()), "workloads": list(state["workloads"].values())}


def _ends(state: Dict[str, Any]) -> List[Workload]:
    found = [Workload(ipaddress.ip_address(w["ip"]) if w["ip"] else None, frozenset(w["tags"]))
             for w in state["workloads"].values()]
    return found + [Workload(ipaddress.ip_address("10.0.0.9"), frozenset())]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_kept_index_evaluates_as_a_fresh_one(data):
    index = RuleIndex()
    state: Dict[str, Any] = {}
    for _ in range(data.draw(st.integers(1, 5))):
        state = data.draw(next_translation(state))
        translation = _as_translation(state)
        index.update(translation_source(translation))
        fresh = ContrailEvaluator(translation)
        kept = ContrailEvaluator.over(index, "k8s", fresh.workloads)
        for src in _ends(state):
            for dst in _ends(state):
                assert kept.pair_rules(src, dst) == fresh.pair_rules(src, dst), (src, dst)
                for port in (80, 5432, 443):
                    assert kept.evaluate(src, dst, port, "tcp") == fresh.evaluate(src, dst, port, "tcp")


def test_a_rule_replaced_under_its_name_is_evaluated_anew():
    """A body replaced in place of another of the same name, its policy untouched."""
    allow = rule("r", ANY, tags(APP), "pass")
    policy = firewall_policy("p", [("r", "1.0")])
    pods = [workload("ns", "a", "10.0.0.1", APP)]
    translation = {"application_policy_set": {"fq_name": [PM, "k8s"], "firewall_policy_refs": [
        {"to": [PM, "p"], "attr": {"sequence": "1.0"}}]}, "firewall_policies": [policy],
        "firewall_rules": [allow], "address_groups": [], "workloads": pods}
    index = RuleIndex()
    index.update(translation_source(translation))
    end = Workload(ipaddress.ip_address("10.0.0.1"), frozenset([APP]))
    assert ContrailEvaluator.over(index, "k8s", {}).evaluate(end, end, 80, "tcp").allowed
    translation["firewall_rules"] = [rule("r", ANY, tags(APP), "deny")]
    index.update(translation_source(translation))
    assert not ContrailEvaluator.over(index, "k8s", {}).evaluate(end, end, 80, "tcp").allowed
    assert index.compiled == 2
    translation["firewall_rules"] = []  # gone, the policy still refers to it: nothing matches
    index.update(translation_source(translation))
    assert ContrailEvaluator.over(index, "k8s", {}).evaluate(end, end, 80, "tcp").rule is None


def _assert_evaluates_as_fresh(index: RuleIndex, state: Dict[str, Any]) -> None:
    fresh = ContrailEvaluator(_as_translation(state))
    kept = ContrailEvaluator.over(index, "k8s", fresh.workloads)
    for src in _ends(state):
        for dst in _ends(state):
            assert kept.pair_rules(src, dst) == fresh.pair_rules(src, dst), (src, dst)


def _object_keys(state: Dict[str, Any]) -> set:
    kinds = {"rules": "firewall-rule", "groups": "address-group", "policies": "firewall-policy"}
    return {(kinds[kind], (PM, name)) for kind in kinds for name in state.get(kind, {})}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_an_index_built_in_steps_while_the_translation_changes_evaluates_as_a_fresh_one(data):
    """A build in steps (the daemon's, between events) while the translation changes between two
    steps (bodies replaced, the APS's ref list changed in place): the next update, told of every
    object that changed meanwhile (or of none: then it looks at every object), catches up."""
    state = data.draw(next_translation({}))
    index = RuleIndex()
    steps = index.steps(translation_source(_as_translation(state)), step=data.draw(st.integers(1, 4)))
    before = state
    for _ in range(data.draw(st.integers(0, 6))):
        next(steps, None)
        if data.draw(st.booleans()):
            state = data.draw(next_translation(state))
    for _ in steps:
        pass
    told = data.draw(st.booleans())
    index.update(translation_source(_as_translation(state)),
                 _object_keys(before) | _object_keys(state) if told else None)
    _assert_evaluates_as_fresh(index, state)


def test_an_index_built_in_steps_gives_turns_and_answers_as_one_built_at_once():
    state = {"rules": {f"r{i}": _named(rule(f"r{i}", tags(APP), tags(f"app=a{i}"), "pass"), f"r{i}") for i in range(9)},
             "groups": {}, "workloads": {"w0": workload("ns", "w0", "10.0.0.1", APP, "app=a3")},
             "policies": {"p0": firewall_policy("p0", [(f"r{i}", f"{i}.0") for i in range(9)])},
             "aps": {"fq_name": [PM, "k8s"], "firewall_policy_refs": [{"to": [PM, "p0"], "attr": {"sequence": "1.0"}}]}}
    index = RuleIndex()
    turns = sum(1 for _ in index.steps(translation_source(_as_translation(state)), step=2))
    assert turns >= 9  # nine rules filed, nine refs read: a turn every two
    assert index.compiled == 9
    _assert_evaluates_as_fresh(index, state)


def test_rules_sharing_their_parts_compile_as_each_alone():
    """The translator shares one dict per distinct endpoint and service between its rules; a pass
    compiles each once (`SharedParts`), by identity: a dict equal to another but not the same one,
    or one of the same shape with other values, is compiled for itself."""
    from kube_manager.explain.flow_rules import SharedParts, oriented

    web, db, web_again = tags(APP, "app=web"), tags(APP, "app=db"), tags(APP, "app=web")
    http, pg = service("tcp", 80, 80), service("tcp", 5432, 5432)
    bodies = [_named(rule("r0", web, db, "pass", pg), "r0"), _named(rule("r1", db, web, "deny", http, "<>"), "r1"),
              _named(rule("r2", web_again, web, "pass", http), "r2"), _named(rule("r3", ANY, group("g0"), "pass"), "r3")]
    bodies.append({**bodies[0], "endpoint_2": web, "service": http})  # the same dicts in other places
    parts = SharedParts()
    for body in bodies:
        fq = tuple(body["fq_name"])
        assert oriented("p", fq, body, parts) == oriented("p", fq, body)
