"""The Contrail flow evaluator (kube_manager.explain.flow) on hand-made translations.

Each test pins one rule of SPEC section 6; the last one checks the rule index against a plain
first-match scan written independently here.
"""
from __future__ import annotations

import ipaddress
from typing import Any, Dict, List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conformance.contrail import (ANY, address_group, firewall_policy, group, rule, service, tags,
                                  translation, workload)
from kube_manager.explain.flow import ContrailEvaluator, NumericProtocol, Workload

APP = "application=k8s"
A = workload("x", "a", "10.0.1.1", APP, "namespace=x", "pod=a")
B = workload("x", "b", "10.0.1.2", APP, "namespace=x", "pod=b")
OTHER_CLUSTER = workload("o", "z", "10.9.0.1", "application=other", "namespace=x", "pod=a")


def w(raw: Dict[str, Any]) -> Workload:
    return Workload(ipaddress.ip_address(raw["ip"]) if raw["ip"] else None, frozenset(raw["tags"]))


def outside(ip: str) -> Workload:
    return Workload(ipaddress.ip_address(ip), frozenset())


def single_policy(*rules: Dict[str, Any], groups=(), workloads=(A, B)) -> ContrailEvaluator:
    seqs = [(r["name"], f"{i:05d}.0") for i, r in enumerate(rules)]
    return ContrailEvaluator(translation([(firewall_policy("p", seqs), "1.0")], list(rules),
                                         list(workloads), groups))


def test_flow_between_workloads_outside_the_aps_is_allowed():
    evaluator = single_policy(rule("deny", ANY, ANY, "deny"))
    decision = evaluator.evaluate(w(OTHER_CLUSTER), outside("192.0.2.1"), 80, "tcp")
    assert decision.allowed and not decision.under_aps and decision.rule is None
    assert evaluator.evaluate(w(OTHER_CLUSTER), w(A), 80, "tcp").rule == "deny"


def test_under_the_aps_with_no_matching_rule_is_dropped():
    evaluator = single_policy(rule("a-to-b", tags(APP, "pod=a"), tags(APP, "pod=b")))
    decision = evaluator.evaluate(w(B), w(A), 80, "tcp")
    assert decision.under_aps and not decision.allowed and decision.rule is None
    assert evaluator.evaluate(w(A), w(B), 80, "tcp").allowed


def test_policies_are_taken_by_numeric_sequence_then_name():
    deny, allow = rule("deny", ANY, ANY, "deny"), rule("allow", ANY, ANY, "pass")
    def verdict(deny_seq: str, allow_seq: str, deny_name="p-deny", allow_name="p-allow"):
        policies = [(firewall_policy(deny_name, [("deny", "1.0")]), deny_seq),
                    (firewall_policy(allow_name, [("allow", "1.0")]), allow_seq)]
        evaluator = ContrailEvaluator(translation(policies, [deny, allow], [A, B]))
        return evaluator.evaluate(w(A), w(B), 80, "tcp")
    assert verdict("2.0", "1.123456789012").rule == "allow"
    assert verdict("9.0", "10.0").rule == "deny"  # numeric, not string order
    assert verdict("3.0", "3.0", "b", "a").policy == "a"  # tie: by name
    assert verdict("3.0", "3.0", "a", "b").policy == "a"


def test_rules_are_taken_by_sequence_inside_a_policy_then_name():
    deny, allow = rule("r-deny", ANY, ANY, "deny"), rule("r-allow", ANY, ANY, "pass")
    def first(deny_seq: str, allow_seq: str) -> Optional[str]:
        policy = firewall_policy("p", [("r-deny", deny_seq), ("r-allow", allow_seq)])
        evaluator = ContrailEvaluator(translation([(policy, "1.0")], [deny, allow], [A, B]))
        return evaluator.evaluate(w(A), w(B), 80, "tcp").rule
    assert first("00001.0", "00000.0") == "r-allow"
    assert first("00000.0", "00001.0") == "r-deny"
    assert first("00000.0", "00000.0") == "r-allow"


