"""Desired against actual, for one object: what to write next, or what to wait for.

Pure functions, no I/O. The reconciler calls `plan` for one key at a time, with a `View` that answers
questions about the other objects (does it exist, is it being written, did it fail), and carries out
the returned `Step`. Ordering is therefore not a precomputed list but a set of readiness rules, which
is what lets one failing object wait without holding back unrelated ones:

- an object is created or updated only once everything it refers to exists (tags and address groups
  before the rules using them, rules before the policy listing them, policies before the APS);
- an object is deleted only once nothing of ours refers to it any more (the reverse order);
- a ref list (`firewall_rule_refs`, `firewall_policy_refs`) may be written partially: while a target
  is still being written the holder waits, but a target that *failed* is left out for now, so that one
  broken rule cannot keep every other NetworkPolicy out of the APS; a long list changed by a few refs
  is written one `ref-update` per ref, and the two lists that refer to every NetworkPolicy are
  planned from an index of their differences (`reflists`), never scanned whole per event;
- make before break beyond plain existence (SPEC section 7: deny rules only after the policy they
  protect is in force; ref removals only after the deny rules are gone) is the View's `gate_add` and
  `gate_remove`, because only the reconciler knows which objects play which part.

Comparison is "desired is a subset of actual": every field we set must read back equal; what the
server adds (uuid, href, id_perms, tag_ids, ...) is ignored, and so are fields we never set. A missing
field, null, [], {} and a dict of empty values are all "empty". Ref lists are compared as sets of (target, attr).
"""
from __future__ import annotations

import enum
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, AbstractSet, Any, Callable, Dict, Iterator, List, Mapping, Optional, Protocol,
                    Set, Tuple)

from vnc_client.schema import RESOURCE_TYPES

if TYPE_CHECKING:
    from .reflists import RefListIndex

FqName = Tuple[str, ...]
ObjKey = Tuple[str, FqName]  # (resource type, fq_name)

# Ref lists that may be written in part (see the module docstring); every other ref is all or nothing.
PARTIAL_REF_FIELDS = frozenset({"firewall_rule_refs", "firewall_policy_refs"})
# A ref list longer than this changed by at most this many refs is updated with one `ref-update` per
# ref instead of a PUT of the whole list (the APS and `<cluster>-denyall` refer to every NetworkPolicy:
# SPEC 5, one ref change per policy).
LONG_REF_LIST = 16
# Fields that name the object rather than describe it: never sent in an update.
IDENTITY_FIELDS = frozenset({"fq_name", "parent_type", "uuid", "parent_uuid"})
# What `kept` keeps of an object's fields beyond those we set: how to address it, and the id the
# config API gives a tag (shown by introspect).
KEPT_FIELDS = ("uuid", "tag_id")
ENDPOINT_FIELDS = ("endpoint_1", "endpoint_2")


class Progress(enum.Enum):
    """Where a referred-to object (or a gate) stands, from the point of view of a waiting object."""

    READY = "ready"        # exists / gate open: go ahead
    PENDING = "pending"    # being written: wait for it
    BLOCKED = "blocked"    # failed, retried later: do what can be done without it


class View(Protocol):
    """What `plan` may ask about the rest of the world."""

    def present(self, key: ObjKey) -> bool:
        """The object exists in the config API (ours, or a shared object we may use)."""

    def progress(self, waiter: ObjKey, key: ObjKey) -> Progress:
        """How `key`, which does not (yet) exist or is not yet as `waiter` needs it, is getting on."""

    def gate_add(self, holder: ObjKey, ref_field: str, target: ObjKey) -> Optional[ObjKey]:
        """An object whose progress must come first before `holder` may add the ref, else None."""

    def gate_remove(self, holder: ObjKey, ref_field: str) -> Optional[ObjKey]:
        """An object whose progress must come first before `holder` may drop refs, else None."""

    def referrers(self, key: ObjKey) -> List[ObjKey]:
        """Objects of ours (pods included) that still refer to `key` in the config API."""


@dataclass
class Step:
    """The next thing to do for one key.

    `action` is `none`, `create`, `update`, `delete` or `wait`. `body` is the full body to create or
    the changed fields to update; `ref_change`, when set, says that update is one ref moved in a long
    ref list, to send as one `ref-update` (`body` is then empty; more moves may follow). `complete` says whether the object equals its desired state once
    this step is done; when it is not, `pending` (being written: wait) and `blocked` (failed: retry
    later) name the objects it still depends on.
    """

    action: str
    body: Dict[str, Any] = field(default_factory=dict)
    uuid: Optional[str] = None
    complete: bool = True
    pending: List[ObjKey] = field(default_factory=list)
    blocked: List[ObjKey] = field(default_factory=list)
    ref_change: Optional["RefChange"] = None  # an update that is one ref-update (see LONG_REF_LIST)


