"""Memoised validation of the manifest fragments that repeat across a cluster."""
from __future__ import annotations

import marshal
from typing import Any, Callable, Dict, Hashable, Set, Tuple, TypeVar

from .validation import KnownLabels

T = TypeVar("T")
A = TypeVar("A")


def content_key(raw: Any) -> Hashable:
    """A key equal for two manifest fragments exactly when they are equal value for value, type
    for type and in the same order, so a memoised parse of one is the parse of the other.

    `marshal` format 2 (no back-references, so the bytes never depend on object sharing) is a
    lossless encoding of plain JSON/YAML data (it tells "1" from 1, 1 from 1.0 and True, lists
    from tuples), and several times cheaper than `repr`; values it cannot encode (dates read
    from YAML, dict subclasses) fall back to `repr`, whose strings never equal the bytes.
    """
    try:
        return marshal.dumps(raw, 2)
    except ValueError:
        return repr(raw)


class ParseCache:
    """Memoised results of the pure fragment parsers.

    Policies repeat the same selectors, ports and ipBlocks across namespaces, and pods the same
    labels; a ClusterTranslator keeps one cache so each is validated once. Only successes are
    kept (error messages carry their path). Bounded by starting afresh when full.
    """

    LIMIT = 16384

    def __init__(self) -> None:
        self._entries: Dict[Tuple[str, Hashable], Any] = {}
        self.labels = KnownLabels()  # label keys and values already found valid
        self.namespaces: Set[str] = set()  # namespace names already found valid

    def get(self, parser: Callable[[Any, str], T], raw: Any, path: str) -> T:
        """`parser(raw, path)`, remembered by the content of `raw`."""
        return self.memo(parser.__name__, content_key(raw), lambda: parser(raw, path))

    def memo(self, kind: str, key: Hashable, make: Callable[[], T]) -> T:
        """`make()`, remembered under (kind, key); `key` must determine the result."""
        found = self._entries.get((kind, key))
        if found is None:
            found = self._keep((kind, key), make())
        return found

    def memo_call(self, kind: str, key: Hashable, make: Callable[[A], T], argument: A) -> T:
        """`make(argument)`, remembered under (kind, key): `memo` without a closure made for each
        lookup of the fragments every pod repeats."""
        found = self._entries.get((kind, key))
        if found is None:
            found = self._keep((kind, key), make(argument))
        return found

    def _keep(self, entry: Tuple[str, Hashable], found: T) -> T:
        if len(self._entries) >= self.LIMIT:
            self._entries.clear()
            self.labels.clear()
            self.namespaces.clear()
        self._entries[entry] = found
        return found
