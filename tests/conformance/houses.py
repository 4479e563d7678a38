"""The ClusterNetworkPolicy conformance topology and manifest builders, on the model of the upstream
suite's base manifests (kubernetes-sigs/network-policy-api, conformance/base/manifests.yaml).

Four namespaces `network-policy-conformance-<house>` labelled `conformance-house: <house>`, each
with two pods `<wizard>-0` and `<wizard>-1` (a StatefulSet upstream) labelled the same way, every
pod declaring the container ports `web` (TCP 80) and `dns` (UDP 53) and serving 8080/TCP,
5353/UDP and 9003, 9005/SCTP unnamed. Upstream's fifth namespace holds host-networked pods,
reachable only as node addresses; here `forbidden-forrest/centaur-1` is the node address
NODE_IP (an outside address to the cluster's pods). Pod IPs are fixed so that network peers can
name them.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from tests.support.builders import cluster_policy, cnp_rule, namespace, policy

PREFIX = "network-policy-conformance-"
HOUSE_LABEL = "conformance-house"
NAME_LABEL = "kubernetes.io/metadata.name"
WIZARDS = {"gryffindor": "harry-potter", "slytherin": "draco-malfoy",
           "hufflepuff": "cedric-diggory", "ravenclaw": "luna-lovegood"}
HOUSES = tuple(WIZARDS)
NODE = "forbidden-forrest/centaur-1"
NODE_IP = "172.18.0.3"
# The upstream suite's default host-network ports (HostNetworkPortRangeStart 34345, eight ports).
HOST_PORTS = tuple(range(34345, 34353))
PODS = tuple(f"{house}/{wizard}-{i}" for house, wizard in WIZARDS.items() for i in (0, 1))


def namespace_of(house: str) -> str:
    return PREFIX + house


def pod_ip(end: str) -> str:
    """gryffindor/harry-potter-0 is 10.244.1.10, its twin 10.244.1.11, slytherin 10.244.2.x..."""
    house, name = end.split("/")
    return f"10.244.{HOUSES.index(house) + 1}.{10 + int(name.rsplit('-', 1)[1])}"


def address(end: str) -> str:
    """What a probe connects to: the pod's IP, or the node's for the host-networked pod."""
    return NODE_IP if end == NODE else pod_ip(end)


def _pod(end: str) -> Dict[str, Any]:
    house, name = end.split("/")
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace_of(house), "uid": f"uid-{name}",
                         "labels": {HOUSE_LABEL: house}},
            "spec": {"containers": [
                {"name": f"{name}-80", "ports": [{"name": "web", "containerPort": 80, "protocol": "TCP"}]},
                {"name": f"{name}-53", "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"}]},
            ]},
            "status": {"podIP": pod_ip(end)}}


def _namespace(house: str) -> Dict[str, Any]:
    return namespace(namespace_of(house), uid=f"uid-{house}", **{HOUSE_LABEL: house})


# ---- ClusterNetworkPolicy builders -------------------------------------------------------------

def by_name(house: str) -> Dict[str, Any]:
    """A namespace selector on the name label."""
    return {"matchLabels": {NAME_LABEL: namespace_of(house)}}


def by_house(house: str) -> Dict[str, Any]:
    return {"matchLabels": {HOUSE_LABEL: house}}


def namespaces(selector: Dict[str, Any]) -> Dict[str, Any]:
    """A `namespaces` subject or peer."""
    return {"namespaces": selector}


def house_pods(house: str) -> Dict[str, Any]:
    """A `pods` subject or peer: the house's pods in the house's namespaces."""
    return {"pods": {"namespaceSelector": by_house(house), "podSelector": by_house(house)}}


def networks(*cidrs: str) -> Dict[str, Any]:
    return {"networks": list(cidrs)}


def nodes() -> Dict[str, Any]:
    return {"nodes": {"matchLabels": {"kubernetes.io/os": "linux"}}}


def port_range(protocol: str, start: int, end: int) -> Dict[str, Any]:
    return {protocol: {"destinationPort": {"range": {"start": start, "end": end}}}}


def named(name: str) -> Dict[str, Any]:
    return {"destinationNamedPort": name}


def cnp(name: str, tier: str, priority: int, subject: Dict[str, Any],
        ingress: Sequence[Dict[str, Any]] = (), egress: Sequence[Dict[str, Any]] = ()) -> Dict[str, Any]:
    """`builders.cluster_policy` with the uid `uid-cnp-<name>`; an empty rule list is left out."""
    return cluster_policy(name, tier, priority, subject, ingress=list(ingress) or None,
                          egress=list(egress) or None, uid=f"uid-cnp-{name}")


def ladder(direction: str, first: str, second: str, third: str,
           second_ports: Sequence[Dict[str, Any]], third_ports: Sequence[Dict[str, Any]],
           passes: bool) -> List[Dict[str, Any]]:
    """The rule ladder every upstream protocol test uses (the Baseline tier's has no Pass rules):
    Accept, Deny (and Pass) everything of the first house; Deny (and Pass) the second house at
    some ports; Accept the third house at some ports and Deny it everything else. Peers select
    namespaces by name."""
    way = "from" if direction == "ingress" else "to"

    def peer(house: str) -> Dict[str, Any]:
        return namespaces(by_name(house))

    rules = [cnp_rule("Accept", peer(first), direction=direction, name=f"allow-{way}-{first}-everything"),
             cnp_rule("Deny", peer(first), direction=direction, name=f"deny-{way}-{first}-everything")]
    if passes:
        rules.append(cnp_rule("Pass", peer(first), direction=direction, name=f"pass-{way}-{first}-everything"))
    rules.append(cnp_rule("Deny", peer(second), direction=direction, name=f"deny-{way}-{second}-at-ports",
                          protocols=second_ports))
    if passes:
        rules.append(cnp_rule("Pass", peer(second), direction=direction, name=f"pass-{way}-{second}-at-ports",
                              protocols=second_ports))
    rules += [cnp_rule("Accept", peer(third), direction=direction, name=f"allow-{way}-{third}-at-ports",
                       protocols=third_ports),
              cnp_rule("Deny", peer(third), direction=direction, name=f"deny-{way}-{third}-everything-else")]
    return rules


# ---- the cluster, and the changes the upstream tests make to it ---------------------------------

@dataclass
class HouseCluster:
    """The base manifests plus one test's policies, changed in place by the test's steps."""

    cluster_network_policies: List[Dict[str, Any]]
    network_policies: List[Dict[str, Any]] = field(default_factory=list)
    namespaces: List[Dict[str, Any]] = field(
        default_factory=lambda: [_namespace(house) for house in HOUSES])
    pods: List[Dict[str, Any]] = field(default_factory=lambda: [_pod(end) for end in PODS])

    @classmethod
    def with_policies(cls, policies: Sequence[Dict[str, Any]]) -> "HouseCluster":
        policies = copy.deepcopy(list(policies))
        return cls([p for p in policies if p["kind"] == "ClusterNetworkPolicy"],
                   [p for p in policies if p["kind"] == "NetworkPolicy"])

    @property
    def objects(self) -> Dict[str, List[Dict[str, Any]]]:
        """The manifests by kind, as explain and `translate()` read them."""
        return {"Namespace": self.namespaces, "Pod": self.pods, "NetworkPolicy": self.network_policies,
                "ClusterNetworkPolicy": self.cluster_network_policies}

    def cnp(self, name: str) -> Dict[str, Any]:
        return next(p for p in self.cluster_network_policies if p["metadata"]["name"] == name)

    def namespace(self, house: str) -> Dict[str, Any]:
        return next(n for n in self.namespaces if n["metadata"]["name"] == namespace_of(house))


@dataclass(frozen=True)
class Swap:
    """Swap two rules of one direction (upstream: `mutate.Spec.Ingress[i], [j] = [j], [i]`)."""

    policy: str
    direction: str
    first: int
    second: int

    def apply(self, cluster: HouseCluster) -> None:
        rules = cluster.cnp(self.policy)["spec"][self.direction]
        rules[self.first], rules[self.second] = rules[self.second], rules[self.first]


@dataclass(frozen=True)
class SetPriority:
    policy: str
    priority: int

    def apply(self, cluster: HouseCluster) -> None:
        cluster.cnp(self.policy)["spec"]["priority"] = self.priority


@dataclass(frozen=True)
class SetAction:
    policy: str
    direction: str
    index: int
    action: str

    def apply(self, cluster: HouseCluster) -> None:
        cluster.cnp(self.policy)["spec"][self.direction][self.index]["action"] = self.action


@dataclass(frozen=True)
class SetProtocols:
    policy: str
    direction: str
    index: int
    protocols: Tuple[Dict[str, Any], ...]

    def apply(self, cluster: HouseCluster) -> None:
        cluster.cnp(self.policy)["spec"][self.direction][self.index]["protocols"] = \
            copy.deepcopy(list(self.protocols))


@dataclass(frozen=True)
class PrependRule:
    policy: str
    direction: str
    rule: Dict[str, Any]

    def apply(self, cluster: HouseCluster) -> None:
        spec = cluster.cnp(self.policy)["spec"]
        spec[self.direction] = [copy.deepcopy(self.rule)] + spec.get(self.direction, [])


@dataclass(frozen=True)
class SetNamespaceLabels:
    """Replace a namespace's labels (the API server keeps its name label)."""

    house: str
    labels: Tuple[Tuple[str, str], ...]

    def apply(self, cluster: HouseCluster) -> None:
        cluster.namespace(self.house)["metadata"]["labels"] = dict(self.labels)


@dataclass(frozen=True)
class DeleteNetworkPolicy:
    house: str
    name: str

    def apply(self, cluster: HouseCluster) -> None:
        cluster.network_policies = [
            p for p in cluster.network_policies
            if (p["metadata"]["namespace"], p["metadata"]["name"]) != (namespace_of(self.house),
                                                                      self.name)]


def network_policy(house: str, name: str, spec: Dict[str, Any]) -> Dict[str, Any]:
    return policy(namespace_of(house), name, spec, uid=f"uid-np-{name}")


def split(end: str) -> Tuple[str, str]:
    """(namespace, pod name) of a `house/pod` end."""
    house, name = end.split("/")
    return namespace_of(house), name


def is_pod(end: Optional[str]) -> bool:
    return end is not None and end != NODE
