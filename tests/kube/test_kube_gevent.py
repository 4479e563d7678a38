"""The watchers and the emulator as the daemon runs them: greenlets after `monkey.patch_all()`.

Monkey-patching cannot be undone, so the scenario runs in a child interpreter and reports as JSON.
"""
from __future__ import annotations

import pytest
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from kube_manager.handlers import KINDS
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop

SCRIPT = textwrap.dedent("""
    from gevent import monkey
    monkey.patch_all()

    import json
    import gevent

    from kube_manager.records.db import Database
    from kube_manager.kube.client_factory import api_client_for_url
    from simulators.kube_api.runner import EmulatorRunner
    from kube_manager.handlers import KINDS
    from kube_manager.kube.watcher import make_watchers
    from kube_manager.settings import WatchSettings
    from tests.support.waiting import wait_green

    events = []

    def on_event(resource, event_type, obj):
        events.append([resource, event_type, obj.get("metadata", {}).get("name", "")])

    runner = EmulatorRunner().start()
    runner.store.create({"kind": "Namespace", "metadata": {"name": "dev"}})
    db = Database()
    watchers = make_watchers(api_client_for_url(runner.url), KINDS, on_event, db,
                             settings=WatchSettings(initial_backoff=0.05))
    greenlets = [gevent.spawn(w.run) for w in watchers]
    wait_green(lambda: sum(e[1] == "LISTED" for e in events) == len(KINDS.names()), "every initial list")
    wait_green(lambda: runner.store.watch_count >= len(KINDS.names()), "every watch")
    runner.store.create({"kind": "Pod", "metadata": {"name": "web", "namespace": "dev"}})
    runner.store.drop_watches()
    runner.store.create({"kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": "dev"},
                         "spec": {"podSelector": {}}})
    wait_green(lambda: ["networkpolicies", "ADDED", "np"] in events and ["pods", "ADDED", "web"] in events,
               "the events made while the watches were dropped")
    for w in watchers:
        w.stop()
    stopped = gevent.joinall(greenlets, timeout=5)
    runner.stop()
    print(json.dumps({"threaded": runner.threaded, "events": events, "stopped": len(stopped),
                      "reconnects": {k: v.reconnects for k, v in db.kube_connections.items()}}))
""")


def test_greenlet_watchers_with_an_in_hub_emulator() -> None:
    repo = REPO
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=repo, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["threaded"] is False  # patched threading: the emulator shares the hub
    assert report["stopped"] == len(KINDS.names())
    events = report["events"]
    assert ["namespaces", "ADDED", "dev"] in events
    assert events.index(["pods", "ADDED", "web"]) > events.index(["pods", "LISTED", ""])
    # The watches were broken off while the policy was written: each reconnected once, lost nothing.
    assert report["reconnects"] == dict.fromkeys(KINDS.names(), 1)
