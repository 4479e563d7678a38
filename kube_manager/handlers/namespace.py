"""Namespaces: their records (name, uid, labels) and the translator's namespace source."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from kube_manager.records.db import Key, NamespaceRecord
from kube_manager.kube.kinds import Kind, collection_lister
from kube_manager.registry import KINDS, WATCH, NAMESPACES
from kube_manager.translator.match_logging import ANNOTATION as LOGGING_ANNOTATION
from kube_manager.translator.validation import namespace_name_problem

from .base import Handler, mapping, metadata, trim_annotation, trim_metadata


def trim_namespace(obj: Dict[str, Any]) -> Dict[str, Any]:
    """Identity and labels, and the logging of its policies' matches (SPEC 15)."""
    return trim_annotation(obj, {"apiVersion": NAMESPACES.api_version, "kind": NAMESPACES.kind,
                                 "metadata": trim_metadata(obj)}, LOGGING_ANNOTATION)


def validate_namespace(obj: Mapping[str, Any]) -> Optional[str]:
    problem = namespace_name_problem(metadata(obj).get("name"))
    return f"metadata.name: {problem}" if problem else None


class NamespaceHandler(Handler):
    kind = NAMESPACES.kind

    def key(self, obj: Mapping[str, Any]) -> Key:
        return "", str(metadata(obj).get("name") or "")

    def upsert(self, obj: Dict[str, Any]) -> None:
        meta = metadata(obj)
        name = self.key(obj)[1]
        self.db.namespaces[name] = NamespaceRecord(str(meta.get("uid") or ""), name, dict(mapping(meta.get("labels"))))
        super().upsert(obj)

    def delete(self, obj: Dict[str, Any]) -> None:
        name = self.key(obj)[1]
        self.db.namespaces.pop(name, None)
        super().delete(obj)


KIND = Kind(NAMESPACES, collection_lister(NAMESPACES), trim_namespace, validate_namespace,
            NamespaceHandler)
KINDS.register(NAMESPACES.kind, WATCH, KIND)
