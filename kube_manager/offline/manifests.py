"""Reading the manifests of the registry's kinds (`kube_manager/registry.py`: Namespace, Pod,
NetworkPolicy, ClusterNetworkPolicy) for the offline commands (SPEC 8).

Files, directories (recursively, *.yaml / *.yml / *.json, in sorted order), standard input (`-`),
multi-document YAML and `List` kinds are accepted. Other kinds are skipped, and an object given twice
is used as last given, each with one line on standard error (SPEC 8); so is an empty file, or a
directory with no manifest file in it (the command goes on with what it read: exit status 0). Defaults follow the API server:
a manifest without `metadata.namespace` is in `default`.

A cluster dump is tens of megabytes of JSON, and PyYAML's pure-Python loader takes minutes over it,
so JSON is read by a JSON parser (`vnc_client.jsoncodec`, the one the daemon's watches use: orjson's
speed, the stdlib's values) and YAML by libyaml's loader when PyYAML was built with it. Input that cannot be read (missing, binary, not UTF-8, malformed) raises ManifestError
with a one-line message naming the file, never a parser's multi-line report or traceback.
"""
from __future__ import annotations

import codecs
import difflib
import os
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Tuple

from kube_manager.plumbing.gcpolicy import collector_paused
from kube_manager.registry import KINDS, Kinds
from vnc_client import jsoncodec

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_NAME = "<stdin>"
_LOOKS_LIKE_JSON = re.compile(rb"\s*[{\[]")  # ASCII whitespace, then `{` or `[`

if TYPE_CHECKING:
    import yaml


def safe_loader() -> Any:
    """libyaml's safe loader when PyYAML was built with it; PyYAML is imported only for YAML."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(Exception):
    """A manifest file that cannot be read or parsed; the message (one line) names the file."""


@dataclass
class Manifests:
    """The objects found in a set of manifest files, by kind (each kind of `kinds`, the registry
    the translator reads too: the input of `translate()`), each kind's in file order.

    What is not read (a document that is not an object, another kind, a misspelt one) is skipped,
    and an object given again (same kind, namespace and name) replaces the earlier copy in place:
    each is one line in `notes` (SPEC 8), for the command to report."""

    objects: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    kinds: Kinds = field(default=KINDS, repr=False, compare=False)
    # (kind, namespace, name) -> (position in its list, where it was given: see _where)
    _seen: Dict[Tuple[str, str, str], Tuple[int, str, int]] = field(default_factory=dict, repr=False, compare=False)
    _namespaced: Dict[str, bool] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Every kind read has its list (empty when none is given); no other kind has one."""
        unknown = set(self.objects).difference(self.kinds.names())
        if unknown:
            raise ValueError(f"manifests of kinds not read: {', '.join(sorted(unknown))}")
        self.objects = {kind: self.objects.get(kind, []) for kind in self.kinds.names()}
        self._namespaced = {entry.kind: entry.resource.namespaced for entry in self.kinds}

    def handed_over(self) -> Dict[str, Iterator[Dict[str, Any]]]:
        """The objects by kind, in order, each let go of as it is handed out: a caller that keeps
        only what it reads of each (the translator) then frees the rest of a large dump while it
        goes, and the memory it allocates next reuses those pages instead of new ones. The
        manifests are empty afterwards."""
        return {kind: _handed_over(objects) for kind, objects in self.objects.items()}

    def add(self, obj: Any, where: str = "a document") -> None:
        self._add(obj, where, 0)

    def _add(self, obj: Any, where: str, number: int) -> None:
        """`add` of the document at `_where(where, number)`, a text made only for a note."""
        if obj is None:
            return  # an empty YAML document (a stray `---`): nothing was meant
        if not isinstance(obj, dict):
            self.notes.append(f"{_where(where, number)}: not an object but {_json_type(obj)}; skipped")
            return
        kind = obj.get("kind")
        if kind == "List":
            self._add_items(obj.get("items") or [], _where(where, number))
            return
        target = self.objects.get(kind) if isinstance(kind, str) else None
        if target is None or not isinstance(kind, str):
            self.notes.append(f"{_where(where, number)}: {_kind_problem(kind, self.kinds.names())}; skipped")
            return
        metadata = obj.setdefault("metadata", {}) or {}
        obj["metadata"] = metadata
        namespaced = self._namespaced[kind]
        if isinstance(metadata, dict) and namespaced and not metadata.get("namespace"):
            metadata["namespace"] = "default"
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(name, str):  # no identity to compare: the translator rejects it by itself
            target.append(obj)
            return
        namespace = metadata.get("namespace") if namespaced else ""
        self._place(target, obj, (kind, namespace if isinstance(namespace, str) else "", name), where, number)

    def _add_items(self, items: Any, where: str) -> None:
        """The items of a `List`: a cluster dump's tens of thousands of objects. The usual item (a
        plain object of a kind read, with a string name, and a string namespace if namespaced) is
        placed here, in as few steps as a bulk load can afford; any other goes through `_add`."""
        objects, namespaced_kinds, seen = self.objects, self._namespaced, self._seen
        for number, item in enumerate(items, 1):
            if item.__class__ is dict:
                kind: Any = item.get("kind")
                metadata = item.get("metadata")
                target = objects.get(kind) if kind.__class__ is str else None
                if target is not None and metadata.__class__ is dict and metadata:
                    name = metadata.get("name")
                    if name.__class__ is str:
                        if namespaced_kinds[kind]:
                            namespace = metadata.get("namespace")
                            if not namespace:
                                namespace = metadata["namespace"] = "default"
                            elif namespace.__class__ is not str:
                                self._add(item, where, number)
                                continue
                        else:
                            namespace = ""
                        key = (kind, namespace, name)
                        if key not in seen:
                            seen[key] = (len(target), where, number)
                            target.append(item)
                        else:
                            self._place(target, item, key, where, number)
                        continue
            self._add(item, where, number)

    def _place(self, target: List[Dict[str, Any]], obj: Dict[str, Any], key: Tuple[str, str, str],
               where: str, number: int) -> None:
        """Append `obj`, or put it in the place of an earlier copy of the same object."""
        earlier = self._seen.get(key)
        if earlier is None:
            self._seen[key] = (len(target), where, number)
            target.append(obj)
            return
        position, first, first_number = earlier
        target[position] = obj
        kind, namespace, name = key
        shown = f"{namespace}/{name}" if namespace else name
        self.notes.append(f"{_where(where, number)}: {kind} {shown} given again (also at "
                          f"{_where(first, first_number)}); the last copy is used")


