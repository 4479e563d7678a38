"""Kubernetes objects held for long as compact JSON (orjson bytes), decoded anew when read.

A decoded manifest costs several times its JSON (docs/operations.md, "Measurements behind the
code"), and the initial lists held by `EventDispatcher` until every list is in were as much again, freed
at once afterwards into memory the process then kept (scattered holes). What is only kept, to be
shown, compared or applied later, is kept packed. A value orjson cannot write (an integer beyond 64
bits, a key that is not a string) is kept as it is, so the packed bytes never hold an integer orjson
would read back as a float: `unpack` gives back exactly what `vnc_client.jsoncodec.loads`, the
decoder of the watches and of `translate`, had made of the manifest. So is a value holding a float
JSON has no word for (an infinity or NaN, which YAML can write and orjson would write as `null`): an
object that can be read in two ways would be rejected under one key when handled at once and
another when held.
"""
from __future__ import annotations

from typing import Any, Union

import orjson

Held = Union[bytes, Any]


def pack(value: Any) -> Held:
    """`value` as compact JSON bytes, in a block of its own size: orjson's answer keeps the
    buffer it wrote into, often several times the size of a pod's manifest, so it is copied
    once, exactly, and the buffer goes back for the next."""
    try:
        packed = orjson.dumps(value)
    except TypeError:
        return value
    # orjson writes a non-finite float as null; a null is rare in what is held (trimmers drop
    # them), so the search is all most values cost.
    if b"null" in packed and orjson.loads(packed) != value:
        return value
    return memoryview(packed).tobytes()


def unpack(held: Held) -> Any:
    """A fresh copy of the value `pack` was given (the value itself when it was kept as it is)."""
    return orjson.loads(held) if isinstance(held, bytes) else held

