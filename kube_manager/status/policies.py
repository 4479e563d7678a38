"""The status of policies: which Contrail objects each emits, its errors, its sync state.

One `PolicyBook` per kind that emits policies (NetworkPolicies, ClusterNetworkPolicies: each
registered as the kind's `STATUS` hook, `kube_manager/registry.py`), fed downstream only:
- `touched` by the event dispatcher for each policy an event upserted, deleted or failed;
- `translated` after each translator flush, with the keys its change report names: the objects
  and errors of those policies and of the touched ones are read from the translator's one pure
  read, `status_of` (what the flush just decided), and the book keeps which objects are whose;
- `progressed` by the reconciler, with the objects whose write state may have changed and the
  read-only `ObjectStates` view that answers for them: the policies they belong to, and those
  refreshed since, take the state of their objects (any parked: parked; any retrying: retrying;
  all synced: synced, or rejected if part of it was refused; else pending).

Every change of a policy's state or errors goes through one place, `_settle`, which tells the
`PolicyStatusListener`s (protocol.py). A quiet large cluster costs nothing: only named keys are
looked at.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import (AbstractSet, Callable, Dict, Generic, Iterable, Iterator, List, Mapping, Optional, Set, Tuple,
                    TypeVar)

from kube_manager.plumbing.gcpolicy import TrackedDict
from kube_manager.records.db import PARKED, PENDING, REJECTED, RETRYING, STAGED, SYNCED, Database, PolicyRecord
from kube_manager.registry import CLUSTER_NETWORK_POLICIES, KINDS, NETWORK_POLICIES, STATUS
from kube_manager.translator import ClusterTranslator
from kube_manager.translator.staged_policies import StagedStatus
from kube_manager.translator.bodies import FIREWALL_POLICY, FIREWALL_RULE, FqName

from .protocol import Key, ObjKey, ObjectStates, PolicyObserver, PolicyStatusListener

R = TypeVar("R", bound=PolicyRecord)
K = TypeVar("K")
# A policy's objects: its firewall policy, and every rule it emits (in that order). The translator's
# own fq_name tuples, not (type, fq_name) pairs: a pair per rule adds up on a large cluster.
PolicyObjectNames = Tuple[FqName, Tuple[FqName, ...]]
# What the translator decided for one policy: its objects (None: rejected whole or staged), its
# errors, and whether it is staged (SPEC 17).
Translated = Tuple[Optional[PolicyObjectNames], List[str], bool]


@dataclass(frozen=True)
class StatusParts:
    """What a kind's `STATUS` hook builds its `PolicyBook` from (the book's arguments but its records)."""

    translator: ClusterTranslator
    db: Database
    listeners: List[PolicyStatusListener]
    observers: List[PolicyObserver]
    mark_errors_stale: Callable[[], None]


class PolicyBook(Generic[K, R]):
    """The status of one kind's policies; see the module docstring. `records` is the kind's
    records (by `K`, the kind's record key; `record_key` turns a (namespace, name) into one)."""

    kind = ""

    def __init__(self, parts: StatusParts, records: Mapping[K, R]) -> None:
        self._translator = parts.translator  # its pure reads answer for the flush just reported
        self._records = records
        self._parked = parts.db.parked  # the reconciler's: why an object's last write was refused
        self._listeners = parts.listeners
        self._observers = parts.observers
        self._errors_stale = parts.mark_errors_stale
        self._touched: Set[K] = set()  # upserted, deleted or failed since the last flush
        self._objects_of: Dict[K, PolicyObjectNames] = TrackedDict()
        # resource type -> fq_name -> the policy it belongs to
        self._owner_of: Dict[str, Dict[FqName, K]] = {FIREWALL_POLICY: TrackedDict(), FIREWALL_RULE: TrackedDict()}
        self._states_dirty: Set[K] = set()  # refreshed since the last progress

    # --- fed by the dispatcher and the translator's report --------------------------------------

    def touched(self, key: Key) -> None:
        """An event upserted, deleted or failed the policy: it follows at the next flush."""
        self._touched.add(self.record_key(key))

    def deleted(self, key: Key, rejected: AbstractSet[Key]) -> bool:
        """The policy was deleted: whether the translator's errors may have changed (`rejected`:
        the kind's keys rejected as of the last read of the errors)."""
        return key in rejected

    def translated(self, named: Iterable[Key]) -> None:
        """After a flush: the policies the change report names, and the touched ones, follow."""
        touched, self._touched = self._touched, set()
        for key in touched.union(map(self.record_key, named)):
            self._refresh(key)

    def record_key(self, key: Key) -> K:
        """The record key of the policy (namespace, name)."""
        raise NotImplementedError

    def _read(self, key: K) -> Translated:
        """What the last flush decided for one policy."""
        status = self._translator.status_of(self.kind, *self._identity(key))
        if status is None:
            return None, [], False  # unknown (deleted: only its objects are forgotten)
        errors = list(status.errors)  # the translator logs them
        if status.firewall_policy is None:
            return None, errors, isinstance(status, StagedStatus)
        return (status.firewall_policy, status.rules + status.deny_rules), errors, False

    def _identity(self, key: K) -> Tuple[str, str]:
        """The policy's (namespace, name), as the translator knows it."""
        raise NotImplementedError

    def _refresh(self, key: K) -> None:
        """Bring the objects and the record of one policy up to date."""
        objects, errors, staged = self._read(key)
        old = self._objects_of.pop(key, None)
        if old is not None:
            for resource_type, fq_name in _object_keys(old):
                owners = self._owner_of[resource_type]
                if owners.get(fq_name) == key:  # else a name another policy took over in the same
                    del owners[fq_name]  # flush (SPEC 4 suffixes)
        if objects is not None:
            self._objects_of[key] = objects
            self._owner_of[FIREWALL_POLICY][objects[0]] = key
            self._owner_of[FIREWALL_RULE].update(dict.fromkeys(objects[1], key))
        record = self._records.get(key)
        if record is None:
            return
        self._states_dirty.add(key)
        status = record.status
        if objects is None:
            status.firewall_policy, status.rules = [], []
            self._settle(key, record, STAGED if staged else REJECTED, errors, settled=False)
            return
        status.firewall_policy = list(objects[0])
        status.rules = [fq[-1] for fq in objects[1]]  # SPEC 10: deny rules too
        self._settle(key, record, PENDING if status.state in (REJECTED, STAGED) else status.state, errors, settled=False)

    # --- fed by the reconciler's progress -------------------------------------------------------

    def progressed(self, states: ObjectStates, changed: Optional[Iterable[ObjKey]]) -> None:
        """Sync states from the states of their objects: of every policy, or, given the objects
        whose state `changed`, of the policies they belong to and of those refreshed since."""
        if changed is None:
            keys: Iterable[K] = list(self._records)
        else:
            owner_of = self._owner_of
            owners = (owner_of[key[0]].get(key[1]) if key[0] in owner_of else None for key in changed)
            keys = self._states_dirty.union(owner for owner in owners if owner is not None)
        self._states_dirty = set()
        for key in keys:
            record = self._records.get(key)
            if record is None:
                continue
            names = self._objects_of.get(key)
            if names is None:
                self._settle(key, record, self._unrendered_state(record), record.errors, settled=True)
                continue
            objects = list(_object_keys(names))
            found = {states.state_of(k) for k in objects}
            write_errors = [f"{k[0]} {':'.join(k[1])}: {self._parked[k]}" for k in objects if k in self._parked]
            for state in (PARKED, RETRYING):
                if state in found:
                    break
            else:
                state = (REJECTED if record.errors else SYNCED) if found == {SYNCED} else PENDING
            self._settle(key, record, state, record.errors, write_errors, settled=True)

    def _unrendered_state(self, record: R) -> str:
        """The state of a policy that emits nothing (rejected whole, or staged)."""
        if record.state == STAGED:
            return STAGED
        return REJECTED if record.errors else PENDING

    # --- the one place a policy's state or errors change ----------------------------------------

    def _settle(self, key: K, record: R, state: str, errors: List[str],
                write_errors: Optional[List[str]] = None, *, settled: bool) -> None:
        """The record's state, errors and (given) write errors; the listeners told of a change,
        the observers of each settling (`settled`: from the reconciler's progress)."""
        status = record.status
        before = (status.state, status.errors, status.write_errors)
        if errors != status.errors:
            self._errors_stale()
        status.state, status.errors = state, errors
        if write_errors is not None:
            status.write_errors = write_errors
        if (state, errors, status.write_errors) != before:
            for listener in self._listeners:
                listener.policy_status_changed(self.kind, (record.namespace, record.name), state,
                                               errors + status.write_errors, record.generation)
        for observer in self._observers:
            observer.policy_observed(record, settled)


def _object_keys(names: PolicyObjectNames) -> Iterator[ObjKey]:
    """The (resource type, fq_name) of each object of a policy, policy first."""
    policy, rules = names
    yield FIREWALL_POLICY, policy
    for fq_name in rules:
        yield FIREWALL_RULE, fq_name


class NetworkPolicyBook(PolicyBook[Key, PolicyRecord]):
    """NetworkPolicies, by (namespace, name)."""

    kind = NETWORK_POLICIES.kind

    def record_key(self, key: Key) -> Key:
        return key

    def _identity(self, key: Key) -> Tuple[str, str]:
        return key


class ClusterNetworkPolicyBook(PolicyBook[str, R]):
    """ClusterNetworkPolicies, by name (SPEC 13). One's rules depend on the others of its tier, so
    the change report names every policy of a re-rendered tier."""

    kind = CLUSTER_NETWORK_POLICIES.kind

    def record_key(self, key: Key) -> str:
        return key[1]

    def deleted(self, key: Key, rejected: AbstractSet[Key]) -> bool:
        """Its tier is re-rendered: the errors of the others may change."""
        return True

    def _identity(self, name: str) -> Tuple[str, str]:
        return "", name

    def _unrendered_state(self, record: R) -> str:
        """Rejected whole, as its refresh said."""
        return record.state


KINDS.register(NETWORK_POLICIES.kind, STATUS, lambda parts: NetworkPolicyBook(parts, parts.db.network_policies))
KINDS.register(CLUSTER_NETWORK_POLICIES.kind, STATUS,
               lambda parts: ClusterNetworkPolicyBook(parts, parts.db.cluster_network_policies))
