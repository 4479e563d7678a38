"""Name collisions between NetworkPolicies (SPEC 4).

Two NetworkPolicies whose names (policy or rule, before shortening) coincide, such as `a-b/c` and
`a/b-c` (both `k8s-a-b-c`), must both switch to collision-suffixed names. Whether a policy
collides is asked for every policy of every flush, so it is kept as a count of the policy's
shared names, updated when names are claimed and released, instead of re-reading its names.
"""
from __future__ import annotations

from typing import Dict, Set, Tuple, Union

PolicyKey = Tuple[str, str]
Owners = Union[PolicyKey, Set[PolicyKey]]  # one owner of a name, or several (a collision)


class NameRegistry:
    """The unsuffixed names of every policy, who owns each name, and who shares one."""

    def __init__(self) -> None:
        self._names: Dict[PolicyKey, Tuple[str, ...]] = {}  # policy name, then rule names
        self._policy_names: Dict[str, Owners] = {}
        self._rule_names: Dict[str, Owners] = {}
        self._shared: Dict[PolicyKey, int] = {}  # policies with shared names: how many

    def collides(self, key: PolicyKey) -> bool:
        return key in self._shared

    def index(self, key: PolicyKey, names: Tuple[str, ...]) -> Set[PolicyKey]:
        """Record `names` (policy name first, then rule names) as policy `key`'s; returns the
        other policies whose collision status may have changed."""
        old = self._names.pop(key, ())
        if names:
            self._names[key] = names
        others: Set[PolicyKey] = set()
        if old == names:
            return others
        for table, before, after in ((self._policy_names, old[:1], names[:1]),
                                     (self._rule_names, old[1:], names[1:])):
            kept = set(before).intersection(after) if before else ()
            for name in before:
                if name not in kept:
                    self._release(table, name, key, others)
            claim = table.setdefault
            for name in after:
                if name not in kept:
                    owner = claim(name, key)
                    if owner is not key and owner != key:
                        self._share(table, name, owner, key, others)
        return others

    def _share(self, table: Dict[str, Owners], name: str, owner: Owners, key: PolicyKey,
               others: Set[PolicyKey]) -> None:
        """`key` claims `name`, which `owner` already holds."""
        if isinstance(owner, set):
            others.update(owner)
            owner.add(key)
        else:
            others.add(owner)
            table[name] = {owner, key}
            self._count(owner, 1)
        self._count(key, 1)

    def _release(self, table: Dict[str, Owners], name: str, key: PolicyKey, others: Set[PolicyKey]) -> None:
        owner = table[name]
        if not isinstance(owner, set):
            del table[name]
            return
        owner.discard(key)
        self._count(key, -1)
        others.update(owner)
        if len(owner) == 1:
            (remaining,) = owner
            table[name] = remaining
            self._count(remaining, -1)

    def _count(self, key: PolicyKey, delta: int) -> None:
        count = self._shared.get(key, 0) + delta
        if count:
            self._shared[key] = count
        else:
            del self._shared[key]
