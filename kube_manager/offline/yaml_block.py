"""PyYAML's block-style output for the common case, written directly (`translate -o yaml`).

libyaml emits fast, but PyYAML builds a node per value in Python first, which was most of the time
of `-o yaml` on a large cluster (docs/operations.md, "Measurements behind the code"). The translation is JSON data whose strings are names, tags and
numbers; for such data PyYAML's output is simple enough to write here, byte for byte:

- block mappings indented by 2, sequences under a mapping key not indented ("indentless"), a
  mapping or sequence inside a sequence item starting on the item's line, `{}` and `[]` for empty
  ones;
- a string printed plain when PyYAML would (its own scalar analysis and implicit-tag resolution,
  computed once per distinct string), else single-quoted;
- `null`, `true`, `false` and integers as PyYAML represents them.

Only strings of printable ASCII without spaces are accepted (so no line is ever folded and no
escape is needed), keys only when they are such non-empty strings under 128 characters (simple
keys), and only dicts, lists, strings, integers, booleans and None. Anything else raises
Unsupported, and the caller dumps that part with PyYAML.
"""
from __future__ import annotations

import io
import re
from typing import Any, Dict, List

import yaml

_PRINTABLE_NO_SPACE = re.compile(r"[!-~]+")
_STR_TAG = "tag:yaml.org,2002:str"
_MAX_SIMPLE_KEY = 128  # PyYAML writes longer keys as "? key"


class Unsupported(Exception):
    """The data holds something this writer does not print as PyYAML would."""


class BlockWriter:
    """Writes data as `yaml.dump(..., default_flow_style=False, sort_keys=False)` does."""

    def __init__(self) -> None:
        self._emitter = yaml.emitter.Emitter(io.StringIO())  # for its scalar analysis only
        self._resolver = yaml.resolver.Resolver()
        self._scalars: Dict[str, str] = {}

    def _string(self, value: str) -> str:
        text = self._scalars.get(value)
        if text is None:
            if value and not _PRINTABLE_NO_SPACE.fullmatch(value):
                raise Unsupported(value)
            analysis = self._emitter.analyze_scalar(value)
            implicit = self._resolver.resolve(yaml.ScalarNode, value, (True, False)) == _STR_TAG
            if implicit and analysis.allow_block_plain:
                text = value
            elif analysis.allow_single_quoted:
                text = "'" + value.replace("'", "''") + "'"
            else:
                raise Unsupported(value)
            self._scalars[value] = text
        return text

    def _scalar(self, value: Any) -> str:
        kind = type(value)
        if kind is str:
            return self._string(value)
        if kind is bool:
            return "true" if value else "false"
        if kind is int:
            return str(value)
        if value is None:
            return "null"
        raise Unsupported(type(value).__name__)

    def _key(self, key: Any) -> str:
        if type(key) is not str or not 0 < len(key) < _MAX_SIMPLE_KEY:
            raise Unsupported(repr(key))
        return self._string(key)

    def _after_key(self, value: Any, indent: int, out: List[str]) -> None:
        """`value` of a mapping key written at column `indent`, the "key:" already written."""
        kind = type(value)
        if kind is dict:
            if value:
                out.append("\n")
                self._mapping(value, indent + 2, False, out)
            else:
                out.append(" {}\n")
        elif kind is list:
            if value:
                out.append("\n")
                self._sequence(value, indent, False, out)  # indentless under a key
            else:
                out.append(" []\n")
        else:
            out.append(" " + self._scalar(value) + "\n")

    def _mapping(self, mapping: Dict[Any, Any], indent: int, inline: bool, out: List[str]) -> None:
        """A non-empty mapping at column `indent`; `inline`: its first key follows a "- " already written."""
        pad = " " * indent
        for key, value in mapping.items():
            out.append(self._key(key) + ":" if inline else pad + self._key(key) + ":")
            inline = False
            self._after_key(value, indent, out)

    def _sequence(self, items: List[Any], indent: int, inline: bool, out: List[str]) -> None:
        """A non-empty sequence with its dashes at column `indent`."""
        pad = " " * indent
        for item in items:
            out.append("- " if inline else pad + "- ")
            inline = False
            kind = type(item)
            if kind is dict:
                if item:
                    self._mapping(item, indent + 2, True, out)
                else:
                    out.append("{}\n")
            elif kind is list:
                if item:
                    self._sequence(item, indent + 2, True, out)
                else:
                    out.append("[]\n")
            else:
                out.append(self._scalar(item) + "\n")

    def document(self, data: Any) -> bytes:
        """The whole document for a non-empty mapping or sequence at the top level."""
        out: List[str] = []
        if type(data) is dict and data:
            self._mapping(data, 0, False, out)
        elif type(data) is list and data:
            self._sequence(data, 0, False, out)
        else:
            raise Unsupported("top level")
        return "".join(out).encode("ascii")
