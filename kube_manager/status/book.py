"""The status book: what became of what Kubernetes said, written into the records downstream.

It is the one writer of the records' status parts (`PolicyStatus`, `PodStatus`) and of
`db.errors`, fed only from upstream, each once:
- the event dispatcher says which objects each event touched (`applied`), then hands over the
  translator's change report after each flush (`translated`): the policies' objects and errors
  (policies.py), the pods' tags (from the published `DesiredState`), the translator's errors;
- the reconciler pushes its progress (`objects_progressed`, `pod_tagged`; protocol.py's
  `SyncProgress`): the policies' sync states, the pods' tagging states.

Nobody calls it back and it calls nobody upstream: the translator's reads it makes answer for the
flush that was just reported, and the reconciler's `ObjectStates` is a read-only view handed down
with the keys it answers for. `db.errors` is read again only when some error may have come or gone,
so that a quiet large cluster costs nothing.
"""
from __future__ import annotations

from typing import Collection, Dict, List, Optional, Set

from kube_manager.records.db import Database
from kube_manager.translator import Changes, ClusterTranslator

from .policies import ClusterNetworkPolicyBook, NetworkPolicyBook
from .protocol import Key, ObjectStates, ObjKey, PolicyObserver, PolicyStatusListener

# What an event did to an object (`applied`).
UPSERTED, DELETED, FAILED = "upserted", "deleted", "failed"
_POD = "Pod"


class StatusBook:
    """See the module docstring. `listeners` hear of every policy state or errors change,
    `observers` of every settling of a policy's status and of each policy deleted."""

    def __init__(self, db: Database, translator: ClusterTranslator) -> None:
        self._db = db
        self._translator = translator
        self._desired = translator.published()
        self.listeners: List[PolicyStatusListener] = []
        self.observers: List[PolicyObserver] = []
        self._errors_stale = False  # some error may have come or gone since the last read
        # Keys rejected as of the last read of the errors, by kind ("Pod": {(namespace, name)}).
        self._rejected: Dict[str, Set[Key]] = {}
        self._pods_touched: Set[Key] = set()  # upserted since the last flush
        self.network_policies = NetworkPolicyBook(translator, db.network_policies, db.parked, self.listeners,
                                                  self.observers, self._mark_errors_stale)
        self.cluster_network_policies = ClusterNetworkPolicyBook(
            translator, db.cluster_network_policies, db.parked, self.listeners, self.observers,
            self._mark_errors_stale)

    # --- from the event dispatcher ----------------------------------------------------------------

    def applied(self, kind: str, key: Key, event: str) -> None:
        """An event of `kind` (the Kubernetes kind) was applied to `key`, after its handler."""
        if event == FAILED:
            self._errors_stale = True  # a refusal
        if kind == _POD:
            self._errors_stale |= key in self._rejected.get(kind, ())  # fixed, or gone
            if event == UPSERTED:
                self._pod_upserted(key)
        elif kind == self.network_policies.kind:
            self.network_policies.touched(key)
            self._errors_stale |= event == DELETED and key in self._rejected.get(kind, ())
        elif kind == self.cluster_network_policies.kind:
            self.cluster_network_policies.touched(key[1])
            self._errors_stale |= event == DELETED
        else:  # rare: a namespace created or relabelled; and a kind without a book of its own
            self._errors_stale = True
        if event == DELETED and kind in (self.network_policies.kind, self.cluster_network_policies.kind):
            for observer in self.observers:
                observer.policy_forgotten(kind, key)

    def _pod_upserted(self, key: Key) -> None:
        """A pod on the node's network has nothing to tag; any other keeps the tags of its name
        (a re-created pod's too) until a flush says otherwise."""
        self._pods_touched.add(key)
        record = self._db.pods.get(key)
        if record is not None:
            record.status.tags = [] if record.host_network else list(self._desired.pod_tags(key) or ())

    def translated(self, changes: Changes) -> None:
        """The translator's change report, once per flush: the records follow it."""
        self.network_policies.translated(changes.policies)
        self.cluster_network_policies.translated(changes.cluster_policies)
        self._pod_tags(changes.pods)
        self._read_errors()

    def _pod_tags(self, changed: Collection[Key]) -> None:
        """New tags on the records of the pods whose tags moved; a pod the translator does not
        know although it has a record was rejected, so the errors must be read again."""
        touched, self._pods_touched = self._pods_touched, set()
        pods, desired = self._db.pods, self._desired
        for key in changed:
            record = pods.get(key)
            if record is not None:
                tags = desired.pod_tags(key)
                self._errors_stale |= tags is None  # known, yet without tags: rejected
                record.status.tags = list(tags or ()) if not record.host_network else []
        for key in touched.difference(changed):  # same tags as before, or still rejected
            self._errors_stale |= key in pods and desired.pod_tags(key) is None

    def _mark_errors_stale(self) -> None:
        self._errors_stale = True

    def _read_errors(self) -> None:
        """Read the translator's errors again if some may have changed."""
        if not self._errors_stale:
            return
        self._errors_stale = False
        self._db.errors = errors = self._translator.errors()
        self._rejected = {}
        for error in errors:
            self._rejected.setdefault(error["kind"], set()).add((error["namespace"], error["name"]))

    # --- from the reconciler (protocol.SyncProgress) ----------------------------------------------

    def objects_progressed(self, states: ObjectStates, keys: Optional[Collection[ObjKey]]) -> None:
        changed = None if keys is None else list(keys)
        self.network_policies.progressed(states, changed)
        self.cluster_network_policies.progressed(states, changed)

    def pod_tagged(self, pod: Key, state: str, error: Optional[str] = None) -> None:
        record = self._db.pods.get(pod)
        if record is not None:
            record.status.tagging = state
            if error is not None:
                record.status.vmi_error = error