# --- references --------------------------------------------------------------------------------


def tag_key(tag: str) -> ObjKey:
    """`"type=value"` (global) or `"domain:project:type=value"` (scoped) as a tag key."""
    return ("tag", tuple(tag.split(":")))


def address_group_key(name: str) -> ObjKey:
    """A rule endpoint's `address_group` (`"default-policy-management:<name>"`) as a key."""
    return ("address-group", tuple(name.split(":")))


def ref_target_type(obj_type: str, ref_field: str) -> str:
    rt = RESOURCE_TYPES.get(obj_type)
    if rt is not None and ref_field in rt.ref_types:
        return rt.ref_types[ref_field]
    return ref_field[: -len("_refs")].replace("_", "-")


def ref_fields(body: Mapping[str, Any]) -> Iterator[str]:
    return (name for name in body if name.endswith("_refs"))


def refs(obj_type: str, body: Mapping[str, Any], ref_field: str) -> List[Tuple[ObjKey, Any]]:
    """The (target key, attr) pairs of one ref list, in body order."""
    target_type = ref_target_type(obj_type, ref_field)
    result = []
    for ref in body.get(ref_field) or []:
        if isinstance(ref, dict) and ref.get("to"):
            result.append(((target_type, tuple(ref["to"])), ref.get("attr")))
    return result


def endpoint_targets(body: Mapping[str, Any]) -> List[ObjKey]:
    """Tags and address groups named in a firewall rule's endpoints."""
    targets: List[ObjKey] = []
    for name in ENDPOINT_FIELDS:
        endpoint = body.get(name) or {}
        targets.extend(tag_key(t) for t in endpoint.get("tags") or [])
        if endpoint.get("address_group"):
            targets.append(address_group_key(endpoint["address_group"]))
    return targets


def all_targets(obj_type: str, body: Mapping[str, Any], skip: AbstractSet[str] = frozenset()) -> List[ObjKey]:
    """Every object `body` refers to: ref lists (but those in `skip`) and rule endpoints."""
    targets = [key for name in ref_fields(body) if name not in skip for key, _attr in refs(obj_type, body, name)]
    if obj_type == "firewall-rule":
        targets.extend(endpoint_targets(body))
    return targets


# --- comparison --------------------------------------------------------------------------------


def _empty(value: Any) -> bool:
    """None, [], {} or a dict of nothing but empty values (`{"subnet": []}` reads back as null)."""
    if isinstance(value, dict):
        return all(_empty(v) for v in value.values())
    return value is None or value == []


def same(desired: Any, actual: Any) -> bool:
    """`desired` reads back as `actual`: dicts by desired's keys (extra actual keys ignored), lists
    element by element, scalars by equality; empty values are all equal."""
    if desired is actual or desired == actual:
        return True  # the common cases (a field kept as desired, see `kept`), decided at C speed
    if _empty(desired) or _empty(actual):
        return _empty(desired) and _empty(actual)
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(same(v, actual.get(k)) for k, v in desired.items())
    if isinstance(desired, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(desired) == len(actual)
                and all(same(d, a) for d, a in zip(desired, actual, strict=True)))
    return desired == actual


def attr_key(attr: Any) -> Any:
    """A hashable, order-free form of a ref's attr (`{"sequence": "1.0"}` -> `(("sequence", "1.0"),)`);
    null, {} and a dict of nulls are all None."""
    if isinstance(attr, dict):
        if len(attr) == 1:  # the usual {"sequence": "..."}: no sort needed
            ((name, value),) = attr.items()
            if value is None or isinstance(value, str):
                return None if value is None else ((name, value),)
        items = tuple(sorted((k, v) for k, v in attr.items() if v is not None))
        if not items:
            return None
        try:
            hash(items)
        except TypeError:  # nested values: fall back to canonical JSON
            return json.dumps(dict(items), sort_keys=True)
        return items
    return None if _empty(attr) else json.dumps(attr, sort_keys=True)


