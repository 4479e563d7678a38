"""The index of the rules a flow is evaluated against, kept up to date from one look at the
objects to the next (`flow.py`'s `ContrailEvaluator` queries it).

Each oriented rule entry is filed under one key per endpoint (its `any`, each prefix of its address
group, or its rarest tag when it was filed: a workload matching a tag endpoint carries every one of
its tags, so any of them would do), by the pair of its source's and its destination's keys, and a
query only looks at the entries filed under a pair of keys its two ends carry. The candidates are
then put in evaluation order (SPEC 6) by their rank: the APS sort key of their policy, then their
policy's sort key of their rule. Ranks are looked up when a question sorts its candidates, so a
policy that moves in the APS, or a rule in its policy, is not filed again.

`update(source)` brings the index to the objects `source` holds. The translator never modifies a
body it published, it replaces it, so what changed is found by identity and only that is compiled
and filed again; the two ref lists it changes in place (the APS's, `<cluster>-denyall`'s) are
diffed by the identity of their refs against a copy kept here (flow_refs.py). Told which objects the
translator's change reports named since the last update (`touched`), an update looks at those
only and costs in proportion to the change; otherwise it looks at every object (identity checks,
no parsing). The first update builds the whole index. Building from a translation is one update
of an empty index, so an index kept up to date and one built afresh are the same code (property
tests check that they answer alike).
"""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import (Any, Callable, Collection, Dict, FrozenSet, Generator, Iterable, Iterator, List, Mapping, Optional,
                    Set, Tuple)

from .flow_refs import STEP, Pace, PolicyState, RefTargets, Steps
from .flow_rules import Prefix, RefSequence, RuleEndpoint, RuleEntry, SharedParts, oriented, parse_prefixes, target_name

log = logging.getLogger(__name__)

FqName = Tuple[str, ...]
ObjKey = Tuple[str, FqName]  # (resource type, fq_name)
IndexKey = Tuple[Any, ...]
Pair = Tuple[FqName, FqName]  # (firewall policy, firewall rule)
ANY_KEY: IndexKey = ("any",)
GROUP, POLICY, RULE = "address-group", "firewall-policy", "firewall-rule"
_LAST = (1,)  # ranks after every policy of the APS


@dataclass(frozen=True)
class RuleSource:
    """What the index reads: the APS, the bodies of the other kinds by fq_name (read-only, shared
    with their owner), and each workload's tags (asked when the whole index is read, to count how
    many carry each tag: that only chooses where a rule is filed, never what it matches)."""

    application_policy_set: Optional[Mapping[str, Any]]
    firewall_policies: Mapping[FqName, Mapping[str, Any]]
    firewall_rules: Mapping[FqName, Mapping[str, Any]]
    address_groups: Mapping[FqName, Mapping[str, Any]]
    workload_tags: Callable[[], Iterable[Iterable[str]]]  # each workload's tags, a list made when called


class FiledRule:
    """One entry as an index files it: the entry, the policy it is in, which of its rule's
    entries it is, and the keys it is filed under (its endpoints' when it was filed, to unfile
    it from the same). The index's key sets hold these themselves, by identity: one object per
    entry where a number for it would take a map from the number to each of these."""

    __slots__ = ("entry", "policy", "orientation", "source_keys", "destination_keys")

    def __init__(self, entry: RuleEntry, policy: FqName, orientation: int) -> None:
        self.entry, self.policy, self.orientation = entry, policy, orientation
        self.source_keys: List[IndexKey] = []
        self.destination_keys: List[IndexKey] = []


