"""Logging of rule matches (SPEC 15): Contrail's `action_list.log` on the rules an annotation asks for.

`contrail-kube-manager/policy-logging` on a namespace (`deny`, `allow` or `all`) logs the deny
rules, the pass rules, or both, of its NetworkPolicies. Any other value is ignored and reported in
the policy's errors. Applied as a last pass over what the renderers emitted, so that it adds
nothing to how rules are made: a rule that logs is its rendered body with another `action_list`,
every other object is the same body as without logging, and a change of the annotation rewrites
only the rules it concerns.

The same annotation on a ClusterNetworkPolicy (read into `ParsedCnp.logged`) logs the tier blocks'
rules whose action that policy decides (`exact.tiers` applies it as the blocks are written). A
block rule is the conjunction of one item of the source's egress chain and one of the
destination's ingress chain (`exact.product`); each side's verdict is decided by the first item it
matches that is not a Pass, since a Pass only hands the flow to what follows (the lower tiers, the
NetworkPolicies, the default). The deciders of a rule are the ClusterNetworkPolicies of the items
whose action is the rule's: when it passes, the Accepts of either side (none for a side passed by a
NetworkPolicy, a Pass or the default); when it denies, the Deny that denies it (none when the
NetworkPolicies' isolation does). So an Accept of A met with a Baseline Deny of B on the other side
is B's deny rule, not A's allow rule; a Pass of A continued into the NetworkPolicies is theirs. Mode
`deny` logs the deny rules a policy decides, `allow` the pass rules, `all` both; a rule decided by
two policies (an Accept on each side) logs if either asks.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, FrozenSet, Mapping, Optional, Tuple

from .bodies import DENY, PASS, Body

ANNOTATION = "contrail-kube-manager/policy-logging"
_MODES: Mapping[str, FrozenSet[str]] = {"deny": frozenset({DENY}), "allow": frozenset({PASS}),
                                        "all": frozenset({PASS, DENY})}
_LOGGED: Mapping[str, Body] = {action: {"simple_action": action, "log": True} for action in (PASS, DENY)}


def annotation_of(manifest: Any) -> Optional[str]:
    """The annotation's value as written (None when absent), whatever the manifest holds."""
    metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    value = annotations.get(ANNOTATION) if isinstance(annotations, dict) else None
    return None if value is None else str(value)


def logged_actions(value: Optional[str], where: str) -> Tuple[FrozenSet[str], Optional[str]]:
    """The actions whose rules log, and the error for a value that is none of the modes."""
    if value is None:
        return frozenset(), None
    actions = _MODES.get(value)
    if actions is None:
        return frozenset(), (f"{where}annotation {ANNOTATION}: {value!r} is not one of deny, allow, all; "
                             "matches are not logged")
    return actions, None


def logging(body: Body, actions: FrozenSet[str]) -> Body:
    """`body` (a firewall rule's), logging its matches when its action is one of `actions`."""
    action = body["action_list"].get("simple_action")
    return dict(body, action_list=_LOGGED[action]) if action in actions else body


def decided_logging(body: Body, deciders: FrozenSet[str], logged: Mapping[str, FrozenSet[str]]) -> Body:
    """A tier block rule's `body`, logging its matches when one of its `deciders` logs its action
    (`logged`: a ClusterNetworkPolicy's name -> the actions whose rules it logs)."""
    actions: FrozenSet[str] = frozenset()
    for name in deciders:
        actions = actions | logged.get(name, frozenset())
    return logging(body, actions) if actions else body


class MatchLogging:
    """The annotation of each namespace, and the pass that applies it to NetworkPolicies."""

    def __init__(self) -> None:
        self._namespaces: Dict[str, str] = {}

    def set_namespace(self, name: str, value: Optional[str]) -> bool:
        """Record a namespace's value; whether it changed (its NetworkPolicies are rendered again)."""
        return _set(self._namespaces, name, value)

    def network_policy(self, rendering: Any, namespace: str) -> Any:
        """A NetworkPolicy's rendering with its namespace's logging (a `render.PolicyRendering`)."""
        value = self._namespaces.get(namespace)
        if value is None:  # (most namespaces: asked of every policy of a bulk load)
            return rendering
        actions, error = logged_actions(value, f"namespace {namespace}: ")
        if not actions and error is None:
            return rendering
        return dataclasses.replace(
            rendering, rule_bodies=tuple(logging(body, actions) for body in rendering.rule_bodies),
            deny_rules=[(fq_name, logging(body, actions), sequence) for fq_name, body, sequence in rendering.deny_rules],
            errors=rendering.errors + ((error,) if error else ()))


def _set(table: Dict[str, str], name: str, value: Optional[str]) -> bool:
    if table.get(name) == value:
        return False
    if value is None:
        del table[name]
    else:
        table[name] = value
    return True
