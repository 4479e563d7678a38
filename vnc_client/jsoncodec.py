"""The one JSON decoder of the code base, and the wire encoder of the config API client and server.

`loads` gives exactly what the stdlib's `json.loads` gives, at orjson's speed where it can: a
listing of thousands of objects decodes several times faster, which is most of a restart's own
work. orjson turns an integer beyond 64 bits into a float (1e20 for 100000000000000000000), so a
text with a run of 19 digits or more, which may hold one, is decoded by the stdlib; so is a text
orjson refuses that the stdlib reads (NaN, a lone surrogate). Every path that reads JSON (the
watches, the offline manifests, the config API's answers) decodes with it, so that the daemon and
`translate` see, hash and translate the same values (a policy's `spec_sha256` among them).

`dumps` is orjson's, or the stdlib's for what orjson refuses to encode (integers beyond 64 bits).
"""
from __future__ import annotations

import json
from typing import Any, Union

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib is the fallback
    orjson = None  # type: ignore[assignment]

# Every digit read as 0: a run of LONG_RUN zeros in the translated text is 19 digits in a row.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19  # 10**18 is the largest power of ten every 64-bit integer type holds


def loads(data: Union[bytes, str]) -> Any:
    """The JSON value of `data`, as `json.loads` reads it; ValueError when it is not JSON."""
    if orjson is None:
        return json.loads(data)
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if _LONG_RUN not in raw.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # perhaps what only the stdlib reads; else the stdlib's own error
    return json.loads(data)


def dumps(value: Any) -> bytes:
    """`value` as UTF-8 JSON bytes."""
    if orjson is not None:
        try:
            return orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
            pass
    return json.dumps(value).encode("utf-8")
