"""A multimap for indexes where most keys have one value (who refers to a rule, the VMIs of a VM)."""
from __future__ import annotations

from typing import Dict, Generic, Hashable, Iterable, Set, TypeVar, Union

K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Hashable)


class Multimap(Generic[K, V]):
    """key -> a set of values, holding a single value as itself and only several in a set.

    A set per key costs many times its one value where most keys have one: each firewall rule is
    listed by one firewall policy, each pod's VM has one interface; on a large cluster those sets
    were a large part of the reconciler's memory.
    """

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: Dict[K, Union[V, Set[V]]] = {}

    def add(self, key: K, value: V) -> None:
        self.add_each((key,), value)

    def add_each(self, keys: Iterable[K], value: V) -> None:
        """`value` added to each of `keys` (a resync adds each listed object to the keys of
        everything it refers to: hundreds of thousands of calls, one per object here)."""
        held_of = self._held
        for key in keys:
            held = held_of.setdefault(key, value)
            if held is value or held == value:
                continue
            if isinstance(held, set):
                held.add(value)
            else:
                held_of[key] = {held, value}

    def discard(self, key: K, value: V) -> None:
        self.discard_each((key,), value)

    def discard_each(self, keys: Iterable[K], value: V) -> None:
        held_of = self._held
        for key in keys:
            held = held_of.get(key)
            if held is None:
                continue
            if isinstance(held, set):
                held.discard(value)
                if len(held) == 1:
                    held_of[key] = held.pop()
            elif held == value:
                del held_of[key]

    def get(self, key: K) -> Iterable[V]:
        """The values of `key` (none when it has none)."""
        held = self._held.get(key)
        if held is None:
            return ()
        return held if isinstance(held, set) else (held,)

    def clear(self) -> None:
        self._held.clear()
