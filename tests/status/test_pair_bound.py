"""The bound on the `kubernetes` mode's pair rules (SPEC 14, 15), through the pipeline: below it
nothing is said; crossing it puts one `Warning` / `PairRulesBound` Event on each of the
NetworkPolicies that contribute most pairs; staying above or falling back says nothing new to
Kubernetes; every pair rule is written all along; the metrics and /readyz show where it stands.

The shape: namespaces all labelled `team=x`; a `wide` policy in a namespace allows port 80 both
ways with the namespaces of team x, a `narrow` one allows port 80 in from them. With W wide and N
narrow policies (each namespace with a pod), each wide egress rule meets every ingress rule: W x (W + N)
pair rules; a wide
policy is an end of (W + N) + W - 1 pairs (its egress with every ingress, its ingress with every
other egress), a narrow one of W."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from introspect.health import pair_rules_check
from kube_manager.handlers import KINDS
from kube_manager.observability.metrics import DatabaseCollector
from kube_manager.service.pipeline import Pipeline, build_pipeline
from kube_manager.status.pair_bound import PAIR_RULES_BOUND, PairRulesBound
from kube_manager.status.publisher import StatusPublisher
from kube_manager.translator.exact.pairs import pair_rule_prefix
from tests.support.builders import namespace, pod, policy
from tests.support.kept_outbox import KeptOutbox, said

NP = "networkpolicies"
TEAM = [{"namespaceSelector": {"matchLabels": {"team": "x"}}}]
PORT = [{"protocol": "TCP", "port": 80}]
WIDE = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": TEAM, "ports": PORT}], "egress": [{"to": TEAM, "ports": PORT}]}
NARROW = {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": TEAM, "ports": PORT}]}
BOUND = 12


class Cluster:
    """The daemon's wiring of the bound (service/daemon.py), around a pipeline and a leading
    publisher whose outbox keeps what it is given."""

    def __init__(self, named: int = 2) -> None:
        self.pipeline: Pipeline = build_pipeline()
        self.outbox = KeptOutbox()
        self.publisher = StatusPublisher(self.outbox, lambda: "T")
        status = self.pipeline.status
        status.observers.append(self.publisher)
        bound = PairRulesBound(BOUND, self.pipeline.db.pair_rules, self.publisher.policy_warned, named)
        status.pair_rule_observers.append(bound.counted)
        self.publisher.standing.append(bound.standing)
        for resource in KINDS.names():
            self.event(resource, "LISTED", {"resourceVersion": "1"})
        self.publisher.lists_in = True

    def event(self, resource: str, kind: str, obj: Dict[str, Any]) -> None:
        self.pipeline.cache.on_event(resource, kind, obj)

    def add(self, ns: str, name: str, spec: Dict[str, Any]) -> None:
        """A namespace of team x with a pod (a pair is written only while pods realise its ends)."""
        self.event("namespaces", "ADDED", namespace(ns, team="x"))
        self.event("pods", "ADDED", pod(ns, "p", f"10.0.{len(self.pipeline.db.namespaces)}.1"))
        self.event(NP, "ADDED", policy(ns, name, spec))

    def metrics(self) -> Dict[str, float]:
        collector = DatabaseCollector(self.pipeline.db, pair_rule_prefix=pair_rule_prefix("k8s"))
        return {sample.name: sample.value for family in collector.collect() for sample in family.samples
                if sample.name.startswith("kube_manager_exact_pair_rules")}

    def warned(self) -> List[Tuple[str, str, str]]:
        """(namespace, name, note) of each PairRulesBound Event queued."""
        return [(job.body["regarding"]["namespace"], job.body["regarding"]["name"], job.body["note"])
                for job in self.outbox.jobs if getattr(job, "reason", "") == PAIR_RULES_BOUND]


def note(total: int, pairs: int) -> str:
    return f"needs {total} pair rules, above exact_pair_rules_bound {BOUND}; this NetworkPolicy is an end of {pairs} "


# (step, then: pair rules written, above the bound, PairRulesBound Events new at this step as
# (namespace, name, the pairs the note names))
STEPS: List[Tuple[str, int, bool, List[Tuple[str, str, int]]]] = [
    ("3 wide", 9, False, []),
    ("+ narrow in s0: at the bound, not past it", 12, False, []),
    ("+ wide in w3: 4 x 5 crosses it", 20, True, [("w0", "wide", 8), ("w1", "wide", 8)]),
    ("+ narrow in s1: still above", 24, True, []),
    ("- wide in w3, narrow in s1: back at the bound", 12, False, []),
    ("+ wide in w3 again: a new crossing", 20, True, [("w0", "wide", 8), ("w1", "wide", 8)]),
]


def _step(cluster: Cluster, step: str) -> None:
    if step == "3 wide":
        for i in range(3):
            cluster.add(f"w{i}", "wide", WIDE)
    elif step.startswith("+ narrow in s0"):
        cluster.add("s0", "narrow", NARROW)
    elif step.startswith("+ wide in w3"):
        cluster.add("w3", "wide", WIDE)
    elif step.startswith("+ narrow in s1"):
        cluster.add("s1", "narrow", NARROW)
    else:
        cluster.event(NP, "DELETED", policy("w3", "wide", WIDE))
        cluster.event(NP, "DELETED", policy("s1", "narrow", NARROW))


def test_the_bound_warns_the_top_contributors_once_per_crossing_and_writes_every_pair() -> None:
    cluster = Cluster()
    cluster.publisher.lead(None, lambda: None, "me")
    for step, total, over, new in STEPS:
        before = len(cluster.warned())
        _step(cluster, step)
        status = cluster.pipeline.db.pair_rules
        assert (status.total, status.over) == (total, over), step
        assert cluster.metrics() == {"kube_manager_exact_pair_rules": total,
                                     "kube_manager_exact_pair_rules_bound": BOUND}, step
        fresh = cluster.warned()[before:]
        assert [(ns, name) for ns, name, _ in fresh] == [(ns, name) for ns, name, _ in new], step
        for (_, _, text), (_, _, pairs) in zip(fresh, new):
            assert note(total, pairs) in text, step
        assert pair_rules_check(cluster.pipeline.db).ok, step
        assert (PAIR_RULES_BOUND in pair_rules_check(cluster.pipeline.db).detail) == over, step


def test_the_event_s_shape() -> None:
    cluster = Cluster(named=1)
    cluster.publisher.lead(None, lambda: None, "me")
    for step, *_ in STEPS[:3]:
        _step(cluster, step)
    job, = [job for job in cluster.outbox.jobs if getattr(job, "reason", "") == PAIR_RULES_BOUND]
    body = job.body
    record = cluster.pipeline.db.network_policies[("w0", "wide")]
    assert (body["type"], body["reason"], body["action"]) == ("Warning", PAIR_RULES_BOUND, "Translate")
    assert body["regarding"] == {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                 "namespace": "w0", "name": "wide", "uid": record.uid}
    assert (body["reportingController"], body["reportingInstance"]) == ("contrail-kube-manager", "me")
    assert body["metadata"]["namespace"] == "w0" and len(body["note"].encode()) <= 1024
    assert "Every pair is still written" in body["note"]


def test_a_standby_says_nothing_and_a_new_term_says_the_standing_warning() -> None:
    cluster = Cluster()
    for step, *_ in STEPS[:3]:
        _step(cluster, step)
    assert cluster.warned() == [] and cluster.pipeline.db.pair_rules.over
    cluster.publisher.lead(None, lambda: None, "me")
    assert [(ns, name) for ns, name, _ in cluster.warned()] == [("w0", "wide"), ("w1", "wide")]
