"""A resync's listings a page at a time: what bounds the memory a resync needs.

At XLarge one type's listing is hundreds of thousands of objects (the firewall rules): decoded at
once, it more than doubled the daemon's resident memory while it was folded in. A resync asks for
pages of `vnc_list_page_limit` objects instead (`VncClient.list_pages`, the config API's
`page_marker`/`page_limit`) and folds each one in before it takes the next
(`ActualState.load`, `PodKeyWorker.load`), so that only a few pages are held at once.

Within one listing a page waits for the one before it (the next page's marker is in the previous
answer); the next page stays under way while the last is folded in (`ahead`). The listings
themselves depend on nothing of each other: while one is folded in, the first page of the next is
under way too, and a restart's first resync sends the first page of every listing at once
(`early`), so that the config API renders them all while this process translates the initial
lists (reconciler/resync.py, `Resync.send_early`). Chained one after the other, every listing but
the first was asked for only after the translation, each a round trip on the restart's path.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Generic, Iterable, Iterator, List, Tuple, TypeVar

import gevent
import gevent.lock

from .ahead import Ahead, ahead

P = TypeVar("P")

END: Any = object()  # every page of a listing has been handed out


class ListingCalls(Generic[P]):
    """One listing's pages as calls for `ahead`: a call waits for the one before it, and once
    every page is out, a call answers `END`."""

    def __init__(self, pages: Iterator[P]) -> None:
        self._pages = pages
        self._turn = gevent.lock.Semaphore()
        self._over = False
        self.count = 0  # pages read (one request each)

    def calls(self) -> Iterator[Callable[[], Any]]:
        """Calls of `next_page` until every page is out (one or two end with `END`)."""
        while not self._over:
            yield self._next_page

    def _next_page(self) -> Any:
        with self._turn:
            if self._over:
                return END
            answer = next(self._pages, END)
            if answer is END:
                self._over = True
            else:
                self.count += 1
            return answer


class PageWalk(Generic[P]):
    """The pages of `listings` (kind, pages), each listing read to its end in turn; see the module
    docstring. `early`: the first listings whose first page is asked for now."""

    def __init__(self, listings: Iterable[Tuple[str, Iterator[P]]], early: int = 0) -> None:
        self._calls: Dict[str, ListingCalls[P]] = {kind: ListingCalls(pages) for kind, pages in listings}
        self._kinds: List[str] = list(self._calls)
        self._answers: Dict[str, Ahead[Any]] = {}
        for kind in self._kinds[:early]:
            self._start(kind)

    @property
    def count(self) -> int:
        """Pages read so far, every listing's (one request each)."""
        return sum(calls.count for calls in self._calls.values())

    def _start(self, kind: str) -> Ahead[Any]:
        answers = self._answers.get(kind)
        if answers is None:
            answers = self._answers[kind] = ahead(self._calls[kind].calls(), head_start=1)
        return answers

    def pages(self, kind: str) -> Iterator[P]:
        """The pages of listing `kind`; the first page of the listing after it is asked for now,
        to be rendered while this one is folded in."""
        answers = self._start(kind)
        following = self._kinds.index(kind) + 1
        if following < len(self._kinds):
            self._start(self._kinds[following])
        for answer in answers:
            if answer is END:
                return
            gevent.sleep(0)  # the call woken for the next page sends its request before we fold this one
            yield answer

    def close(self) -> None:
        """Stop: the calls under way are cancelled, the pages not read never asked for."""
        for answers in self._answers.values():
            answers.close()
        self._answers.clear()
