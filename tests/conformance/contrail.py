"""Builders for hand-made translations in the SPEC section 8 JSON format, so the flow evaluator can
be tested without the translator."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

PM = "default-policy-management"


def tags(*values: str) -> Dict[str, Any]:
    return {"tags": sorted(values)}


def group(name: str) -> Dict[str, Any]:
    return {"address_group": f"{PM}:{name}"}


ANY = {"any": True}


def service(protocol: str = "any", start: int = 0, end: int = 65535,
            src: Tuple[int, int] = (0, 65535)) -> Dict[str, Any]:
    return {"protocol": protocol, "dst_ports": {"start_port": start, "end_port": end},
            "src_ports": {"start_port": src[0], "end_port": src[1]}}


def rule(name: str, ep1: Dict[str, Any], ep2: Dict[str, Any], action: str = "pass",
         svc: Optional[Dict[str, Any]] = None, direction: str = ">",
         match_tags: Sequence[str] = ()) -> Dict[str, Any]:
    return {"fq_name": [PM, name], "parent_type": "policy-management", "name": name,
            "action_list": {"simple_action": action}, "direction": direction,
            "endpoint_1": ep1, "endpoint_2": ep2, "service": svc or service(),
            "match_tags": {"tag_list": list(match_tags)}}


def firewall_policy(name: str, rules: Sequence[Tuple[str, str]]) -> Dict[str, Any]:
    """`rules` are (rule name, sequence)."""
    return {"fq_name": [PM, name], "parent_type": "policy-management", "name": name,
            "firewall_rule_refs": [{"to": [PM, r], "attr": {"sequence": s}} for r, s in rules]}


def address_group(name: str, *prefixes: str) -> Dict[str, Any]:
    subnets = []
    for prefix in prefixes:
        address, length = prefix.split("/")
        subnets.append({"ip_prefix": address, "ip_prefix_len": int(length)})
    return {"fq_name": [PM, name], "parent_type": "policy-management", "name": name,
            "address_group_prefix": {"subnet": subnets}}


def workload(ns: str, name: str, ip: Optional[str], *tag_list: str) -> Dict[str, Any]:
    return {"namespace": ns, "name": name, "ip": ip, "tags": sorted(tag_list)}


def translation(policies: Sequence[Tuple[Dict[str, Any], str]], rules: List[Dict[str, Any]],
                workloads: List[Dict[str, Any]], groups: Sequence[Dict[str, Any]] = (),
                cluster: str = "k8s") -> Dict[str, Any]:
    """`policies` are (firewall policy, APS sequence)."""
    return {
        "cluster_name": cluster,
        "tags": [],
        "address_groups": list(groups),
        "firewall_rules": rules,
        "firewall_policies": [p for p, _ in policies],
        "application_policy_set": {
            "fq_name": [PM, cluster], "parent_type": "policy-management", "name": cluster,
            "firewall_policy_refs": [{"to": p["fq_name"], "attr": {"sequence": s}}
                                     for p, s in policies],
            "tag_refs": [{"to": [f"application={cluster}"], "attr": None}]},
        "workloads": workloads,
        "errors": [],
    }
