"""The outbox never holds up its caller (SPEC 15): bounded, drained by its own greenlet, each request
timed out, failures counted; nothing queued between terms, nothing sent once the gate refuses."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any, List, Tuple

import gevent

from kube_manager.status.outbox import StatusOutbox
from tests.support.paths import REPO
from tests.support.waiting import wait_green
from vnc_client.errors import WriteRefused


class Job:
    target = "event"
    reason = "Synced"

    def __init__(self, hang: bool = False) -> None:
        self.hang = hang
        self.ran = False

    def describe(self) -> str:
        return "a job"

    def run(self, apis: Any, timeout: float) -> bool:
        if self.hang:
            gevent.sleep(3600)
        self.ran = True
        return True


class Counts:
    def __init__(self) -> None:
        self.written = 0
        self.failed: List[Tuple[str, str]] = []

    def status_written(self, job: Any) -> None:
        self.written += 1

    def status_failed(self, target: str, reason: str) -> None:
        self.failed.append((target, reason))


def test_a_hanging_request_is_timed_out_and_a_full_queue_drops_without_blocking() -> None:
    counts = Counts()
    outbox = StatusOutbox(counts, capacity=2, timeout=0.2)
    outbox.open(None, lambda: None)
    jobs = [Job(hang=True)] + [Job() for _ in range(4)]
    for job in jobs:
        outbox.put(job)  # returns at once whatever the queue holds
    assert counts.failed.count(("event", "dropped")) >= 2
    wait_green(lambda: ("event", "timeout") in counts.failed and counts.written >= 1, "the hang timed out, the rest sent")
    outbox.close()


def test_between_terms_nothing_is_queued_and_a_closed_gate_sends_nothing() -> None:
    counts = Counts()
    outbox = StatusOutbox(counts)
    early = Job()
    outbox.put(early)
    assert not outbox.is_open

    def refuse() -> None:
        raise WriteRefused("not the leader")
    outbox.open(None, refuse)
    refused = Job()
    outbox.put(refused)
    wait_green(lambda: counts.failed == [("event", "error")], "the refusal counted")
    assert not early.ran and not refused.ran and counts.written == 0
    outbox.close()


def test_the_official_clients_typed_apis_are_made_when_a_job_first_needs_them() -> None:
    """A term begins with `KubeApis.over`: a restart that reports nothing never imports them."""
    probe = textwrap.dedent("""\
        import sys
        from kube_manager.kube.client_factory import api_client_for_url
        from kube_manager.status.outbox import KubeApis
        typed = lambda: sorted(m for m in sys.modules if m.startswith("kubernetes.client.api."))
        apis = KubeApis.over(api_client_for_url("http://127.0.0.1:1"))
        before = typed()
        made = type(apis.events).__name__, type(apis.custom).__name__
        print(before, made == ("EventsV1Api", "CustomObjectsApi"), apis.events is apis.events, len(typed()) >= 2)
        """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "True", "True", "True"]
