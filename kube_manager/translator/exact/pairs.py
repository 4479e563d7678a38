"""The NetworkPolicy pair rules (SPEC 14): for every egress rule r and ingress rule q that can
match one flow, `r & q` passing. With the isolation deny after them, a flow between an
egress-isolated and an ingress-isolated pod is decided here, allowed exactly when both ends allow.

Kept per NetworkPolicy: a policy's new rendering drops the pairs of its old rules and looks up
partners for its new ones, so that one event costs in proportion to the pairs it changes. `meet`
keeps a pair only when neither end names two namespaces, so each side indexes its rules by
service, and by the namespace (as tag values spell it) of each end; a lookup walks the fewest of:
the rules of the one namespace the query's source names plus those whose source names none, the
same at the destination, the rules whose service meets the query's. A rule whose service meets no
rule of the other side is neither looked up nor indexed by namespace (a cluster whose egress
services meet no ingress service has no pair to find, whatever its rules' ends). A pair rule is
named by its content and counted, since two pairs can write one rule. A pair whose ends the
cluster's namespaces contradict is not kept (`contradictions.py`); `naming` tells which
policies to meet again when a namespace changes. A pair kept is written only while current pods
realise its ends (`realised.py`): `realise` writes and drops pairs as pods change, and a pair
left out only leaves its flows to the isolation deny. `contributions` counts, per policy, the
written pairs one of its rules is an end of: what the operator is told when the pair rules pass
their bound.
"""
from __future__ import annotations

from typing import AbstractSet, Callable, Dict, FrozenSet, Iterator, List, Mapping, NamedTuple, Optional, Set, Tuple

from ..bodies import MARK_CACHE_LIMIT, FqName
from ..encoding import NAMESPACE, encode_value, tag_name
from ..ports import Service
from .allows import Keyed
from .emit import Emitter, Rule
from .items import NAME_LABEL_TYPE, End, Item, Pods, meet, meet_services
from .realised import RealisedEnds
from .unmet import Services, UnmetPolicies, services_meet

PolicyKey = Tuple[str, str]
Keys = Tuple[Optional[str], Optional[str]]  # the namespace of a rule's source and destination
_EMPTY: FrozenSet[FqName] = frozenset()
_UNKNOWN = object()
Pair = Tuple[FqName, FqName]  # (egress rule, ingress rule)


PAIR_BLOCK = "pair"
_NAMESPACE_PREFIX, _NAME_LABEL_PREFIX = tag_name(NAMESPACE, ""), tag_name(NAME_LABEL_TYPE, "")


class PairRuleCounts(NamedTuple):
    """The pair rules as of the last flush: how many are written, and per policy the pairs one of
    its rules is an end of (a live read-only view; a policy with none is absent)."""

    total: int
    by_policy: Mapping[PolicyKey, int]


def pair_rule_prefix(cluster: str) -> str:
    """What every pair rule's name starts with (emit.Emitter.rule names `<cluster>--<block>-<hash>`)."""
    return f"{cluster}--{PAIR_BLOCK}-"


def namespace_key(end: End) -> Optional[str]:
    """The one namespace (its name as tag values spell it) every pod of `end` is in, as far as
    `meet` can tell: the index must never leave out a pair that `meet` keeps."""
    if not isinstance(end, Pods):
        return None
    for tag in end.tags:  # `split_tag` by prefix: this runs for every end of every rule
        if tag.startswith(_NAMESPACE_PREFIX):
            return encode_value(tag[len(_NAMESPACE_PREFIX):])
        if tag.startswith(_NAME_LABEL_PREFIX):
            return tag[len(_NAME_LABEL_PREFIX):]
    return None


