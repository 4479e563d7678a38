"""The policies of the upstream ClusterNetworkPolicy conformance tests, transcribed with our builders
(conformance/base/{admin_tier,baseline_tier,api_integration}/*.yaml at the commit upstream.py
names), keyed by the upstream file they come from. Rule names of the protocol ladders are ours;
everything that decides a verdict (tier, priority, subject, rule order, actions, peers, ports) is
upstream's.
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from tests.support.builders import cnp_port, cnp_rule
from tests.conformance.houses import (HOST_PORTS, by_house, by_name, cnp, house_pods, ladder, namespaces,
                                network_policy, networks, nodes, pod_ip, port_range)

ALL_ADDRESSES = networks("0.0.0.0/0", "::/0")
# The rule the inline-CIDR tests put first: Accept to two pods' addresses.
TO_TWO_POD_IPS = cnp_rule("Accept", networks(f"{pod_ip('ravenclaw/luna-lovegood-0')}/32",
                                              f"{pod_ip('hufflepuff/cedric-diggory-0')}/32"),
                          direction="egress", name="allow-egress-to-specific-podIPs")
MIXED_DENIED = [cnp_port("tcp", 80), cnp_port("udp", 53), cnp_port("sctp", 9003)]


def _protocol_test(tier: str, name: str, priority: int, direction: str, subject: str,
                   houses: Tuple[str, str, str], second_ports: Sequence[Dict[str, Any]],
                   third_ports: Sequence[Dict[str, Any]]) -> Tuple[Dict[str, Any], ...]:
    """One of the per-protocol tests' policy: the ladder on one direction of one house."""
    rules = ladder(direction, *houses, second_ports, third_ports, passes=tier == "Admin")
    return (cnp(name, tier, priority, namespaces(by_name(subject)), **{direction: rules}),)


def _gress(tier: str, name: str, priority: int) -> Tuple[Dict[str, Any], ...]:
    passes = tier == "Admin"
    ingress = ladder("ingress", "ravenclaw", "slytherin", "hufflepuff", MIXED_DENIED,
                     [cnp_port("tcp", 80), cnp_port("udp", 5353), cnp_port("sctp", 9003)], passes)
    egress = ladder("egress", "ravenclaw", "slytherin", "hufflepuff", MIXED_DENIED,
                    [cnp_port("tcp", 8080), cnp_port("udp", 5353), cnp_port("sctp", 9003)], passes)
    return (cnp(name, tier, priority, namespaces(by_name("gryffindor")), ingress=ingress,
                egress=egress),)


def _inline_cidr(tier: str, name: str, priority: int,
                 subject: Dict[str, Any]) -> Tuple[Dict[str, Any], ...]:
    return (cnp(name, tier, priority, subject, egress=[
        cnp_rule("Accept", house_pods("slytherin"), direction="egress", name="allow-egress-to-slytherin"),
        cnp_rule("Deny", ALL_ADDRESSES, direction="egress", name="deny-egress-to-internet")]),)


def _slytherin_rules(action: str, what: str) -> Dict[str, List[Dict[str, Any]]]:
    return {"ingress": [cnp_rule(action, house_pods("slytherin"), direction="ingress",
                                 name=f"{what}-all-ingress-from-slytherin")],
            "egress": [cnp_rule(action, house_pods("slytherin"), direction="egress",
                                name=f"{what}-all-egress-to-slytherin")]}


def _ns_slytherin_rules() -> Dict[str, List[Dict[str, Any]]]:
    peer = namespaces(by_house("slytherin"))
    return {"ingress": [cnp_rule("Deny", peer, direction="ingress", name="deny-all-ingress-from-slytherin")],
            "egress": [cnp_rule("Deny", peer, direction="egress", name="deny-all-egress-to-slytherin")]}


