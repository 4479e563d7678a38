"""What `/livez` reads as a watch's progress (SPEC 7): besides events, bookmarks and lists, a watch
the server accepted. A quiet watch restarted for silence is thus no stall; one that cannot be
restarted is."""
from __future__ import annotations

import itertools

from tests.support.kube_helpers import Recorder, ScriptedServer, http_response, running, watcher
from tests.support.waiting import wait_until
from kube_manager.records.db import Database
from kube_manager.kube.client_factory import api_client_for_url
from kube_manager.settings import WatchSettings

EMPTY_LIST = b'{"kind":"NamespaceList","metadata":{"resourceVersion":"7"},"items":[]}'


def test_a_watch_restarted_for_silence_counts_as_progress() -> None:
    """Each watch gets its headers, then nothing (no event, no bookmark); once restarted for
    silence, the watch's progress is later than the restart's error."""
    def respond(request: bytes) -> bytes:
        return http_response(chunks=[], end=False) if b"watch=true" in request \
            else http_response(EMPTY_LIST)

    ticks = itertools.count()  # a clock that moves at each reading: every moment is distinct
    db = Database()
    with ScriptedServer(respond) as server:
        w = watcher(api_client_for_url(server.url), "namespaces", Recorder(), db,
                    settings=WatchSettings(silence_timeout=0.3), clock=lambda: float(next(ticks)))
        status = db.kube_connections["namespaces"]
        with running([w]):
            wait_until(lambda: status.reconnects >= 1, "a silent restart")
            listed_at = 0.0 if status.last_progress_at is None else status.last_progress_at
            wait_until(lambda: status.last_error_at is not None and status.last_progress_at is not None
                       and status.last_progress_at > status.last_error_at > listed_at,
                       "progress after the restart")
    assert status.last_error == "neither an event nor a bookmark for 0.3 s"
