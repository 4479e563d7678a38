"""Canonical JSON and the digests SPEC.md derives from it.

Canonical JSON is `json.dumps(x, sort_keys=True, separators=(",", ":"))` (SPEC 1). Manifests read
from YAML may hold values JSON does not know (dates) or non-string keys; those are written as
strings so that hashing a spec "as given" never fails.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any


def _stringify_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _stringify_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_stringify_keys(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    except TypeError:  # keys of mixed types cannot be sorted
        return json.dumps(_stringify_keys(value), sort_keys=True, separators=(",", ":"), default=str)


def sha1_of_json(value: Any) -> str:
    return hashlib.sha1(canonical_json(value).encode("utf-8")).hexdigest()


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
