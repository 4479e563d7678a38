"""A resync's listings a page at a time: what bounds the memory a resync needs.

At XLarge one type's listing is hundreds of thousands of objects (the firewall rules): decoded at
once, it more than doubled the daemon's resident memory while it was folded in. A resync asks for
pages of `vnc_list_page_limit` objects instead (`VncClient.list_pages`, the config API's
`page_marker`/`page_limit`) and folds each one in before it takes the next
(`ActualState.load`, `PodKeyWorker.load`), so that only the page being folded and the one being read
are held.

The next page stays under way while the last is folded in, from one listing to the next as well
(`ahead`): `PageWalk` makes the pages of every listing, in turn, calls that `ahead` may start
before the previous call has ended. A call waits for the one before it (the next page's marker is
in the previous answer); once every page is out, a call answers `END`. `PageWalk.pages` reads one
listing's pages out of the answers.
"""
from __future__ import annotations

from typing import Any, Callable, Generic, Iterable, Iterator, Optional, Tuple, TypeVar

import gevent
import gevent.lock

P = TypeVar("P")

END: Any = object()  # every page has been handed out


class PageWalk(Generic[P]):
    """The pages of `listings` (kind, pages), in order, as calls (see the module docstring)."""

    def __init__(self, listings: Iterable[Tuple[str, Iterator[P]]]) -> None:
        self._pages = ((kind, page) for kind, pages in listings for page in pages)
        self._turn = gevent.lock.Semaphore()
        self._over = False
        self._held: Optional[Tuple[str, P]] = None  # read by `pages` for the listing after
        self.count = 0  # pages read (one request each)

    def calls(self) -> Iterator[Callable[[], Any]]:
        """Calls of `next_page` until every page is out (for `ahead`; one or two end with `END`)."""
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

    def pages(self, answers: Iterator[Any], kind: str) -> Iterator[P]:
        """The pages of listing `kind` out of `ahead(self.calls())`'s answers; each listing's
        pages are to be read, to their end, in the order of `listings`."""
        while True:
            if self._held is None:
                answer = next(answers, END)
                if answer is END:
                    return
                self._held = answer
            held_kind, page = self._held
            if held_kind != kind:
                return
            self._held = None
            gevent.sleep(0)  # the call woken for the next page sends its request before we fold this one
            yield page