class OrientedRules:
    """Each firewall rule body's compiled entries, kept from one index to the next (for callers
    building several indexes over translations that share most bodies, as the staged runs do).

    Keyed by the body's identity: the translator's rule bodies are immutable and a changed rule
    is a new body, so an unchanged body compiles to the same entries. (Not so its policies: the
    deny-all policy's and the APS's ref lists are kept in place, so they are read anew each time.)
    Each kept body is held, so its identity cannot pass to another object while it is a key.
    `compiled` counts the bodies compiled anew (what a rebuild after one change should keep small)."""

    def __init__(self) -> None:
        self._kept: Dict[int, Tuple[Mapping[str, Any], str, Tuple[str, ...], List[RuleEntry]]] = {}
        self._used: Dict[int, Tuple[Mapping[str, Any], str, Tuple[str, ...], List[RuleEntry]]] = {}
        self.compiled = 0

    def entries(self, policy: str, rule_fq: Tuple[str, ...], rule: Mapping[str, Any],
                parts: Optional[SharedParts] = None) -> List[RuleEntry]:
        """The rule's oriented entries in `policy`, compiled only if this body was not seen."""
        found = self._used.get(id(rule)) or self._kept.get(id(rule))
        if found is None or found[0] is not rule or found[1] != policy or found[2] != rule_fq:
            self.compiled += 1
            found = (rule, policy, rule_fq, oriented(policy, rule_fq, rule, parts))
        self._used[id(rule)] = found
        return found[3]

    def settle(self) -> None:
        """An evaluator is built: keep only the bodies it used, so that replaced ones are freed."""
        self._kept, self._used = self._used, {}


