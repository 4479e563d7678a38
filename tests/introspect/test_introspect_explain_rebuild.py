"""/explain right after a change: the rule index kept over the live DB is brought up to date,
compiling only what the translator's change reports named, and answers exactly as an explainer built from scratch
over the same DB (the translation and manifests of the DB, the one-shot route of the CLI), after
any sequence of changes, questions asked between them or not."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from introspect.deferred import DeferredExplainer
from introspect.explain import db_explainer, db_manifests, db_translation
from kube_manager.explain.explainer import Explainer
from kube_manager.explain.flow_index import RuleIndex
from kube_manager.handlers import KINDS
from kube_manager.records.db import Database
from kube_manager.service.dispatcher import EventDispatcher
from kube_manager.translator import ClusterTranslator

from tests.support.builders import (HTTP_8080, allow_from, cluster_policy, cnp_port, cnp_rule, namespace,
                                    namespace_named, pod, policy)

PODS = [("a", "web", "10.0.0.1", "web"), ("a", "client", "10.0.0.2", "client"),
        ("a", "db", "10.0.0.3", "db"), ("b", "web", "10.0.1.1", "web"), ("b", "probe", "10.0.1.2", "client")]
POLICIES = [("a", "web", allow_from("client", "web", port=80)), ("a", "db", allow_from("web", "db", port=5432)),
            ("b", "web", allow_from("client", "web", port=8080)), ("b", "deny", None)]
PORTS = ("80", "81", "5432", "8080")

Event = Tuple[str, str, Dict[str, Any]]


def _cluster(semantics: str = "kubernetes") -> Tuple[Database, EventDispatcher]:
    db = Database()
    cache = EventDispatcher(db, ClusterTranslator("k8s", "k8s", semantics=semantics))
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


def _answer(explain: Callable[..., Any], src: str, dst: str, port: str, protocol: str = "TCP") -> Any:
    try:
        return explain(src, dst, port, protocol)
    except ValueError as exc:  # an unknown pod, an IP of two pods: the message is the answer
        return ("error", str(exc))


def _answers(explain: Callable[..., Any], ends: List[str], ports=PORTS) -> Dict[Tuple[str, str, str], Any]:
    return {(src, dst, port): _answer(explain, src, dst, port)
            for src in ends for dst in ends if src != dst for port in ports}


def _from_scratch(db: Database, semantics: str = "kubernetes") -> Callable[..., Any]:
    """An explainer of the DB built the one-shot way: its translation and manifests, every rule compiled."""
    return Explainer(db_translation(db, "k8s"), db_manifests(db), "k8s", db.selectors, semantics).explain


def _rule_bodies(db: Database) -> Dict[int, Any]:
    """The firewall rule bodies the translator holds, by identity (held, so no id is reused)."""
    return {id(body): body for body in db.desired.get("firewall-rule", {}).values()}


ENDS = [f"{ns}/{name}" for ns, name, _ip, _app in PODS] + ["192.0.2.9"]


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_question_after_a_change_answers_as_a_fresh_explainer(change):
    db, cache = _cluster()
    index = RuleIndex()
    explain = db_explainer(db, "k8s", index=index, change_observers=cache.status.change_observers)
    _answers(explain, ENDS)  # the index before the change, every rule compiled
    before, compiled = _rule_bodies(db), index.compiled
    assert compiled == len(before)

    for resource, kind, obj in CHANGES[change]:
        cache.on_event(resource, kind, obj)
    after = _answers(explain, ENDS)

    assert after == _answers(_from_scratch(db), ENDS)
    # Only the rule bodies the change made are compiled; every other one is kept.
    new_bodies = set(_rule_bodies(db)) - set(before)
    assert index.compiled - compiled == len(new_bodies) < len(_rule_bodies(db))



@pytest.mark.parametrize("change", sorted(CHANGES))
def test_an_explainer_made_at_its_first_use_answers_as_a_fresh_one(change):
    """The daemon's explainer is made at its first use (`DeferredExplainer`): made after changes it
    answers as one built from scratch, hears the change reports from then on (not before), and
    after a further change still answers as a fresh one."""
    db, cache = _cluster()
    observers = len(cache.status.change_observers)
    explain = DeferredExplainer(db, "k8s", "kubernetes", cache.status.change_observers)
    for resource, kind, obj in CHANGES[change]:
        cache.on_event(resource, kind, obj)
    assert len(cache.status.change_observers) == observers
    assert _answers(explain, ENDS) == _answers(_from_scratch(db), ENDS)
    assert len(cache.status.change_observers) == observers + 1
    for resource, kind, obj in CHANGES[next(other for other in sorted(CHANGES) if other != change)]:
        cache.on_event(resource, kind, obj)
    assert _answers(explain, ENDS) == _answers(_from_scratch(db), ENDS)


# ---- any sequence of changes -------------------------------------------------------------------

NAMESPACES = ("a", "b")
POD_NAMES = ("web", "client", "db")
APPS = ("web", "client", "db")
IPS = ("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.1.1", None)  # shared: an IP of two pods happens
SPECS = [
    allow_from("client", "web", port=80),
    allow_from("web", "db", port=5432),
    None,  # isolates every pod of its namespace, allows nothing
    {"podSelector": {"matchLabels": {"app": "client"}}, "policyTypes": ["Egress"],
     "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/24", "except": ["10.0.0.3/32"]}}],
                 "ports": [{"protocol": "TCP", "port": 80}]}]},
    {"podSelector": {}, "policyTypes": ["Ingress"],
     "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "red"}}}]}]},
    {"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": ["Ingress", "Egress"],
     "ingress": [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": "http"}]}],
     "egress": [{"to": [{"namespaceSelector": {}}]}]},
]
CLUSTER_POLICIES = [
    cluster_policy("tenants", "Admin", 10, ingress=[cnp_rule("Deny", namespace_named("b"), name="no-b")]),
    cluster_policy("tenants", "Admin", 20, ingress=[cnp_rule("Pass", namespace_named("a"), name="pass-a")]),
    cluster_policy("floor", "Baseline", 5, ingress=[cnp_rule("Deny", {"namespaces": {}}, name="closed",
                                                              protocols=[cnp_port("tcp", 5432)])]),
]

pod_events = st.builds(
    lambda ns, name, ip, app, gone: ("pods", "DELETED" if gone else "ADDED",
                                     pod(ns, name, ip, app=app, ports=HTTP_8080)),
    st.sampled_from(NAMESPACES), st.sampled_from(POD_NAMES), st.sampled_from(IPS), st.sampled_from(APPS),
    st.booleans())
policy_events = st.builds(
    lambda ns, name, spec, gone: ("networkpolicies", "DELETED" if gone else "ADDED", policy(ns, name, spec)),
    st.sampled_from(NAMESPACES), st.sampled_from(("p1", "p2", "p3")), st.sampled_from(SPECS), st.booleans())
namespace_events = st.builds(
    lambda name, team: ("namespaces", "ADDED", namespace(name, team=team)),
    st.sampled_from(NAMESPACES), st.sampled_from(("red", "blue")))
cluster_events = st.builds(
    lambda manifest, gone: ("clusternetworkpolicies", "DELETED" if gone else "ADDED", manifest),
    st.sampled_from(CLUSTER_POLICIES), st.booleans())
steps = st.lists(st.tuples(st.lists(st.one_of(pod_events, policy_events, namespace_events, cluster_events),
                                    min_size=1, max_size=3),
                           st.booleans()),  # whether the operator asks after this step
                 min_size=1, max_size=6)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=steps, semantics=st.sampled_from(("kubernetes", "cluster-wide")), told=st.booleans())
def test_the_index_kept_up_to_date_answers_as_one_built_from_scratch(steps, semantics, told):
    """`told`: the index hears the translator's change reports (as in the daemon), or looks at
    every object after a change."""
    db, cache = _cluster(semantics)
    explain = db_explainer(db, "k8s", semantics, change_observers=cache.status.change_observers if told else None)
    ends = sorted({f"{ns}/{name}" for ns in NAMESPACES for name in POD_NAMES + ("probe",)}) + ["10.0.0.1", "192.0.2.9"]
    _answers(explain, ends, ports=("80",))
    for events, ask in steps:
        for resource, kind, obj in events:
            cache.on_event(resource, kind, obj)
        if ask:
            ports = ("80", "5432", "8080")
            assert _answers(explain, ends, ports) == _answers(_from_scratch(db, semantics), ends, ports)
    ports = ("80", "5432", "8080")
    assert _answers(explain, ends, ports) == _answers(_from_scratch(db, semantics), ends, ports)


# ---- the index built ahead of the first question, between events ------------------------------

pauses = st.lists(st.one_of(st.lists(st.one_of(pod_events, policy_events, namespace_events, cluster_events),
                                     min_size=1, max_size=2),
                            st.just("ask")),  # a question arriving between two steps
                  max_size=8)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(between=pauses, step=st.integers(1, 3), told=st.booleans())
def test_an_index_built_between_events_answers_as_one_built_from_scratch(between, step, told):
    """`prepare` (the daemon's, after a start) builds in steps; between two, events change the
    DB and questions arrive (a question runs the rest of the steps itself)."""
    db, cache = _cluster()
    explain = db_explainer(db, "k8s", change_observers=cache.status.change_observers if told else None)
    ends = sorted({f"{ns}/{name}" for ns in NAMESPACES for name in POD_NAMES + ("probe",)}) + ["192.0.2.9"]
    todo = list(between)

    def pause() -> None:
        if not todo:
            return
        action = todo.pop(0)
        if action == "ask":
            assert _answers(explain, ends, ports=("80",)) == _answers(_from_scratch(db), ends, ports=("80",))
            return
        for resource, kind, obj in action:
            cache.on_event(resource, kind, obj)

    explain.prepare(pause, step=step)
    ports = ("80", "5432", "8080")
    assert _answers(explain, ends, ports) == _answers(_from_scratch(db), ends, ports)


def test_a_prepared_explainer_compiles_nothing_at_its_first_question():
    db, cache = _cluster()
    index = RuleIndex()
    explain = db_explainer(db, "k8s", index=index, change_observers=cache.status.change_observers)
    turns: List[None] = []
    explain.prepare(lambda: turns.append(None), step=2)
    compiled = index.compiled
    assert compiled == len(_rule_bodies(db)) and len(turns) > 2
    _answers(explain, ENDS)
    assert index.compiled == compiled
    explain.prepare(lambda: turns.append(None))  # built already: nothing to do
    assert index.compiled == compiled


def test_a_namespace_s_policies_are_compiled_again_only_when_its_records_change(monkeypatch):
    import introspect.explain_records as records
    compiled: List[str] = []
    real = records.compile_namespace
    monkeypatch.setattr(records, "compile_namespace", lambda ns, manifests: compiled.append(ns) or real(ns, manifests))
    db, cache = _cluster()
    explain = db_explainer(db, "k8s", change_observers=cache.status.change_observers)
    explain.prepare(lambda: None)
    assert sorted(compiled) == ["a", "b"]
    _answers(explain, ENDS)
    assert sorted(compiled) == ["a", "b"]  # the questions found them compiled
    for resource, kind, obj in CHANGES["a policy changed"] + CHANGES["a pod relabelled"]:
        cache.on_event(resource, kind, obj)
    assert _answers(explain, ENDS) == _answers(_from_scratch(db), ENDS)
    assert sorted(compiled) == ["a", "a", "b"]  # b's records were not set anew
