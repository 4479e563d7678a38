"""Object keys, bodies and a fake planning view for the tests of `reconciler.diff` and `reflists`."""
from __future__ import annotations

from typing import Dict, List, Optional, Set

from kube_manager.reconciler.diff import ObjKey, Progress

PM = ("default-policy-management",)


def tag(name: str) -> ObjKey:
    return ("tag", (name,))


def rule(name: str) -> ObjKey:
    return ("firewall-rule", PM + (name,))


def policy(name: str) -> ObjKey:
    return ("firewall-policy", PM + (name,))


def ref(key: ObjKey, sequence: Optional[str] = None) -> dict:
    return {"to": list(key[1]), "attr": {"sequence": sequence} if sequence else None}


class FakeView:
    """present: a set; progress: blocked keys are BLOCKED, the rest PENDING; gates from dicts."""

    def __init__(self, present: Set[ObjKey] = frozenset(), blocked: Set[ObjKey] = frozenset(),
                 add_gates: Optional[Dict[ObjKey, ObjKey]] = None, remove_gate: Optional[ObjKey] = None,
                 referrers: Optional[Dict[ObjKey, List[ObjKey]]] = None) -> None:
        self._present = set(present)
        self._blocked = set(blocked)
        self._add_gates = add_gates or {}
        self._remove_gate = remove_gate
        self._referrers = referrers or {}

    def present(self, key):
        return key in self._present

    def progress(self, waiter, key):
        return Progress.BLOCKED if key in self._blocked else Progress.PENDING

    def gate_add(self, holder, ref_field, target):
        return self._add_gates.get(target)

    def gate_remove(self, holder, ref_field):
        return self._remove_gate

    def referrers(self, key):
        return self._referrers.get(key, [])


def rule_body(*tags: str, address_group: Optional[str] = None) -> dict:
    endpoint_2 = {"address_group": address_group} if address_group else {"any": True}
    return {"fq_name": list(PM) + ["r"], "parent_type": "policy-management",
            "endpoint_1": {"tags": list(tags)}, "endpoint_2": endpoint_2,
            "action_list": {"simple_action": "pass"}, "direction": ">"}


def policy_body(*rules: ObjKey) -> dict:
    return {"fq_name": list(PM) + ["p"], "parent_type": "policy-management",
            "firewall_rule_refs": [ref(r, f"{i:05d}.0") for i, r in enumerate(rules)]}