def same_refs(obj_type: str, ref_field: str, desired: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    def canon(body: Mapping[str, Any]) -> Counter:
        return Counter((key, attr_key(attr)) for key, attr in refs(obj_type, body, ref_field))
    return canon(desired) == canon(actual)


def changed_fields(obj_type: str, desired: Mapping[str, Any], actual: Mapping[str, Any],
                   skip: AbstractSet[str] = frozenset()) -> Dict[str, Any]:
    """The top-level fields of `desired` that `actual` does not hold; what a partial PUT sends."""
    changed = {}
    for name, value in desired.items():
        if name in IDENTITY_FIELDS or name in skip or value is actual.get(name):
            continue
        equal = (same_refs(obj_type, name, desired, actual) if name.endswith("_refs")
                 else same(value, actual.get(name)))
        if not equal:
            changed[name] = value
    return changed


@dataclass(frozen=True)
class RefChange:
    """One ref added (or its attr changed) or deleted: what `POST /ref-update` does."""

    ref_field: str
    operation: str  # "ADD" | "DELETE"
    target: ObjKey
    attr: Any = None


def kept(obj_type: str, desired: Optional[Mapping[str, Any]], actual: Dict[str, Any],
         skip: AbstractSet[str] = frozenset()) -> Dict[str, Any]:
    """What the reconciler keeps of `actual`, an object as the config API holds it, to diff it
    against `desired` later: its KEPT_FIELDS and the fields we set, each field that reads back as
    desired kept as desired's own (shared) value. A full copy of every written object (what the
    server adds: name, hrefs, parent uuid; every value decoded anew) was most of the daemon's memory
    at 75,000 NetworkPolicies. An object we do not want (desired None) is kept whole: it is
    deleted soon, and introspect shows it as the config API has it. `skip`: fields kept as they
    are (the ref lists a RefListIndex owns)."""
    if desired is None:
        return actual
    result = {name: actual[name] for name in KEPT_FIELDS if name in actual}
    for name, value in desired.items():
        if name not in actual:
            continue
        held = actual[name]
        if name not in skip and (same_refs(obj_type, name, desired, actual) if name.endswith("_refs")
                                 else same(value, held)):
            held = value
        result[name] = held
    return result


def matches(obj_type: str, desired: Mapping[str, Any], actual: Optional[Mapping[str, Any]]) -> bool:
    """The object in the config API is exactly as desired (for every field we set)."""
    return actual is not None and not changed_fields(obj_type, desired, actual)


# --- planning ----------------------------------------------------------------------------------


def plan(key: ObjKey, desired: Optional[Mapping[str, Any]], actual: Optional[Mapping[str, Any]],
         view: View, indexed: Optional[Mapping[str, "RefListIndex"]] = None) -> Step:
    """The next step that brings the object `key` closer to `desired` without breaking anything.

    `indexed` maps the ref fields of `key` that have a `RefListIndex` (the APS and
    `<cluster>-denyall`) to it: those lists are planned from the targets where desired and actual
    differ, never scanned whole unless they are written whole."""
    if desired is None:
        if actual is None:
            return Step("none")
        return _plan_delete(key, actual, view)
    return _plan_write(key, desired, actual, view, indexed or {})


def _sort_waits(step: Step, waiter: ObjKey, keys: List[ObjKey], view: View) -> None:
    for target in keys:
        if view.progress(waiter, target) is Progress.PENDING:
            step.pending.append(target)
        else:
            step.blocked.append(target)


def _plan_delete(key: ObjKey, actual: Mapping[str, Any], view: View) -> Step:
    step = Step("delete", uuid=actual.get("uuid"))
    _sort_waits(step, key, [r for r in view.referrers(key) if r != key], view)
    if step.pending or step.blocked:
        step.action = "wait"
        step.complete = False
    return step


def _plan_write(key: ObjKey, desired: Mapping[str, Any], actual: Optional[Mapping[str, Any]],
                view: View, indexed: Mapping[str, "RefListIndex"]) -> Step:
    obj_type = key[0]
    body: Dict[str, Any] = dict(desired)
    waits: List[ObjKey] = []          # all-or-nothing dependencies
    partial = Step("none")            # collects what partial ref lists wait for / leave out
    lists: Dict[str, _RefListPlan] = {}

    for name in list(ref_fields(desired)):
        if name in indexed:
            lists[name] = _next_indexed_list(key, name, indexed[name], desired, view, partial)
        elif name in PARTIAL_REF_FIELDS:
            lists[name] = _next_ref_list(key, name, desired, actual, view, partial)
        else:
            waits.extend(t for t, _attr in refs(obj_type, desired, name) if not view.present(t))
    if obj_type == "firewall-rule":
        waits.extend(t for t in endpoint_targets(desired) if not view.present(t))

    step = Step("wait", complete=False, pending=partial.pending)
    _sort_waits(step, key, list(dict.fromkeys(waits)), view)
    if step.pending or step.blocked:
        return step  # wait for what is being written; a failed hard dependency blocks us too
    step.blocked = partial.blocked
    step.complete = not partial.blocked
    if actual is None:
        step.action = "create"
        step.body = body
        body.update((name, plan_.refs) for name, plan_ in lists.items())
        return step
    step.uuid = actual.get("uuid")
    step.body = changed_fields(obj_type, body, actual, skip=lists.keys())
    moving = [plan_ for plan_ in lists.values() if plan_.moves]
    if not step.body and len(moving) == 1 and moving[0].one_at_a_time():
        step.action = "update"
        step.ref_change = moving[0].moves[0]
        return step
    step.body.update((plan_.name, plan_.refs) for plan_ in moving)
    step.action = "update" if step.body else "none"
    return step


@dataclass
class _RefListPlan:
    """One partial ref list planned: the refs that move now, and the whole list to write (built
    only when it is written whole: at a create, or with more than a few moves)."""

    name: str
    moves: List[RefChange]           # additions and attr changes first, then deletions
    long: bool                       # more than LONG_REF_LIST refs before or after
    build: Callable[[], List[Dict[str, Any]]]
    _refs: Optional[List[Dict[str, Any]]] = None

    @property
    def refs(self) -> List[Dict[str, Any]]:
        if self._refs is None:
            self._refs = self.build()
        return self._refs

    def one_at_a_time(self) -> bool:
        """Send the moves as `ref-update`s: a long list changed by a few refs (SPEC 5: one ref
        change per policy); a short list, or many moves, is one PUT of the whole list."""
        return self.long and 0 < len(self.moves) <= LONG_REF_LIST


def _next_ref_list(key: ObjKey, name: str, desired: Mapping[str, Any], actual: Optional[Mapping[str, Any]],
                   view: View, partial: Step) -> _RefListPlan:
    """The ref list to write now: the refs we may keep or add, in desired order; removals only when
    their gate allows, else the old refs stay (appended, in their actual order)."""
    obj_type = key[0]
    held = {target: attr for target, attr in refs(obj_type, actual or {}, name)}
    wanted = refs(obj_type, desired, name)
    result: List[Dict[str, Any]] = []
    moves: List[RefChange] = []
    for target, attr in wanted:
        if target in held:
            if attr != held[target] and attr_key(attr) != attr_key(held[target]):
                moves.append(RefChange(name, "ADD", target, attr))
        else:
            blocker = target if not view.present(target) else view.gate_add(key, name, target)
            if blocker is not None:
                _sort_waits(partial, key, [blocker], view)
                continue
            moves.append(RefChange(name, "ADD", target, attr))
        result.append({"to": list(target[1]), "attr": attr})
    wanted_targets = {target for target, _attr in wanted}
    dropped = [(t, a) for t, a in held.items() if t not in wanted_targets]
    if dropped:
        blocker = view.gate_remove(key, name)
        if blocker is not None:
            _sort_waits(partial, key, [blocker], view)
            result.extend({"to": list(t[1]), "attr": a} for t, a in dropped)
        else:
            moves.extend(RefChange(name, "DELETE", t) for t, _a in dropped)
    return _RefListPlan(name, moves, max(len(held), len(result)) > LONG_REF_LIST, lambda: result)


def _next_indexed_list(key: ObjKey, name: str, index: "RefListIndex", desired: Mapping[str, Any],
                       view: View, partial: Step) -> _RefListPlan:
    """`_next_ref_list` for a list with an index: the same decisions, taken only for the targets
    where desired and actual differ (every other ref is kept as it is)."""
    moves: List[RefChange] = []
    held_back: Set[ObjKey] = set()
    dropped: List[ObjKey] = []
    for target in sorted(index.differ):
        if target not in index.desired:
            dropped.append(target)
            continue
        attr = index.desired[target]
        if target not in index.actual:
            blocker = target if not view.present(target) else view.gate_add(key, name, target)
            if blocker is not None:
                _sort_waits(partial, key, [blocker], view)
                held_back.add(target)
                continue
        moves.append(RefChange(name, "ADD", target, attr))
    kept: List[ObjKey] = []
    if dropped:
        blocker = view.gate_remove(key, name)
        if blocker is not None:
            _sort_waits(partial, key, [blocker], view)
            kept = dropped
        else:
            moves.extend(RefChange(name, "DELETE", target) for target in dropped)

    def build() -> List[Dict[str, Any]]:
        result = [{"to": list(target[1]), "attr": attr} for target, attr in refs(key[0], desired, name)
                  if target not in held_back]
        result.extend({"to": list(target[1]), "attr": index.actual[target]} for target in kept)
        return result
    return _RefListPlan(name, moves, len(index) > LONG_REF_LIST, build)
