"""Pods no policy can tell apart, and the pairs of them a staged policy can change (SPEC 17).

A flow's verdicts, Contrail's and the Kubernetes model's, read of a pod only its namespace (the
policies of its namespace, its namespace's labels), the labels whose keys some selector names, its
named container ports, which networks (address-group prefixes, ipBlocks, ClusterNetworkPolicy
networks) hold its IP, and the tags its workload carries on each side. Pods equal in all of these
form a class: every pair of pods drawn from two classes (two distinct pods of one class) has the
same verdicts on every port, so one pair per pair of classes is evaluated and its flows counted
once for each pod pair it stands for. A large cluster's pods fall into a few classes per namespace
(replicas share their labels), which is what makes exact counts affordable.

Which pairs of classes. A flow's verdict depends only on the policies selecting its source (egress)
and its destination (ingress), in both semantics, so a NetworkPolicy can only change the flows
into the pods it selects, if it isolates ingress, and out of them, if egress. A
ClusterNetworkPolicy's rules only match a flow whose peer one of them names (a rule read
fail-closed, every peer), so it can only change the flows into its subject from the peers of its
ingress rules and out of its subject to the peers of its egress rules. A policy the model cannot
read keeps what-if's pairs: those with an end in its namespace (every pair, for a cluster one).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from .k8s_cnp import ADMIN, BASELINE
from .k8s_netpol import EGRESS, INGRESS, Policy
from .k8s_semantics import Endpoint, KubernetesModel, Pod, Selector
from .whatif import PairEnd, WhatIfSide, networks

StagedKey = Tuple[str, str, str]  # (kind, namespace, name)


@dataclass
class PodClass:
    """Pods no policy tells apart: `members` in (namespace, name) order, `pod` the first one's
    reading by the model after the change (every member reads alike)."""

    pod: Pod
    members: List[PairEnd] = field(default_factory=list)

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.pod, self.pod.ip)


@dataclass(frozen=True)
class ClassPair:
    """Pod pairs with the source from `source` and the destination from `destination`."""

    source: PodClass
    destination: PodClass

    @property
    def count(self) -> int:
        size = len(self.source.members)
        return size * (size - 1) if self.source is self.destination else size * len(self.destination.members)

    def representative(self) -> Tuple[PairEnd, PairEnd]:
        """One pair of distinct pods (count > 0)."""
        return self.source.members[0], self.destination.members[1 if self.source is self.destination else 0]

    def pod_pairs(self) -> Iterator[Tuple[PairEnd, PairEnd]]:
        """Each pair of distinct pods it stands for, made as they are asked for."""
        return ((a, b) for a in self.source.members for b in self.destination.members if a is not b)


def pod_classes(ends: Sequence[PairEnd], before: WhatIfSide, after: WhatIfSide) -> List[PodClass]:
    """The classes of `ends` (pods of both sides), in the order of their first members."""
    keys = named_label_keys(before.kubernetes) | named_label_keys(after.kubernetes)
    bounds = _network_bounds(before, after)
    classes: Dict[Tuple[Any, ...], PodClass] = {}
    for end in ends:
        assert end.pod is not None
        pod = after.kubernetes.pod(*end.pod)
        if pod is None:
            continue
        key = (pod.namespace, tuple(sorted((k, v) for k, v in pod.labels.items() if k in keys)),
               tuple(sorted(pod.ports, key=repr)), _interval(bounds, end.ip),
               before.workload(end).tags, after.workload(end).tags)
        found = classes.get(key)
        if found is None:
            found = classes[key] = PodClass(pod)
        found.members.append(end)
    return list(classes.values())


def class_pairs(key: StagedKey, after: KubernetesModel, classes: List[PodClass]) -> List[ClassPair]:
    """The pairs of classes whose flows the staged policy `key` can change (module docstring),
    each once, pairs standing for no pod pair left out."""
    kind, namespace, name = key
    found: Dict[Tuple[int, int], ClassPair] = {}

    def add(sources: Iterable[PodClass], destinations: Iterable[PodClass]) -> None:
        targets = list(destinations)
        for a in sources:
            for b in targets:
                pair = ClassPair(a, b)
                if pair.count:
                    found.setdefault((id(a), id(b)), pair)

    labels = after.namespace_labels
    if kind == "NetworkPolicy":
        policy: Optional[Policy] = next((p for p in after.policies(namespace) if p.name == name), None)
        if policy is not None:
            selected = [c for c in classes if c.pod.namespace == namespace and policy.selector.matches(c.pod.labels)]
            if INGRESS in policy.directions:
                add(classes, selected)
            if EGRESS in policy.directions:
                add(selected, classes)
            return list(found.values())
        near = [c for c in classes if c.pod.namespace == namespace]
    else:
        cluster_policy = next((p for tier in (ADMIN, BASELINE) for p in after.tier(tier) if p.name == name), None)
        if cluster_policy is not None:
            subject = [c for c in classes if cluster_policy.subject.matches(c.pod, labels)]
            for direction, rules in cluster_policy.directions.items():
                peers = [c for c in classes if any(r.peer_matches(c.endpoint, labels) for r in rules)]
                if direction == INGRESS:
                    add(peers, subject)
                else:
                    add(subject, peers)
            return list(found.values())
        near = classes
    add(near, classes)
    add(classes, near)
    return list(found.values())


def named_label_keys(model: KubernetesModel) -> Set[str]:
    """The pod label keys some selector of the model's policies names."""
    keys: Set[str] = set()

    def named(selector: Optional[Selector]) -> None:
        if selector is not None:
            keys.update(requirement.key for requirement in selector.requirements)

    for namespace in list(model.namespace_labels):
        for policy in model.policies(namespace):
            named(policy.selector)
            for blocks in policy.directions.values():
                for block in blocks:
                    for peer in block.peers or ():
                        named(peer.pod_selector)
    for tier in (ADMIN, BASELINE):
        for cluster_policy in model.tier(tier):
            named(cluster_policy.subject.pods)
            for rules in cluster_policy.directions.values():
                for rule in rules:
                    for cluster_peer in rule.peers:
                        named(cluster_peer.pod_set.pods if cluster_peer.pod_set is not None else None)
    return keys


Bounds = Dict[int, List[int]]  # IP version -> the sorted boundaries of every network


def _network_bounds(*sides: WhatIfSide) -> Bounds:
    points: Dict[int, Set[int]] = {4: set(), 6: set()}
    for side in sides:
        for network in networks(side):
            points[network.version].update((int(network.network_address), int(network.broadcast_address) + 1))
    return {version: sorted(found) for version, found in points.items()}


def _interval(bounds: Bounds, ip: Any) -> Optional[Tuple[int, int]]:
    """Which elementary interval of the networks' boundaries holds `ip`: no network starts or
    ends inside one, so addresses of one interval belong to the same networks."""
    if ip is None:
        return None
    return ip.version, bisect.bisect_right(bounds[ip.version], int(ip))
