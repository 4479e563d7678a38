"""Blocks with fixed ports and blocks naming ports, side by side in one policy and across policies
sharing one spec (SPEC 2.1, 3): each rule keeps its block's name, its own service and endpoints,
whatever the order of the blocks and whichever policy rendered the shared blocks first."""
from __future__ import annotations

import pytest

from tests.support.builders import namespace, pod, policy
from tests.support.schema_oracle import rule_refs, rules, run

APP = "application=k8s"
HTTP = [("http", 8080, "TCP")]
NAMED_IN = {"from": [{"podSelector": {"matchLabels": {"app": "client"}}}], "ports": [{"port": "http"}]}
FIXED_IN = {"from": [{"podSelector": {}}, {"ipBlock": {"cidr": "10.9.0.0/16"}}], "ports": [{"port": 443}]}
FIXED_OUT = {"to": [{"namespaceSelector": {}}], "ports": [{"port": 53, "protocol": "UDP"}]}
NAMED_OUT = {"to": [{"podSelector": {"matchLabels": {"app": "web"}}}], "ports": [{"port": "http"}]}

# (ingress blocks, egress blocks, the pass rules in order: (name after `k8s-<ns>-`, dst port, peer end))
CASES = [
    ([NAMED_IN, FIXED_IN], [FIXED_OUT, NAMED_OUT], [
        ("ingress-p-0-podSelector-0-0", 8080, "client"), ("ingress-p-1-podSelector-0-0", 443, "pods"),
        ("ingress-p-1-ipBlock-1-cidr-10.9.0.0/16-0", 443, "block"),
        ("egress-p-0-namespaceSelector-0-0", 53, "cluster"), ("egress-p-1-podSelector-0-0", 8080, "web")]),
    ([FIXED_IN, NAMED_IN], [NAMED_OUT, FIXED_OUT], [
        ("ingress-p-0-podSelector-0-0", 443, "pods"), ("ingress-p-0-ipBlock-1-cidr-10.9.0.0/16-0", 443, "block"),
        ("ingress-p-1-podSelector-0-0", 8080, "client"),
        ("egress-p-0-podSelector-0-0", 8080, "web"), ("egress-p-1-namespaceSelector-0-0", 53, "cluster")]),
]


def peer_end(kind: str, ns: str):
    return {"client": {"tags": ["app=client", APP, f"namespace={ns}"]},
            "pods": {"tags": [APP, f"namespace={ns}"]},
            "web": {"tags": ["app=web", APP, f"namespace={ns}"]},
            "block": {"address_group": "default-policy-management:10.9.0.0/16"},
            "cluster": {"tags": [APP]}}[kind]


@pytest.mark.parametrize("ingress, egress, expected", CASES)
def test_each_rule_keeps_its_block_name_service_and_ends_in_every_policy_of_the_spec(ingress, egress, expected):
    spec = {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress", "Egress"],
            "ingress": ingress, "egress": egress}
    names = ("a", "b")  # one spec, two namespaces: the blocks are parsed and planned once
    pods = [pod(ns, f"{app}-{ns}", labels={"app": app}, ports=HTTP) for ns in names for app in ("web", "client")]
    result = run(namespaces=[namespace(ns) for ns in names], pods=pods,
                 policies=[policy(ns, "p", spec) for ns in names])
    by_name = rules(result)
    for ns in names:
        own = {"tags": ["app=web", APP, f"namespace={ns}"]}
        refs = [name for name, _ in rule_refs(result, f"k8s-{ns}-p")]
        assert refs == [f"k8s-{ns}-{tail}" for tail, _, _ in expected]
        for name, (tail, port, kind) in zip(refs, expected):
            rule = by_name[name]
            assert rule["service"]["dst_ports"] == {"start_port": port, "end_port": port}
            ends = (rule["endpoint_1"], rule["endpoint_2"])
            assert ends == ((peer_end(kind, ns), own) if tail.startswith("ingress") else (own, peer_end(kind, ns)))
    assert result["errors"] == []
