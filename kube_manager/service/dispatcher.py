"""Watch events in, records and translator input out, the reconciler told what changed.

The daemon's one consumer of Kubernetes events (`on_event`, the watchers' callback): it dispatches
each event to its kind's handler (`kube_manager/handlers/`, one per kind of the registry), which
updates the `Database` records the introspect pages show and feeds the incremental
`ClusterTranslator`; then it flushes the translator once, lets every handler refresh its records
from the change report, and passes the report to the reconciler, which only ever hears about real
differences. `db.desired` is the translator's live desired state. An event of a kind that is not
registered is a `KindError`, never some default kind's.

Cost: one event costs in proportion to what it changed. Records are refreshed from the change
report after one translator flush per event (never a flush per object read), and `db.errors` is
read again only when some error may have come or gone (see `handlers/base.py`). The initial lists
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

from kube_manager.records.db import Database, Key, ObjKey
from kube_manager.plumbing.gcpolicy import collector_paused
from kube_manager.handlers import KINDS
from kube_manager.handlers.base import Context, PolicyObserver
from kube_manager.kube.kinds import KindError, KindHandler, KindRegistry, StateSource
from kube_manager.kube.watcher import ADDED, DELETED, LISTED, MODIFIED, RELISTED
from kube_manager.observability.logging_setup import kv
from kube_manager.plumbing.packed import Held, pack, unpack
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
                 kinds: KindRegistry = KINDS) -> None:
        self.db = db
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
                # (its caller settles it: `gcpolicy.settle`). At 15,000 NetworkPolicies the young
                # and full passes were half the time of the initial lists' application.
                with collector_paused():
                    for name in self._kinds.names():
                        for held_type, held_obj in held.pop(name, ()):
                            self._apply(name, held_type, unpack(held_obj))
                    self.flush()
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
        try:
            if event_type == DELETED:
                handler.delete(obj)
                return
            validator = self._kinds[resource].validator
            assert validator is not None  # checked when registered
            problem = validator(obj)
            if problem:
                raise InvalidInput(problem)
            handler.upsert(obj)
        except Exception as exc:  # the refusal, or the last line of defence: a bug, confined to this object
            handler.failed(obj, exc)

    def observe_policies(self, observer: Optional[PolicyObserver]) -> None:
        """Tell `observer` wherever a policy record's state or errors are set (SPEC 15's status)."""
        self._context.observer = observer

    @property
    def initial_lists_done(self) -> bool:
        """Every first list is in and applied (translated)."""
        return self._held is None

    def flush(self) -> Changes:
        """Take the translator's change report, update the records, tell the sink."""
        changes = self.translator.flush()
        for handler in self._handlers.values():
            handler.flushed(changes)
        self._context.read_errors()
        if not changes:
            return changes
        if self.sink is not None:
            self.sink.refs_changed(changes.ref_changes)
            self.sink.objects_changed(changes.added + changes.changed + changes.removed)
            self.sink.pods_changed(changes.pods)
        return changes

    # --- pushed by the reconciler --------------------------------------------------------------

    def states_changed(self, source: StateSource, keys: Optional[Iterable[ObjKey]]) -> None:
        """The reconciler's `StateListener`: the records with a sync state follow (see the handlers)."""
        changed = None if keys is None else list(keys)
        for handler in self._handlers.values():
            handler.states_changed(source, changed)