def test_tag_endpoint_needs_every_tag():
    evaluator = single_policy(rule("ab", tags(APP, "namespace=x", "pod=a"), tags(APP, "pod=b")))
    assert evaluator.evaluate(w(A), w(B), 80, "tcp").rule == "ab"
    not_quite_a = Workload(w(A).ip, frozenset({APP, "pod=a"}))
    assert evaluator.evaluate(not_quite_a, w(B), 80, "tcp").rule is None


def test_address_group_matches_ips_in_its_prefixes():
    groups = [address_group("10.0.0.0/16-except-10.0.1.2/32", "10.0.0.0/24", "10.0.1.0/31",
                            "10.0.1.3/32", "10.0.1.4/30"),
              address_group("empty")]
    evaluator = single_policy(rule("from-group", group("10.0.0.0/16-except-10.0.1.2/32"),
                                   tags(APP)),
                              rule("from-empty", group("empty"), ANY), groups=groups)
    assert evaluator.evaluate(w(A), w(B), 80, "tcp").rule == "from-group"       # pod IP 10.0.1.1
    assert evaluator.evaluate(w(B), w(A), 80, "tcp").rule is None                # the except
    assert evaluator.evaluate(outside("10.0.0.77"), w(A), 80, "tcp").rule == "from-group"
    assert evaluator.evaluate(outside("10.0.2.1"), w(A), 80, "tcp").rule is None
    assert evaluator.evaluate(outside("10.0.1.5"), w(A), 80, "tcp").rule == "from-group"
    assert evaluator.evaluate(outside("10.0.1.8"), w(A), 80, "tcp").rule is None


def test_pod_without_ip_matches_no_address_group():
    pending = workload("x", "p", None, APP, "pod=a")
    evaluator = single_policy(rule("all", group("all"), ANY),
                              groups=[address_group("all", "0.0.0.0/0")], workloads=[A, pending])
    assert evaluator.evaluate(w(pending), w(A), 80, "tcp").rule is None
    assert evaluator.evaluate(w(A), w(pending), 80, "tcp").rule == "all"


def test_ipv6_address_groups():
    evaluator = single_policy(rule("v6", ANY, group("fd00__/64")),
                              groups=[address_group("fd00__/64", "fd00::/64")])
    assert evaluator.evaluate(w(A), outside("fd00::1"), 80, "tcp").rule == "v6"
    assert evaluator.evaluate(w(A), outside("fd01::1"), 80, "tcp").rule is None


def test_any_matches_outside_addresses_and_pods():
    evaluator = single_policy(rule("in", ANY, tags(APP)))
    assert evaluator.evaluate(outside("198.51.100.1"), w(A), 80, "tcp").rule == "in"
    assert evaluator.evaluate(w(B), w(A), 80, "tcp").rule == "in"
    assert evaluator.evaluate(w(A), outside("198.51.100.1"), 80, "tcp").rule is None


def test_service_protocol_and_port_range():
    evaluator = single_policy(rule("tcp", ANY, ANY, svc=service("tcp", 80, 81)),
                              rule("sctp", ANY, ANY, svc=service("sctp", 9000, 9000)),
                              rule("any", tags("pod=b"), ANY, svc=service("any", 5, 5)))
    assert evaluator.evaluate(w(A), w(B), 80, "tcp").rule == "tcp"
    assert evaluator.evaluate(w(A), w(B), 81, "tcp").rule == "tcp"
    assert evaluator.evaluate(w(A), w(B), 82, "tcp").rule is None
    assert evaluator.evaluate(w(A), w(B), 80, "udp").rule is None
    assert evaluator.evaluate(w(A), w(B), 9000, "sctp").rule == "sctp"
    assert evaluator.evaluate(w(B), w(A), 5, "udp").rule == "any"


