"""What-if: which flows change verdict when a set of manifests is applied to a cluster.

An operator reviewing a NetworkPolicy change wants to know what it opens and what it closes,
under Contrail (the translation the daemon would write) and under Kubernetes (the manifests'
semantics). Both are evaluated before and after the change, for every pod pair that may be
affected and every port class, and the flows whose verdict differs are returned.

Which flows can change. A NetworkPolicy of namespace N only isolates pods of N, and every rule
it produces (pass or deny) has the pods it selects, all in N, at one end; a pod's or namespace's
labels matter only to flows with that pod, or a pod of that namespace, at one end. So a flow
whose two ends are outside the *affected* pods (the pods of the namespaces of changed policies,
the changed pods, the pods of changed namespaces; every pod when a ClusterNetworkPolicy changes,
as its subject and peers can be anywhere: each kind's `reach` in the registry of kinds) keeps both
verdicts, and only pairs with an affected end are evaluated. Outside addresses are represented by one address per interval
between the boundaries of every ipBlock CIDR, except and address-group prefix (before and after):
inside one interval, no rule or ipBlock can tell two addresses apart.

Which ports. For one pair, the verdicts are constant between the port boundaries of the rules
that match the pair (Contrail) and of the blocks and tier rules of the policies selecting its ends
(Kubernetes, named ports resolved on the destination), so one port per class is evaluated per protocol.

Switching semantics. `semantics_switch` compares one cluster under two `policy_semantics` (SPEC
14): the Kubernetes verdicts are the same on both sides, and the Contrail verdicts that change are
the flows the switch opens or closes. From `cluster-wide` to `kubernetes` it closes exactly the
flows that rely on the cluster-wide deviation, which is what an operator checks before migrating.
Every pod is affected, since either end of any pair may be isolated.

Pure: manifests in, result out. `apply_change` defines the change format (see its docstring).
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from .flow import FLOW_PROTOCOLS, ContrailEvaluator, Workload
from .k8s_cnp import ADMIN, BASELINE, ClusterPort
from .k8s_semantics import Endpoint, KubernetesModel, PeerBlocks, Pod, PortRule
from kube_manager.registry import KINDS, REACHES_ITS_NAMESPACE, REACHES_ITSELF, REACHES_NAMED_NAMESPACE, Kinds
from kube_manager.translator.batch import translate
from kube_manager.translator.semantics import CLUSTER_WIDE, KUBERNETES

DELETE_ANNOTATION = "contrail-kube-manager/what-if"
DELETE_VALUE = "delete"
# The API server's protocol spelling for each flow protocol.
_K8S_PROTOCOL = {p: p.upper() for p in FLOW_PROTOCOLS}

ObjectKey = Tuple[str, str, str]  # (kind, namespace, name); namespace "" when cluster-scoped


class WhatIfError(ValueError):
    """A change that cannot be applied (a deletion of an object the cluster does not have)."""


def _key(kinds: Kinds, kind: str, manifest: Mapping[str, Any]) -> ObjectKey:
    metadata = manifest.get("metadata") or {}
    namespaced = kinds[kind].resource.namespaced
    namespace = str(metadata.get("namespace") or "default") if namespaced else ""
    return (kind, namespace, str(metadata.get("name") or ""))


def _kinds_of(manifests: Any) -> Kinds:
    """The registry the manifests were read with (`Manifests.kinds`)."""
    return getattr(manifests, "kinds", KINDS)


def _is_deletion(manifest: Mapping[str, Any]) -> bool:
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    return isinstance(annotations, dict) and annotations.get(DELETE_ANNOTATION) == DELETE_VALUE


def apply_change(cluster: Any, change: Any) -> Tuple[Any, Set[ObjectKey]]:
    """The cluster with the change applied, and the keys of the objects the change touched.

    `cluster` and `change` hold lists of manifests by kind in `objects`, of the kinds of the
    registry in `kinds` (kube_manager.offline.manifests.Manifests does); the result is of the
    cluster's own type, built from such a mapping and registry.

    Each object of `change` (of any kind of the registry) is added, or replaces the cluster's
    object of the same kind, namespace and name; one carrying the annotation
    `contrail-kube-manager/what-if: delete` deletes it instead (only its kind, namespace and name
    are read). Raises WhatIfError for a deletion of an object the cluster does not have.
    """
    kinds = _kinds_of(cluster)
    objects: Dict[ObjectKey, Dict[str, Any]] = {}
    for kind, items in cluster.objects.items():
        for manifest in items:
            objects[_key(kinds, kind, manifest)] = manifest
    touched: Set[ObjectKey] = set()
    for kind, items in change.objects.items():
        for manifest in items:
            key = _key(kinds, kind, manifest)
            touched.add(key)
            if _is_deletion(manifest):
                if objects.pop(key, None) is None:
                    raise WhatIfError(f"the change deletes {kind} {'/'.join(key[1:]).lstrip('/')}, "
                                      f"which the cluster does not have")
            else:
                objects[key] = manifest
    lists: Dict[str, List[Dict[str, Any]]] = {kind: [] for kind in kinds.names()}
    for key, manifest in objects.items():
        lists[key[0]].append(manifest)
    after = type(cluster)(lists, kinds=kinds)
    return after, touched


@dataclass(frozen=True)
class Flow:
    """Flows from `source` to `destination` (pods `ns/name` or addresses) on a protocol and a port range."""

    source: str
    destination: str
    protocol: str
    ports: Tuple[int, int]

    def to_dict(self) -> Dict[str, Any]:
        return {"from": self.source, "to": self.destination, "protocol": self.protocol, "ports": list(self.ports)}


@dataclass(frozen=True)
class FlowChange(Flow):
    """One pair and port class whose verdict changes: (before, after) per evaluator."""

    contrail: Tuple[bool, bool]
    kubernetes: Tuple[bool, bool]

    def to_dict(self) -> Dict[str, Any]:
        return {**super().to_dict(),
                "contrail": {"before": self.contrail[0], "after": self.contrail[1]},
                "kubernetes": {"before": self.kubernetes[0], "after": self.kubernetes[1]}}


@dataclass
class WhatIf:
    changes: List[FlowChange]
    pairs_checked: int
    affected_pods: int


class WhatIfSide:
    """One side of the comparison: the translation's evaluator and the Kubernetes model."""

    def __init__(self, manifests: Any, cluster_name: str, semantics: str) -> None:
        translated = translate(manifests.objects, cluster_name=cluster_name, semantics=semantics,
                               kinds=_kinds_of(manifests))
        translation = translated.to_dict()
        self._set(translation, translated.selectors, ContrailEvaluator(translation, cluster_name),
                  KubernetesModel.of(manifests.objects))

    @classmethod
    def of(cls, translation: Mapping[str, Any], selectors: Mapping[str, Any], contrail: ContrailEvaluator,
           kubernetes: KubernetesModel) -> "WhatIfSide":
        """A side made of its parts (a caller translating incrementally has them already)."""
        side = cls.__new__(cls)
        side._set(translation, selectors, contrail, kubernetes)
        return side

    def _set(self, translation: Mapping[str, Any], selectors: Mapping[str, Any], contrail: ContrailEvaluator,
             kubernetes: KubernetesModel) -> None:
        self.selectors = selectors  # what its selector tags stand for
        self.translation = translation
        self.contrail = contrail
        self.kubernetes = kubernetes

    def workload(self, end: "PairEnd") -> Workload:
        if end.pod is None:
            return Workload(end.ip, frozenset())
        found = self.contrail.workload(*end.pod)
        return found if found is not None else Workload(end.ip, frozenset())

    def endpoint(self, end: "PairEnd") -> Endpoint:
        pod = self.kubernetes.pod(*end.pod) if end.pod else None
        return Endpoint(pod, pod.ip if pod else end.ip)


