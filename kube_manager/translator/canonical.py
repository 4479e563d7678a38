"""Canonical JSON and the digests SPEC.md derives from it.

Canonical JSON is `json.dumps(x, sort_keys=True, separators=(",", ":"))` (SPEC 1). Manifests read
from YAML may hold values JSON does not know (dates) or non-string keys; those are written as
strings so that hashing a spec "as given" never fails.
"""
from __future__ import annotations

import hashlib
import json
import re
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, Optional

import orjson


def _stringify_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _stringify_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_stringify_keys(v) for v in value]
    return value


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
# The C encoder that `json.dumps` builds afresh for every call, built once: specs are hashed once
# each, thousands of them in a bulk load, and the set-up was a third of the cost. Without its
# circular reference check (`markers` None, which would be module state): a value nested in itself
# (a YAML alias) fails as RecursionError instead of ValueError: its object is rejected as bad input
# (rejections.TOO_DEEP).
_C_ENCODE = None if c_make_encoder is None else c_make_encoder(
    None, str, encode_basestring_ascii, None, ":", ",", True, False, True)


def canonical_json(value: Any) -> str:
    try:
        if _C_ENCODE is None:
            return _ENCODER.encode(value)
        return "".join(_C_ENCODE(value, 0))
    except TypeError:  # keys of mixed types cannot be sorted
        return json.dumps(_stringify_keys(value), sort_keys=True, separators=(",", ":"), default=str)


def sha1_of_json(value: Any) -> str:
    return hashlib.sha1(canonical_json(value).encode("utf-8")).hexdigest()


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def spec_digest(raw_spec: Any) -> str:
    """`sha256_hex(canonical_json(raw_spec))` of a manifest's spec as decoded (JSON or YAML values),
    the digest each distinct spec of a bulk load is given once: orjson writes the canonical text
    several times faster than the stdlib's encoder, and is taken where its text is provably the
    same (see _plain_canonical_json)."""
    text = _plain_canonical_json(raw_spec)
    return hashlib.sha256(text).hexdigest() if text is not None else sha256_hex(canonical_json(raw_spec))


# orjson's options for a decoded value: keys sorted as `sort_keys` does for ASCII keys, and what is
# no JSON type refused (the stdlib's `default=str` writes those).
_ORJSON_CANONICAL = (orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME
                     | orjson.OPT_PASSTHROUGH_DATACLASS)
# Text of strings without escapes, integers, booleans and punctuation only: no float, no null.
# (Each token starts with a byte no other can start with, so a failed match backtracks no further
# than a byte at a time; plain quantifiers, as the oldest Python supported has no possessive ones.)
_PLAIN_JSON = re.compile(rb'[-0-9{}\[\],:]*(?:(?:"[^"]*"|true|false)[-0-9{}\[\],:]*)*')


def _plain_canonical_json(value: Any) -> Optional[bytes]:
    """orjson's sorted compact text of `value` when it is byte for byte canonical_json's, else None.

    The two writers agree on objects, arrays, strings of printable ASCII with nothing to escape,
    integers and booleans, so that is all the text may hold: no byte outside printable ASCII (the
    stdlib escapes those as \\uXXXX, orjson writes them as they are), no backslash (an escape,
    whose spelling may differ), no float (the two spell some differently, and orjson writes NaN
    and infinities as null), no null (which may have been one of those). Anything else, and every
    value orjson refuses (a non-string key, an integer beyond 64 bits, a date), takes the stdlib.
    """
    try:
        text = orjson.dumps(value, option=_ORJSON_CANONICAL)
    except TypeError:  # orjson.JSONEncodeError
        return None
    if not text.isascii() or b"\\" in text or b"\x7f" in text:
        return None
    return text if _PLAIN_JSON.fullmatch(text) else None
