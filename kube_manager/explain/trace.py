"""Why a flow is allowed or dropped, policy by policy and block by block (SPEC 6 `trace`).

A verdict alone ("dropped by k8s-shop-ingress-api-from-web-denyall") sends the operator hunting
through specs and pod manifests. The trace does that hunt: for each side of the flow (egress at
the source, ingress at the destination) it lists every NetworkPolicy selecting that pod, and for
each of its rule blocks whether the peer and the port match, with a sentence naming what did not:
the selector and the labels it was compared with, the block's ports, the number a named port has
on the destination pod, the except an address falls into.

It reads the Kubernetes model (k8s_semantics), not the Contrail objects: the question "which rule
of my NetworkPolicy should have matched" is asked in Kubernetes terms. Pure: no I/O.
"""
from __future__ import annotations

from typing import Any, Callable, List, Mapping, Sequence, Tuple

from .k8s_semantics import (EGRESS, INGRESS, Endpoint, KubernetesModel, Peer, Policy, PortRule,
                            RuleBlock, Selector)
from .k8s_cnp import ADMIN, BASELINE
from .trace_base import (BlockTrace, PolicyTrace, any_reason, labels_text, match_reason,
                         selector_text, unmet_text)
from .trace_tiers import tier_trace

EGRESS_SIDE = "egress"
INGRESS_SIDE = "ingress"
NETWORK_POLICY = "NetworkPolicy"


def peer_text(peer: Peer) -> str:
    """The peer as a person would say it: `pods app=web in namespace shop`."""
    if peer.network is not None:
        excepts = f" except {', '.join(map(str, peer.excepts))}" if peer.excepts else ""
        return f"ipBlock {peer.network}{excepts}"
    selector = selector_text(peer.pod_selector or Selector())
    pods = "pods" if selector == "{}" else f"pods {selector}"
    if peer.namespace is not None:
        return f"{pods} in namespace {peer.namespace}"
    return f"{pods} in namespaces {selector_text(peer.namespace_selector or Selector())}"


# --------------------------------------------------------------------------------------------------
# Matching with reasons


def _peer_reason(peer: Peer, who: Endpoint,
                 namespace_labels: Mapping[str, Mapping[str, str]]) -> Tuple[bool, str]:
    """Whether `who` is this peer, and a sentence saying why (not)."""
    name = who.describe()
    if peer.network is not None:
        ip = who.ip
        if ip is None:
            return False, f"{name} has no IP, so it is not in {peer.network}"
        if ip not in peer.network:
            return False, f"{ip} is not in ipBlock {peer.network}"
        excluded = next((e for e in peer.excepts if ip in e), None)
        if excluded is not None:
            return False, f"{ip} is in {peer.network} but in its except {excluded}"
        return True, f"{ip} is in {peer_text(peer)}"
    pod = who.pod
    if pod is None:
        return False, f"{name} is not a pod (the peer is {peer_text(peer)}: pods only)"
    if peer.namespace is not None and pod.namespace != peer.namespace:
        return False, (f"{name} is in namespace {pod.namespace}; the peer selects pods of "
                       f"namespace {peer.namespace} only (add a namespaceSelector)")
    if peer.namespace is None:
        ns_labels = namespace_labels.get(pod.namespace, {})
        selector = peer.namespace_selector or Selector()
        if not selector.matches(ns_labels):
            return False, (f"namespace {pod.namespace} ({labels_text(ns_labels)}) does not match "
                           f"namespaceSelector {selector_text(selector)}"
                           f"{unmet_text(selector, ns_labels)}")
    if peer.pod_selector is not None and not peer.pod_selector.matches(pod.labels):
        return False, (f"{name} ({labels_text(pod.labels)}) does not match podSelector "
                       f"{selector_text(peer.pod_selector)}"
                       f"{unmet_text(peer.pod_selector, pod.labels)}")
    return True, f"{name} is one of the {peer_text(peer)}"


def port_rule_text(rule: PortRule) -> str:
    if rule.name is not None:
        return f'{rule.protocol} port "{rule.name}"'
    if rule.start == 0 and rule.end == 65535:
        return f"every {rule.protocol} port"
    return f"{rule.protocol} {rule.start}" + (f"-{rule.end}" if rule.end != rule.start else "")


def _named_port_reason(rule: PortRule, port: int, destination: Endpoint) -> Tuple[bool, str]:
    """A named port of the flow's protocol against the flow's port: its number on that pod."""
    assert rule.name is not None  # called for named ports only
    pod = destination.pod
    if pod is None:
        return False, (f'port "{rule.name}" is a named port; {destination.describe()} is not a '
                       f"pod, and names resolve on pods only")
    number = pod.resolve(rule.name, rule.protocol)
    if number is None:
        return False, f'port "{rule.name}" ({rule.protocol}) is not declared on {pod.key}'
    if number != port:
        return False, f'port "{rule.name}" is {number} on {pod.key}, not {port}'
    return True, f'port "{rule.name}" is {port} on {pod.key}'


