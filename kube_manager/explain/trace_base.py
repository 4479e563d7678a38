"""What a trace is made of (SPEC 6): one entry per policy selecting an end of the flow, one line per
rule block or rule, and the words for selectors and labels, written the way kubectl writes them.
Shared by the NetworkPolicy trace (trace) and the ClusterNetworkPolicy tiers' (trace_tiers)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from kube_manager.translator.decode import requirement_phrase
from .k8s_selectors import LabelRequirement, Selector


@dataclass(frozen=True)
class BlockTrace:
    """One rule block of a NetworkPolicy, or one rule of a ClusterNetworkPolicy (with its `action`,
    the effect it has when it matches, and its `rule` name), against the flow."""

    index: int
    peer: bool
    port: bool
    reason: str
    action: Optional[str] = None
    rule: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        found = {"index": self.index, "peer": self.peer, "port": self.port, "reason": self.reason}
        if self.action is not None:
            found.update(action=self.action, rule=self.rule)
        return found


@dataclass(frozen=True)
class PolicyTrace:
    """One policy selecting one end of the flow. `allows` is None when it does not decide: a
    NetworkPolicy that selects the pod without isolating this direction (its policyTypes leave it
    out), a ClusterNetworkPolicy none of whose rules matches, or whose first match is a Pass."""

    side: str
    policy: str
    kind: str
    allows: Optional[bool]
    blocks: Tuple[BlockTrace, ...]

    def to_dict(self) -> Dict[str, Any]:
        return {"side": self.side, "policy": self.policy, "kind": self.kind,
                "allows": self.allows, "blocks": [b.to_dict() for b in self.blocks]}


def requirement_text(requirement: LabelRequirement) -> str:
    return requirement_phrase({"key": requirement.key, "operator": requirement.operator,
                               "values": sorted(requirement.values)})


def selector_text(selector: Selector) -> str:
    """`app=web,env notin (dev)`; the empty selector is `{}` (everything)."""
    return ",".join(requirement_text(r) for r in selector.requirements) or "{}"


def labels_text(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "no labels"


def unmet_text(selector: Selector, labels: Mapping[str, str]) -> str:
    """`: env notin (dev) not met` for a selector of several requirements, else nothing."""
    if len(selector.requirements) < 2:
        return ""
    unmet = ",".join(requirement_text(r) for r in selector.requirements if not r.matches(labels))
    return f": {unmet} not met"


def any_reason(results: Sequence[Tuple[bool, str]], empty: str) -> Tuple[bool, str]:
    """Matches when any entry does: its reason; else every entry's reason."""
    if not results:
        return False, empty
    for matched, reason in results:
        if matched:
            return True, reason
    return False, "; ".join(reason for _, reason in results)


def match_reason(matched: str, peer: Tuple[bool, str], port: Tuple[bool, str]) -> str:
    """`<matched>: <why the peer matches>; <why the port does>` when both match, else what did
    not."""
    if peer[0] and port[0]:
        return f"{matched}: {peer[1]}; {port[1]}"
    return "; ".join(why for ok, why in (peer, port) if not ok)
