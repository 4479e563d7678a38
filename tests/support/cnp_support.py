"""A small cluster, random ClusterNetworkPolicies over it, and a reference of their Kubernetes
semantics written from the API's documentation (not from the translator), for the tier tests.

The reference decides one direction at a time: the Admin tier (policies by priority then name,
rules in order; the first rule matching the subject, the peer and the port decides Accept, Deny or
Pass), then (no NetworkPolicies here) the Baseline tier, then the default allow.
"""
from __future__ import annotations

import ipaddress
from typing import Any, Dict, List, Optional, Tuple

from hypothesis import strategies as st

from tests.support.builders import cluster_policy, namespace, pod

NAMESPACES = {"ns-a": {"house": "a", "team": "x"}, "ns-b": {"house": "b", "team": "x"},
              "ns-c": {"house": "c", "team": "y"}}
# (namespace, name, ip, labels, named ports)
PODS = [
    ("ns-a", "web", "10.0.1.10", {"app": "web"}, (("web", 80, "TCP"), ("dns", 53, "UDP"))),
    ("ns-a", "db", "10.0.1.11", {"app": "db"}, (("web", 8080, "TCP"),)),
    ("ns-b", "web", "10.0.2.10", {"app": "web"}, (("web", 8080, "TCP"),)),
    ("ns-b", "api", "10.0.2.11", {"app": "api", "tier": "front"}, (("dns", 53, "UDP"),)),
    ("ns-c", "web", "10.0.3.10", {"app": "web"}, (("web", 80, "TCP"),)),
    ("ns-c", "db", "10.0.3.11", {"app": "db"}, ()),
]
OUTSIDE = ("10.9.0.1", "192.168.0.1")  # one inside 10.0.0.0/8, one not
PROBES = (("tcp", 80), ("tcp", 8080), ("tcp", 75), ("tcp", 443), ("udp", 53), ("sctp", 9003))


def cluster() -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    return ([namespace(name, **labels) for name, labels in NAMESPACES.items()],
            [pod(ns, name, ip, labels, ports) for ns, name, ip, labels, ports in PODS])


def cnp(name: str, tier: str, priority: int, subject: Dict[str, Any], ingress: Optional[List[Any]] = None,
        egress: Optional[List[Any]] = None) -> Dict[str, Any]:
    """`builders.cluster_policy` with the uid `uid-<name>` (test_cnp_mapping reads it back as k8s_uuid)."""
    return cluster_policy(name, tier, priority, subject, ingress=ingress, egress=egress, uid=f"uid-{name}")


# --- random policies ---------------------------------------------------------------------------

SELECTORS = [{}, {"matchLabels": {"house": "a"}}, {"matchLabels": {"team": "x"}},
             {"matchExpressions": [{"key": "house", "operator": "In", "values": ["b", "c"]}]}]
POD_SELECTORS = [{}, {"matchLabels": {"app": "web"}}, {"matchLabels": {"app": "db"}},
                 {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}]
SUBJECTS = st.one_of(st.sampled_from(SELECTORS).map(lambda s: {"namespaces": s}),
                     st.tuples(st.sampled_from(SELECTORS), st.sampled_from(POD_SELECTORS)).map(
                         lambda t: {"pods": {"namespaceSelector": t[0], "podSelector": t[1]}}))
POD_PEERS = st.one_of(st.sampled_from(SELECTORS).map(lambda s: {"namespaces": s}),
                      st.tuples(st.sampled_from(SELECTORS), st.sampled_from(POD_SELECTORS)).map(
                          lambda t: {"pods": {"namespaceSelector": t[0], "podSelector": t[1]}}))
NETWORKS = st.sampled_from([["10.0.1.0/24"], ["10.0.0.0/8"], ["0.0.0.0/0"], ["10.0.2.11/32", "10.0.3.0/24"],
                            ["192.168.0.0/16"]]).map(lambda n: {"networks": n})
NUMBERED = st.sampled_from([{"tcp": {"destinationPort": {"number": 80}}},
                            {"tcp": {"destinationPort": {"range": {"start": 70, "end": 90}}}},
                            {"tcp": {"destinationPort": {"number": 8080}}},
                            {"udp": {"destinationPort": {"number": 53}}},
                            {"sctp": {"destinationPort": {"number": 9003}}}])
NAMED = st.sampled_from([{"destinationNamedPort": "web"}, {"destinationNamedPort": "dns"}])