@dataclass(frozen=True)
class PairEnd:
    pod: Optional[Tuple[str, str]]
    ip: Any  # an IP address, or None for a pod without one

    def describe(self) -> str:
        return "/".join(self.pod) if self.pod else str(self.ip)


def _k8s_boundaries(sides: Sequence[PeerBlocks], destination: Optional[Pod], protocol: str,
                    found: Set[int]) -> None:
    """Port boundaries of the blocks and tier rules that match the pair's peers (named ports
    resolved on the destination pod)."""
    for side in sides:
        ports: List[Union[PortRule, ClusterPort]] = [
            rule for _policy, blocks in side.policies for block in blocks for rule in block.ports or ()]
        ports += [port for tier in (side.admin, side.baseline) for _policy, rule in tier.rules
                  for port in rule.ports or ()]
        for rule in ports:
            if rule.name is None:
                if rule.protocol == protocol:
                    found.update((rule.start, rule.end + 1))
            elif destination is not None:
                number = destination.resolve(rule.name, protocol)
                if number is not None:
                    found.update((number, number + 1))


def _contrail_boundaries(rules: Iterable[Any], protocol: str, found: Set[int]) -> None:
    for entry in rules:
        if entry.service.protocol in ("any", protocol):
            low, high = entry.service.dst
            found.update((low, high + 1))


