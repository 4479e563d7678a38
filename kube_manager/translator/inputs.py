"""Validation of Pod and Namespace manifests into PodInfo / NamespaceInfo.

Only what the translator needs is kept: labels, the pod IP (`status.podIP`) and the containers'
named ports. An object the API server could never have stored (missing name, invalid labels) is
rejected with a reason rather than half-read.
"""
from __future__ import annotations

import ipaddress
import re
from types import MappingProxyType
from typing import Any, Dict, Mapping, Optional, Tuple

from .model import METADATA_NAME_LABEL, NamespaceInfo, PodInfo
from .parsecache import ParseCache
from .ports import container_port_name
from .validation import InvalidInput, check_labels, metadata_problem, namespace_name_problem

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4_RE = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_NO_PORTS: Mapping[Tuple[str, str], int] = MappingProxyType({})  # shared by pods without named ports


def _metadata(manifest: Any) -> Mapping[str, Any]:
    if not isinstance(manifest, dict):
        raise InvalidInput(f"expected an object, got {type(manifest).__name__}")
    metadata = manifest.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _uid(metadata: Mapping[str, Any]) -> str:
    uid = metadata.get("uid") or ""
    return uid if isinstance(uid, str) else str(uid)


def object_key(manifest: Any) -> Tuple[str, str]:
    """(namespace, name) of a namespaced manifest as far as it can be read, for error reports."""
    metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    return (str(metadata.get("namespace") or "default"), str(metadata.get("name") or ""))


def namespace_labels(name: str, labels: Mapping[str, str]) -> Dict[str, str]:
    """A namespace's labels as the API server stores them: with kubernetes.io/metadata.name."""
    result = dict(labels)
    result[METADATA_NAME_LABEL] = name
    return result


def parse_namespace(manifest: Any, cache: Optional[ParseCache] = None) -> NamespaceInfo:
    metadata = _metadata(manifest)
    name = metadata.get("name")
    problem = namespace_name_problem(name)
    if problem:
        raise InvalidInput(f"metadata.name: {problem}")
    labels = check_labels(metadata.get("labels"), "metadata.labels", cache.labels if cache else None)
    return NamespaceInfo(name, _uid(metadata), namespace_labels(name, labels))


def implicit_namespace(name: str) -> NamespaceInfo:
    """A namespace known only from its pods or policies (SPEC 8)."""
    return NamespaceInfo(name, "", namespace_labels(name, {}), explicit=False)


def _named_ports(spec: Any) -> Mapping[Tuple[str, str], int]:
    ports: Dict[Tuple[str, str], int] = {}
    containers = spec.get("containers") if isinstance(spec, dict) else None
    for container in containers if isinstance(containers, list) else ():
        entries = container.get("ports") if isinstance(container, dict) else None
        for entry in entries if isinstance(entries, list) else ():
            named = container_port_name(entry)
            if named is not None:
                ports.setdefault((named[0], named[1]), named[2])
    return ports or _NO_PORTS

def canonical_ip(ip: Any) -> str:
    """A pod IP in canonical form; dotted quads (the common case) are checked without parsing."""
    if isinstance(ip, str) and _IPV4_RE.fullmatch(ip):
        return ip
    try:
        if not isinstance(ip, str):
            raise ValueError(ip)
        return str(ipaddress.ip_address(ip))
    except ValueError:
        raise InvalidInput(f"status.podIP: {ip!r} is not an IP address") from None


def parse_pod(manifest: Any, cache: Optional[ParseCache] = None) -> PodInfo:
    metadata = _metadata(manifest)
    namespace = metadata.get("namespace") or "default"
    name = metadata.get("name")
    problem = metadata_problem(namespace, name, cache.namespaces if cache else None)
    if problem:
        raise InvalidInput(problem)
    labels = check_labels(metadata.get("labels"), "metadata.labels", cache.labels if cache else None)
    status = manifest.get("status")
    ip = status.get("podIP") if isinstance(status, dict) else None
    return PodInfo(namespace, name, _uid(metadata), labels, canonical_ip(ip) if ip else None,
                   _named_ports(manifest.get("spec")))