class _Side:
    """The rules of one direction, by service; and by the namespace of each end, those of the
    services some rule of the other side meets (`index`): a rule whose service meets none has no
    pair, and is looked up by nobody, so its namespaces are read only once a rule meeting it comes."""

    def __init__(self) -> None:
        self.items: Dict[FqName, Item] = {}
        self._keys: Dict[FqName, Keys] = {}  # of the rules indexed
        self._by_src: Dict[Optional[str], Set[FqName]] = {}
        self._by_dst: Dict[Optional[str], Set[FqName]] = {}
        self._by_service: Dict[Service, Set[FqName]] = {}
        self._indexed: Set[Service] = set()  # the services whose rules are in `_by_src` and `_by_dst`
        # a service of the other side -> the services of `_by_service` it meets: few services, met
        # by every lookup
        self._meeting: Dict[Service, List[Service]] = {}
        # an end's tags -> namespace_key: ends recur (every rule of a namespace's pods), and the
        # item reader hands out one Pods per endpoint body, so a hit is mostly an identity match
        self._namespaces: Dict[FrozenSet[str], Optional[str]] = {}

    def keys(self, item: Item) -> Keys:
        """The namespaces of `item`'s ends."""
        return self._namespace_of(item.src), self._namespace_of(item.dst)

    def _namespace_of(self, end: End) -> Optional[str]:
        if not isinstance(end, Pods):
            return None
        found = self._namespaces.get(end.tags, _UNKNOWN)
        if found is _UNKNOWN:
            if len(self._namespaces) >= MARK_CACHE_LIMIT:
                self._namespaces.clear()
            found = self._namespaces[end.tags] = namespace_key(end)
        return found  # type: ignore[return-value]

    def add(self, fq_name: FqName, item: Item) -> None:
        self.items[fq_name] = item
        group = self._by_service.get(item.service)
        if group is None:
            group = self._by_service[item.service] = set()
            self._meeting.clear()
        group.add(fq_name)
        if item.service in self._indexed:
            self._index(fq_name, item)

    def index(self, service: Service) -> None:
        """Index the rules of `service` by namespace (from now on, while it has rules)."""
        if service not in self._indexed:
            self._indexed.add(service)
            for fq_name in self._by_service[service]:
                self._index(fq_name, self.items[fq_name])

    def _index(self, fq_name: FqName, item: Item) -> None:
        keys = self._keys[fq_name] = self.keys(item)
        self._by_src.setdefault(keys[0], set()).add(fq_name)
        self._by_dst.setdefault(keys[1], set()).add(fq_name)

    def naming(self, namespace: str) -> Set[FqName]:
        """The rules with an end in `namespace`, of those indexed (the others have no pair)."""
        return self._by_src.get(namespace, set()) | self._by_dst.get(namespace, set())

    def remove(self, fq_name: FqName) -> None:
        service = self.items.pop(fq_name).service
        keys = self._keys.pop(fq_name, None)
        tables: List[Tuple[Dict, object]] = [(self._by_service, service)]
        if keys is not None:
            tables += [(self._by_src, keys[0]), (self._by_dst, keys[1])]
        for table, index in tables:
            group = table[index]
            group.discard(fq_name)
            if not group:
                del table[index]
                if table is self._by_service:
                    self._meeting.clear()
                    self._indexed.discard(service)

    def meeting(self, service: Service) -> List[Service]:
        """The services of this side's rules that `service` meets."""
        found = self._meeting.get(service)
        if found is None:
            found = self._meeting[service] = [other for other in self._by_service
                                              if meet_services(other, service) is not None]
        return found

    def candidates(self, item: Item, keys: Keys, meeting: List[Service]) -> Iterator[FqName]:
        """The rules of this side `item` (whose ends' namespaces are `keys`, and whose service
        meets `meeting` here, all indexed) may meet: a superset of those `meet` keeps, from the
        narrowest of three lookups."""
        best: List[AbstractSet[FqName]] = [self._by_service[other] for other in meeting]
        size = sum(len(group) for group in best)
        for table, key in ((self._by_src, keys[0]), (self._by_dst, keys[1])):
            if key is not None:
                found: List[AbstractSet[FqName]] = [table.get(key, _EMPTY), table.get(None, _EMPTY)]
                if len(found[0]) + len(found[1]) < size:
                    best, size = found, len(found[0]) + len(found[1])
        for group in best:
            yield from group