def _classes(boundaries: Set[int]) -> List[Tuple[int, int]]:
    points = sorted({1, 65536} | {b for b in boundaries if 1 < b < 65536})
    return list(zip(points, [p - 1 for p in points[1:]]))


def pair_changes(before: WhatIfSide, after: WhatIfSide, src: PairEnd, dst: PairEnd) -> List[FlowChange]:
    decisions = []
    for state in (before, after):
        src_w, dst_w = state.workload(src), state.workload(dst)
        under = state.contrail.under_aps(src_w, dst_w)
        rules = state.contrail.pair_rules(src_w, dst_w) if under else []
        src_e, dst_e = state.endpoint(src), state.endpoint(dst)
        decisions.append((under, rules, state.kubernetes.pair(src_e, dst_e), dst_e))
    if decisions[0] == decisions[1]:
        return []  # the same rules and blocks decide every port before and after
    changes = []
    for protocol in FLOW_PROTOCOLS:
        k8s_protocol = _K8S_PROTOCOL[protocol]
        boundaries: Set[int] = set()
        for _under, rules, sides, dst_e in decisions:
            _contrail_boundaries(rules, protocol, boundaries)
            _k8s_boundaries(sides, dst_e.pod, k8s_protocol, boundaries)
        for low, high in _classes(boundaries):
            verdicts = []
            for under, rules, (egress, ingress), dst_e in decisions:
                contrail = (not under) or ContrailEvaluator.decide(rules, low, protocol).allowed
                kubernetes = (egress.side(dst_e, low, k8s_protocol).allowed
                              and ingress.side(dst_e, low, k8s_protocol).allowed)
                verdicts.append((contrail, kubernetes))
            (c0, k0), (c1, k1) = verdicts
            if c0 != c1 or k0 != k1:
                changes.append(FlowChange(src.describe(), dst.describe(), protocol, (low, high),
                                          (c0, c1), (k0, k1)))
    return changes


def affected_pods(kinds: Kinds, touched: Set[ObjectKey], pods: Iterable[Tuple[str, str]]) -> Set[Tuple[str, str]]:
    """The pods a change of the `touched` objects may affect, by the reach of their kinds."""
    namespaces: Set[str] = set()
    direct: Set[Tuple[str, str]] = set()
    for kind, namespace, name in touched:
        reach = kinds[kind].reach
        if reach == REACHES_ITS_NAMESPACE:
            namespaces.add(namespace)
        elif reach == REACHES_NAMED_NAMESPACE:
            namespaces.add(name)
        elif reach == REACHES_ITSELF:
            direct.add((namespace, name))
        else:  # REACHES_CLUSTER: its subject and peers may be any pod
            return set(pods)
    return {key for key in pods if key[0] in namespaces or key in direct}


def networks(state: WhatIfSide) -> Iterable[Any]:
    """Every network an ipBlock rule can tell apart: address group prefixes and the ipBlocks'
    CIDRs and excepts."""
    for group in state.translation.get("address_groups") or ():
        for subnet in (group.get("address_group_prefix") or {}).get("subnet") or ():
            yield ipaddress.ip_network(f"{subnet['ip_prefix']}/{subnet['ip_prefix_len']}")
    for namespace in sorted(state.kubernetes.namespace_labels):
        for policy in state.kubernetes.policies(namespace):
            for blocks in policy.directions.values():
                for block in blocks:
                    for peer in block.peers or ():
                        if peer.network is not None:
                            yield peer.network
                            yield from peer.excepts
    for tier in (ADMIN, BASELINE):
        for cluster_policy in state.kubernetes.tier(tier):
            for rules in cluster_policy.directions.values():
                for rule in rules:
                    for cluster_peer in rule.peers:
                        yield from cluster_peer.networks


