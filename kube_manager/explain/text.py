"""`explain -o text`: one flow's answer in a few lines a person reads at a terminal (SPEC 8).

The JSON answer is complete but long; the text says the verdict, the deciding rule, and, per side,
each policy selecting the pod with what each of its blocks lacks, then what the selector tags of
the two ends stand for. Nothing here decides anything: it only lays out the explain answer.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

SIDES = (("egress", "from", "egress at the source"), ("ingress", "to", "ingress at the destination"))
CLUSTER_NETWORK_POLICY = "ClusterNetworkPolicy"
_DECIDES = {True: "ACCEPTS", False: "DENIES", None: "does not decide (no rule matches, or Pass)"}


def _end(end: Mapping[str, Any]) -> str:
    return str(end.get("pod") or end.get("ip") or "?")


def _cluster_policy_lines(step: Mapping[str, Any]) -> List[str]:
    lines = [f"  ClusterNetworkPolicy {step['policy']}: {_DECIDES[step.get('allows')]}"]
    for block in step.get("blocks") or ():
        name = f" {block['rule']}" if block.get("rule") else ""
        lines.append(f"    rule {block['index']}{name} ({block.get('action')}): {block['reason']}")
    return lines


def _tier_line(label: str, verdict: Mapping[str, Any]) -> str:
    """`egress at the source: Admin tier, rule 0 of p (Deny)`: which tier decides one side."""
    rule = verdict.get("rule")
    if rule:
        name = f" {rule['rule']}" if rule.get("rule") else ""
        how = (f"{rule['tier']} tier: ClusterNetworkPolicy {rule['policy']} rule {rule['index']}"
               f"{name} ({rule['action']})")
    elif verdict.get("tier") == "NetworkPolicy":
        allowing = verdict.get("allowed_by")
        how = "NetworkPolicy tier: " + (f"allowed by {', '.join(allowing)}" if allowing
                                        else f"isolated by {', '.join(verdict['policies'])}")
    else:
        how = "no tier decides: default allow"
    return f"  {label}: {'allow' if verdict.get('allowed') else 'DROP'} ({how})"


def _policy_lines(step: Mapping[str, Any]) -> List[str]:
    if step.get("kind") == CLUSTER_NETWORK_POLICY:
        return _cluster_policy_lines(step)
    allows = step.get("allows")
    blocks: Sequence[Mapping[str, Any]] = step.get("blocks") or ()
    if not blocks:
        return [f"  {step['policy']}: isolates it and allows nothing (no {step['side']} rules)"]
    lines = [f"  {step['policy']}: {'ALLOWS' if allows else 'does not allow'}"]
    lines.extend(f"    block {b['index']}: {b['reason']}" for b in blocks)
    return lines


def render(result: Mapping[str, Any]) -> str:
    """The answer of `Explainer.explain` as text lines (ending with a newline)."""
    source, destination = _end(result["from"]), _end(result["to"])
    contrail = "allowed" if result["allowed"] else "DROPPED"
    kubernetes = "allow" if result["kubernetes_allowed"] else "drop"
    lines = [f"{source} -> {destination} {str(result['protocol']).upper()} {result['port']}: "
             f"{contrail} by Contrail; Kubernetes would {kubernetes} it"]
    if result.get("rule"):
        logged = ", logs its matches" if result.get("logged") else ""
        lines.append(f"deciding rule: {result['rule']} in {result['policy']} ({result['action']}{logged})")
        if result.get("stands_for"):
            lines.append(f"  which stands for {result['stands_for']}")
    elif not result.get("under_aps", True):
        lines.append("deciding rule: none (neither end is under the cluster's APS)")
    else:
        lines.append("deciding rule: none matched (dropped)")
    if result.get("deviation"):
        lines.append(f"deviation: {result['deviation']}: {result['reason']}")
    verdicts: Mapping[str, Any] = result.get("kubernetes") or {}
    if any((verdicts.get(side) or {}).get("tier") not in (None, "NetworkPolicy", "default")
           for side, _, _ in SIDES):
        lines.append("Kubernetes, tier by tier:")
        lines.extend(_tier_line(label, verdicts[side]) for side, _, label in SIDES
                     if verdicts.get(side))
    steps: Sequence[Mapping[str, Any]] = result.get("trace") or ()
    for side, end, label in SIDES:
        pod = result[end].get("pod")
        mine = [s for s in steps if s.get("side") == side]
        if pod is None:
            lines.append(f"{label} ({_end(result[end])}): not a pod, no policies")
            continue
        if not mine:
            lines.append(f"{label} ({pod}): no policy selects it, not isolated")
            continue
        lines.append(f"{label} ({pod}):")
        for step in mine:
            if step.get("allows") is not None or step.get("kind") == CLUSTER_NETWORK_POLICY:
                lines.extend(_policy_lines(step))
        bystanders = [str(s["policy"]) for s in mine
                      if s.get("allows") is None and s.get("kind") != CLUSTER_NETWORK_POLICY]
        if bystanders:
            lines.append(f"  not isolating {side} (policyTypes), so not deciding: "
                         f"{', '.join(bystanders)}")
    if result.get("rejected_policies"):
        lines.append(f"rejected whole, so selecting nothing: {', '.join(result['rejected_policies'])}")
    selectors: Mapping[str, Mapping[str, Any]] = result.get("selectors") or {}
    for tag, decoded in sorted(selectors.items()):
        lines.append(f"{tag}: {decoded.get('text')}")
    return "\n".join(lines) + "\n"


def flow_errors(errors: Sequence[Mapping[str, str]], result: Mapping[str, Any]) -> List[str]:
    """The translation errors that concern this flow: those of a policy in its trace or rejected
    whole in the namespace of one of its pods, or of one of its two pods. Others (a bad policy
    elsewhere) are noise here."""
    policies = {s.get("policy") for s in result.get("trace") or ()}
    policies.update(result.get("rejected_policies") or ())
    pods = {result[end].get("pod") for end in ("from", "to")} - {None}
    concerned: Dict[str, None] = {}
    for error in errors:
        key = f"{error.get('namespace')}/{error.get('name')}"
        if error.get("kind") == CLUSTER_NETWORK_POLICY:
            key = str(error.get("name"))  # cluster-scoped: traced by its name alone
        if (error.get("kind") in ("NetworkPolicy", CLUSTER_NETWORK_POLICY) and key in policies) or \
                (error.get("kind") == "Pod" and key in pods):
            concerned[f"{error.get('kind')} {key}: {error.get('reason')}"] = None
    return list(concerned)


__all__ = ["flow_errors", "render"]
