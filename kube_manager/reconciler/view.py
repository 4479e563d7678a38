"""What the key handlers may ask about the rest of the reconciler: a narrow, read-mostly view.

`ObjectWriter` (writer.py) and `PodTagger` (pods.py) plan one key at a time; `diff.plan` asks
whether an object exists, how a key it waits for is getting on, and what make before break holds
back (gates.py). They get this view, never the `Reconciler` that owns them: the calls go down from
the reconciler to its handlers, and the handlers only read the books they share
(`Bookkeeping`: what the config API holds, where each key stands).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Callable, List, Optional, Set, Tuple, Union

from .actual import ActualState
from .diff import ObjKey, Progress
from .gates import Gates
from .pods import PodKey
from .progress import ProgressBook

WorkKey = Union[ObjKey, PodKey]


@dataclass(eq=False)
class KeyView:
    """`diff.View` and the writer's make-before-break gate, over one reconciler's books."""

    actual: ActualState
    book: ProgressBook
    gates: Gates
    # Pods whose VMIs still carry a tag they should not (the pods' tagger: it reads this view too,
    # so it is made after it).
    pod_referrers: Callable[[str], List[PodKey]] = field(default=lambda tag: [])

    def present(self, key: ObjKey) -> bool:
        return self.actual.present(key)

    def progress(self, waiter: WorkKey, key: WorkKey) -> Progress:
        return self.book.progress(waiter, key, self._may_appear(key))

    def gate_add(self, holder: ObjKey, ref_field: str, target: ObjKey) -> Optional[WorkKey]:
        return self.gates.gate_add(self.actual, holder, ref_field, target)

    def gate_remove(self, holder: ObjKey, ref_field: str) -> Optional[ObjKey]:
        return self.gates.gate_remove(self.actual, holder)

    def gate_write(self, key: ObjKey) -> Optional[WorkKey]:
        return self.gates.gate_write(self.actual, key)

    def referrers(self, key: ObjKey) -> List[WorkKey]:
        found: List[WorkKey] = list(self.actual.referrers(key))
        if key[0] == "tag" and len(key[1]) == 1:
            found.extend(self.pod_referrers(key[1][0]))
        return found

    def managed_tag(self, tag: str) -> bool:
        """Tags a pod's VMI may lose: ours, or wanted by us (another cluster's are left alone)."""
        key = ("tag", (tag,))
        return self.actual.get(key) is not None or self.actual.desired(key) is not None

    def tier_hold(self, removed: AbstractSet[str]) -> Tuple[Set[str], List[ObjKey]]:
        """Tags a pod keeps for now, and what it waits for to drop them (tiers.py)."""
        return self.gates.tiers.hold(self.actual, removed)

    def _may_appear(self, key: WorkKey) -> bool:
        """Whether something will (or does) exist under `key`: a pod waited for is there to be
        tagged; an object, if desired or in the config API."""
        if isinstance(key, PodKey):
            return True
        return self.actual.desired(key) is not None or self.actual.present(key)
