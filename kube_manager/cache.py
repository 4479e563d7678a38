"""Watch events in, DB records and desired state updated, the reconciler told what changed.

This is the daemon's one consumer of Kubernetes events (`on_event`, the watchers' callback). For each
event it updates the `Database` records the introspect pages show (namespaces, pods with their tags,
NetworkPolicies with their firewall policy, rules and errors), feeds the incremental
`ClusterTranslator`, and passes the translator's change report to the reconciler, which only ever
hears about real differences. `db.desired` is the translator's live desired state.

It also answers the one question the reconciler cannot answer from bodies alone: which
NetworkPolicy's firewall policy a deny rule of `<cluster>-denyall` protects (make before break).

Cost: one event costs in proportion to what it changed. Records are refreshed from the change
report after one translator flush per event (never a flush per object read), and `db.errors` is
read again only when some error may have come or gone (a NetworkPolicy whose errors changed, a
rejected pod, a namespace event). The initial lists are applied in bulk: every held event goes into
the translator first, then one flush renders each NetworkPolicy once.

One object never stops the others (SPEC 7): the translator rejects what it cannot read, with a
reason, and any exception while handling one object here is caught for that object alone, which is
then recorded as rejected with the exception's message; the events after it, the flush and the
end of the initial lists go on as if it were any other rejected object.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Protocol, Set, Tuple

from kube_manager.db import (PARKED, PENDING, REJECTED, RETRYING, SYNCED, Database, FqName, Key, NamespaceRecord,
                             PodRecord, PolicyRecord)
from kube_manager.kube.resources import NAMESPACES, NETWORK_POLICIES, PODS
from kube_manager.kube.kinds import KindError, KindRegistry
from kube_manager.kube.watcher import ADDED, DELETED, KINDS, LISTED, MODIFIED, RELISTED
from kube_manager.logging_setup import kv
from kube_manager.reconciler.pods import HOST_NETWORK
from kube_manager.translator import Changes, ClusterTranslator, RefChange

log = logging.getLogger(__name__)

ObjKey = Tuple[str, FqName]


POD_KIND = "Pod"  # the `kind` of a pod's translation errors


class ChangeSink(Protocol):
    """Where changes go (the reconciler)."""

    def refs_changed(self, changes: Iterable[RefChange]) -> None: ...

    def objects_changed(self, keys: Iterable[ObjKey]) -> None: ...

    def pods_changed(self, keys: Iterable[Key]) -> None: ...


class StateSource(Protocol):
    """Sync state of one Contrail object (the reconciler's `state_of`)."""

    def state_of(self, key: ObjKey) -> str: ...


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(obj.get("metadata") if isinstance(obj, dict) else None)


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def _key(obj: Mapping[str, Any]) -> Key:
    return (str(_meta(obj).get("namespace") or "default"), _name(obj))


def _mapping(value: Any) -> Dict[str, Any]:
    """`value` when it is an object, else `{}`: records show what can be shown of a malformed
    object, whose rejection the translator reports."""
    return value if isinstance(value, dict) else {}


class KubeCache:
    """Keeps the DB and the translator in step with watch events; see the module docstring."""

    def __init__(self, db: Database, translator: ClusterTranslator, sink: Optional[ChangeSink] = None,
                 kinds: KindRegistry = KINDS) -> None:
        self.db = db
        self._kinds = kinds
        self._handlers: Dict[str, Callable[[Dict[str, Any], bool], None]] = {
            NAMESPACES.name: self._namespace, PODS.name: self._pod, NETWORK_POLICIES.name: self._policy}
        kinds.check_handlers(self._handlers, "KubeCache")  # KindError at start-up for any gap
        self.translator = translator
        self.sink = sink
        self.listed: Set[str] = set()  # resources whose first list has been delivered
        # events held until every first list is in (None once they are)
        self._held: Optional[Dict[str, List[Tuple[str, Dict[str, Any]]]]] = {}
        self._deny_owner: Dict[FqName, FqName] = {}              # deny rule -> its NP's firewall policy
        self._tags_of: Dict[FqName, Tuple[str, ...]] = {}        # firewall policy -> tags it uses
        # NetworkPolicy -> its firewall policy, pass and deny rules (in that order), and back
        self._objects_of: Dict[Key, Tuple[ObjKey, ...]] = {}
        self._owner_of: Dict[ObjKey, Key] = {}
        self._states_dirty: Set[Key] = set()  # NetworkPolicies refreshed since the last refresh_states
        self._touched: Set[Key] = set()        # NetworkPolicies upserted or deleted since the last flush
        self._pods_touched: Set[Key] = set()   # pods upserted since the last flush
        self._rejected_pods: Set[Key] = set()  # as of the last read of the errors
        self._errors_stale = False             # some error may have come or gone since
        db.desired = translator.desired()  # type: ignore[assignment]  # live, read-only view
        db.selectors = translator.selectors()  # live, read-only view

    # --- events ------------------------------------------------------------------------------

    def on_event(self, resource: str, event_type: str, obj: Dict[str, Any]) -> None:
        """The watchers' callback: one event, then flush the translator's changes.

        Until every resource's first list is in, events are held and then applied namespaces first,
        pods next, NetworkPolicies last: each policy is rendered once, against the complete set of
        pods (named ports resolve), instead of once per pod that trickles in.
        """
        if event_type in (LISTED, RELISTED):
            self.listed.add(resource)
            log.info("kubernetes list delivered", extra=kv(resource=resource, event=event_type,
                                                           resource_version=obj.get("resourceVersion", "")))
            if self._held is not None and self.initial_lists_done:
                held, self._held = self._held, None
                for name in self._kinds.names():
                    for held_type, held_obj in held.get(name, ()):
                        self._apply(name, held_type, held_obj)
                self.flush()
            return
        if event_type not in (ADDED, MODIFIED, DELETED):
            return
        if resource not in self._kinds:  # a bug, never handled as some default kind
            raise KindError(f"event of an unknown kind {resource!r}")
        if self._held is not None:
            self._held.setdefault(resource, []).append((event_type, obj))
            return
        self._apply(resource, event_type, obj)
        self.flush()

    def _apply(self, resource: str, event_type: str, obj: Dict[str, Any]) -> None:
        deleted = event_type == DELETED
        self.db.generation += 1  # the records change now, the desired state at the next flush
        try:
            self._handlers[resource](obj, deleted)
        except Exception as exc:  # the last line of defence: a bug, confined to this object
            self._failed(resource, obj, exc)

    def _failed(self, resource: str, obj: Dict[str, Any], exc: Exception) -> None:
        """Record the object as rejected with the exception (logged once, with its name), so that
        it shows on the introspect page and the other objects of the event go on."""
        kind = self._kinds[resource].resource.kind
        namespace, name = ("", _name(obj)) if resource == NAMESPACES.name else _key(obj)
        self.translator.reject(kind, namespace, name, exc)
        self._errors_stale = True
        if resource == NETWORK_POLICIES.name:
            key = (namespace, name)
            self.db.network_policies.setdefault(key, PolicyRecord("", namespace, name))
            self._touched.add(key)

    @property
    def initial_lists_done(self) -> bool:
        return set(self._kinds.names()) <= self.listed

    def flush(self) -> Changes:
        """Take the translator's change report, update the records, tell the sink."""
        changes = self.translator.pop_changes()
        touched, self._touched = self._touched, set()
        pods_touched, self._pods_touched = self._pods_touched, set()
        for key in changes.pods:
            record = self.db.pods.get(key)
            if record is not None:
                tags = self.translator.pod_tags(*key)
                self._errors_stale |= tags is None  # known, yet without tags: rejected
                record.tags = list(tags or ()) if record.vmi_state != HOST_NETWORK else []
        for key in pods_touched.difference(changes.pods):  # same tags as before, or still rejected
            self._errors_stale |= key in self.db.pods and self.translator.pod_tags(*key) is None
        for key in touched.union(changes.policies):
            self._refresh_policy(key)
        if self._errors_stale:
            self._errors_stale = False
            self.db.errors = self.translator.errors()
            self._rejected_pods = {(e["namespace"], e["name"]) for e in self.db.errors if e["kind"] == POD_KIND}
        if not changes:
            return changes
        if self.sink is not None:
            self.sink.refs_changed(changes.ref_changes)
            self.sink.objects_changed(changes.added + changes.changed + changes.removed)
            self.sink.pods_changed(changes.pods)
        return changes

    # --- what the reconciler and the introspect pages ask ------------------------------------

    def deny_owner(self, rule: FqName) -> Optional[FqName]:
        """The firewall policy of the NetworkPolicy whose deny rule `rule` is."""
        return self._deny_owner.get(rule)

    def policy_tags(self, policy: FqName) -> Tuple[str, ...]:
        """The label, namespace-label and selector tags the endpoints of that policy use."""
        return self._tags_of.get(policy, ())

    def refresh_states(self, source: StateSource, changed: Optional[Iterable[ObjKey]] = None) -> None:
        """Recompute NetworkPolicy sync states from the states of their objects: of every policy,
        or, given the objects whose state `changed` since the last call, of the policies they belong
        to and of those refreshed since (so that a large cluster costs nothing while quiet)."""
        if changed is None:
            keys: Iterable[Key] = list(self.db.network_policies)
        else:
            owners = (self._owner_of.get(key) for key in changed)
            keys = self._states_dirty.union(owner for owner in owners if owner is not None)
        self._states_dirty = set()
        for key in keys:
            record = self.db.network_policies.get(key)
            if record is None:
                continue
            objects = self._objects_of.get(key)
            if objects is None:
                record.state = REJECTED if record.errors else PENDING
                continue
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

    # --- per kind ----------------------------------------------------------------------------

    def _namespace(self, obj: Dict[str, Any], deleted: bool) -> None:
        self._errors_stale = True  # rare: a namespace created, relabelled or deleted
        meta = _meta(obj)
        name = _name(obj)
        if deleted:
            self.db.namespaces.pop(name, None)
            self.translator.delete_namespace(name)
            return
        self.db.namespaces[name] = NamespaceRecord(str(meta.get("uid") or ""), name, dict(_mapping(meta.get("labels"))))
        self.translator.upsert_namespace(obj)

    def _pod(self, obj: Dict[str, Any], deleted: bool) -> None:
        key = _key(obj)
        self._errors_stale |= key in self._rejected_pods  # fixed or deleted
        if deleted:
            self.db.pods.pop(key, None)
            self.translator.delete_pod(*key)
            return
        meta = _meta(obj)
        record = self.db.pods.get(key)
        uid = str(meta.get("uid") or "")
        if record is None or record.uid != uid:
            # A re-created pod keeps the tags of its name until the flush says otherwise: they
            # follow from labels and namespace, and the change report names only tags that moved.
            tags = record.tags if record is not None else []
            record = PodRecord(uid, key[0], key[1], tags=tags)
            self.db.pods[key] = record
        if _mapping(obj.get("spec")).get("hostNetwork") is True:
            record.vmi_state, record.tags = HOST_NETWORK, []  # no interface of its own: never tagged
        ip = _mapping(obj.get("status")).get("podIP")
        record.ip = ip if isinstance(ip, str) else None
        record.labels = dict(_mapping(meta.get("labels")))
        record.manifest = obj
        self.translator.upsert_pod(obj)
        self._pods_touched.add(key)

    def _policy(self, obj: Dict[str, Any], deleted: bool) -> None:
        key = _key(obj)
        self._touched.add(key)
        if deleted:
            record = self.db.network_policies.pop(key, None)
            self.translator.delete_policy(*key)
            self._errors_stale |= record is not None and bool(record.errors)
            if record is not None:
                log.info("NetworkPolicy deleted", extra=kv(namespace=key[0], name=key[1]))
            return
        meta = _meta(obj)
        spec = obj.get("spec")
        record = self.db.network_policies.get(key)
        if record is None:
            record = self.db.network_policies[key] = PolicyRecord(str(meta.get("uid") or ""), key[0], key[1])
            self._states_dirty.add(key)
        record.uid = str(meta.get("uid") or "")
        record.spec = spec if isinstance(spec, dict) else {}
        record.manifest = obj
        self.translator.upsert_policy(obj)

    def _refresh_policy(self, key: Key) -> None:
        """Bring the maps and the record of one NetworkPolicy up to date (after a flush)."""
        objects = self.translator.policy_objects(*key)
        self._states_dirty.add(key)
        for obj_key in self._objects_of.pop(key, ()):
            if self._owner_of.get(obj_key) != key:
                continue  # a name another NetworkPolicy took over in the same flush (SPEC 4 suffixes)
            del self._owner_of[obj_key]
            self._deny_owner.pop(obj_key[1], None)
            self._tags_of.pop(obj_key[1], None)
        if objects is not None:
            new = (("firewall-policy", objects.firewall_policy),) + tuple(
                ("firewall-rule", fq) for fq in objects.rules + objects.deny_rules)
            self._objects_of[key] = new
            self._owner_of.update((obj_key, key) for obj_key in new)
            for rule in objects.deny_rules:
                self._deny_owner[rule] = objects.firewall_policy
            self._tags_of[objects.firewall_policy] = objects.tags
        record = self.db.network_policies.get(key)
        if record is None:
            return
        errors = list(self.translator.policy_errors(*key))  # the translator logs them
        self._errors_stale |= errors != record.errors
        record.errors = errors
        if objects is None:
            record.firewall_policy, record.rules = [], []
            record.state = REJECTED
            return
        record.firewall_policy = list(objects.firewall_policy)
        record.rules = [fq[-1] for fq in objects.rules + objects.deny_rules]  # SPEC 10: deny rules too
        if record.state == REJECTED:
            record.state = PENDING