class PairRules:
    """The pair rules of every NetworkPolicy; `put` and `drop` write a rule into the block."""

    def __init__(self, emitter: Emitter, put: Callable[[Rule], None], drop: Callable[[Rule], None],
                 possible: Callable[[Item], bool], ends: RealisedEnds[Pair],
                 read: Callable[[PolicyKey], Tuple[Keyed, Keyed]]) -> None:
        """`possible`: whether a pair's ends can match pods of the cluster's namespaces as they
        are; `ends`: which ends the current pods match; `read`: a policy's allows as items,
        (egress, ingress), each with its rule's name."""
        self._emitter = emitter
        self._read = read
        self._unmet = UnmetPolicies()
        self._possible = possible
        self._ends = ends
        self._put, self._drop = put, drop
        self._egress, self._ingress = _Side(), _Side()
        self._policy_rules: Dict[PolicyKey, Tuple[Tuple[FqName, ...], Tuple[FqName, ...]]] = {}
        self._policy_of: Dict[FqName, PolicyKey] = {}
        self._possible_pairs: Dict[Pair, Item] = {}  # every pair `meet` and the namespaces keep
        self._pairs: Dict[Pair, FqName] = {}  # of those, the ones written: the pods realise them
        self._pairs_of: Dict[FqName, Set[Pair]] = {}
        self._rules: Dict[FqName, Tuple[Rule, int]] = {}
        self._released: List[FqName] = []  # rules of pairs closed, dropped once the new are written
        self._contributions: Dict[PolicyKey, int] = {}

    def counts(self) -> PairRuleCounts:
        return PairRuleCounts(len(self._rules), self._contributions)

    def update(self, key: PolicyKey, services: Optional[Services]) -> None:
        """The policy `key` is new or changed; `services` are those of its allows (None: they are
        known only from the allows). Its allows are read (`read`) unless no service of them meets
        one of the other direction (`unmet.py`); new pairs are written before the old are dropped."""
        self._drop_policy(key)
        items: Optional[Tuple[Keyed, Keyed]] = None
        if services is None:
            items = self._read(key)
            services = (frozenset(item.service for _, item in items[0]),
                        frozenset(item.service for _, item in items[1]))
        woken = self._unmet.meeting(services)
        for other in sorted(woken) if woken else ():  # each meets none but this policy
            self._unmet.remove(other)
            self._add(other, *self._read(other))
        if items is None and not self._meets_read(services):
            self._unmet.add(key, services)
        else:
            self._add(key, *(items or self._read(key)))
        if self._released:
            self._release()

    def remove(self, key: PolicyKey) -> None:
        """The policy `key` is gone (or rejected)."""
        self._drop_policy(key)
        self._release()

    def _meets_read(self, services: Services) -> bool:
        """Whether a service of `services` meets one of the other direction's read allows, or
        the policy's own allows meet each other."""
        egress, ingress = services
        for services_out, side in ((egress, self._ingress), (ingress, self._egress)):
            meeting = side.meeting
            for service in services_out:
                if meeting(service):
                    return True
        return services_meet(egress, ingress)

    def _drop_policy(self, key: PolicyKey) -> None:
        """Forget the rules of `key` and close their pairs (dropped at the next `_release`)."""
        if self._unmet.remove(key):
            return
        old = self._policy_rules.pop(key, None)
        if old is None:  # a new policy, or one whose allows were all unmet or none
            return
        old_egress, old_ingress = old
        for names in (old_egress, old_ingress):
            for fq_name in names:
                for pair in self._pairs_of.pop(fq_name, ()):
                    self._forget(pair)
                    partners = self._pairs_of.get(pair[1] if pair[0] == fq_name else pair[0])
                    if partners is not None:
                        partners.discard(pair)
        for side, names in ((self._egress, old_egress), (self._ingress, old_ingress)):
            for fq_name in names:
                side.remove(fq_name)
                del self._policy_of[fq_name]

    def _add(self, key: PolicyKey, egress: Keyed, ingress: Keyed) -> None:
        """File the allows of `key` and pair them with the other direction's."""
        if egress or ingress:
            self._policy_rules[key] = (tuple(fq for fq, _ in egress), tuple(fq for fq, _ in ingress))
            self._policy_of.update((fq_name, key) for fq_name, _ in egress + ingress)
        for side, items in ((self._egress, egress), (self._ingress, ingress)):
            for fq_name, item in items:
                side.add(fq_name, item)
        meeting = self._ingress.meeting
        for fq_name, item in egress:
            if meeting(item.service):  # else no rule of the other side can meet it
                for partner, partner_item in self._partners(self._egress, self._ingress, item):
                    self._pair((fq_name, partner), item, partner_item)
        meeting = self._egress.meeting
        own: Optional[Set[FqName]] = None
        for fq_name, item in ingress:
            if meeting(item.service):
                own = {fq for fq, _ in egress} if own is None else own
                for partner, partner_item in self._partners(self._ingress, self._egress, item):
                    if partner not in own:
                        self._pair((partner, fq_name), partner_item, item)

    @staticmethod
    def _partners(side: _Side, other: _Side, item: Item) -> Iterator[Tuple[FqName, Item]]:
        """The rules of `other` that `item`, a rule of `side` whose service some of them meet,
        may meet."""
        meeting = other.meeting(item.service)
        side.index(item.service)
        for service in meeting:
            other.index(service)
        items = other.items
        for partner in other.candidates(item, side.keys(item), meeting):
            yield partner, items[partner]

    def realise(self) -> None:
        """Write the pairs whose ends the pods changed since the last call now realise, then drop
        those whose ends they no longer do."""
        opened, closed = self._ends.flush()
        for end in opened:
            for pair in self._ends.users(end):
                item = self._possible_pairs[pair]
                if pair not in self._pairs and all(self._ends.realised(e) for e in pod_ends(item)):
                    self._write(pair, item)
        for end in closed:
            for pair in self._ends.users(end):
                if pair in self._pairs:
                    self._withdraw(pair)
        self._release()

    def naming(self, namespace: str) -> Set[PolicyKey]:
        """The policies with a rule whose end is in `namespace`: those whose pairs its labels decide."""
        rules = self._egress.naming(namespace) | self._ingress.naming(namespace)
        return {self._policy_of[fq_name] for fq_name in rules}

    def _pair(self, pair: Pair, egress: Item, ingress: Item) -> None:
        item = meet(egress, ingress)
        if item is None or not self._possible(item):
            return
        self._possible_pairs[pair] = item
        for end in pair:
            self._pairs_of.setdefault(end, set()).add(pair)
        realised = True
        for pods in pod_ends(item):
            realised = self._ends.track(pods, pair) and realised
        if realised:
            self._write(pair, item)

    def _forget(self, pair: Pair) -> None:
        item = self._possible_pairs.pop(pair)
        if pair in self._pairs:
            self._withdraw(pair)
        for end in pod_ends(item):
            self._ends.untrack(end, pair)

    def _write(self, pair: Pair, item: Item) -> None:
        rule = self._emitter.rule(PAIR_BLOCK, item)
        self._pairs[pair] = rule.fq_name
        self._contribute({self._policy_of[pair[0]], self._policy_of[pair[1]]}, 1)
        found = self._rules.get(rule.fq_name)
        self._rules[rule.fq_name] = (rule, found[1] + 1 if found else 1)
        if found is None:
            self._put(rule)

    def _withdraw(self, pair: Pair) -> None:
        self._released.append(self._pairs.pop(pair))
        self._contribute({self._policy_of[pair[0]], self._policy_of[pair[1]]}, -1)

    def _release(self) -> None:
        released, self._released = self._released, []
        for fq_name in released:
            self._unref(fq_name)

    def _contribute(self, policies: Set[PolicyKey], step: int) -> None:
        for policy in policies:
            count = self._contributions.get(policy, 0) + step
            if count:
                self._contributions[policy] = count
            else:
                del self._contributions[policy]

    def _unref(self, fq_name: FqName) -> None:
        rule, count = self._rules[fq_name]
        if count > 1:
            self._rules[fq_name] = (rule, count - 1)
        else:
            del self._rules[fq_name]
            self._drop(rule)


def pod_ends(item: Item) -> Tuple[Pods, ...]:
    """The ends of a pair that are sets of pods (the others, addresses or anything, always match)."""
    src, dst = item.src, item.dst
    if isinstance(src, Pods):
        return (src,) if not isinstance(dst, Pods) or dst == src else (src, dst)
    return (dst,) if isinstance(dst, Pods) else ()
