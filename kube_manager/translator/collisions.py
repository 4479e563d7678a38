"""Name collisions between NetworkPolicies (SPEC 4).

Two NetworkPolicies whose names (policy or rule, before shortening) coincide, such as `a-b/c` and
`a/b-c` (both `k8s-a-b-c`), must both switch to collision-suffixed names.

Every name of a policy of namespace N starts with `<cluster>-N-`, and no two policies of one
namespace can share a name (their names differ in `<np>`, and the parts that follow it, a block
index, a capitalised peer kind or `denyall`, cannot be read as the tail of another policy name).
So two policies can only collide when one namespace is the other followed by `-` and more
(`a` and `a-b`). Names are looked up in the owner tables only for namespaces with such a
relative: in most clusters that is none, and a bulk load then never builds the tables.

Whether a policy collides is asked for every policy of every flush, so it is kept as a count of
the policy's shared names, updated when names are claimed and released.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Set, Tuple, Union

PolicyKey = Tuple[str, str]
Owners = Union[PolicyKey, Set[PolicyKey]]  # one owner of a name, or several (a collision)


def _dash_prefixes(namespace: str) -> List[str]:
    """The namespaces `namespace` extends: its parts before each `-` (found by `find`: asked
    twice for every namespace of a bulk load, where a loop over its characters cost a microsecond)."""
    prefixes = []
    dash = namespace.find("-")
    while dash >= 0:
        prefixes.append(namespace[:dash])
        dash = namespace.find("-", dash + 1)
    return prefixes


class NameRegistry:
    """The unsuffixed names of every policy, who owns each name, and who shares one."""

    def __init__(self) -> None:
        # namespace -> policy name -> its names (policy name, then rule names); only namespaces
        # with named policies
        self._names: Dict[str, Dict[str, Tuple[str, ...]]] = {}
        self._indexed: Set[str] = set()  # namespaces whose names are in the owner tables
        self._extended: Dict[str, int] = {}  # namespace prefix -> how many namespaces extend it
        self._policy_names: Dict[str, Owners] = {}
        self._rule_names: Dict[str, Owners] = {}
        self._shared: Dict[PolicyKey, int] = {}  # policies with shared names: how many

    def collides(self, key: PolicyKey) -> bool:
        return key in self._shared

    def index(self, key: PolicyKey, names: Tuple[str, ...]) -> Set[PolicyKey]:
        """Record `names` (policy name first, then rule names) as policy `key`'s; returns the
        other policies whose collision status may have changed."""
        namespace, name = key
        others: Set[PolicyKey] = set()
        policies = self._names.get(namespace)
        old = policies.get(name, ()) if policies is not None else ()
        if old == names:
            return others
        if policies is None:
            policies = self._names[namespace] = {}
            self._namespace_appears(namespace, others)
        if names:
            policies[name] = names
        else:
            del policies[name]
        if namespace in self._indexed:
            self._move(key, old, names, others)
        if not policies:
            del self._names[namespace]
            self._namespace_disappears(namespace, others)
        return others

    # --- which namespaces are indexed -----------------------------------------------------------

    def _relatives(self, namespace: str) -> List[str]:
        """The namespaces with named policies that `namespace` extends or that extend it."""
        relatives = [prefix for prefix in _dash_prefixes(namespace) if prefix in self._names]
        if self._extended.get(namespace):
            stem = namespace + "-"
            relatives.extend(other for other in self._names if other.startswith(stem))
        return relatives

    def _namespace_appears(self, namespace: str, others: Set[PolicyKey]) -> None:
        for prefix in _dash_prefixes(namespace):
            self._extended[prefix] = self._extended.get(prefix, 0) + 1
        relatives = self._relatives(namespace)
        if relatives:
            for related in relatives + [namespace]:
                self._set_indexed(related, True, others)

    def _namespace_disappears(self, namespace: str, others: Set[PolicyKey]) -> None:
        """`namespace` has no named policy left (so none of its names is in the tables)."""
        self._indexed.discard(namespace)
        for prefix in _dash_prefixes(namespace):
            count = self._extended[prefix] - 1
            if count:
                self._extended[prefix] = count
            else:
                del self._extended[prefix]
        for related in self._relatives(namespace):
            if not self._relatives(related):
                self._set_indexed(related, False, others)

    def _set_indexed(self, namespace: str, indexed: bool, others: Set[PolicyKey]) -> None:
        if indexed == (namespace in self._indexed):
            return
        for name, names in self._names[namespace].items():
            key = (namespace, name)
            self._move(key, () if indexed else names, names if indexed else (), others)
        if indexed:
            self._indexed.add(namespace)
        else:
            self._indexed.discard(namespace)

    # --- the owner tables -----------------------------------------------------------------------

    def _move(self, key: PolicyKey, old: Tuple[str, ...], new: Tuple[str, ...], others: Set[PolicyKey]) -> None:
        """Release the names of `old` that `new` does not have, and claim the new ones."""
        for table, before, after in ((self._policy_names, old[:1], new[:1]),
                                     (self._rule_names, old[1:], new[1:])):
            kept: Iterable[str] = set(before).intersection(after) if before and after else ()
            for name in before:
                if name not in kept:
                    self._release(table, name, key, others)
            claim = table.setdefault
            for name in after:
                if name not in kept:
                    owner = claim(name, key)
                    if owner is not key and owner != key:
                        self._share(table, name, owner, key, others)

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
