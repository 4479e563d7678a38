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

How an object compares with what the config API holds, and which objects it refers to, is
`compare`'s.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Protocol, Set

if TYPE_CHECKING:
    from .reflists import RefListIndex

from .compare import ObjKey, attr_key, changed_fields, endpoint_targets, ref_fields, refs

# Ref lists that may be written in part (see the module docstring); every other ref is all or nothing.
PARTIAL_REF_FIELDS = frozenset({"firewall_rule_refs", "firewall_policy_refs"})
# A ref list longer than this changed by at most this many refs is updated with one `ref-update` per
# ref instead of a PUT of the whole list (the APS and `<cluster>-denyall` refer to every NetworkPolicy:
# SPEC 5, one ref change per policy).
LONG_REF_LIST = 16


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
    ref_change: Optional["RefUpdate"] = None  # an update that is one ref-update (see LONG_REF_LIST)
    # With `ref_change`: the ref-updates that may be sent at once, `ref_change` first (see `_at_once`).
    ref_batch: List["RefUpdate"] = field(default_factory=list)


@dataclass(frozen=True)
class RefUpdate:
    """One ref added (or its attr changed) or deleted: what `POST /ref-update` does."""

    ref_field: str
    operation: str  # "ADD" | "DELETE"
    target: ObjKey
    attr: Any = None


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
        step.ref_batch = _at_once(moving[0].moves)
        return step
    step.body.update((plan_.name, plan_.refs) for plan_ in moving)
    step.action = "update" if step.body else "none"
    return step


def _at_once(moves: List[RefUpdate]) -> List[RefUpdate]:
    """The leading additions of `moves`, which may go out together: each passed its gate against
    the refs held now, and no addition's gate depends on another addition (a deny rule waits for
    its own policy, a policy for its own pair), so any of them landing first is a state the moves
    one at a time could have passed through. Deletions wait for every addition before them
    (make before break), so a batch is additions only, or the first deletion alone."""
    batch: List[RefUpdate] = []
    for move in moves:
        if move.operation != "ADD":
            break
        batch.append(move)
    return batch or moves[:1]


@dataclass
class _RefListPlan:
    """One partial ref list planned: the refs that move now, and the whole list to write (built
    only when it is written whole: at a create, or with more than a few moves)."""

    name: str
    moves: List[RefUpdate]           # additions and attr changes first, then deletions
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
    moves: List[RefUpdate] = []
    for target, attr in wanted:
        if target in held:
            if attr != held[target] and attr_key(attr) != attr_key(held[target]):
                moves.append(RefUpdate(name, "ADD", target, attr))
        else:
            blocker = target if not view.present(target) else view.gate_add(key, name, target)
            if blocker is not None:
                _sort_waits(partial, key, [blocker], view)
                continue
            moves.append(RefUpdate(name, "ADD", target, attr))
        result.append({"to": list(target[1]), "attr": attr})
    wanted_targets = {target for target, _attr in wanted}
    dropped = [(t, a) for t, a in held.items() if t not in wanted_targets]
    if dropped:
        blocker = view.gate_remove(key, name)
        if blocker is not None:
            _sort_waits(partial, key, [blocker], view)
            result.extend({"to": list(t[1]), "attr": a} for t, a in dropped)
        else:
            moves.extend(RefUpdate(name, "DELETE", t) for t, _a in dropped)
    return _RefListPlan(name, moves, max(len(held), len(result)) > LONG_REF_LIST, lambda: result)


def _next_indexed_list(key: ObjKey, name: str, index: "RefListIndex", desired: Mapping[str, Any],
                       view: View, partial: Step) -> _RefListPlan:
    """`_next_ref_list` for a list with an index: the same decisions, taken only for the targets
    where desired and actual differ (every other ref is kept as it is)."""
    moves: List[RefUpdate] = []
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
        moves.append(RefUpdate(name, "ADD", target, attr))
    kept: List[ObjKey] = []
    if dropped:
        blocker = view.gate_remove(key, name)
        if blocker is not None:
            _sort_waits(partial, key, [blocker], view)
            kept = dropped
        else:
            moves.extend(RefUpdate(name, "DELETE", target) for target in dropped)

    def build() -> List[Dict[str, Any]]:
        result = [{"to": list(target[1]), "attr": attr} for target, attr in refs(key[0], desired, name)
                  if target not in held_back]
        result.extend({"to": list(target[1]), "attr": index.actual[target]} for target in kept)
        return result
    return _RefListPlan(name, moves, len(index) > LONG_REF_LIST, build)
