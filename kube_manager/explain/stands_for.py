"""What a deciding rule stands for, in words, and how each end's chain decides (SPEC 6, 14).

The rules a NetworkPolicy writes are named after it, but the rules the tiers and `kubernetes`
semantics add (`<cluster>--pair-<12 hex>`, `<cluster>--admin-<12 hex>`, ...) are named by their
contents, so their names tell a person nothing. Each of them is one end's chain met with the
other end's: an answer decodes the deciding one from the firewall policy holding it and from the
Kubernetes verdict of the two ends, which is exactly what the rule stands for. The side phrases are
shared with the explain answer's `reason`.
"""
from __future__ import annotations

from typing import Optional

from kube_manager.translator.naming import (ADMIN_BLOCK, BASELINE_BLOCK, BASELINE_NP_BLOCK, ISOLATION_BLOCK,
                                           ISOLATION_DENY_BLOCK, block_policy_name, isolation_deny_name)

from .k8s_semantics import NETWORK_POLICY_TIER, SideVerdict, Verdict

# The blocks of the APS that hold such rules, by block (the translator's naming names them).
BLOCK_MEANING = {
    ADMIN_BLOCK: "the Admin tier at one end met with the other end's whole chain",
    ISOLATION_BLOCK: "a flow between two isolated ends",
    ISOLATION_DENY_BLOCK: "a flow between two isolated ends",
    BASELINE_NP_BLOCK: "a NetworkPolicy allowing at one end met with the Baseline tier at the other",
    BASELINE_BLOCK: "the Baseline tier at one end met with the other end's chain",
}
ISOLATED_TAG_MEANING = "pods some NetworkPolicy of their namespace isolates for {direction}"


def isolation_tags(cluster: str) -> dict:
    """The isolation tags `kubernetes` semantics puts on pods, with what each stands for."""
    return {f"label={cluster}-isolated-{direction}": ISOLATED_TAG_MEANING.format(direction=direction)
            for direction in ("ingress", "egress")}


def rule_words(side: SideVerdict) -> str:
    decision = side.decision
    assert decision is not None  # called for a side a ClusterNetworkPolicy tier decides
    name = f" ({decision.rule})" if decision.rule else ""
    return (f"{decision.tier} tier ClusterNetworkPolicy {decision.policy} rule "
            f"{decision.index}{name}")


def allows_words(side: SideVerdict) -> str:
    if side.decision is not None:
        return f"{rule_words(side)} accepts it"
    return f"{', '.join(side.allowing)} {'allows' if len(side.allowing) == 1 else 'allow'} it"


def drops_words(side: SideVerdict) -> str:
    decision = side.decision
    if decision is not None:
        why = f" (it fails closed: {decision.fail_closed})" if decision.fail_closed else ""
        return f"is denied by {rule_words(side)}{why}"
    return f"is isolated by {', '.join(side.isolating)} and none of them allows it"


def side_words(side: SideVerdict) -> str:
    """How one end's chain decides the flow, as a clause."""
    if not side.allowed:
        return drops_words(side)
    if side.decision is not None or (side.tier == NETWORK_POLICY_TIER and side.allowing):
        return f"allows it: {allows_words(side)}"
    return "allows it: no tier decides and the pod is not isolated (default allow)"


def stands_for(rule: Optional[str], policy: Optional[str], verdict: Verdict,
               cluster: str) -> Optional[str]:
    """What the deciding `rule` (in firewall policy `policy`) stands for, or None for a rule a
    NetworkPolicy writes under its own name (its name says it)."""
    prefix = block_policy_name(cluster, "")
    if not rule or not policy or not policy.startswith(prefix):
        return None
    block = policy[len(prefix):]
    chains = (f"the source's egress {side_words(verdict.egress)}; the destination's ingress "
              f"{side_words(verdict.ingress)}")
    if block in (ISOLATION_BLOCK, ISOLATION_DENY_BLOCK):
        if rule == isolation_deny_name(cluster):
            return ("the isolation deny: the source is isolated for egress and the destination "
                    "for ingress, and no egress rule at the source meets an ingress rule at the "
                    f"destination that allows the flow: {chains}")
        return ("a pair rule: an egress rule of a NetworkPolicy selecting the source met with an "
                "ingress rule of one selecting the destination, so a flow between two isolated "
                f"ends passes only when both allow it: {chains}")
    meaning = BLOCK_MEANING.get(block, "one end's chain met with the other end's")
    return f"{meaning}: {chains}"


__all__ = ["allows_words", "drops_words", "isolation_tags", "rule_words",
           "side_words", "stands_for"]
