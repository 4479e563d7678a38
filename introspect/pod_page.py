"""The pod page (SPEC 10): a pod's tags, the policies that select it, and the policies that admit
traffic to and from it.

"Why can this pod not talk?" starts from the pod, not from a policy. The page answers the first
questions from the policies as Kubernetes reads them (k8s_semantics over the DB's manifests):
which NetworkPolicies select the pod and which directions they isolate; which rule blocks let
traffic in to it or out from it, either because a policy selecting it has that block, or
because a policy elsewhere names it as a peer; and which ClusterNetworkPolicy rules (Admin and
Baseline tiers, SPEC 13) apply to it, as their subject or as a peer, in evaluation order. From
there, /explain (linked, with the pod filled in) gives the verdict of one flow and its trace.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from kube_manager.translator.decode import describe
from kube_manager.explain.k8s_cnp import ADMIN, BASELINE, ClusterPolicy, TierRule
from kube_manager.explain.k8s_semantics import (EGRESS, INGRESS, Endpoint, KubernetesModel, Pod,
                                                   Policy, RuleBlock)
from kube_manager.explain.trace import peer_text
from kube_manager.explain.trace_tiers import cluster_peer_text
from introspect.contrail import paced
from introspect.decoded import selectors_of
from introspect.explain import db_manifests
from introspect.listing import (CLUSTER_NETWORK_POLICIES_PATH, TAGS_PATH, Snapshot, href,
                                policy_detail_href)

Row = Dict[str, Any]


def _peers(block: RuleBlock) -> str:
    if block.peers is None:
        return "every peer"
    return "; ".join(peer_text(p) for p in block.peers) or "no valid peer"


def _entry(policy: Policy, direction: str, block: RuleBlock, role: str) -> Row:
    return {"policy": policy.key, "direction": direction.lower(), "block": block.index,
            "as": role, "peers": _peers(block),
            "href": policy_detail_href(policy.namespace, policy.name)}


def _cluster_rule(policy: ClusterPolicy, direction: str, rule: TierRule, role: str) -> Row:
    peers = ("fail-closed: " + rule.fail_closed if rule.fail_closed is not None
             else "; ".join(cluster_peer_text(p) for p in rule.peers))
    return {"policy": policy.name, "tier": policy.tier, "priority": policy.priority,
            "direction": direction.lower(), "rule": rule.index, "rule_name": rule.name,
            "action": rule.action, "as": role, "peers": peers,
            "href": href(CLUSTER_NETWORK_POLICIES_PATH, name=policy.name)}


def _cluster_rules(model: KubernetesModel, pod: Optional[Pod], endpoint: Endpoint) -> List[Row]:
    """The ClusterNetworkPolicy rules that concern the pod, tier by tier in evaluation order: each
    rule of a policy whose subject is the pod, and each rule elsewhere naming the pod as a peer
    (an Accept read fail-closed names nobody; a Deny or Pass read fail-closed names everybody)."""
    rows: List[Row] = []
    if pod is None:
        return rows
    for tier in (ADMIN, BASELINE):
        for policy in model.tier(tier):
            subject = policy.subject.matches(pod, model.namespace_labels)
            for direction, rules in policy.directions.items():
                for rule in rules:
                    if subject:
                        rows.append(_cluster_rule(policy, direction, rule, "subject"))
                    if rule.peer_matches(endpoint, model.namespace_labels):
                        rows.append(_cluster_rule(policy, direction, rule, "peer"))
    return rows


def pod_detail(snapshot: Snapshot, namespace: str, name: str) -> Optional[Row]:
    """The page's data, or None when the DB has no such pod."""
    db = snapshot.db
    record = db.pods.get((namespace, name))
    if record is None:
        return None
    # Every namespace and policy, but only this pod: a peer is matched against this pod alone.
    manifests = db_manifests(db, [record])
    model = KubernetesModel.of(manifests.objects)
    pod = model.pod(namespace, name)
    endpoint = Endpoint(pod, pod.ip if pod else None)
    selected_by: List[Row] = []
    admits_to: List[Row] = []    # traffic to this pod
    admits_from: List[Row] = []  # traffic from this pod
    for policy_namespace in paced(sorted(model.namespace_labels)):  # the daemon's loop keeps running
        for policy in model.policies(policy_namespace):
            selects = (pod is not None and policy.namespace == namespace
                       and policy.selector.matches(pod.labels))
            if selects:
                selected_by.append({"policy": policy.key,
                                    "isolates": [d.lower() for d in (INGRESS, EGRESS)
                                                 if d in policy.directions],
                                    "href": policy_detail_href(policy.namespace, policy.name)})
            for direction, blocks in policy.directions.items():
                for block in blocks:
                    if selects:  # its own blocks: ingress lets traffic in, egress out
                        (admits_to if direction == INGRESS else admits_from).append(
                            _entry(policy, direction, block, "selected"))
                    if pod is not None and (block.peers is None or any(
                            p.matches(endpoint, model.namespace_labels) for p in block.peers)):
                        (admits_from if direction == INGRESS else admits_to).append(
                            _entry(policy, direction, block, "peer"))
    selectors = selectors_of(db, record.tags)
    tags = [{"tag": tag, "selector": selectors.get(tag),
             "text": describe(selectors[tag]) if tag in selectors else "",
             "href": href(TAGS_PATH, name=tag)} for tag in record.tags]
    return {
        "pod": {"uid": record.uid, "namespace": record.namespace, "name": record.name,
                "ip": record.ip, "labels": dict(sorted(record.labels.items())),
                "vmi_state": record.vmi_state, "vmi_error": snapshot.redactor.text(record.vmi_error)},
        "tags": tags, "selected_by": selected_by, "admits_to": admits_to,
        "admits_from": admits_from, "cluster_rules": _cluster_rules(model, pod, endpoint),
    }


def to_json(detail: Row) -> Row:
    """The page as JSON: links left out, tags as {"tag", "selector"}."""
    def plain(rows: List[Row]) -> List[Row]:
        return [{k: v for k, v in row.items() if k != "href"} for row in rows]

    return {"pod": {**detail["pod"], "tags": [{"tag": t["tag"], "selector": t["selector"]}
                                              for t in detail["tags"]]},
            "selected_by": plain(detail["selected_by"]), "admits_to": plain(detail["admits_to"]),
            "admits_from": plain(detail["admits_from"]),
            "cluster_rules": plain(detail["cluster_rules"])}


__all__ = ["pod_detail", "to_json"]
