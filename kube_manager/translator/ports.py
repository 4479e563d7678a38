"""NetworkPolicy ports as Contrail firewall services (SPEC 4).

A numbered port (or range) maps to one service; a named port is resolved on the destination pods by
the renderer, because only pods know what `http` means.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from .validation import InvalidInput, mapping, port_name_problem

TCP, UDP, SCTP = "TCP", "UDP", "SCTP"
PROTOCOLS = (TCP, UDP, SCTP)
ANY_PROTOCOL = "any"
MIN_PORT, MAX_PORT = 0, 65535
_PORT_FIELDS = frozenset({"protocol", "port", "endPort"})

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


def _port_number(raw: Any, path: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InvalidInput(f"{path}: {raw!r} is not a port number")
    if not 1 <= raw <= MAX_PORT:
        raise InvalidInput(f"{path}: {raw} must be between 1 and 65535")
    return raw


def parse_port(raw: Any, path: str) -> PortSpec:
    """Validate a NetworkPolicyPort as the API server does (protocol names are case-sensitive)."""
    body = mapping(raw, path, _PORT_FIELDS)
    protocol = body.get("protocol")
    if protocol is None:
        protocol = TCP
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
    """(name, protocol, number) of a pod's containerPort entry, when it is a usable named port."""
    if not isinstance(raw, dict):
        return None
    name, number = raw.get("name"), raw.get("containerPort")
    protocol = raw.get("protocol") or TCP
    if (not isinstance(name, str) or not name or not isinstance(protocol, str)
            or isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= MAX_PORT):
        return None
    return (name, protocol, number)
