"""NetworkPolicy ports as Contrail firewall services (SPEC 4).

A numbered port (or range) maps to one service; a named port is resolved on the destination pods by
the renderer, because only pods know what `http` means.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from .shapes import CONTAINER_PORT, POLICY_PORT, conform
from .validation import InvalidInput, port_name_problem

TCP, UDP, SCTP = "TCP", "UDP", "SCTP"
PROTOCOLS = (TCP, UDP, SCTP)
ANY_PROTOCOL = "any"
MIN_PORT, MAX_PORT = 0, 65535

# (protocol as Contrail spells it, first destination port, last destination port)
Service = Tuple[str, int, int]
ANY_SERVICE: Service = (ANY_PROTOCOL, MIN_PORT, MAX_PORT)


@dataclass(frozen=True)
class PortSpec:
    """A validated `ports` entry. `name` is set for a named port, else `start`..`end` (or all)."""

    protocol: str = TCP  # as Kubernetes spells it
    start: Optional[int] = None
    end: Optional[int] = None
    name: Optional[str] = None

    def service(self) -> Service:
        """The service of a numbered port; named ports are resolved per number by the renderer."""
        if self.start is None:
            return (self.protocol.lower(), MIN_PORT, MAX_PORT)
        return (self.protocol.lower(), self.start, self.end if self.end is not None else self.start)


def _port_number(raw: int, path: str) -> int:
    if not 1 <= raw <= MAX_PORT:
        raise InvalidInput(f"{path}: {raw} must be between 1 and 65535")
    return raw


def parse_port(raw: Any, path: str) -> PortSpec:
    """Validate a NetworkPolicyPort as the API server does (protocol names are case-sensitive)."""
    body = conform(raw, POLICY_PORT, path) if raw is not None else {}
    protocol = body.get("protocol", TCP)
    if protocol not in PROTOCOLS:
        raise InvalidInput(f"{path}.protocol: unsupported protocol {protocol!r}"
                           f" (one of {', '.join(PROTOCOLS)})")
    port, end_port = body.get("port"), body.get("endPort")
    if port is None:
        if end_port is not None:
            raise InvalidInput(f"{path}.endPort: may not be given without port")
        return PortSpec(protocol)
    if isinstance(port, str):
        problem = port_name_problem(port)
        if problem:
            raise InvalidInput(f"{path}.port: {problem}")
        if end_port is not None:
            raise InvalidInput(f"{path}.endPort: may not be given with the named port {port!r}")
        return PortSpec(protocol, name=port)
    start = _port_number(port, f"{path}.port")
    if end_port is None:
        return PortSpec(protocol, start, start)
    end = _port_number(end_port, f"{path}.endPort")
    if end < start:
        raise InvalidInput(f"{path}.endPort: {end} is below port {start}")
    return PortSpec(protocol, start, end)


def container_port_name(raw: Any) -> Optional[Tuple[str, str, int]]:
    """(name, protocol, number) of a pod's containerPort entry, when it is a usable named port.

    An entry of the wrong shape names no port (the rules naming it then do not admit this pod:
    fail closed), rather than rejecting a pod whose identity and tags are sound."""
    try:
        body = conform(raw, CONTAINER_PORT, "containerPort")
    except InvalidInput:
        return None
    name, number, protocol = body.get("name"), body.get("containerPort"), body.get("protocol") or TCP
    if not name or number is None or not 1 <= number <= MAX_PORT:
        return None
    return (name, protocol, number)
