"""Logging of rule matches (SPEC 15): Contrail's `action_list.log` on the rules an annotation asks for.

`contrail-kube-manager/policy-logging` on a namespace (`deny`, `allow` or `all`) logs the deny
rules, the pass rules, or both, of its NetworkPolicies. Any other value is ignored and reported in
the policy's errors. (The same annotation on a ClusterNetworkPolicy is not applied yet: its rules
are the tier blocks' product rules, shared between policies.) Applied as a last pass over
what the renderers emitted, so that it adds nothing to how rules are made: a rule that logs is its
rendered body with another `action_list`, every other object is the same body as without logging,
and a change of the annotation rewrites only the rules it concerns.
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


class MatchLogging:
    """The annotation of each namespace and ClusterNetworkPolicy, and the pass that applies it."""

    def __init__(self) -> None:
        self._namespaces: Dict[str, str] = {}

    def set_namespace(self, name: str, value: Optional[str]) -> bool:
        """Record a namespace's value; whether it changed (its NetworkPolicies are rendered again)."""
        return _set(self._namespaces, name, value)

    def network_policy(self, rendering: Any, namespace: str) -> Any:
        """A NetworkPolicy's rendering with its namespace's logging (a `render.PolicyRendering`)."""
        actions, error = logged_actions(self._namespaces.get(namespace), f"namespace {namespace}: ")
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
