"""A ref list kept in sequence order under frequent small changes (the APS and `<cluster>-denyall`).

These two objects refer to every NetworkPolicy of the cluster (75,000 refs in Antrea's XLarge
shape). Rebuilding their ref lists on every policy event would cost O(n log n) per event; instead
changes are staged and applied by binary search, or by one sort when a bulk load staged many.
"""
from __future__ import annotations

import bisect
from typing import Dict, List, Optional, Tuple

from .bodies import Body, FqName, ref_body, sequence_attr
from .naming import sequence_sort_key

# (operation "ADD" | "DELETE", target fq_name, sequence)
RefOperation = Tuple[str, FqName, str]


def _ref_key(ref: Body) -> str:
    return sequence_sort_key(ref["attr"]["sequence"], ref["to"][-1])


class SequencedRefs:
    """`refs` (a list owned by one body) ordered by (sequence, name); ties are ordered by name.

    Only the refs themselves are kept (sort keys are derived from them when needed): with one
    ref per NetworkPolicy and per deny rule, every extra field would cost megabytes.
    """

    def __init__(self, refs: List[Body]) -> None:
        self.refs = refs
        self._entries: Dict[FqName, Body] = {}  # the ref to each target
        # fq_name -> (sequence or None to discard, `to` list, sort key)
        self._staged: Dict[FqName, Tuple[Optional[str], List[str], str]] = {}

    def set(self, fq_name: FqName, sequence: str, to: List[str]) -> None:
        """Stage a ref to `fq_name`; `to` is its fq_name as a list, shared with the ref (and
        usually with the target's own body), so it must not be modified."""
        self._staged[fq_name] = (sequence, to, sequence_sort_key(sequence, fq_name[-1]))

    def discard(self, fq_name: FqName) -> None:
        self._staged[fq_name] = (None, [], "")

    def commit(self, report: bool = True) -> List[RefOperation]:
        """Apply the staged changes; returns the ref operations that took effect (none unless
        `report`: a bulk load has no one to tell)."""
        operations: List[RefOperation] = []
        removals: List[Body] = []
        keys: List[str] = []  # the sort keys of the refs added, in the order of `added`
        added: List[Body] = []
        entries = self._entries
        for fq_name, (sequence, to, key) in self._staged.items():
            current = entries.get(fq_name)
            if current is not None:
                current_sequence = current["attr"]["sequence"]
                if current_sequence == sequence:
                    continue
                removals.append(current)
                del entries[fq_name]
                if report:
                    operations.append(("DELETE", fq_name, current_sequence))
            if sequence is not None:
                ref = entries[fq_name] = ref_body(to, sequence_attr(sequence))
                keys.append(key)
                added.append(ref)
                if report:
                    operations.append(("ADD", fq_name, sequence))
        self._staged.clear()
        refs = self.refs
        if len(removals) + len(added) > 32 + len(refs) // 64:
            removed = {id(ref) for ref in removals}
            kept = [ref for ref in refs if id(ref) not in removed]
            keys.extend(map(_ref_key, kept))
            added.extend(kept)
            # Sorted by position rather than as (key, ref) pairs: no pair per ref.
            refs[:] = map(added.__getitem__, sorted(range(len(keys)), key=keys.__getitem__))
        else:
            for ref in removals:
                del refs[bisect.bisect_left(refs, _ref_key(ref), key=_ref_key)]
            for key, ref in zip(keys, added):
                refs.insert(bisect.bisect_left(refs, key, key=_ref_key), ref)
        return operations