@pytest.mark.parametrize("number", ["0", "6", "132"])
def test_a_numeric_protocol_is_refused(number):
    """Contrail reads protocol 0 as any and tf-controller refuses numbers: no reading of one is right."""
    with pytest.raises(NumericProtocol):
        single_policy(rule("numbered", ANY, ANY, svc=service(number, 0, 65535)))


def test_source_ports_must_cover_an_unknown_ephemeral_port():
    evaluator = single_policy(rule("src", ANY, ANY, svc=service("tcp", 80, 80, src=(1000, 2000))))
    assert evaluator.evaluate(w(A), w(B), 80, "tcp").rule is None
    assert evaluator.evaluate(w(A), w(B), 80, "tcp", src_port=1500).rule == "src"
    assert evaluator.evaluate(w(A), w(B), 80, "tcp", src_port=2001).rule is None


def test_rule_direction():
    forward = single_policy(rule("fw", tags("pod=a"), tags("pod=b"), direction=">"))
    backward = single_policy(rule("bw", tags("pod=a"), tags("pod=b"), direction="<"))
    both = single_policy(rule("bi", tags("pod=a"), tags("pod=b"), direction="<>"))
    assert forward.evaluate(w(A), w(B), 80, "tcp").rule == "fw"
    assert forward.evaluate(w(B), w(A), 80, "tcp").rule is None
    assert backward.evaluate(w(B), w(A), 80, "tcp").rule == "bw"
    assert backward.evaluate(w(A), w(B), 80, "tcp").rule is None
    assert both.evaluate(w(A), w(B), 80, "tcp").rule == "bi"
    assert both.evaluate(w(B), w(A), 80, "tcp").rule == "bi"


def test_match_tags_need_equal_values_at_both_ends():
    c = workload("y", "c", "10.0.2.3", APP, "namespace=y", "pod=c")
    evaluator = single_policy(rule("same-ns", tags(APP), tags(APP), match_tags=["namespace"]),
                              workloads=[A, B, c])
    assert evaluator.evaluate(w(A), w(B), 80, "tcp").rule == "same-ns"
    assert evaluator.evaluate(w(A), w(c), 80, "tcp").rule is None


def test_unknown_endpoint_forms_and_references_match_nothing():
    evaluator = single_policy(rule("vn", {"virtual_network": "vn1"}, ANY),
                              rule("empty", {"tags": []}, ANY),
                              rule("lost-group", group("missing"), ANY))
    assert evaluator.evaluate(w(A), w(B), 80, "tcp").rule is None


def test_refs_to_missing_policies_and_rules_are_skipped():
    policy = firewall_policy("p", [("missing-rule", "00000.0"), ("ok", "00001.0")])
    data = translation([(policy, "1.0"), (firewall_policy("q", []), "0.5")],
                       [rule("ok", ANY, ANY)], [A, B])
    data["firewall_policies"] = [policy]  # q is referenced by the APS but absent
    assert ContrailEvaluator(data).evaluate(w(A), w(B), 80, "tcp").rule == "ok"


def test_cluster_name_sets_the_application_tag():
    evaluator = ContrailEvaluator(translation([], [], [A], cluster="other"))
    assert evaluator.application_tag == "application=other"
    assert evaluator.evaluate(w(OTHER_CLUSTER), outside("192.0.2.1"), 80, "tcp").under_aps
    assert not evaluator.evaluate(w(A), outside("192.0.2.1"), 80, "tcp").under_aps


# ---- the index agrees with a plain scan ------------------------------------------------------

TAG_POOL = [APP, "namespace=x", "namespace=y", "pod=a", "pod=b"]
IP_POOL = ["10.0.0.1", "10.0.0.2", "10.0.1.1", "192.0.2.1", None]
GROUPS = {"g0": ["10.0.0.0/24"], "g1": ["10.0.0.2/32", "192.0.2.0/24"], "g2": []}


