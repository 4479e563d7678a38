"""What the config API holds of our objects, as far as the reconciler knows, and how it differs
from the desired state.

`db.actual` (resource type -> fq_name -> what `compare.kept` keeps of the body as read back or as
written: its "uuid" and the fields we set, shared with the desired body where they read the same) is
written here alone, together with the indexes planning reads from it: which of our objects refer
to each object (what blocks a delete), the two long ref lists that refer to every NetworkPolicy
(the APS's and `<cluster>-denyall`'s, kept as `RefListIndex`es of where desired and actual differ,
so one event costs O(refs it moved)), the shared objects of other owners we may use as they are,
and when each key was last written (a resync keeps what was written while it listed).
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Set

from kube_manager.records.db import Database, FqName
from kube_manager.observability.logging_setup import kv
from kube_manager.translator.published import DesiredState

from . import compare, diff
from .diff import ObjKey
from .multimap import Multimap
from .ownership import OWNED_TYPES, SHARED_TYPES, TypeListing
from .reflists import RefListIndex

log = logging.getLogger(__name__)

Body = Mapping[str, Any]  # a kept body may be a `compare.AsDesired`
_NOT_INDEXED: Dict[str, RefListIndex] = {}  # the indexes of a key that has none (never written to)


def describe_key(key: ObjKey) -> str:
    return f"{key[0]} {':'.join(key[1])}"


class ActualState:
    """`db.actual` and its indexes; `on_changed(key)` hears of every change to a key's object."""

    def __init__(self, db: Database, desired: DesiredState, indexes: Dict[ObjKey, Dict[str, RefListIndex]],
                 on_changed: Callable[[ObjKey], None]) -> None:
        self._db = db
        self._desired = desired
        self.indexes = indexes
        self._on_changed = on_changed
        self._others: Dict[str, Dict[FqName, Dict[str, Any]]] = {}  # listed objects of other owners
        self._referrers: Multimap[ObjKey, ObjKey] = Multimap()  # target -> our objects naming it
        self.seq = 0  # bumped by every write (ours, VMIs' too) and every resync
        # Writes while a resync lists (those only: no other reader), so that its listing does not
        # undo them; empty in between, and not a map of every object a cold start wrote, which the
        # collector would walk again each time an event adds to it.
        self.listing = False
        self._written_at: Dict[ObjKey, int] = {}

    # --- reads ---------------------------------------------------------------------------------

    def get(self, key: ObjKey) -> Optional[Body]:
        return self._db.actual.get(key[0], {}).get(key[1])

    def desired(self, key: ObjKey) -> Optional[Body]:
        return self._desired.get(key[0], key[1])

    def other(self, key: ObjKey) -> Optional[Body]:
        """The object of another owner listed (or found) under this name, if any."""
        return self._others.get(key[0], {}).get(key[1])

    def borrowed(self, key: ObjKey) -> bool:
        """A shared object (tag, address group) of another owner that serves as it is."""
        return key[0] in SHARED_TYPES and key[1] in self._others.get(key[0], {})

    def present(self, key: ObjKey) -> bool:
        return self.get(key) is not None or self.borrowed(key)

    def settled(self, key: ObjKey) -> bool:
        """Whether the config API holds `key` exactly as desired (or holds nothing of it, when
        nothing is desired)."""
        desired, actual = self.desired(key), self.get(key)
        if desired is None:
            return actual is None
        if actual is None:
            return self.borrowed(key)
        indexed = self.indexes.get(key, {})
        return (not any(index.differ for index in indexed.values())
                and not compare.changed_fields(key[0], desired, actual, skip=indexed.keys()))

    def referrers(self, key: ObjKey) -> List[ObjKey]:
        """Our objects that still refer to `key` in the config API."""
        found = sorted(self._referrers.get(key))
        found.extend(holder for holder, indexes in self.indexes.items()
                     if any(key in index.actual for index in indexes.values()))
        return found

    def unsettled(self) -> List[ObjKey]:
        """Every key desired or held that is not `settled`, in no order. An object kept as its very
        desired body (`compare.AsDesired`: nearly every object after a resync) is settled without
        a look: asking `settled` of each of 100,000s of keys was a large part of a restart."""
        found: List[ObjKey] = []
        desired_objects, actual_objects = self._desired.objects, self._db.actual
        for obj_type in set(desired_objects) | set(actual_objects):
            desired, actual = desired_objects.get(obj_type, {}), actual_objects.get(obj_type, {})
            for fq_name, body in actual.items():
                if not compare.same_desired(body, desired.get(fq_name)) and not self.settled((obj_type, fq_name)):
                    found.append((obj_type, fq_name))
            found.extend((obj_type, fq_name) for fq_name in desired
                         if fq_name not in actual and not self.settled((obj_type, fq_name)))
        return found

    def compared_fields(self) -> Dict[str, Set[str]]:
        """Per type, the fields a resync reads back: those we write (the translator's fields of
        that type, known before anything is translated), and what `compare.kept` keeps besides."""
        fields = self._desired.fields
        return {obj_type: set(compare.KEPT_FIELDS).union(fields.get(obj_type, ())) for obj_type in OWNED_TYPES}

    def count(self) -> int:
        return sum(map(len, self._db.actual.values()))

    # --- writes --------------------------------------------------------------------------------

    def set(self, key: ObjKey, body: Optional[Body], written: bool = True,
            targets: Callable[..., List[ObjKey]] = compare.all_targets,
            readings: Optional[compare.Readings] = None) -> None:
        """What the config API holds of `key` now (None: nothing); `written` by us, not listed.
        `targets`: how to read what a body refers to (a resync's fold shares one `TargetReader`),
        `readings`: how to read its fields (one per page of a listing, `compare.Readings`)."""
        indexed = self.indexes.get(key, _NOT_INDEXED)
        skip = indexed.keys()
        obj_type, fq_name = key
        objects = self._db.actual.get(obj_type)
        if objects is None:
            objects = self._db.actual[obj_type] = {}
        old = objects.get(fq_name)
        if body is not None:
            body = compare.kept(obj_type, self._desired.get(obj_type, fq_name), body, skip=skip, readings=readings)
            if indexed:  # the indexes own those lists from now on (`ref_moved` keeps them true)
                body = {**body, **{name: index.load_actual(body.get(name)) for name, index in indexed.items()}}
        if not compare.same_desired(old, body):  # else it refers to what it did (a resync, nothing changed)
            if old is not None:
                self._referrers.discard_each(targets(obj_type, old, skip=skip), key)
            if body is not None:
                self._referrers.add_each(targets(obj_type, body, skip=skip), key)
        if body is None:
            objects.pop(key[1], None)
            for index in indexed.values():
                index.load_actual(())
        else:
            objects[key[1]] = body
        self._changed(key, written)

    def ref_moved(self, key: ObjKey, change: diff.RefUpdate) -> None:
        """One `ref-update` done: the actual body follows, in O(1) for an indexed list."""
        index = self.indexes.get(key, {}).get(change.ref_field)
        if index is None:
            actual = self.get(key) or {}
            refs = [ref for ref in actual.get(change.ref_field) or []
                    if not (isinstance(ref, dict) and tuple(ref.get("to") or ()) == change.target[1])]
            if change.operation == "ADD":
                refs.append({"to": list(change.target[1]), "attr": change.attr})
            self.set(key, {**actual, change.ref_field: refs})
            return
        if change.operation == "ADD":
            index.hold(change.target, change.attr)
        else:
            index.release(change.target)
        self._changed(key, written=True)

    def found_other(self, key: ObjKey, body: Dict[str, Any]) -> None:
        """A create met an object of another owner under this name."""
        self._others.setdefault(key[0], {})[key[1]] = body

    def load(self, obj_type: str, pages: Iterable[TypeListing], since: int) -> None:
        """A resync's listing of one type, a page at a time (reconciler/paging.py), replaces what
        we believed of it, except what was written after `since`; `loaded` ends the resync's
        listings.

        Each page is folded in as it comes. A key no page listed is believed absent once the last
        page is in: the pages are not one snapshot, and an object made behind the walk while it
        walked is missed. Believed absent, it is never deleted (only what a listing showed us is
        garbage-collected): at worst it is created again (a 409 the writer reads back) or left
        for the next resync to see."""
        current = self._db.actual.setdefault(obj_type, {})
        self.load_desired_indexes(obj_type)  # first: the listed refs share what reads as desired
        # Each key as the desired state (or `db.actual`) already holds it, never the listing's
        # own tuple: a key kept from the listing keeps its pages of memory (see `own_copy`).
        canonical = {fq_name: fq_name for fq_name in self._desired.objects.get(obj_type, {})}
        canonical.update((fq_name, fq_name) for fq_name in current)
        targets = compare.TargetReader()  # one per type: the pages' bodies live as long as it
        unlisted = set(current)
        others: Dict[FqName, Dict[str, Any]] = {}
        owned = 0
        for listing in pages:
            readings = compare.Readings()
            for fq_name, body in listing.owned.items():
                fq_name = canonical.get(fq_name, fq_name)
                unlisted.discard(fq_name)
                self._listed((obj_type, fq_name), body, since, targets, readings)
            owned += len(listing.owned)
            others.update(listing.others)
        for fq_name in unlisted:
            self._listed((obj_type, fq_name), None, since, targets, None)
        self._others[obj_type] = others
        log.info("listed config API objects", extra=kv(type=obj_type, owned=owned, others=len(others)))

    def _listed(self, key: ObjKey, body: Optional[Dict[str, Any]], since: int,
                targets: compare.TargetReader, readings: Optional[compare.Readings]) -> None:
        """What a listing says of `key`, unless we wrote it after `since` (the listing may be older)."""
        if self._written_at.get(key, -1) <= since:
            self.set(key, body, written=False, targets=targets, readings=readings)

    def begin_listing(self) -> int:
        """A resync starts listing: the writes from now on are noted; returns the `since` of its
        `load`s."""
        self.listing = True
        return self.seq

    def loaded(self, since: int) -> None:
        """Every type is listed (`load`)."""
        self.load_desired_indexes()
        self.seq += 1
        self.listing = False
        self._written_at = {}

    def _changed(self, key: ObjKey, written: bool) -> None:
        if written:
            self.seq += 1
            if self.listing:
                self._written_at[key] = self.seq
        self._on_changed(key)

    # --- the long ref lists' desired side ------------------------------------------------------

    def want_ref(self, holder: ObjKey, ref_type: str, target: ObjKey, sequence: Optional[str]) -> None:
        """The desired state added (`sequence` set) or dropped (None) one ref of an indexed list."""
        index = self.indexes.get(holder, {}).get(ref_type.replace("-", "_") + "_refs")
        if index is None:
            return
        if sequence is not None:
            index.want(target, {"sequence": sequence})
        else:
            index.unwant(target)

    def load_desired_indexes(self, obj_type: Optional[str] = None) -> None:
        """The desired side of the long lists' indexes (of the holders of `obj_type` only)."""
        for key, indexed in self.indexes.items():
            if obj_type is not None and key[0] != obj_type:
                continue
            desired = self.desired(key) or {}
            for name, index in indexed.items():
                index.load_desired(desired.get(name))

    def check_desired_index(self, key: ObjKey) -> Mapping[str, RefListIndex]:
        """A cheap guard against a per-ref change report that missed something: the indexed
        desired refs must be as many as the desired body lists; if not, reload them whole. The
        indexes of `key` (none for most keys)."""
        indexed = self.indexes.get(key, {})
        desired = self.desired(key) or {}
        for name, index in indexed.items():
            if not index.desired_count_is(len(desired.get(name) or ())):
                log.warning("desired ref index out of step, reloaded", extra=kv(key=describe_key(key), field=name))
                index.load_desired(desired.get(name))
        return indexed


def unlink(index: Dict[Any, Set[Any]], name: Any, key: Any) -> None:
    """Take `key` out of the set `index[name]`, dropping the set once empty."""
    keys = index.get(name)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[name]

