"""An incremental index of one long ref list: desired and actual refs, and where they differ.

The APS refers to every NetworkPolicy's firewall policy and `<cluster>-denyall` to every deny rule
(SPEC 5): thousands of refs. Comparing or re-planning such a list whole on every event would make
one NetworkPolicy event cost O(cluster). Instead the reconciler keeps, per long list, the desired
refs (from the translator's per-ref changes), the actual refs (from the listing and from its own
writes) and the set of targets where the two differ; planning then looks at that set only, so an
event costs O(refs it moved).

The actual list itself is owned here and shared with the actual body in `Database.actual`, so that
the body stays true after a one-ref `ref-update` without being copied. Its order is not kept (the
config API compares refs as a set); a delete swaps the last ref into the hole.
"""
from __future__ import annotations

import copy
from collections import abc
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set

from kube_manager.plumbing.gcpolicy import TrackedDict

from .compare import ObjKey, attr_key


@dataclass
class RefListIndex:
    """The refs of one holder's list (`ref_field`, to objects of `target_type`), desired and actual."""

    ref_field: str
    target_type: str
    desired: Dict[ObjKey, Any] = field(default_factory=dict)  # target -> attr
    actual: Dict[ObjKey, Any] = field(default_factory=dict)
    differ: Set[ObjKey] = field(default_factory=set)   # missing, extra, or another attr
    stale: Set[ObjKey] = field(default_factory=set)    # held but no longer wanted
    _refs: List[Dict[str, Any]] = field(default_factory=list)  # the actual list, in no order
    _position: Dict[ObjKey, int] = field(default_factory=TrackedDict)

    # --- desired -----------------------------------------------------------------------------

    def load_desired(self, refs: Optional[Iterable[Mapping[str, Any]]]) -> None:
        """Replace the desired refs with a whole list (at a resync)."""
        self.desired = {self._target(ref): ref.get("attr") for ref in refs or () if _valid(ref)}
        self._recompute()

    def want(self, target: ObjKey, attr: Any) -> None:
        """One desired ref added, or its attr changed, as the translator reported it."""
        self.desired[target] = attr
        self._check(target)

    def unwant(self, target: ObjKey) -> None:
        """One desired ref removed."""
        self.desired.pop(target, None)
        self._check(target)

    def desired_count_is(self, count: int) -> bool:
        """Cheap consistency check against the length of the desired body's list."""
        return len(self.desired) == count

    # --- actual ------------------------------------------------------------------------------

    def load_actual(self, refs: Optional[Iterable[Mapping[str, Any]]]) -> List[Dict[str, Any]]:
        """Replace the actual refs with a whole list (listed, created, or written whole); returns
        the list the actual body should hold from now on (owned by this index)."""
        self._refs = []
        self._position = TrackedDict()
        self.actual = {}
        canonical = {target: target for target in self.desired}
        for ref in refs or ():
            if _valid(ref):
                target = self._target(ref)
                self._put_actual(*self._shared(canonical.get(target, target), ref.get("attr")))
        self._recompute()
        return self._refs

    def hold(self, target: ObjKey, attr: Any) -> None:
        """One ref added, or its attr changed, in the config API (a `ref-update` ADD)."""
        if target in self._position:
            self._remove_actual(target)
        self._put_actual(target, attr)
        self._check(target)

    def release(self, target: ObjKey) -> None:
        """One ref deleted in the config API."""
        if target in self._position:
            self._remove_actual(target)
        self._check(target)

    # --- questions ---------------------------------------------------------------------------

    def __len__(self) -> int:
        """The longer of the two lists: what decides between one-ref updates and a whole PUT."""
        return max(len(self.desired), len(self.actual))

    # --- internals ---------------------------------------------------------------------------

    def _target(self, ref: Mapping[str, Any]) -> ObjKey:
        return (self.target_type, tuple(ref["to"]))

    def _shared(self, target: ObjKey, attr: Any) -> "tuple[ObjKey, Any]":
        """The attr as the desired ref's own object where the two read the same, else as listed
        (a copy of its own, see `compare.own_copy`): tens of thousands of listed attrs kept
        the listing's memory otherwise."""
        if target in self.desired:
            wanted = self.desired[target]
            if attr_key(wanted) == attr_key(attr):
                return target, wanted
        return target, copy.deepcopy(attr)

    def _put_actual(self, target: ObjKey, attr: Any) -> None:
        self.actual[target] = attr
        self._position[target] = len(self._refs)
        self._refs.append({"to": list(target[1]), "attr": attr})

    def _remove_actual(self, target: ObjKey) -> None:
        del self.actual[target]
        hole = self._position.pop(target)
        last = self._refs.pop()
        if hole < len(self._refs):
            self._refs[hole] = last
            self._position[(self.target_type, tuple(last["to"]))] = hole

    def _check(self, target: ObjKey) -> None:
        wanted, held = target in self.desired, target in self.actual
        if wanted != held or (wanted and attr_key(self.desired[target]) != attr_key(self.actual[target])):
            self.differ.add(target)
        else:
            self.differ.discard(target)
        if held and not wanted:
            self.stale.add(target)
        else:
            self.stale.discard(target)

    def _recompute(self) -> None:
        """`_check` of every target, by set operations: a resync recomputes lists of 100,000s of
        refs, nearly all held as desired (the same attr object, see `load_actual`)."""
        desired, actual = self.desired, self.actual
        self.differ.clear()
        self.differ.update(desired.keys() ^ actual.keys())
        self.differ.update(target for target in desired.keys() & actual.keys()
                           if desired[target] is not actual[target]
                           and attr_key(desired[target]) != attr_key(actual[target]))
        self.stale.clear()
        self.stale.update(actual.keys() - desired.keys())


def _valid(ref: Any) -> bool:
    # a dict first: `isinstance` against `typing.Mapping` is slow enough, once per ref, to be the
    # time of a restart's whole fold of one long ref list
    return (type(ref) is dict or isinstance(ref, abc.Mapping)) and bool(ref.get("to"))
