"""JSON on the wire, for the config API client and the embedded server alike.

orjson when it is installed (a dependency; a listing of thousands of objects decodes and encodes
several times faster than with the stdlib, which is most of a restart's own work), the stdlib
`json` module otherwise or for what orjson refuses to encode (integers beyond 64 bits). Both
decoders raise a `ValueError` on bad input.
"""
from __future__ import annotations

import json
from typing import Any, Union

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib is the fallback
    orjson = None  # type: ignore[assignment]


def loads(data: Union[bytes, str]) -> Any:
    """The JSON value of `data`; ValueError when it is not JSON."""
    if orjson is not None:
        return orjson.loads(data)
    return json.loads(data)


def dumps(value: Any) -> bytes:
    """`value` as UTF-8 JSON bytes."""
    if orjson is not None:
        try:
            return orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
            pass
    return json.dumps(value).encode("utf-8")
