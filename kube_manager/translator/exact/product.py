"""The tiers and the NetworkPolicies as one first-match list (SPEC 13, 14).

Each direction's chain is an ordered list of items: the Admin tier (a Pass continued by the lower
tiers: the Pass met with each item below it), the NetworkPolicy allows of isolated pods then a
deny of the isolated ones, the Baseline tier (a Pass there reaches the default, so it passes), and
a catch-all pass. First match over the egress list E and the ingress list I, both must pass. The
product list of `e & i` decides that in any order extending the product order ((a, b) before
(c, d) when a <= c and b <= d): the first product item a flow matches is the pair of the first
items it matches in E and in I. A row whose egress item denies denies whatever the ingress item
(it is written as that one item), a column likewise. The blocks, in APS order:

- `<cluster>--admin` (0.1): the rows of the Admin egress items (each met with the whole ingress
  list, or itself when it denies), then the columns of the Admin ingress items (each met with the
  lower egress list, or itself). Together they decide every flow some Admin item matches;
- the NetworkPolicy pairs and the isolation deny (`source.py`, 0.5, under `kubernetes`);
- `<cluster>--baseline-np` (0.7): each NetworkPolicy egress allow met with the Baseline ingress
  items, each ingress allow with the Baseline egress items (under `cluster-wide`, first the allow
  met with the other end's isolation, which that semantics lets through);
- the NetworkPolicies and `<cluster>-denyall` (sections 4-5), which decide every flow with an
  isolated end;
- `<cluster>--baseline` (2.1): the Baseline rows, then the Baseline ingress items; then allowall.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Sequence

from ..ports import ANY_SERVICE
from .items import ANYTHING, Item, Pods, meet
from .isolation import EGRESS, INGRESS

CATCH_ALL = Item(ANYTHING, ANYTHING, ANY_SERVICE, True)
ACCEPT, DENY, PASS = "Accept", "Deny", "Pass"


@dataclass(frozen=True)
class Lists:
    """The inputs: each tier's items per direction as (item, action), the NetworkPolicy allows."""

    admin: Mapping[str, Sequence]  # direction -> [(Item, action)]
    baseline: Mapping[str, Sequence]
    network_policies: Mapping[str, Sequence[Item]]  # direction -> allow items


def _met(x: Item, ys: Iterable[Item]) -> List[Item]:
    """`x` met with each of `ys` (meeting is symmetric), the empty ones left out."""
    found = []
    for y in ys:
        item = meet(x, y)
        if item is not None:
            found.append(item)
    return found


def _acted(item: Item, action: str) -> Item:
    return Item(item.src, item.dst, item.service, action != DENY, item.origins, item.deciders)


class Product:
    """The blocks of one state; `isolation` maps a direction to its isolation tag."""

    def __init__(self, lists: Lists, isolation: Mapping[str, str], kubernetes: bool) -> None:
        self.kubernetes = kubernetes
        self._nps = lists.network_policies
        self._isolated = {EGRESS: Pods(frozenset({isolation[EGRESS]})), INGRESS: Pods(frozenset({isolation[INGRESS]}))}
        self._baseline = {d: [_acted(item, action) for item, action in lists.baseline.get(d, ())] for d in (INGRESS, EGRESS)}
        self._lower = {d: self._np_list(d) + self._baseline[d] + [CATCH_ALL] for d in (INGRESS, EGRESS)}
        self._admin = {d: self._expanded(lists.admin.get(d, ()), self._lower[d]) for d in (INGRESS, EGRESS)}

    def _np_list(self, direction: str) -> List[Item]:
        ends = (self._isolated[EGRESS], ANYTHING) if direction == EGRESS else (ANYTHING, self._isolated[INGRESS])
        return list(self._nps.get(direction, ())) + [Item(ends[0], ends[1], ANY_SERVICE, False)]

    @staticmethod
    def _expanded(items: Sequence, lower: List[Item]) -> List[Item]:
        """The Admin list of one direction, a Pass continued by the lower tiers."""
        result = []
        for item, action in items:
            result.extend(_met(item, lower) if action == PASS else [_acted(item, action)])
        return result

    def admin(self) -> List[Item]:
        rows, columns = self._admin[EGRESS], self._admin[INGRESS]
        ingress = columns + self._lower[INGRESS]
        result = []
        for x in rows:
            result.extend(_met(x, ingress) if x.allow else [x])
        for y in columns:
            result.extend(_met(y, self._lower[EGRESS]) if y.allow else [y])
        return result

    def baseline_network_policies(self) -> List[Item]:
        result: List[Item] = []
        for direction, other in ((EGRESS, INGRESS), (INGRESS, EGRESS)):
            baseline = self._baseline[other]
            if not baseline:
                continue
            guard = [] if self.kubernetes else [self._pass_towards_isolated(other)]
            for np_item in self._nps.get(direction, ()):
                found = [meet(np_item, y) for y in guard + baseline]
                result.extend(item for item in found if item is not None)
        return result

    def _pass_towards_isolated(self, direction: str) -> Item:
        """Every flow whose `direction` end is isolated for it, passing."""
        if direction == INGRESS:
            return Item(ANYTHING, self._isolated[INGRESS], ANY_SERVICE, True)
        return Item(self._isolated[EGRESS], ANYTHING, ANY_SERVICE, True)

    def baseline(self) -> List[Item]:
        columns = self._baseline[INGRESS]
        result = []
        for x in self._baseline[EGRESS]:
            result.extend(_met(x, columns) + [x] if x.allow else [x])
        return result + columns

    def blocks(self) -> Dict[str, List[Item]]:
        return {"admin": self.admin(), "baseline-np": self.baseline_network_policies(), "baseline": self.baseline()}

