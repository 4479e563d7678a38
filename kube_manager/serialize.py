"""JSON and YAML text of the offline commands' results, through the fast serialisers.

`translate -o json|yaml` promises byte-identical output for the same input (SPEC 8), and that output
is diffed and kept under version control, so the bytes must not depend on which serialiser is
installed. They are pinned to what the standard library's `json.dumps(indent=2)` and PyYAML's
pure-Python dumper print; the fast paths (orjson, libyaml's emitter) print exactly that for the
data they are used on, and the rare data they would print differently goes the slow way:

- orjson writes non-ASCII and DEL as UTF-8 where `json.dumps` escapes them as `\\uXXXX`; those
  characters can only sit inside strings, so they are escaped afterwards the same way;
- libyaml folds long double-quoted scalars at other places than PyYAML when they hold escapes, so
  it is used only when every string is printable ASCII (no escapes at all) and no key is empty.
"""
from __future__ import annotations

import json
import re
from typing import Any

import yaml

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib is the fallback
    orjson = None

_NOT_PRINTABLE_ASCII = re.compile(r"[^\x00-\x7e]")
# In orjson's compact output, any escape but \" and \\ means a string holds a control character.
_CONTROL_ESCAPE = re.compile(rb"\\[^\"\\]")


def _json_escape(match: "re.Match[str]") -> str:
    return json.dumps(match.group())[1:-1]


def json_text(data: Any) -> str:
    """`json.dumps(data, indent=2) + "\\n"`, byte for byte, at orjson's speed when installed."""
    if orjson is not None:
        try:
            text = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
        except (orjson.JSONEncodeError, UnicodeDecodeError):  # lone surrogates, integers over 64 bits
            pass
        else:
            if not text.isascii() or "\x7f" in text:
                text = _NOT_PRINTABLE_ASCII.sub(_json_escape, text)
            return text + "\n"
    return json.dumps(data, indent=2) + "\n"


class _PlainDumper(yaml.SafeDumper):
    """Bodies share sub-objects; YAML must repeat them rather than print anchors and aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


class _FastPlainDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """_PlainDumper with libyaml's emitter."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _plain_strings(data: Any) -> bool:
    """Whether every string in `data` is printable ASCII (where libyaml and PyYAML agree)."""
    if orjson is None:
        return False
    try:
        raw = orjson.dumps(data)
    except orjson.JSONEncodeError:
        return False
    return (raw.isascii() and b"\x7f" not in raw and b'"":' not in raw  # PyYAML prints '' keys as "? ''"
            and _CONTROL_ESCAPE.search(raw) is None)


def yaml_text(data: Any) -> str:
    """PyYAML's block-style dump of `data` without aliases, keys in their order; libyaml when it agrees."""
    dumper = _FastPlainDumper if _plain_strings(data) else _PlainDumper
    return yaml.dump(data, Dumper=dumper, sort_keys=False, default_flow_style=False)