class RuleIndex:
    """See the module docstring. `compiled` counts the (policy, rule) pairs compiled so far."""

    def __init__(self, rules: Optional[OrientedRules] = None) -> None:
        self._compiler = rules  # the entries of bodies another index compiled, reused
        self._reset()

    def _reset(self) -> None:
        self.groups: Dict[str, FrozenSet[Prefix]] = {}  # "a:b:c" -> its prefixes
        self.shapes: List[Tuple[int, int]] = []  # the prefix shapes in use: an address is looked up once per shape
        self.entry_count = 0
        # source key -> destination key -> the entries filed under both: one set per pair of keys
        # in use (a few hundred), where a set per key on each side held every entry twice.
        self.by_ends: Dict[IndexKey, Dict[IndexKey, Set[FiledRule]]] = {}
        self.compiled = 0
        self._popularity: Mapping[str, int] = Counter()
        self._group_bodies: Dict[FqName, Mapping[str, Any]] = {}
        self._group_users: Dict[str, Set[FiledRule]] = {}
        self._aps = RefTargets()
        self.policy_keys = self._aps.keys  # policy in the APS -> its sort key
        self._name_keys: Dict[str, RefSequence] = {}  # policy name -> the first sort key of its policies
        self._policies: Dict[FqName, PolicyState] = {}
        # Who refers to whom, as tuples (one element but in rare cases, where a set takes four times
        # the size): policy name -> the policies of the APS so named,
        self._named: Dict[str, Tuple[FqName, ...]] = {}
        self._network_policies: Dict[str, Tuple[FqName, ...]] = {}  # "ns/name" -> the policies naming it
        self._users: Dict[FqName, Tuple[FqName, ...]] = {}  # rule -> the policies referring to it
        self._rules: Dict[FqName, Mapping[str, Any]] = {}
        self._filed: Dict[Pair, Tuple[Any, ...]] = {}  # (the rule's body it was filed from, its entries)
        self._filing: Dict[RuleEndpoint, List[IndexKey]] = {}  # this update's: rules share their endpoints
        self._parts = SharedParts()  # this update's: rules share their endpoints' and services' dicts
        self._sequences: Dict[str, RefSequence] = {}  # this update's: refs share their sequences

    # ---- updating --------------------------------------------------------------------------

    def update(self, source: RuleSource, touched: Optional[Collection[ObjKey]] = None) -> None:
        """Bring the index to `source`: only the objects `touched` (named by the translator's
        change reports since the last update) when given, else every object, by identity. A
        failed update (a rule no flow can be evaluated against) empties the index, so that half
        of one never answers; the next reads every object."""
        for _ in self._steps(source, touched):
            pass

    def steps(self, source: RuleSource, step: int = STEP) -> Iterator[None]:
        """`update(source)` in steps, giving the caller its turn between two (every `STEP` units
        of work: the daemon's event loop runs meanwhile). The maps of `source` are read as they
        were at the first step, the ref lists changed in place (the APS's, the deny-all
        policy's) when their turn comes: whatever changes meanwhile, the next update must be
        told (`touched`), as after any update. Between two steps the index must not be read
        nor updated otherwise: run the rest of the steps first."""
        frozen = RuleSource(source.application_policy_set, dict(source.firewall_policies),
                            dict(source.firewall_rules), dict(source.address_groups), source.workload_tags)
        return self._steps(frozen, None, step)

    def _steps(self, source: RuleSource, touched: Optional[Collection[ObjKey]], step: int = STEP) -> Steps:
        try:
            pace = Pace(step)
            if touched is None or not self.entry_count:
                self._popularity = yield from _counted(source.workload_tags(), pace)
            yield from self._update(source, None if not self.entry_count else touched, pace)
            if self._compiler is not None:
                self._compiler.settle()
        except BaseException:
            self._reset()
            raise
        finally:
            self._filing, self._parts, self._sequences = {}, SharedParts(), {}

    def _update(self, source: RuleSource, touched: Optional[Collection[ObjKey]], pace: Pace) -> Steps:
        keys: Dict[str, Optional[List[FqName]]] = {kind: None for kind in (GROUP, POLICY, RULE)}
        if touched is not None:
            for kind in keys:
                keys[kind] = [fq for resource_type, fq in touched if resource_type == kind]
        moved_groups = yield from self._update_groups(source.address_groups, keys[GROUP], pace)
        entered = yield from self._update_aps(source.application_policy_set, pace)
        todo = yield from self._update_policies(source.firewall_policies, entered, keys[POLICY], pace)
        for rule in (yield from _changed(self._rules, source.firewall_rules, keys[RULE], pace)):
            todo.update((policy, rule) for policy in self._users.get(rule, ()))
            if pace.due():
                yield
        for name in moved_groups:
            for entry in list(self._group_users.get(name, ())):
                self._unfile(entry)
                self._file(entry)
                if pace.due():
                    yield
        for pair in todo:
            self._refile(pair)
            if pace.due():
                yield

    def _update_groups(self, groups: Mapping[FqName, Mapping[str, Any]], keys: Optional[List[FqName]],
                       pace: Pace) -> Generator[None, None, Set[str]]:
        """Steps ending with the names of the groups whose prefixes moved."""
        moved: Set[str] = set()
        parsed: Dict[Tuple[Any, Any], Prefix] = {}
        for fq in (yield from _changed(self._group_bodies, groups, keys, pace)):
            name, body = ":".join(fq), groups.get(fq)
            prefixes = parse_prefixes(body, parsed) if body is not None else None
            if self.groups.get(name) != prefixes:
                moved.add(name)
            if prefixes is None:
                self.groups.pop(name, None)
            else:
                self.groups[name] = prefixes
            if pace.due():
                yield
        if moved:
            self.shapes = sorted({(version, host_bits) for prefixes in self.groups.values()
                                  for version, host_bits, _ in prefixes})
        return moved

    def _update_aps(self, aps: Optional[Mapping[str, Any]], pace: Pace) -> Generator[None, None, Set[FqName]]:
        """Steps ending with the policies that entered or left the APS."""
        before = set(self.policy_keys)
        touched = yield from self._aps.update((aps or {}).get("firewall_policy_refs") or [], pace, self._sequences)
        by_name: Dict[str, List[FqName]] = {}
        for fq in touched:
            by_name.setdefault(fq[-1] if fq else "", []).append(fq)
        for name, fqs in by_name.items():
            named = tuple(fq for fq in self._named.get(name, ()) if fq not in fqs) \
                + tuple(fq for fq in fqs if fq in self.policy_keys)
            if named:
                self._named[name] = named
                self._name_keys[name] = min(self.policy_keys[fq] for fq in named)
            else:
                del self._named[name], self._name_keys[name]
            if pace.due():
                yield
        return {fq for fq in touched if (fq in before) != (fq in self.policy_keys)}

    def _update_policies(self, policies: Mapping[FqName, Mapping[str, Any]], entered: Set[FqName],
                         keys: Optional[List[FqName]], pace: Pace) -> Generator[None, None, Set[Pair]]:
        """Steps ending with the (policy, rule) pairs to file again: those whose rule ref came or
        went, and every pair of a policy that came, went, or entered or left the APS."""
        kept = self._policies
        changed = set(entered)
        if keys is not None:  # a change report names a policy whose ref list changed in place too
            changed.update(keys)
        else:
            new = 0
            for fq, body in policies.items():
                state = kept.get(fq)
                new += state is None
                if state is None or state.body is not body or state.rules.refs != (body.get("firewall_rule_refs") or []):
                    changed.add(fq)
                if pace.due():
                    yield
            if len(kept) + new > len(policies):
                changed.update(kept.keys() - policies.keys())
        todo: Set[Pair] = set()
        for fq in changed:
            state, now = kept.get(fq), policies.get(fq)
            if now is None and fq in self.policy_keys:
                log.warning("APS refers to unknown firewall policy %s", ":".join(fq))
            if state is None and now is None:
                continue
            if state is None:
                state = kept[fq] = PolicyState()
            if state.network_policy is not None:
                _without(self._network_policies, state.network_policy, fq)
            if now is None:
                del kept[fq]
                touched = yield from state.rules.update([], pace, self._sequences)
            else:
                state.read(now)
                touched = yield from state.rules.update(now.get("firewall_rule_refs") or [], pace, self._sequences)
                if state.network_policy is not None:
                    _with(self._network_policies, state.network_policy, fq)
            alone = (fq,)  # what most of its rules' users are: one tuple for them all
            for rule in touched:
                if rule in state.rules.keys:
                    _with(self._users, rule, fq, alone)
                else:
                    _without(self._users, rule, fq)
                if pace.due():
                    yield
            todo.update((fq, rule) for rule in touched)
            if fq in entered:
                todo.update((fq, rule) for rule in state.rules.keys)
        return todo

    def _refile(self, pair: Pair) -> None:
        """The entries of one rule in one policy, as the policy, the rule and the APS now are."""
        policy, rule = pair
        state, body = self._policies.get(policy), self._rules.get(rule)
        wanted = state is not None and rule in state.rules.keys and policy in self.policy_keys
        if wanted and body is None:
            log.warning("policy %s refers to unknown rule %s", policy[-1], rule)
        filed = self._filed.get(pair)
        if filed is not None:
            if wanted and filed[0] is body:
                return
            for entry in self._filed.pop(pair)[1:]:
                self._unfile(entry)
                self.entry_count -= 1
        if not wanted or body is None:
            return
        self.compiled += 1
        name = policy[-1] if policy else ""
        parts = self._parts
        made = self._compiler.entries(name, rule, body, parts) if self._compiler is not None \
            else oriented(name, rule, body, parts)
        entries = tuple(FiledRule(compiled, policy, orientation) for orientation, compiled in enumerate(made))
        for entry in entries:
            self._file(entry)
        self.entry_count += len(entries)
        self._filed[pair] = (body,) + entries

    def _file(self, filed: FiledRule) -> None:
        entry = filed.entry
        filed.source_keys = self._keys_of(entry.source)
        filed.destination_keys = self._keys_of(entry.destination)
        for source in filed.source_keys if filed.destination_keys else ():  # no row without an entry
            row = self.by_ends.setdefault(source, {})
            for destination in filed.destination_keys:
                row.setdefault(destination, set()).add(filed)
        for endpoint in (entry.source, entry.destination):
            if endpoint.kind == "group":
                self._group_users.setdefault(endpoint.group, set()).add(filed)

    def _unfile(self, filed: FiledRule) -> None:
        entry = filed.entry
        for source in filed.source_keys if filed.destination_keys else ():
            row = self.by_ends[source]
            for destination in filed.destination_keys:
                at = row[destination]
                at.discard(filed)
                if not at:
                    del row[destination]
            if not row:
                del self.by_ends[source]
        for endpoint in (entry.source, entry.destination):
            users = self._group_users.get(endpoint.group) if endpoint.kind == "group" else None
            if users is not None:
                users.discard(filed)
                if not users:
                    del self._group_users[endpoint.group]

    def _keys_of(self, endpoint: RuleEndpoint) -> List[IndexKey]:
        """Where an endpoint is filed: every end it matches has one of these keys."""
        found = self._filing.get(endpoint)
        if found is not None:
            return found
        if endpoint.kind == "any":
            found = [ANY_KEY]
        elif endpoint.kind == "group":
            found = [("prefix",) + p for p in self.groups.get(endpoint.group, ())]
        elif endpoint.kind == "tags":
            popularity = self._popularity
            found = [("tag", min(endpoint.tags, key=lambda t: (popularity[t], t)))]
        else:
            found = []
        self._filing[endpoint] = found
        return found

    # ---- reading ---------------------------------------------------------------------------

    def rank(self, filed: FiledRule) -> Tuple[Any, ...]:
        """An entry's place in evaluation order: its policy's in the APS (by sequence, then name),
        its rule's in the policy (the same)."""
        policy, entry = filed.policy, filed.entry
        rule = entry.rule_fq_name
        return (self.policy_keys[policy], target_name(policy), policy, self._policies[policy].rules.keys[rule],
                target_name(rule), rule, filed.orientation)

    def network_policy_rank(self, network_policy: str) -> Tuple[Any, ...]:
        """A sort key of a NetworkPolicy ("ns/name") in the APS evaluation order, read from its
        firewall policy's annotations (SPEC 1), so suffixed names (SPEC 4) need no guessing; after
        every policy of the APS when none of its firewall policies is there."""
        policies = self._network_policies.get(network_policy, ())
        named = [fq for fq in policies if fq and fq[-1] in self._name_keys] if len(policies) > 1 else policies
        last = max(named) if named else None
        key = self._name_keys.get(last[-1]) if last else None
        return (0, key + (last[-1],)) if key is not None and last else _LAST


