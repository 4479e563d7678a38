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

from .flow_rules import sequence_key

FqName = Tuple[str, ...]
# Units of work (a ref read, a rule compiled and filed, an object's identity checked) between two
# turns a stepwise update gives its caller: a few milliseconds of Python.
STEP = 400

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
    """The targets of a ref list, each with its sort key (its first ref's, where a stable sort by
    sequence puts it), kept by the identity of the refs: a list changed in place, or a new list
    sharing most of its refs, costs what came or went (the deny-all policy refers to a rule per
    NetworkPolicy)."""

    __slots__ = ("refs", "keys", "_all", "_by_id")

    def __init__(self) -> None:
        self.refs: List[Any] = []
        self.keys: Dict[FqName, Tuple[Any, ...]] = {}
        self._all: Dict[FqName, List[Tuple[Any, ...]]] = {}  # every ref's key, by target
        self._by_id: Dict[int, Any] = {}  # the refs of `refs` by identity (held there, so never reused)

    def update(self, refs: List[Any], pace: Pace) -> Generator[None, None, Set[FqName]]:
        """Steps ending with the targets whose refs came or went. The list is copied before the
        first step, so a list changed in place meanwhile is read as it was."""
        if refs == self.refs:
            return set()
        refs = list(refs)
        after = dict(zip(map(id, refs), refs))
        touched: Set[FqName] = set()
        before = self._by_id
        # Read afresh (most policies, at a build), every ref came: no difference to take.
        changes = (((False, after),) if not before else
                   ((True, before.keys() - after.keys()), (False, after.keys() - before.keys())))
        for gone, idents in changes:
            for ident in idents:
                ref = (self._by_id if gone else after)[ident]
                target = tuple(ref.get("to") or ())
                keys = self._all.setdefault(target, [])
                if gone:
                    keys.remove(sequence_key(ref))
                else:
                    keys.append(sequence_key(ref))
                touched.add(target)
                if pace.due():
                    yield
        self.refs, self._by_id = refs, after
        for target in touched:
            keys = self._all[target]
            if keys:
                self.keys[target] = min(keys)
            else:
                del self._all[target], self.keys[target]
            if pace.due():
                yield
        return touched


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
