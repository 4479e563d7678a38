"""What every kind's handler shares: the records it writes and the translator it feeds.

A handler (one per kind, see `kube_manager/kube/kinds.py`) turns the kind's watch events into the
`Database` records of what Kubernetes said, which it alone writes, and into translator input: the
base class gives every event to the translator's source of its kind. What
became of them (objects, errors, states) is the status book's (`kube_manager/status/`), fed
downstream by the translator's change report and the reconciler's progress: a handler reads
nothing back after a flush and is never called by the reconciler.

Handlers read objects defensively: a malformed field is shown as empty (the translator rejects the
object with a reason), so that one bad object never stops the events after it (SPEC 7).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from kube_manager.records.db import Database, Key
from kube_manager.translator import ClusterTranslator
from kube_manager.translator.validation import metadata_problem

_META_KEYS = ("name", "namespace", "uid", "labels", "resourceVersion")


@dataclass
class Context:
    """Shared by the handlers of one pipeline."""

    db: Database
    translator: ClusterTranslator


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


def generation_of(obj: Mapping[str, Any]) -> Optional[int]:
    """metadata.generation, if the server gave one."""
    generation = metadata(obj).get("generation")
    return generation if isinstance(generation, int) and not isinstance(generation, bool) else None


def trim_metadata(obj: Mapping[str, Any], *extra: str) -> Dict[str, Any]:
    """The metadata every trimmer keeps: identity, labels and version; and the `extra` keys."""
    meta = metadata(obj)
    return {key: meta[key] for key in _META_KEYS + extra if meta.get(key) is not None}


def trim_annotation(obj: Mapping[str, Any], trimmed: Dict[str, Any], *names: str) -> Dict[str, Any]:
    """`trimmed` keeping the annotations `names` of `obj` it has (the others would wake everyone)."""
    annotations = mapping(metadata(obj).get("annotations"))
    kept = {name: annotations[name] for name in names if name in annotations}
    if kept:
        trimmed["metadata"]["annotations"] = kept
    return trimmed


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

    def upsert(self, obj: Dict[str, Any]) -> None:
        """The object goes to the translator's source of the kind; a kind with records writes
        them first."""
        self.translator.upsert(self.kind, obj)

    def delete(self, obj: Dict[str, Any]) -> None:
        self.translator.delete(self.kind, *self.key(obj))

    def failed(self, obj: Dict[str, Any], exc: Exception) -> None:
        """Rejected with the exception (logged once, with its name), shown on the pages."""
        self.translator.reject(self.kind, *self.key(obj), exc)

