"""The NetworkPolicy pair rules (SPEC 14): for every egress rule r and ingress rule q that can
match one flow, `r & q` passing. With the isolation deny after them, a flow between an
egress-isolated and an ingress-isolated pod is decided here, allowed exactly when both ends allow.

Kept per NetworkPolicy: a policy's new rendering drops the pairs of its old rules and looks up
partners for its new ones, through two indexes per side, so that one event costs in proportion to
the pairs it changes: by the namespace of the rule's own pods (a rule's subject is in one
namespace, and most peers name one), and by service (most rules name one port). A pair rule is
named by its content and counted, since two pairs can write one rule.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

from ..bodies import FqName
from ..encoding import NAMESPACE, encode_value, split_tag
from ..ports import Service
from .emit import Emitter, Rule
from .items import NAME_LABEL_TYPE, End, Item, Pods, meet, meet_services

PolicyKey = Tuple[str, str]
Pair = Tuple[FqName, FqName]  # (egress rule, ingress rule)


def namespace_key(end: End) -> Optional[str]:
    """The one namespace (its name as tag values spell it) every pod of `end` is in, as far as
    `meet` can tell: the index must never leave out a pair that `meet` keeps."""
    if not isinstance(end, Pods):
        return None
    for tag in end.tags:
        tag_type, value = split_tag(tag)
        if tag_type == NAMESPACE:
            return encode_value(value)
        if tag_type == NAME_LABEL_TYPE:
            return value
    return None


class _Side:
    """The rules of one direction, indexed by their own pods' namespace and by service."""

    def __init__(self) -> None:
        self.items: Dict[FqName, Item] = {}
        self._keys: Dict[FqName, Optional[str]] = {}
        self._by_namespace: Dict[Optional[str], Set[FqName]] = {}
        self._by_service: Dict[Service, Set[FqName]] = {}

    def add(self, fq_name: FqName, item: Item, key: Optional[str]) -> None:
        self.items[fq_name] = item
        self._keys[fq_name] = key
        self._by_namespace.setdefault(key, set()).add(fq_name)
        self._by_service.setdefault(item.service, set()).add(fq_name)

    def remove(self, fq_name: FqName) -> None:
        item, key = self.items.pop(fq_name), self._keys.pop(fq_name)
        for table, index in ((self._by_namespace, key), (self._by_service, item.service)):
            group = table[index]  # type: ignore[index]
            group.discard(fq_name)
            if not group:
                del table[index]  # type: ignore[arg-type]

    def candidates(self, namespace: Optional[str], service: Service) -> Iterable[FqName]:
        if namespace is not None:
            return self._by_namespace.get(namespace, set()) | self._by_namespace.get(None, set())
        found: Set[FqName] = set()
        for other, group in self._by_service.items():
            if meet_services(other, service) is not None:
                found |= group
        return found


class PairRules:
    """The pair rules of every NetworkPolicy; `put` and `drop` write a rule into the block."""

    def __init__(self, emitter: Emitter, put: Callable[[Rule], None], drop: Callable[[Rule], None]) -> None:
        self._emitter = emitter
        self._put, self._drop = put, drop
        self._egress, self._ingress = _Side(), _Side()
        self._policy_rules: Dict[PolicyKey, Tuple[Tuple[FqName, ...], Tuple[FqName, ...]]] = {}
        self._pairs: Dict[Pair, FqName] = {}
        self._pairs_of: Dict[FqName, Set[Pair]] = {}
        self._rules: Dict[FqName, Tuple[Rule, int]] = {}

    def update(self, key: PolicyKey, egress: List[Tuple[FqName, Item]], ingress: List[Tuple[FqName, Item]]) -> None:
        """The policy `key` now has these rules (none: it is gone); new pairs are written before
        the old ones are dropped."""
        old_egress, old_ingress = self._policy_rules.pop(key, ((), ()))
        released: List[FqName] = []
        for side, names in ((self._egress, old_egress), (self._ingress, old_ingress)):
            for fq_name in names:
                side.remove(fq_name)
                for pair in self._pairs_of.pop(fq_name, ()):
                    found = self._pairs.pop(pair, None)
                    if found is not None:
                        released.append(found)
                        other = pair[1] if pair[0] == fq_name else pair[0]
                        partners = self._pairs_of.get(other)
                        if partners is not None:
                            partners.discard(pair)
        if egress or ingress:
            self._policy_rules[key] = (tuple(fq for fq, _ in egress), tuple(fq for fq, _ in ingress))
        for fq_name, item in egress:
            self._egress.add(fq_name, item, namespace_key(item.src))
        for fq_name, item in ingress:
            self._ingress.add(fq_name, item, namespace_key(item.dst))
        for fq_name, item in egress:
            for partner in self._ingress.candidates(namespace_key(item.dst), item.service):
                self._pair((fq_name, partner), item, self._ingress.items[partner])
        own = {fq for fq, _ in egress}
        for fq_name, item in ingress:
            for partner in self._egress.candidates(namespace_key(item.src), item.service):
                if partner not in own:
                    self._pair((partner, fq_name), self._egress.items[partner], item)
        for fq_name in released:
            self._unref(fq_name)

    def _pair(self, pair: Pair, egress: Item, ingress: Item) -> None:
        item = meet(egress, ingress)
        if item is None:
            return
        rule = self._emitter.rule("pair", item)
        self._pairs[pair] = rule.fq_name
        for end in pair:
            self._pairs_of.setdefault(end, set()).add(pair)
        found = self._rules.get(rule.fq_name)
        self._rules[rule.fq_name] = (rule, found[1] + 1 if found else 1)
        if found is None:
            self._put(rule)

    def _unref(self, fq_name: FqName) -> None:
        rule, count = self._rules[fq_name]
        if count > 1:
            self._rules[fq_name] = (rule, count - 1)
        else:
            del self._rules[fq_name]
            self._drop(rule)
