"""The daemon's introspect pages and `/explain` callable, each made when first used.

The pages (`create_app`: jinja2, the list, pod, staged and explain pages) are made at the first
request, the explainer (`db_explainer`: the Kubernetes model, the rule index) at the first question
or when the daemon prepares it once converged; the staged runs read the records' manifests through
`db_objects`. None of them is needed before the daemon's first list, and a restart with nothing to
ask them (`--once`) never loads their modules (docs/operations.md, "A start that costs what it
must"). The server itself still binds at start, so that a taken port stops the start at once.

What is made late is made as early would have: the pages hold no state of their own, and an
explainer made after changes builds its index whole from the records at its first use, as one
made at start does (it hears the translator's change reports from then on).
"""
from __future__ import annotations

from typing import Any, Callable, Generic, Iterable, List, Mapping, Optional, TypeVar

import gevent.lock

from kube_manager.records.db import Database
from kube_manager.translator import Changes

T = TypeVar("T")


class _MadeOnce(Generic[T]):
    """`make()` at the first `get()`; a caller arriving while it runs (were it to yield to the hub)
    waits for that one."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._made: Optional[T] = None
        self._lock = gevent.lock.Semaphore()

    def get(self) -> T:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    self._made = self._make()
        return self._made


class DeferredApp:
    """A WSGI callable: `create_app(db, **options)` (introspect/app.py), made at the first request."""

    def __init__(self, db: Database, **options: Any) -> None:
        self._app = _MadeOnce(lambda: _create_app(db, options))

    def __call__(self, environ: Mapping[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        return self._app.get()(environ, start_response)


def _create_app(db: Database, options: Mapping[str, Any]) -> Any:
    from introspect.app import create_app
    return create_app(db, **options)


class DeferredExplainer:
    """`db_explainer(db, cluster_name, semantics, change_observers=...)` (introspect/explain.py),
    made at the first question or `prepare`."""

    def __init__(self, db: Database, cluster_name: str, semantics: str,
                 change_observers: List[Callable[[Changes], None]]) -> None:
        self._explainer = _MadeOnce(lambda: _db_explainer(db, cluster_name, semantics, change_observers))

    def __call__(self, source: str, destination: str, port: str, protocol: str) -> Mapping[str, Any]:
        return self._explainer.get()(source, destination, port, protocol)

    def prepare(self) -> None:
        """The index built ahead of the first question (`LiveExplainer.prepare`)."""
        self._explainer.get().prepare()


def _db_explainer(db: Database, cluster_name: str, semantics: str,
                  change_observers: List[Callable[[Changes], None]]) -> Any:
    from introspect.explain import db_explainer
    return db_explainer(db, cluster_name, semantics, change_observers=change_observers)


def db_objects(db: Database) -> Mapping[str, Any]:
    """The records as manifests, by kind (`db_manifests`), for a staged run."""
    from introspect.explain import db_manifests
    return db_manifests(db).objects