def _where(where: str, number: int) -> str:
    """Where a document was given: `where` itself, or its item `number` when it is a `List`'s (the
    text of each item's place is made only for a note, not for each of a dump's objects)."""
    return f"{where}, item {number}" if number else where


def _handed_over(objects: List[Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
    objects.reverse()
    while objects:
        yield objects.pop()


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    return f"the value {value!r}"[:60]


def _kind_problem(kind: Any, read: Tuple[str, ...]) -> str:
    if kind is None:
        return "no kind"
    if not isinstance(kind, str):
        return f"kind is not a string ({_json_type(kind)})"
    close = [known for known in read if known.lower() == kind.lower()] or difflib.get_close_matches(kind, read, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"kind {kind!r} is not read here{hint}: only {', '.join(read)} are"


def warn_on_stderr(line: str) -> None:
    """The offline commands' report of a skipped or repeated object: one line on stderr."""
    print(f"warning: {line}", file=sys.stderr)


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


def _yaml_problem(exc: "yaml.YAMLError") -> str:
    """PyYAML's reports span lines and name "<unicode string>"; keep the problem and its place."""
    import yaml

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
    body = data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data
    if _LOOKS_LIKE_JSON.match(body):  # a cluster dump: parsed from the bytes, no text made of them
        try:
            return [jsoncodec.loads(body)]
        except (ValueError, RecursionError):
            pass  # not UTF-8, or perhaps YAML: read again below, which says which
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ManifestError(f"{name}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    json_problem = ""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [jsoncodec.loads(body)]
        except (ValueError, RecursionError) as exc:
            json_problem = _one_line(str(exc)) or type(exc).__name__
        if name.endswith(".json"):
            raise ManifestError(f"{name}: not valid JSON: {json_problem}")
    import yaml

    try:
        return list(yaml.load_all(text, Loader=safe_loader()))
    except yaml.YAMLError as exc:
        if json_problem:
            raise ManifestError(f"{name}: not valid JSON: {json_problem}") from None
        raise ManifestError(f"{name}: not valid YAML: {_yaml_problem(exc)}") from None
    except RecursionError:
        raise ManifestError(f"{name}: not valid YAML: nested too deeply") from None


def load_manifests(paths: Iterable[str], warn: Callable[[str], None] = warn_on_stderr,
                   kinds: Kinds = KINDS) -> Manifests:
    """Load every object of `kinds` from `paths` (`-` is standard input); ManifestError names the bad
    file. Each of the manifests' `notes` (what was skipped or given again) is passed to `warn`."""
    manifests = Manifests(kinds=kinds)
    for given in paths:
        files = list(_files([given]))
        if not files:  # a directory, and nothing in it reads as a manifest: a wrong path, likely
            manifests.notes.append(f"{given}: no manifest file ({', '.join('*' + s for s in MANIFEST_SUFFIXES)}) "
                                   f"in this directory; nothing read from it")
        for path in files:
            data = _read(path)
            with collector_paused():
                documents = parse_documents(data, _display(path))
            del data
            if all(document is None for document in documents):
                manifests.notes.append(f"{_display(path)}: empty (no document in it); nothing read from it")
            for number, document in enumerate(documents, 1):
                manifests.add(document, f"{_display(path)}: document {number}")
    for note in manifests.notes:
        warn(note)
    return manifests
