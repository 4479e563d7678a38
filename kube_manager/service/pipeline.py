"""The one pipeline: watch -> records -> translator -> reconciler -> client, built in one place.

```
watchers --events--> EventDispatcher --each kind's handler--> records (db) + ClusterTranslator
ClusterTranslator --change report--> StatusBook (the records' status parts, db.errors)
                  --change report--> Reconciler (reads the published DesiredState) --writes--> client
Reconciler --progress, pushed--> StatusBook (policies' sync states, pods' tagging states)
```

`build_pipeline` makes the standing part (DB, translator, kinds' handlers, status book); it is what the daemon,
the tests and the benchmarks start from, so none of them wires the pieces by hand. A reconciler is
connected for each term as leader (`connect`) and dropped when the term ends (`disconnect`); in
between (a standby) the pipeline runs up to the translator and writes nothing.

Every layer takes its kinds from one registry (`kube_manager/registry.py`, the product's by
default): a kind registered without a lister, trimmer, validator, handler or translator source
fails here, at start-up, with `KindError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kube_manager.service.dispatcher import EventDispatcher
from kube_manager.records.db import Database
from kube_manager import handlers  # noqa: F401  (registers each product kind's WATCH hook)
from kube_manager.kube.kinds import KindRegistry, watched_kinds
from kube_manager.reconciler.core import ConfigApiCalls, Observer, Reconciler
from kube_manager.reconciler.ownership import OwnershipMarks
from kube_manager.registry import KINDS, Kinds
from kube_manager.settings import ReconcilerSettings
from kube_manager.status.book import StatusBook
from kube_manager.translator import ClusterTranslator
from kube_manager.translator.published import DesiredState


@dataclass
class Pipeline:
    db: Database
    kinds: KindRegistry
    translator: ClusterTranslator
    cache: EventDispatcher  # the event dispatcher: each kind's handler, the flush, the change report
    status: StatusBook  # the records' status parts, fed by the change report and the reconciler
    reconciler: Optional[Reconciler] = None  # the current term's, if any

    @property
    def desired(self) -> DesiredState:
        """What the translator publishes: the reconciler's one input besides the config API."""
        return self.translator.published()

    def connect(self, client: ConfigApiCalls, settings: Optional[ReconcilerSettings] = None,
                observer: Optional[Observer] = None) -> Reconciler:
        """A reconciler writing through `client`: told the translator's changes from now on,
        pushing its progress to the status book. It starts idle (`start`, `resync`)."""
        self.disconnect()
        translator = self.translator
        reconciler = Reconciler(client, self.db, self.desired, OwnershipMarks(translator.owner, translator.cluster_name),
                                self.status, settings, observer)
        self.cache.sink = self.reconciler = reconciler
        return reconciler

    def disconnect(self) -> None:
        """The term is over: the translator's changes go nowhere, the reconciler's work is dropped."""
        self.cache.sink = None
        if self.reconciler is not None:
            self.reconciler.abandon()
            self.reconciler = None


def build_pipeline(cluster_name: str = "k8s", owner: str = "k8s", *, kinds: Kinds = KINDS,
                   db: Optional[Database] = None, semantics: str = "kubernetes") -> Pipeline:
    """The daemon's pipeline for one cluster, without a reconciler yet; KindError for a kind
    registered incompletely."""
    watched = watched_kinds(kinds)
    db = db if db is not None else Database()
    translator = ClusterTranslator(cluster_name, owner, semantics=semantics, kinds=kinds)
    status = StatusBook(db, translator, kinds)
    return Pipeline(db, watched, translator, EventDispatcher(db, translator, kinds=watched, status=status), status)
