"""The translator's validated view of a ClusterNetworkPolicy (SPEC 13).

A manifest is read once into these frozen values; the chains and the exact mode never look at raw
dicts. Fail-closed handling is settled here, at reading time: a rule that cannot be enforced or is
invalid is either left out (an Accept: it matches nothing) or replaced by a Deny of everything its
subject sends or receives in its direction (a Deny or a Pass), as the API prescribes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Optional, Tuple, Union

from kube_manager.registry import CLUSTER_NETWORK_POLICIES

from ..cidr import Network
from ..model import PodScope

ADMIN, BASELINE = "Admin", "Baseline"
TIERS = (ADMIN, BASELINE)
ACCEPT, DENY, PASS = "Accept", "Deny", "Pass"
ACTIONS = (ACCEPT, DENY, PASS)
KIND = CLUSTER_NETWORK_POLICIES.kind
MAX_PRIORITY = 1000

# A numbered port range as Contrail spells its protocol: ("tcp", first, last).
PortRange = Tuple[str, int, int]


@dataclass(frozen=True)
class Networks:
    """A `networks` peer: canonical CIDRs, collapsed and in ascending order."""

    cidrs: Tuple[Network, ...]


# A peer: pods (a namespace selector and an optional pod selector, SPEC 2.1) or networks.
CnpPeer = Union[PodScope, Networks]


@dataclass(frozen=True)
class CnpRule:
    """One rule as enforced. `peers` None: every address (a fail-closed Deny); `ports` None: every
    protocol and port; else the numbered ranges, with `named_ports` the destinationNamedPort names
    (resolved on the destination pods by the renderer, SPEC 4)."""

    direction: str  # "ingress" | "egress"
    index: int  # the manifest position in its direction
    action: str  # ACCEPT | DENY | PASS
    peers: Optional[Tuple[CnpPeer, ...]]
    ports: Optional[Tuple[PortRange, ...]] = None
    named_ports: Tuple[str, ...] = ()
    name: str = ""  # the rule's own `name`, for people


@dataclass(frozen=True)
class ParsedCnp:
    """A ClusterNetworkPolicy after validation. `subject` None: rejected whole (bad tier, priority
    or subject), reported in `errors` and rendering nothing. `logged`: the Contrail actions whose
    rules log their matches when this policy decides them (its logging annotation, SPEC 15)."""

    name: str
    uid: str
    spec_sha256: str
    tier: str
    priority: int
    subject: Optional[PodScope]
    rules: Tuple[CnpRule, ...] = ()  # ingress rules, then egress rules, each in manifest order
    errors: Tuple[str, ...] = ()
    logged: FrozenSet[str] = frozenset()

    @property
    def order(self) -> Tuple[int, str]:
        """Precedence inside the tier: lower priority first, equal priorities by name."""
        return (self.priority, self.name)
