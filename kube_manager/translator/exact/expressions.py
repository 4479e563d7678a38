"""The pod set of a tag conjunction narrowed to IPs in some networks, as a selector tag stands for it.

A rule end that meets an address group with a set of pods (an ipBlock peer with the pods a rule
selects) cannot be written as tags and an address group at once; it becomes one selector tag that
kube-manager keeps on exactly the pods carrying the tags whose IP is in the networks. The tags are
read through what they stand for (a label, a namespace label, a selector), so membership is
evaluated on the pods' labels, as every other selector tag is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

from ..cidr import IpBlock, Network
from ..encoding import APPLICATION, NAMESPACE, split_tag
from ..model import PodExpression, PodInfo, PodScope, SelectorDef
from ..scope_tags import NAMESPACE_LABEL, TagOrigin

Condition = Tuple[str, Optional[TagOrigin]]  # a tag and what it stands for (None: an identity tag)


def tag_holds(tag: str, origin: Optional[TagOrigin], pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
    if origin is None:
        tag_type, value = split_tag(tag)
        if tag_type == NAMESPACE:
            return pod.namespace == value
        return tag_type == APPLICATION
    if isinstance(origin, SelectorDef):
        port = origin.port
        if port is not None and pod.named_ports.get((port[0], port[1])) != port[2]:
            return False
        pods = origin.pods
        if isinstance(pods, IpBlock):
            return pods.contains(pod.address)
        if isinstance(pods, PodExpression):
            return pods.contains(pod, namespace_labels)
        return pods.matches(pod.namespace, pod.labels, namespace_labels)
    kind, key, value = origin
    labels = namespace_labels if kind == NAMESPACE_LABEL else pod.labels
    return labels.get(key) == value


@dataclass(frozen=True)
class TaggedPodsInNetworks(PodExpression):
    """The pods meeting every condition whose IP is in `networks`."""

    conditions: Tuple[Condition, ...]
    networks: Tuple[Network, ...]
    namespace: Optional[str] = None  # the namespace identity among the tags, if any

    def hash_input(self) -> Any:
        return {"tags": sorted(tag for tag, _ in self.conditions), "ip": [str(n) for n in self.networks]}

    def contains(self, pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
        address = pod.address
        if address is None or not any(address.version == n.version and address in n for n in self.networks):
            return False
        return all(tag_holds(tag, origin, pod, namespace_labels) for tag, origin in self.conditions)

    def candidates(self) -> Optional[PodScope]:
        return PodScope(namespace=self.namespace) if self.namespace is not None else None