def naive_first_match(data: Dict[str, Any], src: Workload, dst: Workload, port: int,
                      protocol: str) -> Optional[str]:
    """First match by a direct scan of the raw dict (forward rules only, as generated)."""
    groups = {g["fq_name"][1]: [ipaddress.ip_network(f"{s['ip_prefix']}/{s['ip_prefix_len']}")
                                for s in g["address_group_prefix"]["subnet"]]
              for g in data["address_groups"]}
    rules = {r["name"]: r for r in data["firewall_rules"]}
    policies = {p["name"]: p for p in data["firewall_policies"]}

    def hit(endpoint: Dict[str, Any], end: Workload) -> bool:
        if endpoint.get("any"):
            return True
        if "address_group" in endpoint:
            nets = groups[endpoint["address_group"].split(":")[1]]
            return end.ip is not None and any(end.ip in n for n in nets)
        return set(endpoint["tags"]) <= end.tags

    def order(ref):
        return (float(ref["attr"]["sequence"]), ref["to"][-1])
    for policy_ref in sorted(data["application_policy_set"]["firewall_policy_refs"], key=order):
        for rule_ref in sorted(policies[policy_ref["to"][-1]]["firewall_rule_refs"], key=order):
            r = rules[rule_ref["to"][-1]]
            svc = r["service"]
            if (hit(r["endpoint_1"], src) and hit(r["endpoint_2"], dst)
                    and svc["protocol"] in ("any", protocol)
                    and svc["dst_ports"]["start_port"] <= port <= svc["dst_ports"]["end_port"]):
                return r["name"]
    return None


endpoints = st.one_of(
    st.just(ANY),
    st.sampled_from(sorted(GROUPS)).map(group),
    st.lists(st.sampled_from(TAG_POOL), min_size=1, max_size=3, unique=True).map(lambda t: tags(*t)),
)
services = st.builds(lambda proto, start, width: service(proto, start, start + width),
                     st.sampled_from(["any", "tcp", "udp"]), st.integers(79, 82), st.integers(0, 2))
rule_specs = st.lists(st.tuples(endpoints, endpoints, st.sampled_from(["pass", "deny"]), services,
                                st.integers(0, 3)), min_size=1, max_size=12)
workload_specs = st.lists(st.tuples(st.sampled_from(IP_POOL),
                                    st.lists(st.sampled_from(TAG_POOL), max_size=4, unique=True)),
                          min_size=2, max_size=5)


@settings(max_examples=100, deadline=None)
@given(rule_specs, workload_specs, st.integers(79, 83), st.sampled_from(["tcp", "udp"]))
def test_indexed_evaluation_equals_a_plain_first_match_scan(specs, workload_list, port, protocol):
    rules, by_policy = [], {}
    for i, (ep1, ep2, action, svc, policy_index) in enumerate(specs):
        rules.append(rule(f"r{i}", ep1, ep2, action, svc))
        by_policy.setdefault(policy_index, []).append((f"r{i}", f"{(i * 7) % 5:05d}.0"))
    policies = [(firewall_policy(f"p{k}", refs), f"{3 - k}.0") for k, refs in by_policy.items()]
    raw_workloads = [workload("n", f"w{i}", ip, *t) for i, (ip, t) in enumerate(workload_list)]
    data = translation(policies, rules, raw_workloads,
                       [address_group(name, *prefixes) for name, prefixes in GROUPS.items()])
    evaluator = ContrailEvaluator(data)
    ends: List[Workload] = [w(x) for x in raw_workloads] + [outside("10.0.0.2")]
    for src in ends:
        for dst in ends:
            decision = evaluator.evaluate(src, dst, port, protocol)
            if APP in src.tags or APP in dst.tags:
                assert decision.rule == naive_first_match(data, src, dst, port, protocol)
            else:
                assert decision.allowed and decision.rule is None
