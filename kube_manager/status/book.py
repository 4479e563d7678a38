"""The status book: what became of what Kubernetes said, written into the records downstream.

It is the one writer of the records' status parts (`PolicyStatus`, `PodStatus`) and of
`db.errors`, fed only from upstream, each once:
- the event dispatcher says which objects each event touched (`applied`), then hands over the
  translator's change report after each flush (`translated`): the policies' objects and errors
  (policies.py: one book per kind with a `STATUS` hook in the registry of kinds), the pods' tags
  (from the published `DesiredState`), the translator's errors;
- the reconciler pushes its progress (`objects_progressed`, `pod_tagged`; protocol.py's
  `SyncProgress`): the policies' sync states, the pods' tagging states.

Nobody calls it back and it calls nobody upstream: the translator's reads it makes answer for the
flush that was just reported, and the reconciler's `ObjectStates` is a read-only view handed down
with the keys it answers for. `db.errors` is read again only when some error may have come or gone,
so that a quiet large cluster costs nothing.
"""
from __future__ import annotations

from typing import Callable, Collection, Dict, List, Optional, Set

from kube_manager.records.db import Database
from kube_manager.registry import KINDS, PODS, STATUS, Kinds
from kube_manager.translator import Changes, ClusterTranslator
from kube_manager.translator.exact.pairs import PairRuleCounts

from .policies import PolicyBook, StatusParts
from .protocol import Key, ObjectStates, ObjKey, PolicyObserver, PolicyStatusListener

# What an event did to an object (`applied`).
UPSERTED, DELETED, FAILED = "upserted", "deleted", "failed"
_POD = PODS.kind


class StatusBook:
    """See the module docstring. `listeners` hear of every policy state or errors change,
    `observers` of every settling of a policy's status and of each policy deleted,
    `change_observers` of the translator's change report itself (introspect's explain index)."""

    def __init__(self, db: Database, translator: ClusterTranslator, kinds: Kinds = KINDS) -> None:
        self._db = db
        self._translator = translator
        self._desired = translator.published()
        self.listeners: List[PolicyStatusListener] = []
        self.observers: List[PolicyObserver] = []
        self.pair_rule_observers: List[Callable[[PairRuleCounts], None]] = []  # after each flush
        self.change_observers: List[Callable[[Changes], None]] = []  # each change report
        self._errors_stale = False  # some error may have come or gone since the last read
        # Keys rejected as of the last read of the errors, by kind ("Pod": {(namespace, name)}).
        self._rejected: Dict[str, Set[Key]] = {}
        self._pods_touched: Set[Key] = set()  # upserted since the last flush
        parts = StatusParts(translator, db, self.listeners, self.observers, self._mark_errors_stale)
        # The books of the kinds that emit policies, by kind.
        self.books: Dict[str, PolicyBook] = {entry.kind: hook(parts) for entry, hook in kinds.hooked(STATUS)}

    # --- from the event dispatcher ----------------------------------------------------------------

    def applied(self, kind: str, key: Key, event: str) -> None:
        """An event of `kind` (the Kubernetes kind) was applied to `key`, after its handler."""
        if event == FAILED:
            self._errors_stale = True  # a refusal
        book = self.books.get(kind)
        if kind == _POD:
            self._errors_stale |= key in self._rejected.get(kind, ())  # fixed, or gone
            if event == UPSERTED:
                self._pod_upserted(key)
        elif book is not None:
            book.touched(key)
            if event == DELETED:
                self._errors_stale |= book.deleted(key, self._rejected.get(kind, set()))
                for observer in self.observers:
                    observer.policy_forgotten(kind, key)
        else:  # rare: a namespace created or relabelled; and a kind without a book of its own
            self._errors_stale = True

    def _pod_upserted(self, key: Key) -> None:
        """A pod on the node's network has nothing to tag; any other keeps the tags of its name
        (a re-created pod's too) until a flush says otherwise."""
        self._pods_touched.add(key)
        record = self._db.pods.get(key)
        if record is not None:
            record.status.tags = [] if record.host_network else list(self._desired.pod_tags(key) or ())

    def translated(self, changes: Changes) -> None:
        """The translator's change report, once per flush: the records follow it."""
        for kind, book in self.books.items():
            book.translated(changes.policies.get(kind, ()))
        self._pod_tags(changes.pods)
        self._read_errors()
        if self.pair_rule_observers and changes:
            counts = self._desired.pair_rules()
            for observer in self.pair_rule_observers:
                observer(counts)
        for changed in self.change_observers:
            changed(changes)

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
        for book in self.books.values():
            book.progressed(states, changed)

    def pod_tagged(self, pod: Key, state: str, error: Optional[str] = None) -> None:
        record = self._db.pods.get(pod)
        if record is not None:
            record.status.tagging = state
            if error is not None:
                record.status.vmi_error = error
