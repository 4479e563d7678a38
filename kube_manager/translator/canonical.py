"""Canonical JSON and the digests SPEC.md derives from it.

Canonical JSON is `json.dumps(x, sort_keys=True, separators=(",", ":"))` (SPEC 1). Manifests read
from YAML may hold values JSON does not know (dates) or non-string keys; those are written as
strings so that hashing a spec "as given" never fails.
"""
from __future__ import annotations

import hashlib
import json
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any


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
