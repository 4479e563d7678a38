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
from typing import TYPE_CHECKING, Any, Iterator, List, Union

if TYPE_CHECKING:
    from kube_manager.offline.yaml_block import BlockWriter

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib is the fallback
    orjson = None  # type: ignore[assignment]  # mypy types an optional import as always there

_NOT_PRINTABLE_ASCII = re.compile(rb"[^\x00-\x7e]+")
# In orjson's compact output, any escape but \" and \\ means a string holds a control character.
_CONTROL_ESCAPE = re.compile(rb"\\[^\"\\]")


def _json_escape(match: "re.Match[bytes]") -> bytes:
    return json.dumps(match.group().decode())[1:-1].encode()


def json_bytes(data: Any) -> bytes:
    """`json.dumps(data, indent=2) + "\\n"`, byte for byte (ASCII), at orjson's speed when installed."""
    return b"".join(json_chunks(data))


Chunk = Union[bytes, memoryview]  # a part of a text: a view into a larger text, to be written at once


def json_chunks(data: Any) -> Iterator[Chunk]:
    """The bytes of `json_bytes(data)`, in parts, made one at a time: a top-level mapping key by
    key, a long list under a key CHUNK items at a time. The whole text of a large translation is
    eight times its input, and every page of it held at once is a page the kernel must fault in
    and tear down; each part's objects are the same, so each part is the reference's own bytes.

    A part is dumped as a one-key mapping (its items then sit at their depth in the whole) and
    cut out of that mapping's text: `{\\n` and `\\n}` around a key's entry, and for the items of
    a chunk also the list's opening and closing lines. The parts cut out are views of that text,
    not copies: a copy of every part would be the whole output's size again, in new pages."""
    if not isinstance(data, dict) or not data:
        yield _json_text(data) + b"\n"
        return
    yield b"{\n"
    first = True
    for key, value in data.items():
        if not first:
            yield b",\n"
        first = False
        if isinstance(value, list) and len(value) > CHUNK:
            # `  "key": [\n    item,\n    item` of the first chunk; `    item` of the others
            yield memoryview(_json_text({key: value[:CHUNK]}))[2:-_LIST_TAIL]
            for start in range(CHUNK, len(value), CHUNK):
                yield b",\n"
                yield memoryview(_json_text({"": value[start:start + CHUNK]}))[_LIST_HEAD:-_LIST_TAIL]
            yield b"\n  ]"
        else:
            yield memoryview(_json_text({key: value}))[2:-2]
    yield b"\n}\n"


# What a one-key mapping of a list adds around its items: `{\n  "": [\n` and `\n  ]\n}`.
_LIST_HEAD, _LIST_TAIL = len(b'{\n  "": [\n'), len(b"\n  ]\n}")


def _json_text(data: Any) -> bytes:
    """`json.dumps(data, indent=2)` as bytes (ASCII), through orjson when it prints the same."""
    if orjson is not None:
        try:
            raw = orjson.dumps(data, option=orjson.OPT_INDENT_2)
        except orjson.JSONEncodeError:  # lone surrogates, integers over 64 bits
            pass
        else:
            if not raw.isascii() or b"\x7f" in raw:
                raw = _NOT_PRINTABLE_ASCII.sub(_json_escape, raw)
            return raw
    return json.dumps(data, indent=2).encode()


CHUNK = 2000


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


def yaml_bytes(data: Any) -> bytes:
    """PyYAML's block-style dump of `data` without aliases, keys in their order.

    A top-level mapping is dumped key by key, and a long list under a simple key CHUNK items at a
    time (PyYAML prints a sequence under a simple key of a top-level mapping without indenting it,
    so a chunk dumped as a top-level sequence is the same bytes): the node graph of the whole
    translation would be held at once. Each part is written by yaml_block when it can (names and numbers),
    else by libyaml when every string is printable ASCII, else by PyYAML's own emitter.
    """
    from kube_manager.offline.yaml_block import BlockWriter

    if not isinstance(data, dict) or not data:
        return _yaml_dump(data)
    parts: List[Any] = []
    for key, value in data.items():
        if isinstance(value, list) and len(value) > CHUNK and isinstance(key, str) and key.isidentifier():
            parts.append({key: value[:CHUNK]})
            parts += [value[start:start + CHUNK] for start in range(CHUNK, len(value), CHUNK)]
        else:
            parts.append({key: value})
    writer = BlockWriter()
    return b"".join(_yaml_part(part, writer) for part in parts)


def _yaml_part(part: Any, writer: "BlockWriter") -> bytes:
    from kube_manager.offline.yaml_block import Unsupported

    try:
        return writer.document(part)
    except Unsupported:
        return _yaml_dump(part)


def _yaml_dump(data: Any) -> bytes:
    """PyYAML's dump of `data`, through libyaml's emitter when every string is printable ASCII."""
    from kube_manager.offline.yaml_dumpers import dump

    return dump(data, _plain_strings(data))
