"""In-memory object store of the embedded config API: the Cassandra and ZooKeeper of the real server.

It keeps objects by uuid with the indexes the API needs: (type, fq_name) -> uuid, the objects of each
type, back-references and children. It knows nothing of HTTP or of validation; `api.ConfigApi` checks
every precondition before calling a mutator, so the indexes can stay consistent without rollbacks.

Stored values are JSON data (dicts, lists, strings, numbers, booleans, None). The store keeps the
values it is given: `ConfigApi` copies every request body when it comes in and every answer when it
goes out (`copy_json`, five times faster than `copy.deepcopy`, which has to handle any object
graph), so nothing outside the store holds a stored value, and a change replaces a value instead of
editing it.

All access goes through `lock`, a real (OS-level) re-entrant lock even when gevent has
monkey-patched `threading`: the server may run in its own thread (see `runner`) while test code in
another thread inspects the store. No operation holding the lock ever yields to the gevent hub.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from gevent.monkey import get_original

from kube_manager.plumbing.gcpolicy import TrackedDict

from .ordered import OrderedKeys, column

_RLock = get_original("_thread", "RLock")


def copy_json(value: Any) -> Any:
    """A deep copy of JSON data: new dicts and lists (tuples stay tuples), shared immutable leaves."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    if isinstance(value, tuple):
        return tuple(copy_json(v) for v in value)
    return value


@dataclass
class Ref:
    """One reference: the referred object's fq_name (`to`) and uuid, and the link attribute."""

    to: List[str]
    uuid: str
    attr: Any = None


RefMap = Dict[str, Ref]  # the refs of one field by target uuid (a target is referred to once per field)


def ref_map(refs: Iterable[Ref]) -> RefMap:
    """Refs keyed by their target's uuid, in the given order (a later duplicate wins)."""
    return {ref.uuid: ref for ref in refs}


class OneRefChange(Mapping[str, Ref]):
    """A stored ref field as it would be with one ref added (or replaced) or dropped, read through
    the stored map instead of copying it: a ref-update's checks then cost the same whether the
    field holds ten refs or fifteen thousand."""

    def __init__(self, stored: RefMap, add: Optional[Ref] = None, drop: Optional[str] = None) -> None:
        self._stored = stored
        self._add = add
        self._hidden = {add.uuid if add is not None else None, drop}

    def __getitem__(self, uuid: str) -> Ref:
        if self._add is not None and uuid == self._add.uuid:
            return self._add
        if uuid in self._hidden:
            raise KeyError(uuid)
        return self._stored[uuid]

    def __iter__(self) -> Iterator[str]:
        hidden = self._hidden
        yield from (uuid for uuid in self._stored if uuid not in hidden)
        if self._add is not None:
            yield self._add.uuid

    def __len__(self) -> int:
        hidden_stored = sum(1 for uuid in self._hidden if uuid is not None and uuid in self._stored)
        return len(self._stored) - hidden_stored + (self._add is not None)


@dataclass
class StoredObject:
    """One config object as stored: identity, properties and references (back-refs and children are
    indexes of the store, never stored on the object)."""

    type: str  # resource type, hyphen form ("firewall-rule")
    uuid: str
    fq_name: List[str]
    parent_type: Optional[str]
    parent_uuid: Optional[str]
    props: Dict[str, Any] = field(default_factory=dict)
    refs: Dict[str, RefMap] = field(default_factory=dict)  # ref field ("tag_refs") -> refs by target uuid
    seq: int = 0  # creation order; children are listed in it, as the real server does


class IndexAllocator:
    """Lowest-free integer allocator, like the ZooKeeper index allocators of the real server (tag
    type and tag value ids): freed ids are reused, lowest first."""

    def __init__(self, start: int, size: int) -> None:
        self._start = start
        self._end = start + size  # exclusive
        self._next = start
        self._freed: List[int] = []
        self._owners: Dict[int, str] = {}

    def alloc(self, owner: str) -> Optional[int]:
        """The lowest free id, or None when the pool is exhausted."""
        if self._freed:
            index = heapq.heappop(self._freed)
        elif self._next < self._end:
            index = self._next
            self._next += 1
        else:
            return None
        self._owners[index] = owner
        return index

    def free(self, index: int, owner: str) -> None:
        """Free `index` if `owner` holds it (a stale owner keeps nothing from the real holder)."""
        if self._owners.get(index) == owner:
            del self._owners[index]
            heapq.heappush(self._freed, index)

    def __len__(self) -> int:
        return len(self._owners)