def _ports_reason(rules: Sequence[PortRule], port: int, protocol: str,
                  destination: Endpoint) -> Tuple[bool, str]:
    """Whether any of the block's ports opens the flow's port; the reason names the numbers the
    block opens, and for each named port of the flow's protocol, its number on the pod."""
    if not rules:
        return False, "every port of the block was rejected as invalid"
    flow = f"{protocol} {port}"
    numbered = [r for r in rules if r.name is None or r.protocol != protocol]
    for rule in numbered:
        if rule.name is None and rule.protocol == protocol and rule.start <= port <= rule.end:
            return True, f"{flow} is in {port_rule_text(rule)}"
    named = [_named_port_reason(r, port, destination) for r in rules if r not in numbered]
    for matched, reason in named:
        if matched:
            return True, reason
    reasons = [reason for _, reason in named]
    if numbered:
        reasons.append(f"the block opens {', '.join(map(port_rule_text, numbered))}, not {flow}")
    return False, "; ".join(reasons)


def _block_trace(block: RuleBlock, peer: Endpoint, destination: Endpoint, port: int,
                 protocol: str, namespace_labels: Mapping[str, Mapping[str, str]]) -> BlockTrace:
    if block.peers is None:
        peer_ok, peer_why = True, "every peer"
    else:
        peer_ok, peer_why = any_reason([_peer_reason(p, peer, namespace_labels)
                                        for p in block.peers],
                                       "every peer of the block was rejected as invalid")
    if block.ports is None:
        port_ok, port_why = True, "every port"
    else:
        port_ok, port_why = _ports_reason(block.ports, port, protocol, destination)
    return BlockTrace(block.index, peer_ok, port_ok,
                      match_reason("allows", (peer_ok, peer_why), (port_ok, port_why)))


def _side(model: KubernetesModel, side: str, pod_end: Endpoint, peer: Endpoint,
          destination: Endpoint, port: int, protocol: str,
          order: Callable[[str], Any]) -> List[PolicyTrace]:
    """One side in evaluation order: the Admin tier, the NetworkPolicies, the Baseline tier."""
    pod = pod_end.pod
    if pod is None:
        return []  # an outside address has no policies
    direction = EGRESS if side == EGRESS_SIDE else INGRESS
    flow = (side, direction, pod_end, peer, destination, port, protocol)
    return (tier_trace(model, ADMIN, *flow)
            + _network_policies(model, *flow, order)
            + tier_trace(model, BASELINE, *flow))


def _network_policies(model: KubernetesModel, side: str, direction: str, pod_end: Endpoint,
                      peer: Endpoint, destination: Endpoint, port: int, protocol: str,
                      order: Callable[[str], Any]) -> List[PolicyTrace]:
    pod = pod_end.pod
    assert pod is not None  # _side answers for outside addresses
    selecting: List[Policy] = [p for p in model.policies(pod.namespace)
                               if p.selector.matches(pod.labels)]
    traces = []
    for policy in sorted(selecting, key=lambda p: order(p.key)):
        if direction not in policy.directions:
            traces.append(PolicyTrace(side, policy.key, NETWORK_POLICY, None, ()))
            continue
        blocks = tuple(_block_trace(b, peer, destination, port, protocol, model.namespace_labels)
                       for b in policy.directions[direction])
        traces.append(PolicyTrace(side, policy.key, NETWORK_POLICY,
                                  any(b.peer and b.port for b in blocks), blocks))
    return traces


def trace(model: KubernetesModel, source: Endpoint, destination: Endpoint, port: int,
          protocol: str, order: Callable[[str], Any] = str) -> List[PolicyTrace]:
    """The SPEC 6 trace of source -> destination on `protocol` (TCP/UDP/SCTP) `port`: the source's
    egress policies, then the destination's ingress policies; each side's Admin tier
    ClusterNetworkPolicies (priority, then name), its NetworkPolicies in `order` (a sort key of
    "ns/name"; explain passes the APS evaluation order), its Baseline tier ones."""
    return (_side(model, EGRESS_SIDE, source, destination, destination, port, protocol, order)
            + _side(model, INGRESS_SIDE, destination, source, destination, port, protocol, order))


__all__ = ["BlockTrace", "PolicyTrace", "labels_text", "peer_text", "port_rule_text",
           "selector_text", "trace"]
