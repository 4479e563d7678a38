"""NetworkPolicies: their records (spec, firewall policy, rules, errors, sync state) and the
translator's NetworkPolicy source.

A NetworkPolicy's sync state is that of its objects (firewall policy, pass and deny rules), which
the reconciler owns and pushes as they change (`states_changed`); the handler keeps which objects
are whose, from the translator's change report.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Iterable, Iterator, Optional, Set, Tuple

from kubernetes import client

from kube_manager.records.db import PARKED, PENDING, REJECTED, RETRYING, SYNCED, Key, ObjKey, PolicyRecord
from kube_manager.plumbing.gcpolicy import TrackedDict
from kube_manager.kube.kinds import Kind, StateSource
from kube_manager.kube.resources import NETWORK_POLICIES
from kube_manager.observability.logging_setup import kv
from kube_manager.translator import Changes
from kube_manager.translator.bodies import FIREWALL_POLICY, FIREWALL_RULE, FqName

from .base import POLICY_META_KEYS, Context, Handler, generation_of, mapping, metadata, trim_metadata, validate_namespaced

log = logging.getLogger(__name__)
# A NetworkPolicy's objects: its firewall policy, and its pass and deny rules (in that order). The
# translator's own fq_name tuples, not (type, fq_name) pairs: one pair per rule was 21 MB at XLarge.
PolicyObjectNames = Tuple[FqName, Tuple[FqName, ...]]

def trim_network_policy(obj: Dict[str, Any]) -> Dict[str, Any]:
    """metadata and the spec exactly as the server gives it (its sha256 is an annotation)."""
    trimmed = {"apiVersion": NETWORK_POLICIES.api_version, "kind": NETWORK_POLICIES.kind,
               "metadata": trim_metadata(obj, POLICY_META_KEYS)}
    if "spec" in mapping(obj):
        trimmed["spec"] = obj["spec"]
    return trimmed


class NetworkPolicyHandler(Handler):
    kind = NETWORK_POLICIES.kind

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self._touched: Set[Key] = set()  # upserted, deleted or failed since the last flush
        # NetworkPolicy -> its objects, and back (resource type -> fq_name -> NetworkPolicy)
        self._objects_of: Dict[Key, PolicyObjectNames] = TrackedDict()
        self._owner_of: Dict[str, Dict[FqName, Key]] = {FIREWALL_POLICY: TrackedDict(), FIREWALL_RULE: TrackedDict()}
        self._states_dirty: Set[Key] = set()  # refreshed since the last push of states

    def upsert(self, obj: Dict[str, Any]) -> None:
        key = self.key(obj)
        self._touched.add(key)
        meta = metadata(obj)
        spec = obj.get("spec")
        record = self.db.network_policies.get(key)
        if record is None:
            record = self.db.network_policies[key] = PolicyRecord(str(meta.get("uid") or ""), key[0], key[1])
            self._states_dirty.add(key)
        record.uid = str(meta.get("uid") or "")
        record.generation = generation_of(obj)
        record.spec = spec if isinstance(spec, dict) else {}
        record.manifest = obj
        self.translator.upsert_policy(obj)

    def delete(self, obj: Dict[str, Any]) -> None:
        key = self.key(obj)
        self._touched.add(key)
        record = self.db.network_policies.pop(key, None)
        self.translator.delete_policy(*key)
        self.context.errors_stale |= record is not None and bool(record.errors)
        if record is not None:
            self.context.forget(record)
            log.info("NetworkPolicy deleted", extra=kv(namespace=key[0], name=key[1]))

    def failed(self, obj: Dict[str, Any], exc: Exception) -> None:
        """Rejected, and shown with a record of its own even if it never had one."""
        super().failed(obj, exc)
        namespace, name = key = self.key(obj)
        self.db.network_policies.setdefault(key, PolicyRecord("", namespace, name))
        self._touched.add(key)

    def flushed(self, changes: Changes) -> None:
        touched, self._touched = self._touched, set()
        for key in touched.union(changes.policies):
            self._refresh(key)

    def states_changed(self, source: StateSource, changed: Optional[Iterable[ObjKey]]) -> None:
        """Recompute sync states from the states of their objects: of every policy, or, given the
        objects whose state `changed` since the last push, of the policies they belong to and of
        those refreshed since (so that a large cluster costs nothing while quiet)."""
        if changed is None:
            keys: Iterable[Key] = list(self.db.network_policies)
        else:
            owner_of = self._owner_of
            owners = (owner_of[key[0]].get(key[1]) if key[0] in owner_of else None for key in changed)
            keys = self._states_dirty.union(owner for owner in owners if owner is not None)
        self._states_dirty = set()
        for key in keys:
            record = self.db.network_policies.get(key)
            if record is None:
                continue
            self._settle(source, key, record)
            self.context.observe(record, settled=True)

    def _settle(self, source: StateSource, key: Key, record: PolicyRecord) -> None:
        """A record's state from the states of its objects."""
        names = self._objects_of.get(key)
        if names is None:
            record.state = REJECTED if record.errors else PENDING
            return
        objects = list(_object_keys(names))
        states = {source.state_of(k) for k in objects}
        record.write_errors = [f"{k[0]} {':'.join(k[1])}: {self.db.parked[k]}"
                               for k in objects if k in self.db.parked]
        if PARKED in states:
            record.state = PARKED
        elif RETRYING in states:
            record.state = RETRYING
        elif states == {SYNCED}:
            record.state = REJECTED if record.errors else SYNCED
        else:
            record.state = PENDING

    # --- after a flush ------------------------------------------------------------------------

    def _refresh(self, key: Key) -> None:
        """Bring the objects and the record of one NetworkPolicy up to date."""
        objects = self.translator.policy_objects(*key)
        self._states_dirty.add(key)
        old = self._objects_of.pop(key, None)
        if old is not None:
            for resource_type, fq_name in _object_keys(old):
                owners = self._owner_of[resource_type]
                if owners.get(fq_name) == key:  # else a name another NetworkPolicy took over in
                    del owners[fq_name]  # the same flush (SPEC 4 suffixes)
        if objects is not None:
            rules = objects.rules + objects.deny_rules
            self._objects_of[key] = (objects.firewall_policy, rules)
            self._owner_of[FIREWALL_POLICY][objects.firewall_policy] = key
            self._owner_of[FIREWALL_RULE].update(dict.fromkeys(rules, key))
        record = self.db.network_policies.get(key)
        if record is None:
            return
        errors = list(self.translator.policy_errors(*key))  # the translator logs them
        self.context.errors_stale |= errors != record.errors
        record.errors = errors
        if objects is None:
            record.firewall_policy, record.rules = [], []
            record.state = REJECTED
        else:
            record.firewall_policy = list(objects.firewall_policy)
            record.rules = [fq[-1] for fq in objects.rules + objects.deny_rules]  # SPEC 10: deny rules too
            if record.state == REJECTED:
                record.state = PENDING
        self.context.observe(record, settled=False)


def _object_keys(names: PolicyObjectNames) -> Iterator[ObjKey]:
    """The (resource type, fq_name) of each object of a NetworkPolicy, policy first."""
    policy, rules = names
    yield FIREWALL_POLICY, policy
    for fq_name in rules:
        yield FIREWALL_RULE, fq_name


KIND = Kind(NETWORK_POLICIES, lambda api: client.NetworkingV1Api(api).list_network_policy_for_all_namespaces,
            trim_network_policy, validate_namespaced, NetworkPolicyHandler)