_ADDRESS = {4: ipaddress.IPv4Address, 6: ipaddress.IPv6Address}


def _outside_addresses(states: Sequence[WhatIfSide], pod_ips: Set[Any]) -> List[PairEnd]:
    """One outside address per elementary interval of the networks' boundaries (per IP version):
    no prefix, CIDR or except starts or ends inside an interval, so every rule and ipBlock sees
    all its addresses alike. Pod addresses are skipped (a pod is an end of its own)."""
    points: Dict[int, Set[int]] = {4: {0, 2 ** 32}, 6: {0, 2 ** 128}}
    for state in states:
        for network in networks(state):
            points[network.version].update((int(network.network_address),
                                            int(network.broadcast_address) + 1))
    found = []
    for version, bounds in points.items():
        ordered = sorted(bounds)
        for low, high in zip(ordered, ordered[1:]):
            candidates = (_ADDRESS[version](a) for a in range(low, min(high, low + 8)))
            address = next((a for a in candidates if a not in pod_ips), None)
            if address is not None:
                found.append(PairEnd(None, address))
    return found


def what_if(cluster: Any, change: Any, cluster_name: str = "k8s",
            semantics: str = KUBERNETES) -> WhatIf:
    """Every flow whose Contrail or Kubernetes verdict differs once `change` is applied to
    `cluster` (see `apply_change`), both translated under `semantics`; raises WhatIfError for a
    change that cannot apply."""
    applied, touched = apply_change(cluster, change)
    before, after = WhatIfSide(cluster, cluster_name, semantics), WhatIfSide(applied, cluster_name, semantics)
    pods = common_pods(before, after)
    return _compare(before, after, pods, affected_pods(_kinds_of(cluster), touched, pods))


def semantics_switch(cluster: Any, cluster_name: str = "k8s", before: str = CLUSTER_WIDE,
                     after: str = KUBERNETES) -> WhatIf:
    """Every flow of `cluster` whose Contrail verdict differs between the `before` and `after`
    policy semantics (the Kubernetes verdicts do not change)."""
    old, new = WhatIfSide(cluster, cluster_name, before), WhatIfSide(cluster, cluster_name, after)
    pods = common_pods(old, new)
    return _compare(old, new, pods, set(pods))


def common_pods(before: WhatIfSide, after: WhatIfSide) -> Dict[Tuple[str, str], Any]:
    """Pods of both states: a pod the change adds or deletes has no verdict to compare."""
    pods = _pod_ips(before.translation)
    return {key: ip for key, ip in _pod_ips(after.translation).items() if pods.get(key, 0) == ip}


def _compare(before: WhatIfSide, after: WhatIfSide, pods: Dict[Tuple[str, str], Any],
             affected: Set[Tuple[str, str]]) -> WhatIf:
    ends = [PairEnd(key, ip) for key, ip in sorted(pods.items())]
    near = [end for end in ends if end.pod in affected]
    others = ends + _outside_addresses((before, after), {ip for ip in pods.values() if ip})
    pairs = sorted({(a, b) for a in near for b in others if a != b}
                   | {(b, a) for a in near for b in others if a != b},
                   key=lambda pair: (pair[0].describe(), pair[1].describe()))
    changes: List[FlowChange] = []
    for src, dst in pairs:
        changes.extend(pair_changes(before, after, src, dst))
    return WhatIf(changes, len(pairs), len(affected))


def _pod_ips(translation: Mapping[str, Any]) -> Dict[Tuple[str, str], Any]:
    return {(str(w["namespace"]), str(w["name"])):
            ipaddress.ip_address(w["ip"]) if w.get("ip") else None
            for w in translation.get("workloads") or ()}


__all__ = ["DELETE_ANNOTATION", "DELETE_VALUE", "Flow", "FlowChange", "WhatIf",
           "WhatIfError", "apply_change", "semantics_switch", "what_if"]
