"""ipBlock peers as Contrail address groups (SPEC 3).

Contrail address groups hold a list of prefixes and have no notion of "except", so a block's
`except` list is subtracted here (the Kuryr spec's splitting) instead of being written as deny rules,
which would break the additivity of NetworkPolicies.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from .shapes import IP_BLOCK, conform
from .validation import InvalidInput

Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]


def parse_cidr(text: str, path: str) -> Network:
    """A CIDR as Go's net.ParseCIDR reads it (address/length), host bits masked."""
    address, slash, length = text.partition("/")
    if not slash or not length.isdigit() or not length.isascii() or "%" in address:
        raise InvalidInput(f"{path}: {text!r} is not a CIDR (expected address/prefix-length)")
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError as exc:
        raise InvalidInput(f"{path}: {text!r} is not a valid CIDR: {exc}") from None


def network_key(net: Network) -> Tuple[int, int, int]:
    """Ascending address order, shorter prefixes first on the same address."""
    return (net.version, int(net.network_address), net.prefixlen)


def subtract(cidr: Network, excepts: Tuple[Network, ...]) -> List[Network]:
    """`cidr` minus every except, as the minimal list of prefixes in ascending order."""
    remaining: List[Network] = [cidr]
    for excluded in excepts:
        kept: List[Network] = []
        for net in remaining:
            if net.subnet_of(excluded):  # type: ignore[arg-type]
                continue
            if excluded.subnet_of(net):  # type: ignore[arg-type]
                kept.extend(net.address_exclude(excluded))  # type: ignore[arg-type]
            else:
                kept.append(net)
        remaining = kept
    # typeshed types ipaddress' set operations per IP version, so a list of either does not fit.
    return sorted(ipaddress.collapse_addresses(remaining), key=network_key)  # type: ignore[type-var]


def cidr_text(net: Network) -> str:
    """A CIDR as written in names: the config API forbids `:`, so IPv6 uses `_`."""
    return str(net).replace(":", "_")


def group_name(cidr: Network, excepts: Tuple[Network, ...]) -> str:
    """`<cidr>` or `<cidr>-except-<e1>-<e2>...` (before the 255-character shortening)."""
    name = cidr_text(cidr)
    if excepts:
        name += "-except-" + "-".join(cidr_text(e) for e in excepts)
    return name


@dataclass(frozen=True)
class IpBlock:
    """A validated ipBlock: canonical CIDR, canonical excepts (deduplicated, ascending), and what
    is derived from them once (the address group's prefixes and name, the CIDR as names write it)."""

    cidr: Network
    excepts: Tuple[Network, ...] = ()
    prefixes: Tuple[Network, ...] = field(default=(), compare=False, hash=False)
    address_group_name: str = field(default="", compare=False, hash=False)
    cidr_name: str = field(default="", compare=False, hash=False)

    def contains(self, ip: Optional[Address]) -> bool:
        if ip is None or ip.version != self.cidr.version or ip not in self.cidr:
            return False
        return not any(ip in e for e in self.excepts)

    def hash_input(self) -> Dict[str, Any]:
        """The destination part of a named-port selector tag's hash input (SPEC 4)."""
        return {"ipBlock": {"cidr": str(self.cidr), "except": [str(e) for e in self.excepts]}}


def parse_ip_block(raw: Any, path: str) -> IpBlock:
    """Validate an ipBlock as the API server does: each except a strict subset of the CIDR."""
    body = conform(raw, IP_BLOCK, path)
    text = body.get("cidr", "")
    if not text:
        raise InvalidInput(f"{path}.cidr: required")
    cidr = parse_cidr(text, f"{path}.cidr")
    excepts = set()
    for i, entry in enumerate(body.get("except", ())):
        epath = f"{path}.except[{i}]"
        excluded = parse_cidr(entry, epath)
        if (excluded.version != cidr.version or not excluded.subnet_of(cidr)  # type: ignore[arg-type]
                or excluded.prefixlen <= cidr.prefixlen):
            raise InvalidInput(f"{epath}: {excluded} must be a strict subset of cidr {cidr}")
        excepts.add(excluded)
    ordered = tuple(sorted(excepts, key=network_key))
    return IpBlock(cidr, ordered, tuple(subtract(cidr, ordered)), group_name(cidr, ordered),
                   cidr_text(cidr))
