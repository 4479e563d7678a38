"""The `/explain` page: one flow's verdict (SPEC section 6) from the form's four fields.

The verdict itself is computed by an injected callable, `explain(from, to, port, protocol)`, which
raises `ValueError` (the translator's `ExplainError` is one) with a message for the user on bad
input; the daemon builds it over its DB with `db_explainer`. This module only checks that the form
is complete and turns failures into a 400 with that message, never a traceback.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

import gevent

from introspect.explain_records import (ChangeJournal, CompiledNamespaces, RecordsModel, RecordWorkloads, pod_manifest,
                                       policy_manifest, rule_source)
from kube_manager.plumbing import gcpolicy
from kube_manager.records.db import Database, PodRecord
from kube_manager.offline.manifests import Manifests
from kube_manager.explain.explainer import KUBERNETES, Explainer
from kube_manager.explain.flow import ContrailEvaluator
from kube_manager.explain.flow_index import STEP, RuleIndex
from kube_manager.explain.k8s_pods import IPAddress
from kube_manager.explain.trace_tiers import CLUSTER_NETWORK_POLICY
from kube_manager.plumbing.gcpolicy import collector_paused
from kube_manager.translator import Changes

log = logging.getLogger(__name__)

ExplainFn = Callable[[str, str, str, str], Mapping[str, Any]]
EXPLAIN_FIELDS = ("from", "to", "port", "protocol")
DEFAULT_PROTOCOL = "TCP"


def deciding_row(result: Mapping[str, Any]) -> Optional[Tuple[str, str, int]]:
    """The trace row (side, policy, block index) the page highlights as deciding; None when no
    rule block decided (a pod isolated and allowed by nothing, the default allow).

    A NetworkPolicy's own rule says by its name which block it came from
    (`<cluster>-<ns>-<side>-<np>-<block>-...`, docs/mapping.md). A rule of the cluster's blocks (a
    tier block's, a pair rule; explain's `stands_for`) stands for the two ends' chains, so the row comes
    from Kubernetes' verdict: the first side, egress then ingress, whose outcome is the flow's and
    was decided by a rule (a ClusterNetworkPolicy's, or the first NetworkPolicy allowing it)."""
    trace = result.get("trace") or []
    rule, policy = result.get("rule") or "", result.get("policy") or ""
    for step in trace:
        namespace, _, name = str(step.get("policy", "")).rpartition("/")
        if step.get("kind") == CLUSTER_NETWORK_POLICY or not policy.endswith(f"-{namespace}-{name}"):
            continue
        for block in _matching_blocks(step):
            if f"-{namespace}-{step.get('side')}-{name}-{block.get('index')}-" in rule:
                return (step["side"], step["policy"], block["index"])
    if not result.get("stands_for"):  # a NetworkPolicy's own rule that no block stands behind
        return None
    verdicts = result.get("kubernetes") or {}
    for side in ("egress", "ingress"):
        verdict = verdicts.get(side) or {}
        if verdict.get("allowed") != result.get("allowed"):
            continue
        decision, allowing = verdict.get("rule"), verdict.get("allowed_by") or ()
        wanted = (decision["policy"], decision["index"]) if decision else (allowing[0], None) if allowing else None
        if wanted is None:
            continue
        for step in trace:
            if step.get("side") != side or step.get("policy") != wanted[0]:
                continue
            for block in _matching_blocks(step):
                if wanted[1] is None or block.get("index") == wanted[1]:
                    return (side, step["policy"], block["index"])
    return None


def _matching_blocks(step: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    """The blocks of a trace step whose peer and port both match the flow."""
    return [block for block in step.get("blocks") or [] if block.get("peer") and block.get("port")]


@dataclass
class Outcome:
    """What the page shows: the form as filled, and a result or an error."""

    status: int
    form: Dict[str, str]
    result: Optional[Mapping[str, Any]] = None
    error: str = ""


class ExplainPage:
    def __init__(self, explain: Optional[ExplainFn]) -> None:
        self._explain = explain

    @property
    def available(self) -> bool:
        return self._explain is not None

    def answer(self, query: Mapping[str, str], blank_ok: bool = True) -> Outcome:
        """The outcome for the query; a blank query is an empty form when `blank_ok` (HTML)."""
        form = {name: str(query.get(name, "")).strip() for name in EXPLAIN_FIELDS}
        # TCP unless told, as the explain command: a URL written from a command line answers the same.
        form["protocol"] = form["protocol"] or DEFAULT_PROTOCOL
        if blank_ok and not any(form[name] for name in ("from", "to", "port")):
            return Outcome(200, form)  # a blank form, nothing asked yet
        if self._explain is None:
            return Outcome(503, form, error="explain is not available on this server")
        missing = [name for name in EXPLAIN_FIELDS if not form[name]]
        if missing:
            return Outcome(400, form, error=f"missing {', '.join(missing)}: give from and to "
                           f"(NS/POD or an IP address) and port (1-65535); protocol (TCP, UDP or SCTP) is TCP "
                           f"unless given")
        try:
            result = self._explain(form["from"], form["to"], form["port"], form["protocol"])
        except ValueError as exc:
            return Outcome(400, form, error=str(exc))
        except Exception:  # a bug must not show a traceback to the user; the log has it
            log.exception("explain failed for %s", form)
            return Outcome(500, form, error="internal error while explaining this flow; "
                           "the kube-manager log has the details")
        return Outcome(200, form, result=result)


def db_translation(db: Database, cluster_name: str) -> Dict[str, Any]:
    """The desired objects in the DB in the shape of `translate -o json` (SPEC section 8)."""
    def bodies(kind: str) -> list:
        return [db.desired.get(kind, {})[fq] for fq in sorted(db.desired.get(kind, {}))]

    apses = bodies("application-policy-set")
    return {
        "cluster_name": cluster_name,
        "tags": bodies("tag"),
        "address_groups": bodies("address-group"),
        "firewall_rules": bodies("firewall-rule"),
        "firewall_policies": bodies("firewall-policy"),
        "application_policy_set": next((a for a in apses if list(a.get("fq_name", []))[-1:] == [cluster_name]),
                                       apses[0] if apses else {}),
        "workloads": [{"namespace": p.namespace, "name": p.name, "ip": p.ip, "tags": sorted(p.tags)}
                      for _key, p in sorted(db.pods.items())],
    }


def db_manifests(db: Database, pods: Optional[List[PodRecord]] = None) -> Manifests:
    """The Kubernetes objects in the DB as manifests, ClusterNetworkPolicies included, for the
    Kubernetes side of the verdict; `pods` limits the pods to those (the pod page needs one, and
    every namespace and policy)."""
    namespaces = [{"kind": "Namespace", "metadata": {"name": ns.name, "uid": ns.uid,
                                                     "labels": dict(ns.labels)}}
                  for _name, ns in sorted(db.namespaces.items())]
    chosen = pods if pods is not None else [p for _key, p in sorted(db.pods.items())]
    policies = [policy_manifest(n, "NetworkPolicy") for _key, n in sorted(db.network_policies.items())]
    cluster_policies = [policy_manifest(c, "ClusterNetworkPolicy")
                        for _name, c in sorted(db.cluster_network_policies.items())]
    return Manifests({"Namespace": namespaces, "Pod": [pod_manifest(p) for p in chosen],
                      "NetworkPolicy": policies, "ClusterNetworkPolicy": cluster_policies})


def db_explainer(db: Database, cluster_name: str, semantics: str = KUBERNETES,
                 index: Optional[RuleIndex] = None,
                 change_observers: Optional[List[Callable[[Changes], None]]] = None) -> "LiveExplainer":
    """An explain callable over the live DB (a `LiveExplainer`, see there)."""
    return LiveExplainer(db, cluster_name, semantics, index, change_observers)


class LiveExplainer:
    """An explain callable over the live DB: the desired Contrail objects against the cached
    Kubernetes objects, as they are when asked.

    The Contrail side is a `RuleIndex` kept from one question to the next (`index`: the caller's,
    to count what an update compiles; a new one by default): the first question after a change
    (`db.generation`, bumped by the event dispatcher at every change, moved) brings it up to date,
    compiling only the rules the change replaced. Given the status book's `change_observers`, it
    hears which objects the translator's change reports named and looks at those only; without
    them, at every object by identity. The index is built whole once: ahead of the first question
    when the daemon calls `prepare` (in steps between events), else by the first question; a
    question arriving during `prepare` runs the rest of its steps itself. The pods' workloads are
    read from their records when a question names them. The Kubernetes side is read from the
    records as a question needs them (`RecordsModel`, one per generation); each namespace's
    policies are compiled when first asked for (or by `prepare`) and kept while its records stay.

    What an update or a question compiled lives as long as the index or its records, so it is
    frozen out of the cyclic collector's reach (`freeze_young`): left in view it would reach the
    oldest generation, and a full collection every twenty or so questions would walk it all
    during a question. The index holds no reference cycles, so what an update replaces is freed
    by reference counting although it was frozen (a test checks)."""

    def __init__(self, db: Database, cluster_name: str, semantics: str = KUBERNETES,
                 index: Optional[RuleIndex] = None,
                 change_observers: Optional[List[Callable[[Changes], None]]] = None) -> None:
        self._db, self._cluster_name, self._semantics = db, cluster_name, semantics
        self._rules = index if index is not None else RuleIndex()
        self._addresses: Dict[str, Optional[IPAddress]] = {}  # IP text -> address, for every model
        self._namespaces = CompiledNamespaces()
        self._journal: Optional[ChangeJournal] = None
        if change_observers is not None:
            self._journal = ChangeJournal()
            change_observers.append(self._journal.translated)
        self._cached: Dict[int, Explainer] = {}
        self._building: Optional[Iterator[None]] = None  # `prepare`'s steps not run yet

    def __call__(self, source: str, destination: str, port: str, protocol: str) -> Mapping[str, Any]:
        db = self._db
        explainer = self._cached.get(db.generation)
        if explainer is None:
            self._cached.clear()
            self._finish_build()
            explainer = self._cached[db.generation] = self._live_explainer()
        kubernetes_compiled = explainer.kubernetes.compiled
        try:
            return explainer.explain(source, destination, port, protocol)
        finally:
            if explainer.kubernetes.compiled != kubernetes_compiled:
                gcpolicy.freeze_young()

    def prepare(self, pause: Callable[[], None] = lambda: gevent.sleep(0), step: int = STEP) -> None:
        """Build the index whole, then compile every namespace's policies, in steps of a few
        milliseconds, calling `pause` between two (by default: give the event loop its turn),
        so that the first question after a start costs what any question costs. Nothing to do
        once a question has built the index. The build reads the objects as they are at its
        first step; what changes meanwhile the next question's update reads (told by the change
        reports, or looking at every object). `step`: units of work between two pauses."""
        if self._rules.entry_count or self._building is not None:
            return
        if self._journal is not None:
            self._journal.take()  # the build reads every object
        steps = self._building = self._rules.steps(rule_source(self._db, self._cluster_name), step)
        try:
            while self._building is steps:
                with collector_paused():
                    if next(steps, _DONE) is _DONE:
                        self._building = None
                # What the step made lives on: out of the collector's view at once, a young
                # collection walks a step's objects, not the index built so far.
                gcpolicy.freeze_young()
                pause()
        except Exception:  # the index is empty again: the first question builds it and says why
            self._building = None
            log.warning("explain index not built ahead of questions", exc_info=True)
            return
        by_namespace: Dict[str, List[Tuple[str, str]]] = {}
        for key in self._db.network_policies:
            by_namespace.setdefault(key[0], []).append(key)
        self._namespaces.keep_only(by_namespace)
        for namespace, keys in by_namespace.items():
            with collector_paused():
                self._namespaces.compiled(self._db, namespace, keys)
            gcpolicy.freeze_young()
            pause()

    def _finish_build(self) -> None:
        """`prepare`'s steps, if any are left, run now, for the question waiting."""
        steps, self._building = self._building, None
        if steps is not None:
            with collector_paused():
                for _ in steps:
                    pass

    def _live_explainer(self) -> Explainer:
        """The index brought up to date with the collector paused (what it files lives on), and the
        Kubernetes side of this generation."""
        rules, db = self._rules, self._db
        compiled = rules.compiled
        with collector_paused():
            rules.update(rule_source(db, self._cluster_name), self._journal.take() if self._journal is not None else None)
        if rules.compiled != compiled:
            gcpolicy.freeze_young()
        return Explainer.of(ContrailEvaluator.over(rules, self._cluster_name or "k8s", RecordWorkloads(db)),
                            RecordsModel(db, self._addresses, self._namespaces), db.selectors, self._semantics)


_DONE = object()
