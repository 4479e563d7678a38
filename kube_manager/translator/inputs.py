"""Validation of Pod and Namespace manifests into PodInfo / NamespaceInfo.

Only what the translator needs is kept: labels, the pod IP (`status.podIP`) and the containers'
named ports. An object the API server could never have stored (missing name, invalid labels) is
rejected with a reason rather than half-read.
"""
from __future__ import annotations

import ipaddress
import re
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .model import METADATA_NAME_LABEL, NamespaceInfo, PodInfo
from .parsecache import ParseCache, content_key
from .ports import container_port_name
from .shapes import NAMESPACE, POD, Fields, conform
from .validation import InvalidInput, check_labels, metadata_problem, namespace_name_problem

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4_RE = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_NO_PORTS: Mapping[Tuple[str, str], int] = MappingProxyType({})  # shared by pods without named ports
_ABSENT: Mapping[str, Any] = MappingProxyType({})  # what an absent object reads as (no dict made for it)


def identity(manifest: Any, shape: Fields) -> Tuple[Dict[str, Any], Dict[str, Any], str, str]:
    """The manifest conformed to `shape`, its metadata, namespace (default `default`) and uid;
    raises InvalidInput when it does not fit."""
    body = conform(manifest, shape, "")
    metadata = body.get("metadata", {})
    return body, metadata, metadata.get("namespace") or "default", metadata.get("uid", "")


def reported_key(manifest: Any) -> Tuple[str, str]:
    """(namespace, name) of a namespaced manifest as far as it can be read, for error reports."""
    metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    return (str(metadata.get("namespace") or "default"), str(metadata.get("name") or ""))


def namespace_key(manifest: Any) -> str:
    """The name of a Namespace manifest as far as it can be read, for error reports."""
    return reported_key(manifest)[1]


def namespace_labels(name: str, labels: Mapping[str, str]) -> Dict[str, str]:
    """A namespace's labels as the API server stores them: with kubernetes.io/metadata.name."""
    result = dict(labels)
    result[METADATA_NAME_LABEL] = name
    return result


def parse_namespace(manifest: Any, cache: Optional[ParseCache] = None) -> NamespaceInfo:
    _, metadata, _, uid = identity(manifest, NAMESPACE)
    name = metadata.get("name")
    problem = namespace_name_problem(name)
    if problem:
        raise InvalidInput(f"metadata.name: {problem}")
    assert isinstance(name, str)  # the check above refuses anything else
    labels = check_labels(metadata.get("labels", {}), "metadata.labels", cache.labels if cache else None)
    return NamespaceInfo(name, uid, namespace_labels(name, labels))


def implicit_namespace(name: str) -> NamespaceInfo:
    """A namespace known only from its pods or policies (SPEC 8)."""
    return NamespaceInfo(name, "", namespace_labels(name, {}), explicit=False)


def _named_ports(containers: List[Any]) -> Mapping[Tuple[str, str], int]:
    ports: Dict[Tuple[str, str], int] = {}
    for container in containers:
        entries = container.get("ports") if isinstance(container, dict) else None
        for entry in entries if isinstance(entries, list) else ():
            named = container_port_name(entry)
            if named is not None:
                ports.setdefault((named[0], named[1]), named[2])
    return ports or _NO_PORTS


def _canonical_ip(ip: Any) -> str:
    """A pod IP other than a dotted quad (which is canonical as it is), in canonical form."""
    try:
        if not isinstance(ip, str):
            raise ValueError(ip)
        return str(ipaddress.ip_address(ip))
    except ValueError:
        raise InvalidInput(f"status.podIP: {ip!r} is not an IP address") from None


def parse_pod(manifest: Any, cache: Optional[ParseCache] = None) -> PodInfo:
    """A pod whose identity, labels and IP are sound; anything else the translator reads is shaped
    too (a malformed named-port entry names no port, see ports.container_port_name)."""
    # identity() written out, without a dict made for each field absent: pods are most of a cluster
    body = manifest if POD.fits(manifest) else conform(manifest, POD, "")
    metadata = body.get("metadata", _ABSENT)
    namespace, name = metadata.get("namespace") or "default", metadata.get("name")
    if cache is None:
        problem = metadata_problem(namespace, name)
        labels = None if problem else check_labels(metadata.get("labels", _ABSENT), "metadata.labels")
    else:
        problem = metadata_problem(namespace, name, cache.namespaces)
        labels = None if problem else check_labels(metadata.get("labels", _ABSENT), "metadata.labels", cache.labels)
    if problem or labels is None:
        raise InvalidInput(problem)
    ip = body.get("status", _ABSENT).get("podIP")
    if ip is not None and (ip.__class__ is not str or not _IPV4_RE.fullmatch(ip)):  # (a dotted quad is canonical)
        ip = _canonical_ip(ip) if ip else None
    spec = body.get("spec", _ABSENT)
    containers = spec.get("containers", ())
    if cache is None:
        named_ports = _named_ports(containers)
    elif len(containers) == 1:  # the pods of one template share their ports, read once and shared (read-only)
        container = containers[0]  # (the usual pod: no comprehension, which is a call in 3.11)
        ports = [container.get("ports") if isinstance(container, dict) else None]
        named_ports = cache.memo_call("ports", content_key(ports), _named_ports, containers)
    else:
        ports = [container.get("ports") if isinstance(container, dict) else None for container in containers]
        named_ports = cache.memo_call("ports", content_key(ports), _named_ports, containers)
    return PodInfo(namespace, name, metadata.get("uid", ""), labels, ip, named_ports, spec.get("hostNetwork") is True)
