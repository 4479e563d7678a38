"""The status publisher: what the policies' records say, told to Kubernetes (SPEC 15).

Fed downstream: a `PolicyObserver` (protocol.py) registered with the status book, it hears each
settling of a policy's status from the book's one call site (policies.py, `PolicyBook._settle`),
and each policy deleted. It keeps the facts last observed of each policy and acts only on a
difference, so that a resync that changes nothing says nothing. It never polls the translator nor
reads the cluster.

Only the leader writes (`lead` when a term begins, `stand_by` when it ends): a standby keeps the
facts and says nothing; a new term re-reports what stands (each rejected part and parked object)
and then follows the differences. Its conditions wait for the term's start-up resync
(`term_resynced`): until its own reconciler has spoken, a new leader's sync states are a standby's
guess (every policy pending), and writing that guess would flap a `Programmed` that stands to
`Pending` and back, moving its `lastTransitionTime`. Should that resync fail, the config API
cannot be read (`term_unreachable`): rather than leave Kubernetes silent for as long as it stays so,
the conditions then say what is known without it (verdicts.py's `unreachable_conditions`:
`Accepted` as ever, `Programmed` False / ConfigAPIUnreachable, never over a `Programmed True` held
for the same generation). A conditions write sends the latest conditions when its turn comes, so
one overtaken while queued is never written.

Synced is said once per generation: a policy's generation is taken as already announced when the
publisher first sees it before the initial lists are in (a restart is no change of any spec), and
is announced when a later generation, or a policy created since, is programmed.
"""
from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from kubernetes.client.exceptions import ApiException

from kube_manager.registry import CLUSTER_NETWORK_POLICIES, NETWORK_POLICIES
from kube_manager.records.db import PENDING, ClusterPolicyRecord, PolicyRecord
from kube_manager.status.outbox import StatusOutbox
from kube_manager.status.recorder import EventRecorder
from kube_manager.status.verdicts import (NORMAL, EventSpec, PolicyFacts, conditions_of, events_between,
                                         merged_conditions, unreachable_conditions)

log = logging.getLogger(__name__)

PolicyId = Tuple[str, str, str]  # kind, namespace, name
_CNP = (CLUSTER_NETWORK_POLICIES.group, CLUSTER_NETWORK_POLICIES.version, CLUSTER_NETWORK_POLICIES.name)
_MERGE_PATCH = "application/merge-patch+json"
Conditions = Tuple[Dict[str, Any], ...]


def now_text() -> str:
    """A Kubernetes Time (seconds), for `lastTransitionTime`."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def facts_of(record: PolicyRecord, redact: Callable[[str], str] = str) -> PolicyFacts:
    """What `record` says; the config API's messages through `redact`, as on the pages."""
    kind = (CLUSTER_NETWORK_POLICIES if isinstance(record, ClusterPolicyRecord) else NETWORK_POLICIES).kind
    return PolicyFacts(kind, record.namespace, record.name, record.uid, record.generation or 0, record.state,
                       tuple(record.errors), tuple(map(redact, record.write_errors)), bool(record.firewall_policy))


