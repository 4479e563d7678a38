"""Kubernetes manifests for the tests: the one builder per kind (namespace, pod, NetworkPolicy,
ClusterNetworkPolicy, with helpers for a ClusterNetworkPolicy's rules, peers and ports).

Manifests look as the API server returns them (apiVersion, kind, metadata, spec, status). By
default each carries a `uid` derived from its kind, namespace and name, as a server would have given
it, so a test that feeds manifests straight to a translator or a cache sees stable identities and one
that compares a daemon's writes with a translation of the same manifests sees the same uids;
`uid=None` leaves it out, for tests of a server that assigns uids itself.
"""
from __future__ import annotations

import uuid
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

# A container port: (name, containerPort, protocol).
Port = Tuple[str, int, str]
HTTP_8080: Tuple[Port, ...] = (("http", 8080, "TCP"),)
DERIVED = ""  # the default uid: derived from kind, namespace and name
NAME_LABEL = "kubernetes.io/metadata.name"  # the label the API server gives every namespace


def _metadata(kind: str, namespace: Optional[str], name: str, labels: Optional[Mapping[str, str]],
              uid: Optional[str]) -> Dict[str, Any]:
    metadata: Dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels is not None:
        metadata["labels"] = dict(labels)
    if uid == DERIVED:
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{namespace or ''}/{name}"))
    if uid is not None:
        metadata["uid"] = uid
    return metadata


def namespace(name: str, *, uid: Optional[str] = DERIVED, **labels: str) -> Dict[str, Any]:
    """A namespace with `labels`."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _metadata("Namespace", None, name, labels, uid)}


def pod(ns: str, name: str, ip: Optional[str] = None, labels: Optional[Mapping[str, str]] = None,
        ports: Iterable[Port] = (), *, uid: Optional[str] = DERIVED, **more_labels: str) -> Dict[str, Any]:
    """A pod with one container; `labels` and `more_labels` together are its labels (a dict for keys
    that are not Python names); without `ip` it has no status yet, as before the CNI ran."""
    manifest: Dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": _metadata("Pod", ns, name, {**(labels or {}), **more_labels}, uid),
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [
            {"name": port_name, "containerPort": number, "protocol": protocol}
            for port_name, number, protocol in ports]}]},
    }
    if ip:
        manifest["status"] = {"podIP": ip, "phase": "Running"}
    return manifest


def policy(ns: str, name: str, spec: Any = None, *, uid: Optional[str] = DERIVED) -> Dict[str, Any]:
    """A NetworkPolicy; without `spec`, one that selects every pod and allows nothing."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": _metadata("NetworkPolicy", ns, name, None, uid),
            "spec": spec if spec is not None else {"podSelector": {}}}


def cluster_policy(name: str, tier: str = "Admin", priority: int = 10, subject: Any = None, *,
                   ingress: Any = None, egress: Any = None, uid: Optional[str] = DERIVED) -> Dict[str, Any]:
    """A ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2, cluster-scoped); without
    `subject`, every pod of every namespace; `ingress`/`egress` only when given."""
    spec: Dict[str, Any] = {"tier": tier, "priority": priority,
                            "subject": subject if subject is not None else {"namespaces": {}}}
    spec.update((direction, rules) for direction, rules in (("ingress", ingress), ("egress", egress))
                if rules is not None)
    return {"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy",
            "metadata": _metadata("ClusterNetworkPolicy", None, name, None, uid), "spec": spec}


def cnp_rule(action: str, *peers: Any, direction: str = "ingress", name: str = "",
             protocols: Optional[Iterable[Any]] = None) -> Dict[str, Any]:
    """One ClusterNetworkPolicy rule: `peers` under `from` (ingress) or `to` (egress); `name` and
    `protocols` only when given (an empty `protocols` list is kept: tests check it is invalid)."""
    rule: Dict[str, Any] = {"action": action, ("from" if direction == "ingress" else "to"): list(peers)}
    if name:
        rule["name"] = name
    if protocols is not None:
        rule["protocols"] = list(protocols)
    return rule


def namespace_named(name: str) -> Dict[str, Any]:
    """A ClusterNetworkPolicy `namespaces` subject or peer: the namespace `name`, by its name label."""
    return {"namespaces": {"matchLabels": {NAME_LABEL: name}}}


def cnp_port(protocol: str, number: int) -> Dict[str, Any]:
    """A ClusterNetworkPolicy rule's protocol entry: destination port `number` of `protocol` (tcp, udp, sctp)."""
    return {protocol: {"destinationPort": {"number": number}}}


def allow_from(app: str, to: str, port: int = 80) -> Dict[str, Any]:
    """The spec of a policy letting pods `app=<app>` reach pods `app=<to>` on TCP `port`."""
    return {"podSelector": {"matchLabels": {"app": to}}, "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": app}}}],
                         "ports": [{"protocol": "TCP", "port": port}]}]}
