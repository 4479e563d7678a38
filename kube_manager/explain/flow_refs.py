"""The ref lists a `RuleIndex` (flow_index.py) keeps: the APS's refs to its policies and each
policy's refs to its rules, each target with its sort key, read by the identity of the refs; and
the pace at which an update done in steps gives the caller its turn.

The translator changes two ref lists in place (the APS's, `<cluster>-denyall`'s, one ref per
NetworkPolicy each), so a list is diffed against a copy kept here, by the identity of its refs:
what came or went costs, what stayed does not.
"""
from __future__ import annotations

from typing import Any, Dict, Generator, List, Mapping, Optional, Set, Tuple

from kube_manager.translator.bodies import annotation_values

from .flow_rules import RefSequence, sequence_of

FqName = Tuple[str, ...]
# Units of work (a ref read, a rule compiled and filed, an object's identity checked) between two
# turns a stepwise update gives its caller: a few milliseconds of Python.
STEP = 400
# A ref list longer than this keeps its refs by identity from one update to the next (the APS's and
# the deny-all policy's, changed in place at every NetworkPolicy change); a shorter one (a policy's
# rules, replaced with their body) finds them anew when it changed, instead of holding a map of
# them for as long as the index lives.
LONG_REFS = 64

Steps = Generator[None, None, Any]


class Pace:
    """Counts the work of a stepwise update; `due` says when to give the caller its turn."""

    __slots__ = ("_step", "_left")

    def __init__(self, step: int = STEP) -> None:
        self._step = self._left = step

    def due(self) -> bool:
        self._left -= 1
        if self._left > 0:
            return False
        self._left = self._step
        return True


class RefTargets:
    """The targets of a ref list, each with its sort key (its first ref's sequence, where a stable
    sort by sequence puts it; ties are broken by the target's name, the same for every ref to
    it, so it is left out), kept by the identity of the refs: a list changed in place, or a new
    list sharing most of its refs, costs what came or went (the deny-all policy refers to a rule
    per NetworkPolicy). Every ref's sequence is kept only for a target with several refs, which
    the translator never writes: one key per target is what the index holds most of."""

    __slots__ = ("refs", "keys", "_twins", "_by_id")

    def __init__(self) -> None:
        self.refs: List[Any] = []
        self.keys: Dict[FqName, RefSequence] = {}
        self._twins: Optional[Dict[FqName, List[RefSequence]]] = None  # every ref's key, for a target with several
        # The refs of `refs` by identity (held there, so never reused), kept for a long list.
        self._by_id: Optional[Dict[int, Any]] = None

    def update(self, refs: List[Any], pace: Pace, seen: Dict[str, RefSequence]) -> Generator[None, None, Set[FqName]]:
        """Steps ending with the targets whose refs came or went. The list is copied before the
        first step, so a list changed in place meanwhile is read as it was. `seen`: the sequence
        keys of this pass (`sequence_of`)."""
        if refs == self.refs:
            return set()
        refs = list(refs)
        after = dict(zip(map(id, refs), refs))
        touched: Set[FqName] = set()
        before = self._by_id if self._by_id is not None else dict(zip(map(id, self.refs), self.refs))
        # Read afresh (most policies, at a build), every ref came: no difference to take.
        changes = (((False, after),) if not before else
                   ((True, before.keys() - after.keys()), (False, after.keys() - before.keys())))
        for gone, idents in changes:
            for ident in idents:
                ref = (before if gone else after)[ident]
                target = tuple(ref.get("to") or ())
                if gone:
                    self._drop(target, sequence_of(ref, seen))
                else:
                    self._add(target, sequence_of(ref, seen))
                touched.add(target)
                if pace.due():
                    yield
        self.refs, self._by_id = refs, after if len(refs) > LONG_REFS else None
        return touched

    def _add(self, target: FqName, key: RefSequence) -> None:
        first = self.keys.get(target)
        if first is None:
            self.keys[target] = key
            return
        if self._twins is None:
            self._twins = {}
        self._twins.setdefault(target, [first]).append(key)
        self.keys[target] = min(first, key)

    def _drop(self, target: FqName, key: RefSequence) -> None:
        every = self._twins
        twins = every.get(target) if every is not None else None
        if every is None or twins is None:  # its only ref
            del self.keys[target]
            return
        twins.remove(key)
        self.keys[target] = min(twins)
        if len(twins) == 1:
            del every[target]


class PolicyState:
    """A firewall policy as last read: its body, its rules (`RefTargets`) and the NetworkPolicy
    it says it comes from (its `namespace`/`name` annotations, SPEC 1)."""

    __slots__ = ("body", "rules", "network_policy")

    def __init__(self) -> None:
        self.body: Optional[Mapping[str, Any]] = None
        self.rules = RefTargets()
        self.network_policy: Optional[str] = None

    def read(self, body: Mapping[str, Any]) -> None:
        self.body = body
        namespace, name = annotation_values(body, "namespace", "name")
        self.network_policy = f"{namespace}/{name}" if name else None