GRYFFINDOR_PODS = house_pods("gryffindor")
A, B = "admin_tier", "baseline_tier"
# The per-protocol tests: the Admin tier policy's name (its direction first; the Baseline tier's is
# always `default`, priority 10), the subject house, the ladder's three houses, the ports of its
# second and third house, and the Admin tier priority.
_PROTOCOL_TESTS = (
    ("ingress-tcp", "gryffindor", ("ravenclaw", "slytherin", "hufflepuff"), ("tcp", 80), ("tcp", 80), 3),
    ("ingress-udp", "hufflepuff", ("ravenclaw", "slytherin", "gryffindor"), ("udp", 5353), ("udp", 53), 4),
    ("ingress-sctp", "ravenclaw", ("gryffindor", "slytherin", "hufflepuff"), ("sctp", 9003), ("sctp", 9003), 5),
    ("egress-tcp", "gryffindor", ("ravenclaw", "slytherin", "hufflepuff"), ("tcp", 80), ("tcp", 8080), 6),
    ("egress-udp", "hufflepuff", ("ravenclaw", "slytherin", "gryffindor"), ("udp", 5353), ("udp", 53), 7),
    ("egress-sctp", "ravenclaw", ("gryffindor", "slytherin", "hufflepuff"), ("sctp", 9003), ("sctp", 9003), 8),
)

MANIFESTS: Dict[str, Tuple[Dict[str, Any], ...]] = {
    f"{folder}/standard-{name}-rules.yaml": _protocol_test(
        tier, name if tier == "Admin" else "default", priority if tier == "Admin" else 10,
        name.split("-")[0], subject, houses, [cnp_port(*second)], [cnp_port(*third)])
    for folder, tier in ((A, "Admin"), (B, "Baseline"))
    for name, subject, houses, second, third, priority in _PROTOCOL_TESTS
}
MANIFESTS.update({
    f"{A}/standard-gress-rules-combined.yaml": _gress("Admin", "gress-rules", 15),
    f"{A}/standard-egress-inline-cidr-rules.yaml": _inline_cidr(
        "Admin", "inline-cidr-as-peers-example", 85, GRYFFINDOR_PODS),
    f"{A}/experimental-egress-selector-rules.yaml": (cnp(
        "node-and-cidr-as-peers-example", "Admin", 75, GRYFFINDOR_PODS, egress=[
            cnp_rule("Accept", nodes(), direction="egress", name=f"allow-egress-to-{HOST_PORTS[0]}-on-nodes",
                     protocols=[cnp_port("tcp", HOST_PORTS[0])]),
            cnp_rule("Pass", nodes(), direction="egress", name=f"pass-egress-to-{HOST_PORTS[2]}-on-nodes",
                     protocols=[cnp_port("udp", HOST_PORTS[2])]),
            cnp_rule("Deny", house_pods("slytherin"), nodes(), ALL_ADDRESSES, direction="egress",
                     name="deny-egress-to-slytherin-and-nodes-and-internet")]),),
    f"{A}/standard-priority-field.yaml": (
        cnp("priority-50-example", "Admin", 50, GRYFFINDOR_PODS, **_slytherin_rules("Deny", "deny")),
        cnp("old-priority-60-new-priority-40-example", "Admin", 60, GRYFFINDOR_PODS,
            **_slytherin_rules("Pass", "pass")),
        cnp("default", "Baseline", 10, GRYFFINDOR_PODS, **_slytherin_rules("Accept", "allow"))),
    "api_integration/standard-anp-np-banp.yaml": (
        cnp("pass-example", "Admin", 10, namespaces(by_house("gryffindor")), **_ns_slytherin_rules()),
        network_policy("gryffindor", "allow-gress-from-to-slytherin-to-gryffindor", {
            "podSelector": None, "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"namespaceSelector": by_house("slytherin")}]}],
            "egress": [{"to": [{"namespaceSelector": by_house("slytherin")}]}]}),
        cnp("default", "Baseline", 10, namespaces(by_house("gryffindor")), **_ns_slytherin_rules())),
    f"{B}/standard-gress-rules-combined.yaml": _gress("Baseline", "default", 10),
    f"{B}/standard-egress-inline-cidr-rules.yaml": _inline_cidr(
        "Baseline", "default", 10, namespaces(by_name("gryffindor"))),
    f"{B}/experimental-egress-selector-rules.yaml": (cnp(
        "default", "Baseline", 10, namespaces(by_name("gryffindor")), egress=[
            cnp_rule("Accept", nodes(), direction="egress", name=f"allow-egress-to-{HOST_PORTS[0]}-on-nodes",
                     protocols=[port_range("tcp", HOST_PORTS[0], HOST_PORTS[1])]),
            cnp_rule("Deny", nodes(), ALL_ADDRESSES, direction="egress",
                     name="deny-egress-to-nodes-and-internet")]),),
})
