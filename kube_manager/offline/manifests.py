"""Reading Namespace, Pod, NetworkPolicy and ClusterNetworkPolicy manifests for the offline commands (SPEC 8).

Files, directories (recursively, *.yaml / *.yml / *.json, in sorted order), standard input (`-`),
multi-document YAML and `List` kinds are accepted. Other kinds are skipped. Defaults follow the API
server: a manifest without `metadata.namespace` is in `default`.

A cluster dump is tens of megabytes of JSON, and PyYAML's pure-Python loader takes minutes over it,
so JSON is read by a JSON parser (orjson when installed) and YAML by libyaml's loader when PyYAML was
built with it. Input that cannot be read (missing, binary, not UTF-8, malformed) raises ManifestError
with a one-line message naming the file, never a parser's multi-line report or traceback.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List

import yaml

from kube_manager.plumbing.gcpolicy import collector_paused

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib parser is the fallback
    orjson = None  # type: ignore[assignment]  # mypy types an optional import as always there

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_NAME = "<stdin>"
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_json_loads: Callable[[str], Any] = orjson.loads if orjson is not None else json.loads


class ManifestError(Exception):
    """A manifest file that cannot be read or parsed; the message (one line) names the file."""


@dataclass
class Manifests:
    """The objects found in a set of manifest files, in file order."""

    namespaces: List[Dict[str, Any]] = field(default_factory=list)
    pods: List[Dict[str, Any]] = field(default_factory=list)
    network_policies: List[Dict[str, Any]] = field(default_factory=list)
    cluster_network_policies: List[Dict[str, Any]] = field(default_factory=list)  # cluster-scoped

    def add(self, obj: Dict[str, Any]) -> None:
        kind = obj.get("kind")
        if not isinstance(kind, str):
            return  # not a kind we read (and a list or mapping would not even be a dict key)
        if kind == "List":
            for item in obj.get("items") or []:
                if isinstance(item, dict):
                    self.add(item)
            return
        target = {
            "Namespace": self.namespaces,
            "Pod": self.pods,
            "NetworkPolicy": self.network_policies,
            "ClusterNetworkPolicy": self.cluster_network_policies,
        }.get(kind)
        if target is None:
            return
        metadata = obj.setdefault("metadata", {}) or {}
        obj["metadata"] = metadata
        if isinstance(metadata, dict) and kind in ("Pod", "NetworkPolicy") and not metadata.get("namespace"):
            metadata["namespace"] = "default"
        target.append(obj)


def _files(paths: Iterable[str]) -> Iterator[str]:
    for path in paths:
        if path != STDIN and os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs.sort()
                for name in sorted(names):
                    if name.endswith(MANIFEST_SUFFIXES):
                        yield os.path.join(root, name)
        else:
            yield path


def _read(path: str) -> bytes:
    try:
        if path == STDIN:
            return sys.stdin.buffer.read()
        with open(path, "rb") as stream:
            return stream.read()
    except OSError as exc:
        raise ManifestError(f"{_display(path)}: {exc.strerror or exc}") from exc


def _display(path: str) -> str:
    return STDIN_NAME if path == STDIN else path


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's reports span lines and name "<unicode string>"; keep the problem and its place."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        context = f" ({exc.context})" if exc.context else ""
        return _one_line(f"{exc.problem}{where}{context}")
    if isinstance(exc, yaml.reader.ReaderError):
        character = exc.character if isinstance(exc.character, int) else ord(exc.character or "\0")
        return _one_line(f"unacceptable character #x{character:04x}: {exc.reason} at offset {exc.position}")
    return _one_line(str(exc))


def parse_documents(data: bytes, name: str) -> List[Any]:
    """The documents of one file's bytes: JSON when it looks like JSON, else (multi-document) YAML.

    A file starting with `{` or `[` that is not valid JSON may still be YAML (flow style), so it
    is tried as YAML unless its name says `.json`; if both fail, the JSON problem is reported.
    """
    if b"\0" in data:
        raise ManifestError(f"{name}: binary data, not YAML or JSON")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{name}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    json_problem = ""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [_json_loads(text)]
        except (ValueError, RecursionError) as exc:
            json_problem = _one_line(str(exc)) or type(exc).__name__
        if name.endswith(".json"):
            raise ManifestError(f"{name}: not valid JSON: {json_problem}")
    try:
        return list(yaml.load_all(text, Loader=SAFE_LOADER))
    except yaml.YAMLError as exc:
        if json_problem:
            raise ManifestError(f"{name}: not valid JSON: {json_problem}") from None
        raise ManifestError(f"{name}: not valid YAML: {_yaml_problem(exc)}") from None
    except RecursionError:
        raise ManifestError(f"{name}: not valid YAML: nested too deeply") from None


def load_manifests(paths: Iterable[str]) -> Manifests:
    """Load every supported object from `paths` (`-` is standard input); ManifestError names the bad file."""
    manifests = Manifests()
    for path in _files(paths):
        data = _read(path)
        with collector_paused():
            documents = parse_documents(data, _display(path))
        del data
        for document in documents:
            if isinstance(document, dict):
                manifests.add(document)
    return manifests
