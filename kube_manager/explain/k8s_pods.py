"""Pods and flow endpoints as the reference model (k8s_semantics) sees them.

A pod is its namespace, name, labels, IP (`status.podIP`) and named container ports; an endpoint
is one end of a flow, a cluster pod or an outside address. Malformed manifests read as far as they
can and never raise: a pod without a name is no pod, a bad IP is no IP.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Tuple

from .k8s_selectors import IPAddress, labels_of, object_or_empty


@dataclass(frozen=True)
class ContainerPort:
    name: str
    protocol: str
    number: int


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    labels: Mapping[str, str]
    ip: Optional[IPAddress]
    ports: Tuple[ContainerPort, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def resolve(self, port_name: str, protocol: str) -> Optional[int]:
        """The number a named port has on this pod for `protocol`, or None."""
        return next((p.number for p in self.ports
                     if p.name == port_name and p.protocol == protocol), None)


@dataclass(frozen=True)
class Endpoint:
    """One end of a flow: a cluster pod (with its IP, if any) or an outside address."""

    pod: Optional[Pod]
    ip: Optional[IPAddress]

    def describe(self) -> str:
        return self.pod.key if self.pod else str(self.ip)


def parse_ip(text: Any) -> Optional[IPAddress]:
    try:
        return ipaddress.ip_address(text) if text else None
    except (ValueError, TypeError):
        return None


def _container_ports(spec: Mapping[str, Any]) -> Tuple[ContainerPort, ...]:
    ports: List[ContainerPort] = []
    containers = spec.get("containers")
    for container in containers if isinstance(containers, list) else ():
        if not isinstance(container, dict):
            continue
        entries = container.get("ports")
        for port in entries if isinstance(entries, list) else ():
            if not isinstance(port, dict):
                continue
            name, number = port.get("name"), port.get("containerPort")
            if isinstance(name, str) and name and isinstance(number, int):
                ports.append(ContainerPort(name, port.get("protocol") or "TCP", number))
    return tuple(ports)


def parse_pod(manifest: Mapping[str, Any]) -> Optional[Pod]:
    metadata = object_or_empty(manifest.get("metadata"))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None
    spec = object_or_empty(manifest.get("spec"))
    status = object_or_empty(manifest.get("status"))
    return Pod(
        namespace=metadata.get("namespace") or "default",
        name=name,
        labels=labels_of(metadata),
        ip=parse_ip(status.get("podIP")),
        ports=_container_ports(spec),
    )