def _counted(workloads: Iterable[Iterable[str]], pace: Pace) -> Generator[None, None, Mapping[str, int]]:
    """Steps ending with how many workloads carry each tag."""
    counts: Counter[str] = Counter()
    for tags in workloads:
        counts.update(tags)
        if pace.due():
            yield
    return counts


def _with(table: Dict[Any, Tuple[FqName, ...]], key: Any, fq: FqName, alone: Optional[Tuple[FqName]] = None) -> None:
    """`fq` among `key`'s in `table`; `alone`, `(fq,)` shared, when it is the first."""
    found = table.get(key)
    if found is None:
        table[key] = alone or (fq,)
    elif fq not in found:
        table[key] = found + (fq,)


def _without(table: Dict[Any, Tuple[FqName, ...]], key: Any, fq: FqName) -> None:
    rest = tuple(other for other in table[key] if other != fq)
    if rest:
        table[key] = rest
    else:
        del table[key]


def _changed(kept: Dict[FqName, Mapping[str, Any]], current: Mapping[FqName, Mapping[str, Any]],
             keys: Optional[List[FqName]], pace: Pace) -> Generator[None, None, List[FqName]]:
    """Steps ending with the fq_names among `keys` (every one when None) whose body came, went or
    was replaced; `kept` is brought to `current` for them."""
    if keys is None:
        changed = []
        for fq, body in current.items():
            if kept.get(fq) is not body:
                changed.append(fq)
            if pace.due():
                yield
        if len(kept) + sum(fq not in kept for fq in changed) > len(current):
            changed.extend(kept.keys() - current.keys())
    else:
        changed = [fq for fq in set(keys) if kept.get(fq) is not current.get(fq)]
    for fq in changed:
        now = current.get(fq)
        if now is None:
            kept.pop(fq, None)
        else:
            kept[fq] = now
        if pace.due():
            yield
    return changed
