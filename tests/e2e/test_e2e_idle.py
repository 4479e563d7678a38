"""An idle cluster keeps a healthy daemon green (SPEC 7). The API server's bookmark period (about a
minute) and the default watch silence limit are scaled down together (a minute becomes BOOKMARK
seconds); the emulator's bookmarks come 10% late, as a loaded API server's do. A daemon left idle
for more than two bookmark periods restarts no watch as silent, and `/livez` stays 200 throughout."""
from __future__ import annotations

import urllib.error
import urllib.request
from typing import List

from kube_manager.settings import WatchSettings
from simulators.kube_api.server import DEFAULT_BOOKMARK_INTERVAL
from tests.support.e2e_support import BASE, Environment
from tests.support.waiting import wait_until

BOOKMARK = 2.0  # what a minute is in this test
SCALE = BOOKMARK / DEFAULT_BOOKMARK_INTERVAL
LATE = 1.1  # the bookmarks' period, per nominal period
WATCHES = ("namespaces", "pods", "networkpolicies", "clusternetworkpolicies")


def livez(url: str) -> int:
    try:
        with urllib.request.urlopen(url + "/livez", timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_an_idle_daemon_restarts_no_watch_and_stays_live():
    silence = WatchSettings().silence_timeout * SCALE
    # The API server's own Lease renewed as often as bookmarks come: a bookmark goes out only past
    # the watch's version, which on a quiet cluster only such a write moves.
    env = Environment(BASE, bookmark_interval=BOOKMARK * LATE, progress_interval=BOOKMARK * LATE)
    try:
        daemon = env.start_daemon("--watch-silence-timeout", f"{silence:g}")
        env.wait_converged()
        url = daemon.introspect_url
        answers: List[int] = []

        def bookmarks(resource: str) -> float:
            return daemon.metric("kube_manager_kube_events_total", resource=resource, type="BOOKMARK")

        def idle_long_enough() -> bool:
            answers.append(livez(url))
            return all(bookmarks(resource) >= 3 for resource in WATCHES)
        wait_until(idle_long_enough, "three bookmarks on every watch", timeout=12 * BOOKMARK)
        assert set(answers) == {200}, answers
        assert daemon.metric("kube_manager_watch_restarts_total", reason="silent") == 0, \
            [line for line in daemon.log() if "watch silent" in line]
        assert daemon.stop() == 0
    finally:
        env.close()