class Store:
    """The objects and their indexes. Callers hold `lock` around each API operation."""

    def __init__(self) -> None:
        self.lock = _RLock()
        self.revision = 0  # bumped by every mutation; "no write happened" is an unchanged revision
        # The large indexes whose keys are tuples, or whose values are maps, are `TrackedDict`s:
        # a full collection untracks an exact dict holding only atoms (strings, tuples of strings)
        # or untracked maps, and the next write adding a new tuple key or a new map tracks it
        # again, whole, in the youngest generation, where the next young collections walk every
        # one of its entries (an answer's latency growing with the store). Tracked throughout,
        # they are frozen with the rest after a full collection. The maps of string keys inside
        # `_by_type` and `_children`, once untracked, stay so: a string key never tracks them.
        self._objects: Dict[str, StoredObject] = {}
        self._by_fq: Dict[Tuple[str, Tuple[str, ...]], str] = TrackedDict()
        self._by_type: Dict[str, Dict[str, None]] = {}
        self._back: Dict[str, Dict[Tuple[str, str], None]] = TrackedDict()  # target -> {(source uuid, ref field)}
        self._children: Dict[str, Dict[str, None]] = TrackedDict()  # parent uuid -> child uuids, creation order
        self._pools: Dict[str, IndexAllocator] = {}
        self._seq = 0
        # type -> its objects' `ordered.column`s, made at the type's first paginated listing (a
        # store nobody pages through holds none) and kept from then on
        self._ordered: Dict[str, OrderedKeys] = {}

    # --- lookups ---------------------------------------------------------------------------

    def get(self, uuid: str) -> Optional[StoredObject]:
        return self._objects.get(uuid)

    def uuid_for(self, obj_type: str, fq_name: List[str]) -> Optional[str]:
        return self._by_fq.get((obj_type, tuple(fq_name)))

    def objects_of_type(self, obj_type: str) -> Iterator[StoredObject]:
        for uuid in self._by_type.get(obj_type, {}):
            yield self._objects[uuid]

    def ordered(self, obj_type: str) -> OrderedKeys:
        """The objects of a type in the order a paginated listing walks them."""
        keys = self._ordered.get(obj_type)
        if keys is None:
            keys = self._ordered[obj_type] = OrderedKeys(column(o.fq_name, o.uuid)
                                                         for o in self.objects_of_type(obj_type))
        return keys

    def referrers(self, uuid: str) -> List[Tuple[StoredObject, str, Ref]]:
        """Every (source object, ref field, ref) pointing at `uuid`."""
        found = []
        for src_uuid, ref_field in self._back.get(uuid, {}):
            src = self._objects[src_uuid]
            found.append((src, ref_field, src.refs[ref_field][uuid]))
        return found

    def children(self, uuid: str) -> List[StoredObject]:
        return [self._objects[c] for c in self._children.get(uuid, {})]

    def __len__(self) -> int:
        return len(self._objects)

    def pool(self, name: str, start: int, size: int) -> IndexAllocator:
        """The named id allocator, created on first use (the real server's ZooKeeper paths)."""
        if name not in self._pools:
            self._pools[name] = IndexAllocator(start, size)
        return self._pools[name]

    def drop_pool(self, name: str) -> None:
        self._pools.pop(name, None)

    # --- mutations (preconditions are the caller's job) -------------------------------------

    def insert(self, obj: StoredObject) -> None:
        self._seq += 1
        obj.seq = self._seq
        self._objects[obj.uuid] = obj
        self._by_fq[(obj.type, tuple(obj.fq_name))] = obj.uuid
        self._by_type.setdefault(obj.type, {})[obj.uuid] = None
        if obj.type in self._ordered:
            self._ordered[obj.type].add(column(obj.fq_name, obj.uuid))
        if obj.parent_uuid:
            self._children.setdefault(obj.parent_uuid, {})[obj.uuid] = None
        for ref_field, refs in obj.refs.items():
            self._index_refs(obj.uuid, ref_field, refs.values())
        self.revision += 1

    def set_props(self, uuid: str, changes: Dict[str, Any]) -> None:
        self._objects[uuid].props.update(changes)
        self.revision += 1

    def set_refs(self, uuid: str, ref_field: str, refs: Mapping[str, Ref]) -> None:
        """Replace a whole ref field (a PUT): work in proportion to the old and new lists."""
        obj = self._objects[uuid]
        self._unindex_refs(uuid, ref_field, obj.refs.get(ref_field, {}).values())
        if refs:
            obj.refs[ref_field] = dict(refs)
            self._index_refs(uuid, ref_field, refs.values())
        else:
            obj.refs.pop(ref_field, None)
        self.revision += 1

    def put_ref(self, uuid: str, ref_field: str, ref: Ref) -> None:
        """Add or replace one ref (a ref-update ADD): constant work, however long the list is."""
        self._objects[uuid].refs.setdefault(ref_field, {})[ref.uuid] = ref
        self._index_refs(uuid, ref_field, (ref,))
        self.revision += 1

    def drop_ref(self, uuid: str, ref_field: str, target: str) -> None:
        """Remove the ref to `target` (a ref-update DELETE): constant work, however long the list is."""
        refs = self._objects[uuid].refs[ref_field]
        ref = refs.pop(target)
        if not refs:
            del self._objects[uuid].refs[ref_field]
        self._unindex_refs(uuid, ref_field, (ref,))
        self.revision += 1

    def remove(self, uuid: str) -> StoredObject:
        obj = self._objects.pop(uuid)
        del self._by_fq[(obj.type, tuple(obj.fq_name))]
        del self._by_type[obj.type][uuid]
        if obj.type in self._ordered:
            self._ordered[obj.type].discard(column(obj.fq_name, obj.uuid))
        if obj.parent_uuid:
            self._children.get(obj.parent_uuid, {}).pop(uuid, None)
        self._children.pop(uuid, None)
        for ref_field, refs in obj.refs.items():
            self._unindex_refs(uuid, ref_field, refs.values())
        self._back.pop(uuid, None)
        self.revision += 1
        return obj

    def _index_refs(self, uuid: str, ref_field: str, refs: Iterable[Ref]) -> None:
        for ref in refs:
            sources = self._back.get(ref.uuid)
            if sources is None:
                sources = self._back[ref.uuid] = TrackedDict()
            sources[(uuid, ref_field)] = None

    def _unindex_refs(self, uuid: str, ref_field: str, refs: Iterable[Ref]) -> None:
        for ref in refs:
            sources = self._back.get(ref.uuid)
            if sources is not None:
                sources.pop((uuid, ref_field), None)
                if not sources:
                    del self._back[ref.uuid]
