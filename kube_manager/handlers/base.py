"""What every kind's handler shares: the records, the translator it feeds, the error bookkeeping.

A handler (one per kind, see `kube_manager/kube/kinds.py`) turns the kind's watch events into the
`Database` records the introspect pages show and into translator input; after each translator
flush it brings its records up to date from the change report. `db.errors` is the translator's
list of rejections, read again (once per flush, by the dispatcher) only when a handler says some
error may have come or gone (`Context.errors_stale`), so that a quiet large cluster costs nothing.

Handlers read objects defensively: a malformed field is shown as empty (the translator rejects the
object with a reason), so that one bad object never stops the events after it (SPEC 7).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Mapping, Optional, Protocol, Set

from kube_manager.records.db import Database, Key, ObjKey, PolicyRecord
from kube_manager.kube.kinds import StateSource
from kube_manager.translator import Changes, ClusterTranslator
from kube_manager.translator.validation import metadata_problem

_META_KEYS = ("name", "namespace", "uid", "labels", "resourceVersion")
POLICY_META_KEYS = _META_KEYS + ("generation",)  # a policy's: Events and conditions cite it (SPEC 15)


class PolicyObserver(Protocol):
    """Told where a policy record's state or errors are set (kube_manager/status: Events and
    conditions in Kubernetes); status flows downstream from the records."""

    def observe(self, record: PolicyRecord, settled: bool) -> None:
        """`settled`: the state is the reconciler's word (pushed), not left from before a flush."""

    def forget(self, record: PolicyRecord) -> None: ...


@dataclass
class Context:
    """Shared by the handlers of one pipeline."""

    db: Database
    translator: ClusterTranslator
    errors_stale: bool = False  # some error may have come or gone since the last read
    # Keys rejected as of the last read of the errors, by kind ("Pod": {(namespace, name)}).
    rejected: Dict[str, Set[Key]] = field(default_factory=dict)
    observer: Optional[PolicyObserver] = None

    def observe(self, record: PolicyRecord, settled: bool) -> None:
        """A policy record's state or errors were just set: the one place the status hears of it."""
        if self.observer is not None:
            self.observer.observe(record, settled)

    def forget(self, record: PolicyRecord) -> None:
        if self.observer is not None:
            self.observer.forget(record)

    def read_errors(self) -> None:
        """Read the translator's errors again if some may have changed."""
        if not self.errors_stale:
            return
        self.errors_stale = False
        self.db.errors = errors = self.translator.errors()
        self.rejected = {}
        for error in errors:
            self.rejected.setdefault(error["kind"], set()).add((error["namespace"], error["name"]))


def mapping(value: Any) -> Dict[str, Any]:
    """`value` when it is an object, else `{}`: records and trimmers read what they can of a
    malformed object, whose rejection the translator reports."""
    return value if isinstance(value, dict) else {}


def metadata(obj: Mapping[str, Any]) -> Dict[str, Any]:
    return mapping(mapping(obj).get("metadata"))


def namespaced_key(obj: Mapping[str, Any]) -> Key:
    """(namespace, name) of a namespaced object, as strings whatever the manifest held."""
    meta = metadata(obj)
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def trim_metadata(obj: Mapping[str, Any], keys: Iterable[str] = _META_KEYS) -> Dict[str, Any]:
    """The metadata every trimmer keeps: identity, labels and version (and what `keys` adds)."""
    meta = metadata(obj)
    return {key: meta[key] for key in keys if meta.get(key) is not None}


def trim_annotation(obj: Mapping[str, Any], trimmed: Dict[str, Any], name: str) -> Dict[str, Any]:
    """`trimmed` keeping annotation `name` of `obj`, if it has one (the others would wake everyone)."""
    annotations = mapping(metadata(obj).get("annotations"))
    if name in annotations:
        trimmed["metadata"]["annotations"] = {name: annotations[name]}
    return trimmed


def generation_of(obj: Mapping[str, Any]) -> int:
    generation = metadata(obj).get("generation")
    return generation if isinstance(generation, int) and not isinstance(generation, bool) else 0


def validate_namespaced(obj: Mapping[str, Any]) -> Optional[str]:
    """A namespaced object's identity: a namespace (default `default`) and a name the API server
    would accept."""
    meta = metadata(obj)
    return metadata_problem(meta.get("namespace") or "default", meta.get("name"))


class Handler:
    """The part of every `KindHandler` that is the same for all kinds."""

    kind = ""  # the Kubernetes kind, as the translator's rejections name it

    def __init__(self, context: Context) -> None:
        self.context = context
        self.db = context.db
        self.translator = context.translator

    def key(self, obj: Mapping[str, Any]) -> Key:
        return namespaced_key(obj)

    def failed(self, obj: Dict[str, Any], exc: Exception) -> None:
        """Rejected with the exception (logged once, with its name), shown on the pages."""
        self.translator.reject(self.kind, *self.key(obj), exc)
        self.context.errors_stale = True

    def flushed(self, changes: Changes) -> None:
        """Nothing to refresh by default."""

    def states_changed(self, source: StateSource, keys: Optional[Iterable[ObjKey]]) -> None:
        """No record with a sync state by default."""

