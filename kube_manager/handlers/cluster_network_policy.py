"""ClusterNetworkPolicies (SPEC 13): their records (tier, priority, spec, the firewall policy and
rules they emit, errors, sync state) and the translator's ClusterNetworkPolicy source.

Cluster-scoped: the key is ("", name). A CRD: listed and watched through the official client's
CustomObjectsApi where the API server serves it, an empty list where it does not (kube/watcher.py).

One ClusterNetworkPolicy's emitted rules depend on the others of its tier (a Deny is emitted minus
the Accept and Pass rules before it) and on pods (named ports), so after a flush the records brought
up to date from the translator's status are those of every policy of a re-rendered tier (the change
report names them) besides the ones whose events arrived; a flush that re-rendered no tier (a
NetworkPolicy event) refreshes none.
"""
from __future__ import annotations

import functools
import logging
from typing import Any, Dict, Iterable, Mapping, Optional, Set, Tuple

from kubernetes import client

from kube_manager.records.db import PARKED, PENDING, REJECTED, RETRYING, SYNCED, ClusterPolicyRecord, Key, ObjKey
from kube_manager.kube.kinds import Kind, StateSource
from kube_manager.kube.resources import CLUSTER_NETWORK_POLICIES
from kube_manager.observability.logging_setup import kv
from kube_manager.translator import Changes
from kube_manager.translator.validation import object_name_problem

from kube_manager.translator.match_logging import ANNOTATION as LOGGING_ANNOTATION

from .base import POLICY_META_KEYS, trim_annotation, Context, Handler, generation_of, mapping, metadata, trim_metadata

log = logging.getLogger(__name__)


def list_cluster_network_policies(api: Any) -> Any:
    """The official client's cluster-wide list of the custom resource (CustomObjectsApi), which
    also watches; 404 while the CRD is not installed."""
    resource = CLUSTER_NETWORK_POLICIES
    return functools.partial(client.CustomObjectsApi(api).list_cluster_custom_object,
                             resource.group, resource.version, resource.name)


def trim_cluster_network_policy(obj: Dict[str, Any]) -> Dict[str, Any]:
    """metadata and the spec exactly as the server gives it; not the status (the conditions that
    implementations write would wake everyone for nothing)."""
    trimmed = {"apiVersion": CLUSTER_NETWORK_POLICIES.api_version, "kind": CLUSTER_NETWORK_POLICIES.kind,
               "metadata": trim_metadata(obj, POLICY_META_KEYS)}
    if "spec" in mapping(obj):
        trimmed["spec"] = obj["spec"]
    return trim_annotation(obj, trimmed, LOGGING_ANNOTATION)


def validate_cluster_network_policy(obj: Mapping[str, Any]) -> Optional[str]:
    problem = object_name_problem(metadata(obj).get("name"))
    return f"metadata.name: {problem}" if problem else None


class ClusterNetworkPolicyHandler(Handler):
    kind = CLUSTER_NETWORK_POLICIES.kind

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self._touched: Set[str] = set()  # upserted, deleted or failed since the last flush
        self._objects_of: Dict[str, Tuple[ObjKey, ...]] = {}  # its firewall policy and every rule it emits
        self._owner_of: Dict[ObjKey, str] = {}
        self._states_dirty: Set[str] = set()  # refreshed since the last push of states

    def key(self, obj: Mapping[str, Any]) -> Key:
        return "", str(metadata(obj).get("name") or "")

    def _record(self, obj: Mapping[str, Any]) -> ClusterPolicyRecord:
        name = self.key(obj)[1]
        record = self.db.cluster_network_policies.get(name)
        if record is None:
            record = self.db.cluster_network_policies[name] = ClusterPolicyRecord("", "", name)
            self._states_dirty.add(name)
        self._touched.add(name)
        return record

    def upsert(self, obj: Dict[str, Any]) -> None:
        record = self._record(obj)
        spec = mapping(obj.get("spec"))
        tier, priority = spec.get("tier"), spec.get("priority")
        record.uid = str(metadata(obj).get("uid") or "")
        record.generation = generation_of(obj)
        record.spec, record.manifest = spec, obj
        record.tier = tier if isinstance(tier, str) else ""
        record.priority = priority if isinstance(priority, int) and not isinstance(priority, bool) else None
        self.translator.set_cluster_network_policy(obj)

    def delete(self, obj: Dict[str, Any]) -> None:
        name = self.key(obj)[1]
        self._touched.add(name)
        record = self.db.cluster_network_policies.pop(name, None)
        self.translator.remove_cluster_network_policy(name)
        self.context.errors_stale = True
        if record is not None:
            self.context.forget(record)
            log.info("ClusterNetworkPolicy deleted", extra=kv(name=name))

    def failed(self, obj: Dict[str, Any], exc: Exception) -> None:
        """Rejected alone, and shown with a record of its own even if it never had one."""
        super().failed(obj, exc)
        self._record(obj)

    def flushed(self, changes: Changes) -> None:
        touched, self._touched = self._touched, set()
        for name in touched.union(changes.cluster_policies):
            if name in self.db.cluster_network_policies:
                self._refresh(name)

    def _refresh(self, name: str) -> None:
        """Bring the record and the object maps of one ClusterNetworkPolicy up to date."""
        record = self.db.cluster_network_policies[name]
        status = self.translator.cluster_network_policy_status(name)
        for obj_key in self._objects_of.pop(name, ()):
            if self._owner_of.get(obj_key) == name:
                del self._owner_of[obj_key]
        errors = list(status.errors) if status is not None else []
        if status is None or status.firewall_policy is None:
            errors = errors or [error["reason"] for error in self.translator.errors()
                                if error["kind"] == self.kind and error["name"] == name]
            record.firewall_policy, record.rules, record.state = [], [], REJECTED
        else:
            objects = (("firewall-policy", status.firewall_policy),) + tuple(
                ("firewall-rule", fq) for fq in status.rules + status.deny_rules)
            self._objects_of[name] = objects
            self._owner_of.update((obj_key, name) for obj_key in objects)
            record.firewall_policy = list(status.firewall_policy)
            record.rules = [fq[-1] for fq in status.rules + status.deny_rules]
            if record.state == REJECTED:
                record.state = PENDING
        self.context.errors_stale |= errors != record.errors
        record.errors = errors
        self._states_dirty.add(name)
        self.context.observe(record, settled=False)

    def states_changed(self, source: StateSource, changed: Optional[Iterable[ObjKey]]) -> None:
        """The reconciler pushed: sync states from the states of the objects each emits (all, or
        those whose objects `changed` and those refreshed since the last push)."""
        if changed is None:
            names: Iterable[str] = list(self.db.cluster_network_policies)
        else:
            names = self._states_dirty.union(self._owner_of[key] for key in changed if key in self._owner_of)
        self._states_dirty = set()
        for name in names:
            record = self.db.cluster_network_policies.get(name)
            objects = self._objects_of.get(name)
            if record is None or objects is None:
                continue  # deleted, or rejected whole (its state says so already)
            states = {source.state_of(key) for key in objects}
            record.write_errors = [f"{key[0]} {':'.join(key[1])}: {self.db.parked[key]}"
                                   for key in objects if key in self.db.parked]
            for state in (PARKED, RETRYING):
                if state in states:
                    record.state = state
                    break
            else:
                settled = states == {SYNCED}
                record.state = (REJECTED if record.errors else SYNCED) if settled else PENDING
            self.context.observe(record, settled=True)


KIND = Kind(CLUSTER_NETWORK_POLICIES, list_cluster_network_policies, trim_cluster_network_policy, validate_cluster_network_policy, ClusterNetworkPolicyHandler)
