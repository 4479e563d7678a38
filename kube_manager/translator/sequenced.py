"""A ref list kept in sequence order under frequent small changes (the APS and `<cluster>-denyall`).

These two objects refer to every NetworkPolicy of the cluster (75,000 refs in Antrea's XLarge
shape). Rebuilding their ref lists on every policy event would cost O(n log n) per event; instead
changes are staged and applied by binary search, or by one sort when a bulk load staged many.
"""
from __future__ import annotations

import bisect
from typing import Dict, List, Optional, Tuple

from .bodies import Body, FqName, sequenced_ref
from .naming import sequence_key

SortKey = Tuple[int, str, str]  # (sequence major, sequence minor digits, name)
# (operation "ADD" | "DELETE", target fq_name, sequence)
RefOperation = Tuple[str, FqName, str]


class SequencedRefs:
    """`refs` (a list owned by one body) ordered by (sequence, name); ties are ordered by name."""

    def __init__(self, refs: List[Body]) -> None:
        self.refs = refs
        self._keys: List[SortKey] = []
        self._entries: Dict[FqName, Tuple[SortKey, str, Body]] = {}  # key, sequence, ref
        self._staged: Dict[FqName, Optional[str]] = {}

    def set(self, fq_name: FqName, sequence: str) -> None:
        self._staged[fq_name] = sequence

    def discard(self, fq_name: FqName) -> None:
        self._staged[fq_name] = None

    def commit(self) -> List[RefOperation]:
        """Apply the staged changes; returns the ref operations that took effect."""
        operations: List[RefOperation] = []
        removals: List[SortKey] = []
        additions: List[Tuple[SortKey, Body]] = []
        for fq_name, sequence in self._staged.items():
            current = self._entries.get(fq_name)
            if current is not None and current[1] == sequence:
                continue
            if current is not None:
                removals.append(current[0])
                del self._entries[fq_name]
                operations.append(("DELETE", fq_name, current[1]))
            if sequence is not None:
                major, minor = sequence_key(sequence)
                key = (major, minor, fq_name[-1])
                ref = sequenced_ref(fq_name, sequence)
                self._entries[fq_name] = (key, sequence, ref)
                additions.append((key, ref))
                operations.append(("ADD", fq_name, sequence))
        self._staged.clear()
        if len(removals) + len(additions) > 32 + len(self._keys) // 64:
            ordered = sorted((key, ref) for key, _, ref in self._entries.values())
            self._keys = [key for key, _ in ordered]
            self.refs[:] = [ref for _, ref in ordered]
        else:
            for key in removals:
                i = bisect.bisect_left(self._keys, key)
                del self._keys[i]
                del self.refs[i]
            for key, ref in additions:
                i = bisect.bisect_left(self._keys, key)
                self._keys.insert(i, key)
                self.refs.insert(i, ref)
        return operations
