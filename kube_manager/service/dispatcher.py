"""Watch events in, records and translator input out, the status book and the reconciler told what changed.

The daemon's one consumer of Kubernetes events (`on_event`, which the watchers call directly): it
dispatches each event to its kind's handler (`kube_manager/handlers/`, one per kind of the
registry), which updates the kind's `Database` records and feeds the incremental
`ClusterTranslator`, and tells the status book which object the event touched; then it flushes the
translator once and hands the change report downstream, once each: to the status book
(`kube_manager/status/`), which brings the records' status parts up to date, and to the
reconciler, which only ever hears about real differences. Every call goes downstream.
`db.desired` is the translator's live desired state. An event of a kind that is not registered is
a `KindError`, never some default kind's.

Cost: one event costs in proportion to what it changed. Records are refreshed from the change
report after one translator flush per event (never a flush per object read), and `db.errors` is
read again only when some error may have come or gone (see `status/book.py`). The initial lists
are applied in bulk: every held event goes into the translator first, then one flush renders each
NetworkPolicy once.

One object never stops the others (SPEC 7): the kind's validator refuses an object whose identity
cannot be read, the translator rejects what it cannot translate, with a reason, and any exception
while handling one object here is caught for that object alone, which is then recorded as rejected
with the exception's message; the events after it, the flush and the end of the initial lists go
on as if it were any other rejected object.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Iterable, List, Optional, Protocol, Set, Tuple

import gevent.event

from kube_manager.records.db import Database, Key, ObjKey
from kube_manager.plumbing.gcpolicy import collector_paused
from kube_manager.handlers import KINDS
from kube_manager.handlers.base import Context
from kube_manager.kube.kinds import KindError, KindHandler, KindRegistry
from kube_manager.kube.watcher import ADDED, DELETED, LISTED, MODIFIED, RELISTED
from kube_manager.observability.logging_setup import kv
from kube_manager.plumbing.packed import Held, pack, unpack
from kube_manager.status.book import DELETED as RECORD_DELETED, FAILED, UPSERTED, StatusBook
from kube_manager.translator import Changes, ClusterTranslator, RefChange
from kube_manager.translator.validation import InvalidInput

log = logging.getLogger(__name__)


class ChangeSink(Protocol):
    """Where changes go (the reconciler)."""

    def initial_lists_in(self) -> None:
        """Every first list is in: their bulk translation starts now, its changes follow."""

    def refs_changed(self, changes: Iterable[RefChange]) -> None: ...

    def objects_changed(self, keys: Iterable[ObjKey]) -> None: ...

    def pods_changed(self, keys: Iterable[Key]) -> None: ...


class EventDispatcher:
    """Keeps the DB and the translator in step with watch events; see the module docstring."""

    def __init__(self, db: Database, translator: ClusterTranslator, sink: Optional[ChangeSink] = None,
                 kinds: KindRegistry = KINDS, status: Optional[StatusBook] = None) -> None:
        self.db = db
        self.status = status if status is not None else StatusBook(db, translator)
        self._kinds = kinds
        self._context = Context(db, translator)
        self._handlers: Dict[str, KindHandler] = {}
        for kind in kinds:
            assert kind.handler is not None  # checked when registered
            self._handlers[kind.name] = kind.handler(self._context)
        self.translator = translator
        self.sink = sink
        self.listed: Set[str] = set()  # resources whose first list has been delivered
        # events held until every first list is in (None once they are)
        # (packed: see kube_manager/plumbing/packed.py, the whole cluster is held here at start)
        self._held: Optional[Dict[str, List[Tuple[str, Held]]]] = {}
        self._releasing = False  # the held events are about to be applied (the sink is told first)
        # Set once every first list is in and applied, whatever one event did (SPEC 7): the daemon
        # waits on it, so it is never in the path of an event.
        self.lists_applied = gevent.event.Event()
        db.desired = translator.published().objects  # live, read-only view
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
            if self._held is not None and set(self._kinds.names()) <= self.listed and not self._releasing:
                self._releasing = True
                if self.sink is not None:
                    # It may yield (its listings go out): the events delivered meanwhile are held
                    # with the others, and a list delivered meanwhile applies nothing itself.
                    self.sink.initial_lists_in()
                held, self._held = self._held, None
                # The whole cluster at once, and no reference cycles in it: a collection during it
                # would only walk (and, as the heap grows, walk again) what is about to live for good
                # (the daemon settles it once `lists_applied` is set: `gcpolicy.settle`). At 15,000
                # NetworkPolicies the young and full passes were half the time of the initial lists'
                # application.
                try:
                    with collector_paused():
                        for name in self._kinds.names():
                            for held_type, held_obj in held.pop(name, ()):
                                self._apply(name, held_type, unpack(held_obj))
                        self.flush()
                finally:
                    self.lists_applied.set()
            return
        if event_type not in (ADDED, MODIFIED, DELETED):
            return
        if resource not in self._kinds:  # a bug, never handled as some default kind
            raise KindError(f"event of an unknown kind {resource!r}")
        if self._held is not None:
            self._held.setdefault(resource, []).append((event_type, pack(obj)))  # decoded one at a time
            return
        self._apply(resource, event_type, obj)
        self.flush()

    def _apply(self, resource: str, event_type: str, obj: Dict[str, Any]) -> None:
        self.db.generation += 1  # the records change now, the desired state at the next flush
        handler = self._handlers[resource]
        done = RECORD_DELETED
        try:
            if event_type == DELETED:
                handler.delete(obj)
            else:
                validator = self._kinds[resource].validator
                assert validator is not None  # checked when registered
                problem = validator(obj)
                if problem:
                    raise InvalidInput(problem)
                handler.upsert(obj)
                done = UPSERTED
        except Exception as exc:  # the refusal, or the last line of defence: a bug, confined to this object
            handler.failed(obj, exc)
            done = FAILED
        self.status.applied(handler.kind, handler.key(obj), done)

    def flush(self) -> Changes:
        """Take the translator's change report; hand it to the status book, then to the sink."""
        changes = self.translator.flush()
        self.status.translated(changes)
        if not changes:
            return changes
        if self.sink is not None:
            self.sink.refs_changed(changes.ref_changes)
            self.sink.objects_changed(changes.added + changes.changed + changes.removed)
            self.sink.pods_changed(changes.pods)
        return changes