@dataclass(frozen=True)
class ConditionsWrite:
    """A ClusterNetworkPolicy's conditions, written through its status subresource when they
    differ from what it holds (read first: a new leader knows nothing of what was written)."""

    name: str
    uid: str
    # The conditions wanted when the job's turn comes (None: the policy is gone): what a job queued
    # earlier would have said may have been overtaken meanwhile, and is never written then.
    wanted: Callable[[], Optional[Conditions]]
    now: Callable[[], str]

    target = "status"

    def describe(self) -> str:
        return f"status of ClusterNetworkPolicy {self.name}"

    def run(self, apis: Any, timeout: float) -> bool:
        """Read, merge, write with the version read (a merge patch replaces the whole list, so a
        condition another controller wrote meanwhile must not be lost): a 409 reads again, once."""
        attempts = 2
        while True:
            conditions = self.wanted()
            if conditions is None:
                return False
            held = apis.custom.get_cluster_custom_object_status(*_CNP, self.name, _request_timeout=timeout)
            meta = held.get("metadata") or {}
            if meta.get("uid") != self.uid:
                raise LookupError("the ClusterNetworkPolicy was replaced meanwhile")
            old = [c for c in (held.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
            ours = {c["type"] for c in conditions}
            new = merged_conditions(old, conditions, self.now()) + [c for c in old if c.get("type") not in ours]
            if _comparable(old) == _comparable(new):
                return False  # what it holds already (a new term's first report, typically)
            patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": {"conditions": new}}
            try:
                apis.custom.patch_cluster_custom_object_status(*_CNP, self.name, patch, _content_type=_MERGE_PATCH,
                                                               _request_timeout=timeout)
                return True
            except ApiException as exc:
                attempts -= 1
                if exc.status != 409 or not attempts:
                    raise


def _comparable(conditions: List[Any]) -> List[Any]:
    return sorted((sorted(c.items()) for c in conditions if isinstance(c, dict)), key=str)


class StatusPublisher:
    """See the module docstring."""

    def __init__(self, outbox: StatusOutbox, clock_text: Callable[[], str] = now_text, *,
                 redact: Callable[[str], str] = str) -> None:
        """`redact`: what keeps secrets out of free text (the introspect pages' `Redactor.text`)."""
        self._outbox = outbox
        self._now = clock_text
        self._redact = redact
        self._facts: Dict[PolicyId, PolicyFacts] = {}
        self._announced: Dict[PolicyId, int] = {}  # the generation whose Synced was said (or need not be)
        self._settled: Dict[PolicyId, int] = {}  # the generation the reconciler last spoke of
        self._conditions: Dict[PolicyId, Conditions] = {}  # last queued, this term
        self._resynced = False  # the term's start-up resync is in: its conditions are written
        self._unreachable = ""  # before that, why the config API could not be read (its error's class)
        self._recorder: Optional[EventRecorder] = None
        self.lists_in = False  # set by the daemon once the initial lists are applied
        self.standing: List[Callable[[], List[Tuple[PolicyId, EventSpec]]]] = []  # warnings a term says again

    # --- terms ---------------------------------------------------------------------------------

    def lead(self, apis: Any, gate: Callable[[], None], identity: str) -> None:
        """A term begins: report what stands, then every difference."""
        self._outbox.open(apis, gate)
        self._recorder = EventRecorder(self._outbox.put, identity)
        self._conditions, self._resynced, self._unreachable = {}, False, ""
        for policy, facts in self._facts.items():
            self._say(policy, None, facts, False)
        for warnings in self.standing:
            for policy, spec in warnings():
                self.policy_warned(policy, spec)

    def term_resynced(self) -> None:
        """The term's start-up resync is in: its reconciler has spoken of every policy, so each
        ClusterNetworkPolicy's conditions are now what stands, and are queued (and written only
        where Kubernetes holds others)."""
        if self._recorder is None or self._resynced:
            return
        self._resynced, self._unreachable = True, ""
        for policy, facts in self._facts.items():
            self._queue_conditions(policy, facts)

    def term_unreachable(self, cause: str) -> None:
        """The term's start-up resync failed: the config API could not be read (`cause`, the
        error's class). Until a resync is in, each ClusterNetworkPolicy's conditions say what is
        known without it, queued now and at each change (and written only where Kubernetes holds
        others); the same cause again changes nothing."""
        if self._recorder is None or self._resynced or self._unreachable == cause:
            return
        self._unreachable = cause
        for policy, facts in self._facts.items():
            self._queue_conditions(policy, facts)

    def stand_by(self) -> None:
        self._outbox.close()
        self._recorder = None
        self._resynced, self._unreachable = False, ""

    # --- fed by the status book (protocol.PolicyObserver) -----------------------------------------

    def policy_observed(self, record: PolicyRecord, settled: bool) -> None:
        """A policy's record may have changed state or errors. `settled`: its state is the
        reconciler's word (pushed sync states); otherwise (a translator flush) a state left from an
        earlier generation is taken as pending until the reconciler speaks."""
        facts = facts_of(record, self._redact)
        policy = (facts.kind, facts.namespace, facts.name)
        before = self._facts.get(policy)
        if before is not None and before.uid != facts.uid:
            before = None  # deleted and created again under the same name: another object
            for table in (self._announced, self._settled, self._conditions):
                table.pop(policy, None)
        if settled:
            self._settled[policy] = facts.generation
        elif self._settled.get(policy, facts.generation) != facts.generation and facts.has_objects:
            facts = facts._replace(state=PENDING)
        if before is None and not self.lists_in:
            self._announced[policy] = facts.generation
        self._facts[policy] = facts
        if self._recorder is None:
            return
        announce = settled and facts.programmed and self._announced.get(policy) != facts.generation
        if announce or before != facts:
            self._say(policy, before, facts, announce)

    def staged_reported(self, record: PolicyRecord, note: str) -> bool:
        """SPEC 17: a staged policy's `Normal` `Staged` Event with what it would change (the staged
        runs say it once per generation); said only by a leader (False on a standby)."""
        if self._recorder is None:
            return False
        self._recorder.record(facts_of(record, self._redact), EventSpec(NORMAL, "Staged", "Evaluate", note))
        return True

    def policy_warned(self, policy: PolicyId, spec: EventSpec) -> None:
        """An Event about `policy` that no change of its own record calls for (pair_bound.py);
        said only while leading, and only of a policy whose record was observed."""
        facts = self._facts.get(policy)
        if self._recorder is not None and facts is not None:
            self._recorder.record(facts, spec)

    def policy_forgotten(self, kind: str, key: Tuple[str, str]) -> None:
        """A policy was deleted."""
        policy = (kind, key[0], key[1])
        for table in (self._facts, self._announced, self._settled, self._conditions):
            table.pop(policy, None)

    def _say(self, policy: PolicyId, before: Optional[PolicyFacts], facts: PolicyFacts, announce: bool) -> None:
        assert self._recorder is not None
        if announce:
            self._announced[policy] = facts.generation
        for spec in events_between(before, facts, announce):
            self._recorder.record(facts, spec)
        if self._resynced or self._unreachable:
            self._queue_conditions(policy, facts)

    def _queue_conditions(self, policy: PolicyId, facts: PolicyFacts) -> None:
        """A ClusterNetworkPolicy's conditions, queued when they differ from those last queued."""
        if facts.kind != CLUSTER_NETWORK_POLICIES.kind:
            return
        conditions = tuple(conditions_of(facts) if self._resynced else unreachable_conditions(facts, self._unreachable))
        if self._conditions.get(policy) != conditions:
            self._conditions[policy] = conditions
            self._outbox.put(ConditionsWrite(facts.name, facts.uid, functools.partial(self._wanted, policy, facts.uid),
                                             self._now))

    def _wanted(self, policy: PolicyId, uid: str) -> Optional[Conditions]:
        """The conditions last queued for `policy`, while it is still the object `uid`."""
        facts = self._facts.get(policy)
        return self._conditions.get(policy) if facts is not None and facts.uid == uid else None
