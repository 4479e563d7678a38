"""Sets of destination ports of ClusterNetworkPolicy rules (SPEC 13): per-protocol ranges, and
"every other IP protocol", with the exact union, intersection and difference the algebra needs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, List, Tuple

from ..ports import MAX_PORT, MIN_PORT
from .model import PortRange

FLOW_PROTOCOLS = ("sctp", "tcp", "udp")


@dataclass(frozen=True)
class PortSet:
    """Per-protocol destination port ranges (sorted, merged), and whether every other IP protocol
    (neither TCP, UDP nor SCTP, which have no ports) is in the set."""

    ranges: Tuple[PortRange, ...]
    other: bool = False

    @property
    def is_empty(self) -> bool:
        return not self.ranges and not self.other


ALL_PORTS = PortSet(tuple((p, MIN_PORT, MAX_PORT) for p in FLOW_PROTOCOLS), True)


def port_set(ranges: Iterable[PortRange], other: bool = False) -> PortSet:
    """Ranges merged per protocol."""
    merged: List[PortRange] = []
    for protocol, start, end in sorted(ranges):
        if merged and merged[-1][0] == protocol and start <= merged[-1][2] + 1:
            merged[-1] = (protocol, merged[-1][1], max(end, merged[-1][2]))
        else:
            merged.append((protocol, start, end))
    return PortSet(tuple(merged), other)


def intersect_ports(a: PortSet, b: PortSet) -> PortSet:
    found = [(p, max(s, t), min(e, f)) for p, s, e in a.ranges for q, t, f in b.ranges
             if p == q and max(s, t) <= min(e, f)]
    return port_set(found, a.other and b.other)


def subtract_ports(a: PortSet, b: PortSet) -> PortSet:
    """`a` minus `b`. Port 0 is no port a flow can use, so a range of `b` from 1 counts from 0:
    "every port" minus "1-65535" leaves nothing rather than a rule for port 0."""
    remaining = list(a.ranges)
    for protocol, start, end in b.ranges:
        start = MIN_PORT if start == 1 else start
        kept = []
        for p, s, e in remaining:
            if p != protocol or e < start or s > end:
                kept.append((p, s, e))
                continue
            if s < start:
                kept.append((p, s, start - 1))
            if e > end:
                kept.append((p, end + 1, e))
        remaining = kept
    return port_set(remaining, a.other and not b.other)