@st.composite
def rules(draw: Any, direction: str) -> Dict[str, Any]:
    peers = draw(st.lists(POD_PEERS | NETWORKS if direction == "egress" else POD_PEERS, min_size=1, max_size=2))
    has_networks = any("networks" in p for p in peers)
    protocols = draw(st.none() | st.lists(NUMBERED if has_networks else NUMBERED | NAMED, min_size=1, max_size=2))
    rule: Dict[str, Any] = {"action": draw(st.sampled_from(["Accept", "Deny", "Pass"])),
                            "from" if direction == "ingress" else "to": peers}
    if protocols is not None:
        rule["protocols"] = protocols
    return rule


@st.composite
def one_direction_policies(draw: Any) -> Tuple[str, List[Dict[str, Any]]]:
    """Admin and Baseline policies whose rules are all of one direction (so that the other end
    never decides and Contrail's single evaluation is Kubernetes' two)."""
    direction = draw(st.sampled_from(["ingress", "egress"]))
    count = draw(st.integers(1, 4))
    policies = []
    for i in range(count):
        tier = draw(st.sampled_from(["Admin", "Baseline"]))
        body = draw(st.lists(rules(direction), min_size=1, max_size=3))
        policies.append(cnp(f"p{i}", tier, draw(st.integers(1, 3)), draw(SUBJECTS), **{direction: body}))
    return direction, policies


# --- the reference ------------------------------------------------------------------------------

def _selects(selector: Dict[str, Any], labels: Dict[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or ()
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and labels.get(key) in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


End = Tuple[Optional[Tuple[str, str]], str]  # (pod key or None for an outside address, IP)
_PODS = {(ns, name): (ip, labels, ports) for ns, name, ip, labels, ports in PODS}


def _pod_in(selection: Dict[str, Any], end: End) -> bool:
    key = end[0]
    if key is None:
        return False
    namespace_labels = dict(NAMESPACES[key[0]], **{"kubernetes.io/metadata.name": key[0]})
    if "namespaces" in selection:
        return _selects(selection["namespaces"], namespace_labels)
    pods = selection["pods"]
    return (_selects(pods.get("namespaceSelector") or {}, namespace_labels)
            and _selects(pods["podSelector"], _PODS[key][1]))


def _peer_matches(peer: Dict[str, Any], end: End) -> bool:
    if "networks" in peer:
        address = ipaddress.ip_address(end[1])
        return any(address in ipaddress.ip_network(n) for n in peer["networks"])
    return _pod_in(peer, end)


def _port_matches(protocols: Optional[List[Any]], destination: End, protocol: str, port: int) -> bool:
    if protocols is None:
        return True
    for entry in protocols:
        if "destinationNamedPort" in entry:
            if destination[0] is not None and any(
                    name == entry["destinationNamedPort"] and proto.lower() == protocol and number == port
                    for name, number, proto in _PODS[destination[0]][2]):
                return True
            continue
        ((name, body),) = entry.items()
        where = body["destinationPort"]
        low, high = (where["number"], where["number"]) if "number" in where else (where["range"]["start"], where["range"]["end"])
        if name == protocol and low <= port <= high:
            return True
    return False


def _tier(policies: List[Dict[str, Any]], tier: str, direction: str, source: End, destination: End,
          protocol: str, port: int) -> Optional[str]:
    subject, peer = (destination, source) if direction == "ingress" else (source, destination)
    ordered = sorted((p for p in policies if p["spec"]["tier"] == tier),
                     key=lambda p: (p["spec"]["priority"], p["metadata"]["name"]))
    for policy in ordered:
        if not _pod_in(policy["spec"]["subject"], subject):
            continue
        for rule in policy["spec"].get(direction) or ():
            peers = rule["from" if direction == "ingress" else "to"]
            if any(_peer_matches(p, peer) for p in peers) and _port_matches(rule.get("protocols"), destination, protocol, port):
                return str(rule["action"])
    return None


def kubernetes_allows(policies: List[Dict[str, Any]], direction: str, source: End, destination: End,
                      protocol: str, port: int) -> bool:
    """Kubernetes' verdict for one direction, with no NetworkPolicies."""
    for tier in ("Admin", "Baseline"):
        decision = _tier(policies, tier, direction, source, destination, protocol, port)
        if decision in ("Accept", "Deny"):
            return decision == "Accept"
    return True


def ends() -> List[End]:
    return [((ns, name), ip) for ns, name, ip, _, _ in PODS] + [(None, ip) for ip in OUTSIDE]
