"""What a watcher has delivered, per object, so that its consumer sees each change once.

A list, a re-list after 410 Gone and the watch stream all describe the same objects; the consumer
must not care which one an object came through. `SeenObjects` turns each of them into events
normalised against the last object delivered for the same (namespace, name):
- ADDED exactly once per object lifetime (a re-created object, same name with a new uid, is
  DELETED then ADDED);
- MODIFIED only when the trimmed content changed (a pod's status churn wakes nobody);
- DELETED only for a known object, carrying the last object delivered;
- a (re-)list is compared as a whole: what it no longer holds is DELETED.

What is kept is a copy of the whole cluster, so it is kept packed (kube_manager/plumbing/packed.py): the
delivered dicts are handed over without a copy and the consumer may change them freely.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, Iterator, Optional, Tuple

from kube_manager.plumbing.packed import Held, pack, unpack

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

Key = Tuple[str, str]  # (namespace or "", name)
Event = Tuple[str, Dict[str, Any]]  # (event type, object)


def trimmed_key(obj: Dict[str, Any]) -> Key:
    """(namespace, name) of a trimmed object, as strings whatever the manifest held."""
    meta = obj["metadata"]
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def _without_version(obj: Dict[str, Any]) -> Dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return dict(obj, metadata=meta)


class SeenObjects:
    """The last object delivered per key, packed; see the module docstring."""

    def __init__(self) -> None:
        self._held: Dict[Key, Held] = {}

    def __len__(self) -> int:
        return len(self._held)

    def listed(self, items: Dict[Key, Dict[str, Any]]) -> Iterator[Event]:
        """The events that make what was seen equal to a complete list, in key order: deletions
        first. Consumed lazily, each object is packed as its event is delivered."""
        for key in sorted(set(self._held) - set(items)):
            yield DELETED, unpack(self._held.pop(key))
        for key in sorted(items):
            yield from self.upserted(items[key])

    def upserted(self, new: Dict[str, Any]) -> Iterator[Event]:
        """The events an ADDED or MODIFIED of `new` amounts to (none when nothing changed)."""
        key = trimmed_key(new)
        held = self._held.get(key)
        packed = pack(new)
        # what JSON cannot hold (bytes, in a test) is kept as a deep copy instead
        self._held[key] = packed if isinstance(packed, bytes) else copy.deepcopy(new)
        if held is None:
            yield ADDED, new
            return
        old = unpack(held)
        if old["metadata"].get("uid") != new["metadata"].get("uid"):
            yield DELETED, old
            yield ADDED, new
        elif _without_version(old) != _without_version(new):
            yield MODIFIED, new

    def deleted(self, obj: Dict[str, Any]) -> Optional[Event]:
        """The DELETED event for `obj` when it was known, else None."""
        if self._held.pop(trimmed_key(obj), None) is None:
            return None
        return DELETED, obj
