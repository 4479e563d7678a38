"""Keys kept in order, for paginated listings: the real server's `obj_fq_name_table` columns.

The real server walks an unanchored paginated listing (`GET /<type>s?page_marker=..&page_limit=..`)
along the columns of Cassandra's `obj_fq_name_table` row of the type: `<fq_name joined by ':'>:<uuid>`,
in byte order, resuming after the column named by the marker. `OrderedKeys` keeps those column
names so that each page costs O(log n + page): a resync pages through hundreds of thousands of
objects, and a sort of the whole type per page would make the walk quadratic. Kept as chunks of a
few hundred sorted keys (a two-level list), an insert or a remove costs O(log n + chunk), not a
memmove of the whole list.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from itertools import chain, islice
from typing import Iterable, Iterator, List, Optional, Sequence

_CHUNK = 512  # keys per chunk when made or split; a chunk splits at twice this


def column(fq_name: Sequence[str], uuid: str) -> str:
    """The `obj_fq_name_table` column of an object: what orders a page walk and names its marker."""
    return ":".join(fq_name) + ":" + uuid


def uuid_of(key: str) -> str:
    """The uuid a column (or an anchored walk's marker, a plain uuid) ends with."""
    return key.rpartition(":")[2]


class OrderedKeys:
    """A set of strings iterated in order, from any point (see the module docstring)."""

    def __init__(self, keys: Iterable[str] = (), chunk: int = _CHUNK) -> None:
        ordered = sorted(keys)
        self._chunk = chunk
        self._chunks: List[List[str]] = [ordered[i:i + chunk] for i in range(0, len(ordered), chunk)]
        self._maxes: List[str] = [chunk[-1] for chunk in self._chunks]

    def __len__(self) -> int:
        return sum(map(len, self._chunks))

    def add(self, key: str) -> None:
        if not self._chunks:
            self._chunks, self._maxes = [[key]], [key]
            return
        i = min(bisect_left(self._maxes, key), len(self._maxes) - 1)
        chunk = self._chunks[i]
        insort(chunk, key)
        self._maxes[i] = chunk[-1]
        half = self._chunk
        if len(chunk) > 2 * half:
            self._chunks[i:i + 1] = [chunk[:half], chunk[half:]]
            self._maxes[i:i + 1] = [chunk[half - 1], chunk[-1]]

    def discard(self, key: str) -> None:
        i = bisect_left(self._maxes, key)
        if i == len(self._maxes):
            return
        chunk = self._chunks[i]
        j = bisect_left(chunk, key)
        if j < len(chunk) and chunk[j] == key:
            del chunk[j]
            if chunk:
                self._maxes[i] = chunk[-1]
            else:
                del self._chunks[i], self._maxes[i]

    def after(self, marker: Optional[str]) -> Iterator[str]:
        """The keys greater than `marker` (all of them: None), in order. The set must not change
        while the iterator is in use (callers hold the store lock)."""
        if marker is None:
            return chain.from_iterable(self._chunks)
        i = bisect_right(self._maxes, marker)
        if i == len(self._chunks):
            return iter(())
        first = self._chunks[i]
        return chain(islice(first, bisect_right(first, marker), None), chain.from_iterable(self._chunks[i + 1:]))
