"""The trace of the ClusterNetworkPolicy tiers (SPEC 6 and 13): for one side of a flow, every
ClusterNetworkPolicy of one tier whose subject selects the pod and which has rules in that
direction, in evaluation order (priority, then name), each rule with whether its peer and its port
match and a sentence saying why (not), and the effect it has when it matches.

Like the NetworkPolicy trace it reads the Kubernetes model, never the Contrail objects. Pure.
"""
from __future__ import annotations

from dataclasses import replace
from typing import List, Mapping, Optional, Sequence, Tuple

from .k8s_cnp import ACCEPT, DENY, PASS, ClusterPeer, ClusterPolicy, ClusterPort, PodSelection, TierRule
from .k8s_pods import Endpoint, Pod
from .k8s_semantics import KubernetesModel
from .trace_base import (BlockTrace, PolicyTrace, any_reason, labels_text, match_reason,
                         selector_text, unmet_text)

CLUSTER_NETWORK_POLICY = "ClusterNetworkPolicy"
Labels = Mapping[str, Mapping[str, str]]
_EFFECTS = {ACCEPT: "accepts", DENY: "denies", PASS: "passes to the next tier"}


def pod_set_text(pod_set: PodSelection) -> str:
    """`pods app=web in namespaces env=prod`, or `pods in namespaces ...` for every pod."""
    pods = selector_text(pod_set.pods) if pod_set.pods is not None else "{}"
    return f"{'pods' if pods == '{}' else 'pods ' + pods} in namespaces {selector_text(pod_set.namespaces)}"


def cluster_peer_text(peer: ClusterPeer) -> str:
    if peer.pod_set is None:
        return f"networks {', '.join(map(str, peer.networks))}"
    return pod_set_text(peer.pod_set)


def _pod_set_reason(pod_set: PodSelection, pod: Pod, labels: Labels) -> Tuple[bool, str]:
    ns_labels = labels.get(pod.namespace, {})
    if not pod_set.namespaces.matches(ns_labels):
        return False, (f"namespace {pod.namespace} ({labels_text(ns_labels)}) does not match "
                       f"{selector_text(pod_set.namespaces)}{unmet_text(pod_set.namespaces, ns_labels)}")
    if pod_set.pods is not None and not pod_set.pods.matches(pod.labels):
        return False, (f"{pod.key} ({labels_text(pod.labels)}) does not match pod selector "
                       f"{selector_text(pod_set.pods)}{unmet_text(pod_set.pods, pod.labels)}")
    return True, f"{pod.key} is one of the {pod_set_text(pod_set)}"


def _peer_reason(peer: ClusterPeer, who: Endpoint, labels: Labels) -> Tuple[bool, str]:
    if peer.pod_set is None:
        ip = who.ip
        inside = [n for n in peer.networks if ip is not None and ip in n]
        if inside:
            return True, f"{ip} is in network {inside[0]}"
        return False, f"{who.describe()} is not in {cluster_peer_text(peer)}"
    if who.pod is None:
        return False, f"{who.describe()} is not a pod (the peer is {cluster_peer_text(peer)})"
    return _pod_set_reason(peer.pod_set, who.pod, labels)


def _port_text(port: ClusterPort) -> str:
    if port.name is not None:
        return f'named port "{port.name}"'
    return f"{port.protocol} {port.start}" + (f"-{port.end}" if port.end != port.start else "")


def _ports_reason(ports: Sequence[ClusterPort], port: int, protocol: str,
                  destination: Endpoint) -> Tuple[bool, str]:
    flow = f"{protocol} {port}"
    for candidate in ports:
        if candidate.matches(port, protocol, destination):
            return True, f"{flow} is {_port_text(candidate)}"
    return False, f"the rule's protocols are {', '.join(map(_port_text, ports))}, not {flow}"


def _rule_trace(rule: TierRule, peer: Endpoint, destination: Endpoint, port: int, protocol: str,
                labels: Labels) -> BlockTrace:
    if rule.fail_closed is not None:
        matches = rule.action != ACCEPT
        effect = "denies all traffic of the subject" if matches else "matches nothing"
        return BlockTrace(rule.index, matches, matches, f"fails closed ({rule.fail_closed}): {effect}",
                          rule.effect, rule.name)
    peer_match = any_reason([_peer_reason(p, peer, labels) for p in rule.peers], "no peer")
    port_match = (True, "every port") if rule.ports is None else \
        _ports_reason(rule.ports, port, protocol, destination)
    return BlockTrace(rule.index, peer_match[0], port_match[0],
                      match_reason(_EFFECTS[rule.effect], peer_match, port_match),
                      rule.effect, rule.name)


def _decides(blocks: Sequence[BlockTrace]) -> Optional[bool]:
    """What a policy decides: its first matching rule's Accept (True) or Deny (False); None when
    none of its reached rules matches or the first match is a Pass."""
    first = next((b for b in blocks if b.peer and b.port), None)
    if first is None or first.action == PASS:
        return None
    return first.action != DENY


def tier_trace(model: KubernetesModel, tier: str, side: str, direction: str, pod_end: Endpoint,
               peer: Endpoint, destination: Endpoint, port: int, protocol: str) -> List[PolicyTrace]:
    """The policies of `tier` selecting `pod_end` with rules in `direction`, in evaluation order."""
    pod = pod_end.pod
    if pod is None:
        return []  # an outside address is no subject
    policies: List[ClusterPolicy] = [p for p in model.tier(tier) if p.directions.get(direction)
                                     and p.subject.matches(pod, model.namespace_labels)]
    traces = []
    first: Optional[str] = None  # the tier's first matching rule: nothing after it is evaluated
    for policy in policies:
        blocks, reached = [], []
        for rule in policy.directions[direction]:
            block = _rule_trace(rule, peer, destination, port, protocol, model.namespace_labels)
            if first is not None:
                block = replace(block, reason=f"not reached ({first} matches first): {block.reason}")
            else:
                reached.append(block)
                if block.peer and block.port:
                    first = f"rule {rule.index} of {policy.name}"
            blocks.append(block)
        traces.append(PolicyTrace(side, policy.name, CLUSTER_NETWORK_POLICY, _decides(reached),
                                  tuple(blocks)))
    return traces


__all__ = ["CLUSTER_NETWORK_POLICY", "cluster_peer_text", "pod_set_text", "tier_trace"]
