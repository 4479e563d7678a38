"""Memoised validation of the manifest fragments that repeat across a cluster."""
from __future__ import annotations

from typing import Any, Callable, Dict, Set, Tuple, TypeVar

T = TypeVar("T")


class ParseCache:
    """Memoised results of the pure fragment parsers.

    Policies repeat the same selectors, ports and ipBlocks across namespaces, and pods the same
    label keys; a ClusterTranslator keeps one cache so each is validated once. Only successes are
    kept (error messages carry their path). Bounded by starting afresh when full.
    """

    LIMIT = 16384

    def __init__(self) -> None:
        self._entries: Dict[Tuple[str, str], Any] = {}
        self.label_keys: Set[str] = set()  # label keys already found valid
        self.namespaces: Set[str] = set()  # namespace names already found valid

    def get(self, parser: Callable[[Any, str], T], raw: Any, path: str) -> T:
        """`parser(raw, path)`, remembered by the content of `raw`."""
        return self.memo(parser.__name__, repr(raw), lambda: parser(raw, path))

    def memo(self, kind: str, key: str, make: Callable[[], T]) -> T:
        """`make()`, remembered under (kind, key); `key` must determine the result."""
        found = self._entries.get((kind, key))
        if found is None:
            found = make()
            if len(self._entries) >= self.LIMIT:
                self._entries.clear()
                self.label_keys.clear()
                self.namespaces.clear()
            self._entries[(kind, key)] = found
        return found
