"""Reading Namespace, Pod and NetworkPolicy manifests from files for the offline commands.

Files, directories (recursively, *.yaml / *.yml / *.json, in sorted order), multi-document YAML and
`List` kinds are accepted. Other kinds are skipped. Defaults follow the API server: a manifest
without `metadata.namespace` is in `default`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List

import yaml

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class ManifestError(Exception):
    """A manifest file that cannot be read or parsed; the message names the file."""


@dataclass
class Manifests:
    """The objects found in a set of manifest files, in file order."""

    namespaces: List[Dict[str, Any]] = field(default_factory=list)
    pods: List[Dict[str, Any]] = field(default_factory=list)
    network_policies: List[Dict[str, Any]] = field(default_factory=list)

    def add(self, obj: Dict[str, Any]) -> None:
        kind = obj.get("kind")
        if kind == "List":
            for item in obj.get("items") or []:
                if isinstance(item, dict):
                    self.add(item)
            return
        target = {
            "Namespace": self.namespaces,
            "Pod": self.pods,
            "NetworkPolicy": self.network_policies,
        }.get(kind)
        if target is None:
            return
        metadata = obj.setdefault("metadata", {}) or {}
        obj["metadata"] = metadata
        if isinstance(metadata, dict) and kind != "Namespace" and not metadata.get("namespace"):
            metadata["namespace"] = "default"
        target.append(obj)


def _files(paths: Iterable[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs.sort()
                for name in sorted(names):
                    if name.endswith(MANIFEST_SUFFIXES):
                        yield os.path.join(root, name)
        else:
            yield path


def load_manifests(paths: Iterable[str]) -> Manifests:
    """Load every supported object from `paths`; raises ManifestError naming the bad file."""
    manifests = Manifests()
    for path in _files(paths):
        try:
            with open(path, encoding="utf-8") as stream:
                documents = list(yaml.safe_load_all(stream))
        except OSError as exc:
            raise ManifestError(f"{path}: {exc.strerror or exc}") from exc
        except yaml.YAMLError as exc:
            raise ManifestError(f"{path}: not valid YAML/JSON: {exc}") from exc
        for document in documents:
            if isinstance(document, dict):
                manifests.add(document)
    return manifests
