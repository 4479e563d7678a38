"""The rows of `/Snh_ClusterNetworkPolicyDatabaseList` (SPEC 10, 13): each ClusterNetworkPolicy like
a NetworkPolicy (uid, name, spec, the firewall policy and rule names it emits, sync state, errors)
plus its tier and priority, its subject and the action of each of its rules.

The spec is shown as the API server holds it, so it is read defensively: a malformed
ClusterNetworkPolicy (rejected by the translator, its reasons in `errors`) is still listed with
whatever of it can be read. The page declaration itself is in `introspect/lists.py`.
"""
from __future__ import annotations

from typing import Any, Dict, List

from introspect.contrail import paced
from introspect.listing import Row, Snapshot

KIND = "ClusterNetworkPolicy"  # the `kind` of its translation errors
DIRECTIONS = ("ingress", "egress")


def _mapping(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def rule_actions(spec: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Each rule of the spec in manifest order: direction, index, name and action."""
    actions = []
    for direction in DIRECTIONS:
        rules = spec.get(direction)
        for index, rule in enumerate(rules if isinstance(rules, list) else ()):
            rule = _mapping(rule)
            name, action = rule.get("name"), rule.get("action")
            actions.append({"direction": direction, "index": index,
                            "name": name if isinstance(name, str) else "",
                            "action": action if isinstance(action, str) else ""})
    return actions


def _action_text(action: Dict[str, Any]) -> str:
    named = f" {action['name']}" if action["name"] else ""
    return f"{action['direction']}[{action['index']}]{named}: {action['action'] or '?'}"


def _subject_text(subject: Any) -> str:
    """The subject in one line: which of its fields is set, with its selector."""
    subject = _mapping(subject)
    return "; ".join(f"{key}: {subject[key]}" for key in sorted(subject)) or "(none)"


def cluster_network_policy_rows(snapshot: Snapshot) -> List[Row]:
    translation_errors: Dict[str, List[str]] = {}
    for error in snapshot.db.errors:
        if error.get("kind") == KIND:
            translation_errors.setdefault(error.get("name", ""), []).append(str(error.get("reason", "")))
    rows = []
    for name, record in paced(sorted(snapshot.db.cluster_network_policies.items())):
        errors = list(dict.fromkeys(list(record.errors) + translation_errors.get(name, [])
                                    + [snapshot.redactor.text(e) for e in record.write_errors]))
        spec = _mapping(record.spec)
        actions = rule_actions(spec)
        fp_name = record.firewall_policy[-1] if record.firewall_policy else ""
        rows.append({
            "uid": record.uid, "name": record.name, "tier": record.tier, "priority": record.priority,
            "subject": spec.get("subject"), "spec": record.spec, "actions": actions,
            "firewall_policy": list(record.firewall_policy), "rules": list(record.rules),
            "state": record.state, "errors": errors,
            # display only
            "subject_text": _subject_text(spec.get("subject")),
            "action_list": [_action_text(action) for action in actions],
            "firewall_policy_name": fp_name, "rule_count": len(record.rules),
            "sequence": snapshot.contrail.policy_sequence(fp_name),
        })
    return rows
