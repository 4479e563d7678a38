"""/explain right after a change: the index rebuilt over the live DB reuses the rules the change
left alone, and answers exactly as an explainer built from scratch over the same DB."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import pytest

from introspect.explain import db_explainer
from kube_manager.explain.flow import OrientedRules
from kube_manager.handlers import KINDS
from kube_manager.records.db import Database
from kube_manager.service.dispatcher import EventDispatcher
from kube_manager.translator import ClusterTranslator

from tests.support.builders import HTTP_8080, allow_from, namespace, pod, policy

PODS = [("a", "web", "10.0.0.1", "web"), ("a", "client", "10.0.0.2", "client"),
        ("a", "db", "10.0.0.3", "db"), ("b", "web", "10.0.1.1", "web"), ("b", "probe", "10.0.1.2", "client")]
POLICIES = [("a", "web", allow_from("client", "web", port=80)), ("a", "db", allow_from("web", "db", port=5432)),
            ("b", "web", allow_from("client", "web", port=8080)), ("b", "deny", None)]
PORTS = ("80", "81", "5432", "8080")

Event = Tuple[str, str, Dict[str, Any]]


def _cluster() -> Tuple[Database, EventDispatcher]:
    db = Database()
    cache = EventDispatcher(db, ClusterTranslator("k8s", "k8s"))
    for resource in KINDS.names():
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})
    for name in ("a", "b"):
        cache.on_event("namespaces", "ADDED", namespace(name))
    for ns, name, ip, app in PODS:
        cache.on_event("pods", "ADDED", pod(ns, name, ip, app=app, ports=HTTP_8080))
    for ns, name, spec in POLICIES:
        cache.on_event("networkpolicies", "ADDED", policy(ns, name, spec))
    return db, cache


CHANGES: Dict[str, List[Event]] = {
    "a policy added": [("networkpolicies", "ADDED", policy("a", "more", allow_from("db", "web", port=81)))],
    "a policy deleted": [("networkpolicies", "DELETED", policy("a", "db", POLICIES[1][2]))],
    "a pod relabelled": [("pods", "MODIFIED", pod("a", "client", "10.0.0.2", app="db", ports=HTTP_8080))],
    "a policy changed": [("networkpolicies", "MODIFIED", policy("a", "web", allow_from("client", "web", port=81)))],
}


def _answers(explain: Callable[..., Any]) -> Dict[Tuple[str, str, str], Any]:
    ends = [f"{ns}/{name}" for ns, name, _ip, _app in PODS] + ["192.0.2.9"]
    return {(src, dst, port): explain(src, dst, port, "TCP")
            for src in ends for dst in ends if src != dst for port in PORTS}


def _rule_bodies(db: Database) -> Dict[int, Any]:
    """The firewall rule bodies the translator holds, by identity (held, so no id is reused)."""
    return {id(body): body for body in db.desired.get("firewall-rule", {}).values()}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_question_after_a_change_answers_as_a_fresh_explainer(change):
    db, cache = _cluster()
    rules = OrientedRules()
    explain = db_explainer(db, "k8s", rules=rules)
    _answers(explain)  # the index before the change, and its rules compiled
    before, compiled = _rule_bodies(db), rules.compiled
    assert compiled == len(before)

    for resource, kind, obj in CHANGES[change]:
        cache.on_event(resource, kind, obj)
    after = _answers(explain)

    assert after == _answers(db_explainer(db, "k8s"))
    # Only the rule bodies the change made are compiled; every other one is reused.
    new_bodies = set(_rule_bodies(db)) - set(before)
    assert rules.compiled - compiled == len(new_bodies) < len(_rule_bodies(db))


def test_a_body_replaced_by_an_equal_one_is_compiled_again():
    """The cache trusts identity, never equality: a new body is compiled even when it reads the
    same, so a body the translator changed can never answer with its old entries."""
    rules = OrientedRules()
    body = {"endpoint_1": {"any": True}, "endpoint_2": {"tags": ["app=web"]}, "direction": ">",
            "service": {"protocol": "tcp", "dst_ports": {"start_port": 80, "end_port": 80}},
            "action_list": {"simple_action": "pass"}}
    first = rules.entries("fp", ("k8s", "r"), body)
    rules.settle()
    assert rules.entries("fp", ("k8s", "r"), body) is first and rules.compiled == 1
    rules.settle()
    changed = {**body, "action_list": {"simple_action": "deny"}}
    assert [e.action for e in rules.entries("fp", ("k8s", "r"), changed)] == ["deny"]
    assert rules.compiled == 2
    # The same body in another policy is another entry (its policy is part of what it answers).
    assert rules.entries("other", ("k8s", "r"), changed)[0].policy == "other" and rules.compiled == 3
