"""The list+watch loop, over real HTTP against the emulated API server."""
from __future__ import annotations


import json
import socket
import threading
from typing import Any, Dict, List, Tuple

from prometheus_client import CollectorRegistry

from tests.support.builders import cluster_policy, namespace, pod, policy
from tests.support.kube_helpers import Recorder, ScriptedServer, http_response, running, watcher
from tests.support.waiting import wait_until
from kube_manager.records.db import Database
from kube_manager.kube.client_factory import api_client_for_url
from simulators.kube_api.runner import EmulatorRunner
from kube_manager.handlers import KINDS
from kube_manager.kube.watcher import make_watchers
from kube_manager.settings import WatchSettings
from kube_manager.observability.metrics import Metrics


class GatedSleeper:
    """An injected sleep that records its delays and, when closed, holds the watcher until opened:
    the test then changes the cluster while the watcher is certainly disconnected."""

    def __init__(self, closed: bool = False) -> None:
        self.delays: List[float] = []
        self.called = threading.Semaphore(0)
        self._gate = threading.Event()
        if not closed:
            self._gate.set()

    def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        self.called.release()
        assert self._gate.wait(10), "the test never opened the gate"

    def wait_called(self) -> None:
        assert self.called.acquire(timeout=10), "the watcher never slept"

    def open(self) -> None:
        self._gate.set()


def emulator_state(kube: EmulatorRunner) -> Dict[Tuple[str, str, str], Dict[str, Any]]:
    """What a watcher should have delivered: every object of the emulator, trimmed."""
    state = {}
    for resource in KINDS.names():
        trim = KINDS[resource].trimmer
        assert trim is not None
        for obj in kube.store.list(resource):
            meta = obj["metadata"]
            state[(resource, meta.get("namespace", ""), meta["name"])] = trim(obj)
    return state


EMPTY_LIST = b'{"kind":"NamespaceList","metadata":{"resourceVersion":"7"},"items":[]}'


def restart_reasons(metrics: Metrics) -> Dict[str, float]:
    return {s.labels["reason"]: s.value for m in metrics.watch_restarts.collect()
            for s in m.samples if s.name.endswith("_total")}


def test_list_then_ordered_events(kube: EmulatorRunner) -> None:
    kube.store.create(namespace("dev"))
    kube.store.create(pod("dev", "old"))
    listed_at = kube.store.resource_version
    rec, db = Recorder(), Database()
    with running([watcher(api_client_for_url(kube.url), "pods", rec, db)]):
        rec.wait_for("LISTED")
        status = db.kube_connections["pods"]
        assert status.initial_list_done and status.resource_version == str(listed_at)
        assert status.url == kube.url + "/api/v1/pods"
        kube.store.create(pod("dev", "web", app="web"))
        kube.store.update(pod("dev", "web", "10.1.1.1", app="web"))
        kube.store.delete("pods", "dev", "web")
        kube.store.delete("pods", "dev", "old")
        rec.wait_for("DELETED", "old")
        assert rec.types() == [("ADDED", "old"), ("LISTED", ""), ("ADDED", "web"),
                               ("MODIFIED", "web"), ("DELETED", "web"), ("DELETED", "old")]
        assert rec.events[3][2]["status"] == {"podIP": "10.1.1.1"}
        wait_until(lambda: status.resource_version == str(listed_at + 4), "the version of the last event")
        assert status.connected and status.last_event_at is not None and status.reconnects == 0


def test_list_follows_continue_tokens(kube: EmulatorRunner) -> None:
    kube.store.create(namespace("dev"))
    for i in range(7):
        kube.store.create(pod("dev", f"p{i}"))
    rec = Recorder()
    with running([watcher(api_client_for_url(kube.url), "pods", rec,
                          settings=WatchSettings(page_size=2))]):
        rec.wait_for("LISTED")
        assert rec.types() == [("ADDED", f"p{i}") for i in range(7)] + [("LISTED", "")]
        assert rec.events[-1][2] == {"resourceVersion": str(kube.store.resource_version)}


def test_objects_are_trimmed_to_what_the_translator_reads(kube: EmulatorRunner) -> None:
    kube.store.create(namespace("dev", team="a"))
    full = pod("dev", "web", "10.0.0.7", app="web")
    full["metadata"]["annotations"] = {"noise": "x"}
    full["spec"]["containers"] = [{"name": "c", "image": "nginx", "env": [{"name": "A"}],
                                   "ports": [{"name": "http", "containerPort": 80}]}]
    full["spec"]["nodeName"] = "node-1"
    full["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    created = kube.store.create(full)
    rec = Recorder()
    with running([watcher(api_client_for_url(kube.url), "pods", rec)]):
        rec.wait_for("LISTED")
    assert rec.events[0][2] == {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "dev", "uid": created["metadata"]["uid"],
                     "labels": {"app": "web"}, "resourceVersion": created["metadata"]["resourceVersion"]},
        "spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 80}]}]},
        "status": {"podIP": "10.0.0.7"},
    }


def test_irrelevant_changes_are_not_emitted(kube: EmulatorRunner) -> None:
    kube.store.create(namespace("dev"))
    kube.store.create(pod("dev", "web", "10.0.0.7"))
    rec = Recorder()
    with running([watcher(api_client_for_url(kube.url), "pods", rec)]):
        rec.wait_for("LISTED")
        churn = pod("dev", "web", "10.0.0.7")
        churn["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        kube.store.update(churn)  # status churn: nothing the translator reads
        kube.store.update(pod("dev", "web", "10.0.0.7", tier="db"))
        rec.wait_for("MODIFIED", "web")
        assert rec.count("MODIFIED") == 1
        assert rec.events[-1][2]["metadata"]["labels"] == {"tier": "db"}


def test_the_watcher_keeps_what_it_delivered_packed_whatever_the_consumer_does_with_it(kube: EmulatorRunner) -> None:
    """Memory (issue 12): the watcher's copy of the cluster is compact JSON, not the delivered
    dicts (handed over without a deep copy): a consumer that changes what it got changes nothing
    the watcher compares; a DELETED still carries the last object."""
    kube.store.create(namespace("dev"))
    kube.store.create(pod("dev", "web", "10.0.0.7", tier="web"))

    class Mutating(Recorder):
        def __call__(self, resource: str, event_type: str, obj: Dict[str, Any]) -> None:
            super().__call__(resource, event_type, json.loads(json.dumps(obj)))
            if "metadata" in obj:
                obj["metadata"]["labels"] = {"changed": "by the consumer"}
    rec = Mutating()
    with running([watcher(api_client_for_url(kube.url), "pods", rec)]) as (w,):
        rec.wait_for("LISTED")
        assert len(w._seen) == 1 and all(isinstance(held, bytes) for held in w._seen._held.values())
        churn = pod("dev", "web", "10.0.0.7", tier="web")
        churn["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        kube.store.update(churn)  # nothing the translator reads: still nothing to deliver
        kube.store.delete("pods", "dev", "web")
        rec.wait_for("DELETED", "web")
        assert rec.count("MODIFIED") == 0
        assert rec.events[-1][2]["metadata"]["labels"] == {"tier": "web"}


def test_bookmarks_advance_the_version_so_a_resume_needs_no_relist(kube: EmulatorRunner) -> None:
    kube.store.create(namespace("dev"))
    rec, db, sleeper = Recorder(), Database(), GatedSleeper()
    w = watcher(api_client_for_url(kube.url), "networkpolicies", rec, db, sleep=sleeper)
    with running([w]):
        rec.wait_for("LISTED")
        wait_until(lambda: kube.store.watch_count == 1, "the watch")
        for i in range(3):
            kube.store.create(pod("dev", f"p{i}"))  # versions move, no policy event
        kube.store.send_bookmarks()
        status = db.kube_connections["networkpolicies"]
        wait_until(lambda: status.resource_version == str(kube.store.resource_version), "the bookmark's version")
        kube.store.compact()  # a resume from the list's version 1 would now be 410
        kube.store.drop_watches()
        sleeper.wait_called()
        kube.store.create(policy("dev", "np"))
        rec.wait_for("ADDED", "np")
        assert rec.count("RELISTED") == 0 and status.reconnects == 1
        assert sleeper.delays == [0.8]
        assert "ProtocolError" in status.last_error and status.last_error_at is not None


def test_410_relists_and_loses_no_event(kube: EmulatorRunner) -> None:
    kube.store.create(namespace("dev"))
    for name in ("keep", "change", "remove", "recreate"):
        kube.store.create(pod("dev", name, app=name, uid=None))  # the emulator gives each its uid
    rec, db, sleeper = Recorder(), Database(), GatedSleeper(closed=True)
    metrics = Metrics(CollectorRegistry())
    with running([watcher(api_client_for_url(kube.url), "pods", rec, db, sleep=sleeper,
                          metrics=metrics)]):
        rec.wait_for("LISTED")
        wait_until(lambda: kube.store.watch_count == 1, "the watch")
        old_uid = kube.store.get("pods", "dev", "recreate")["metadata"]["uid"]
        kube.store.drop_watches()
        sleeper.wait_called()  # disconnected, held in its backoff
        kube.store.update(pod("dev", "change", "10.9.9.9", app="changed"))
        kube.store.delete("pods", "dev", "remove")
        kube.store.delete("pods", "dev", "recreate")
        kube.store.create(pod("dev", "recreate", app="again", uid=None))  # a new uid
        kube.store.create(pod("dev", "new", app="new"))
        kube.store.compact()
        sleeper.open()
        rec.wait_for("RELISTED")
        relist = rec.types()[rec.types().index(("LISTED", "")) + 1:]
        # Vanished objects first, then the rest in key order; a new uid is a delete + add.
        assert relist == [("DELETED", "remove"), ("MODIFIED", "change"), ("ADDED", "new"),
                          ("DELETED", "recreate"), ("ADDED", "recreate"), ("RELISTED", "")]
        assert rec.state == {k: v for k, v in emulator_state(kube).items() if k[0] == "pods"}
        assert rec.state[("pods", "dev", "recreate")]["metadata"]["uid"] != old_uid
        kube.store.create(pod("dev", "after"))  # and the watch goes on from the re-list
        rec.wait_for("ADDED", "after")
        status = db.kube_connections["pods"]
        assert status.reconnects == 2 and status.last_error.startswith("410 Gone")
        assert restart_reasons(metrics) == {"error": 1.0, "expired": 1.0}


def test_backoff_doubles_to_the_cap_and_resets_after_success() -> None:
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))  # bound, not listening: connection refused
    port = blocker.getsockname()[1]
    started: List[EmulatorRunner] = []
    delays: List[float] = []
    called = threading.Semaphore(0)

    def sleeper(delay: float) -> None:
        delays.append(delay)
        called.release()
        if len(delays) == 8:  # the API server comes up during the eighth wait
            blocker.close()
            started.append(EmulatorRunner(port=port).start())

    rec, db, metrics = Recorder(), Database(), Metrics(CollectorRegistry())
    w = watcher(api_client_for_url(f"http://127.0.0.1:{port}"), "namespaces", rec, db,
                sleep=sleeper, metrics=metrics)
    try:
        with running([w]):
            rec.wait_for("LISTED")
            assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30]
            assert db.kube_connections["namespaces"].reconnects == 8
            # A refused connection is an error, not a timeout (urllib3's NewConnectionError is a
            # subclass of its ConnectTimeoutError).
            assert restart_reasons(metrics) == {"error": 8}
            wait_until(lambda: started[0].store.watch_count == 1, "the watch")
            started[0].store.drop_watches()
            assert called.acquire(timeout=10)
            wait_until(lambda: len(delays) == 9, "the sleep after the drop")
            assert delays[-1] == 0.8  # the success reset the backoff
            started[0].store.create(namespace("back"))
            rec.wait_for("ADDED", "back")
    finally:
        for runner in started:
            runner.stop()
        blocker.close()


def test_a_silent_watch_is_restarted_from_its_version_then_re_listed_if_silent_again() -> None:
    """The list is answered; each watch gets its headers, then silence forever (no data, no
    bookmark): after `silence_timeout` the watch is restarted at once from the list's version; the
    restarted watch silent too, with nothing between, the resource is listed again."""
    def respond(request: bytes) -> bytes:
        return http_response(chunks=[], end=False) if b"watch=true" in request \
            else http_response(EMPTY_LIST)

    rec, db, metrics = Recorder(), Database(), Metrics(CollectorRegistry())
    with ScriptedServer(respond) as server:
        w = watcher(api_client_for_url(server.url), "namespaces", rec, db, metrics=metrics,
                    settings=WatchSettings(silence_timeout=0.3))
        with running([w]):
            wait_until(lambda: sum(b"watch=true" not in r for r in server.requests) >= 2,
                       "the second list")
            rec.wait_for("RELISTED")
        kinds = ["watch" if b"watch=true" in r else "list" for r in server.requests]
        watches = [r for r in server.requests if b"watch=true" in r]
    status = db.kube_connections["namespaces"]
    assert status.last_error == "neither an event nor a bookmark for 0.3 s"
    assert kinds[:4] == ["list", "watch", "watch", "list"]
    assert all(b"resourceVersion=7" in r and b"allowWatchBookmarks=true" in r for r in watches[:2])
    assert rec.types()[:2] == [("LISTED", ""), ("RELISTED", "")]
    assert set(restart_reasons(metrics)) == {"silent"}


def test_a_stalled_watch_is_restarted_and_what_changed_meanwhile_arrives() -> None:
    """The emulator stalls the open watch (open, no data, no bookmarks); a namespace created
    during the stall and one created after it both arrive, without a re-list."""
    rec, db, metrics = Recorder(), Database(), Metrics(CollectorRegistry())
    with EmulatorRunner(bookmark_interval=0.1) as kube:
        w = watcher(api_client_for_url(kube.url), "namespaces", rec, db, metrics=metrics,
                    settings=WatchSettings(silence_timeout=0.5))
        with running([w]):
            rec.wait_for("LISTED")
            wait_until(lambda: kube.store.watch_count == 1, "the watch")
            assert kube.store.freeze_watches() == 1
            kube.store.create(namespace("during"))
            rec.wait_for("ADDED", "during")
            kube.store.create(namespace("after"))
            rec.wait_for("ADDED", "after")
    assert restart_reasons(metrics) == {"silent": 1.0}
    assert rec.count("LISTED") == 1 and rec.count("RELISTED") == 0


def test_bookmarks_keep_a_quiet_watch_from_counting_as_silent() -> None:
    rec, metrics = Recorder(), Metrics(CollectorRegistry())
    bookmarks = lambda: sum(s.value for m in metrics.kube_events.collect() for s in m.samples  # noqa: E731
                            if s.name.endswith("_total") and s.labels["type"] == "BOOKMARK")
    # A bookmark goes out only past the watch's version: on a quiet cluster, after the API server's
    # own Lease renewal moved it (here as often as the bookmarks come).
    with EmulatorRunner(bookmark_interval=0.1, progress_interval=0.1) as kube:
        w = watcher(api_client_for_url(kube.url), "namespaces", rec, metrics=metrics,
                    settings=WatchSettings(silence_timeout=0.5))
        with running([w]):
            wait_until(lambda: bookmarks() >= 15, "bookmarks for three times the silence limit")
    assert restart_reasons(metrics) == {}


def test_watches_that_keep_expiring_back_off() -> None:
    """A server whose every watch is 410 at once must not be listed in a tight loop."""
    gone = (b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",'
            b'"reason":"Expired","message":"too old resource version","code":410}}\n')

    def respond(request: bytes) -> bytes:
        return http_response(chunks=[gone]) if b"watch=true" in request \
            else http_response(EMPTY_LIST)

    rec, metrics = Recorder(), Metrics(CollectorRegistry())
    delays: List[float] = []

    def sleeper(delay: float) -> None:
        delays.append(delay)
        if len(delays) == 3:
            w.stop()

    with ScriptedServer(respond) as server:
        w = watcher(api_client_for_url(server.url), "namespaces", rec, metrics=metrics,
                    sleep=sleeper)
        with running([w]):
            wait_until(lambda: len(delays) == 3, "three waits")
        lists = [r for r in server.requests if b"watch=true" not in r]
    assert delays == [0.8, 1.6, 3.2]  # the first expiry re-listed at once
    assert len(lists) == 4 and rec.types() == [("LISTED", "")] + [("RELISTED", "")] * 3
    assert restart_reasons(metrics) == {"expired": 4.0}


def test_server_side_timeout_rewatches_without_backoff(kube: EmulatorRunner) -> None:
    rec, db, sleeper = Recorder(), Database(), GatedSleeper()
    settings = WatchSettings(min_timeout_seconds=300, max_timeout_seconds=600)

    class Rand:
        def __init__(self) -> None:
            self.calls: List[Tuple[int, int]] = []

        def randint(self, low: int, high: int) -> int:
            self.calls.append((low, high))
            return 450

    rand = Rand()
    with running([watcher(api_client_for_url(kube.url), "namespaces", rec, db, sleep=sleeper,
                          settings=settings, rand=rand)]):  # type: ignore[arg-type]
        rec.wait_for("LISTED")
        wait_until(lambda: kube.store.watch_count == 1, "the watch")
        kube.store.close_watches()  # as when timeoutSeconds runs out
        wait_until(lambda: len(rand.calls) == 2, "a second watch")
        kube.store.create(namespace("next"))
        rec.wait_for("ADDED", "next")
    assert sleeper.delays == [] and rand.calls == [(300, 600), (300, 600)]
    assert db.kube_connections["namespaces"].reconnects == 0


def test_a_failing_handler_does_not_stop_the_watch(kube: EmulatorRunner) -> None:
    rec = Recorder()

    def handler(resource: str, event_type: str, obj: Dict[str, Any]) -> None:
        if obj.get("metadata", {}).get("name") == "bad":
            raise RuntimeError("handler bug")
        rec(resource, event_type, obj)

    with running([watcher(api_client_for_url(kube.url), "namespaces", handler)]):  # type: ignore
        rec.wait_for("LISTED")
        kube.store.create(namespace("bad"))
        kube.store.create(namespace("good"))
        rec.wait_for("ADDED", "good")


def test_stop_returns_promptly_from_an_idle_watch(kube: EmulatorRunner) -> None:
    rec = Recorder()
    w = watcher(api_client_for_url(kube.url), "namespaces", rec)
    thread = threading.Thread(target=w.run, daemon=True)
    thread.start()
    rec.wait_for("LISTED")
    wait_until(lambda: kube.store.watch_count == 1, "the watch")
    w.stop()
    thread.join(5)
    assert not thread.is_alive()


def test_the_watchers_on_one_client_deliver_the_whole_cluster(kube: EmulatorRunner) -> None:
    kube.store.create(namespace("a", team="x"))
    kube.store.create(namespace("b"))
    kube.store.create(pod("a", "p1", "10.0.0.1", app="web"))
    kube.store.create(policy("a", "np", {"podSelector": {"matchLabels": {"app": "web"}},
                                         "ingress": [{}]}))
    kube.store.create(cluster_policy("cnp", "Baseline", 5, egress=[{"action": "Deny", "to": [{"namespaces": {}}]}]))
    rec, db = Recorder(), Database()
    api_client = api_client_for_url(kube.url)
    watchers = make_watchers(api_client, KINDS, rec, db)
    assert [w.resource.name for w in watchers] == ["namespaces", "pods", "networkpolicies", "clusternetworkpolicies"]
    with running(watchers):
        wait_until(lambda: rec.count("LISTED") == 4, "four initial lists")
        kube.store.create(pod("b", "p2", "10.0.0.2"))
        kube.store.update(namespace("b", team="y"))
        kube.store.delete("networkpolicies", "a", "np")
        rec.wait_for("DELETED", "np")
        rec.wait_for("MODIFIED", "b")
        rec.wait_for("ADDED", "p2")
        assert rec.state == emulator_state(kube)
    assert sorted(db.kube_connections) == ["clusternetworkpolicies", "namespaces", "networkpolicies", "pods"]
    assert all(s.initial_list_done and not s.connected for s in db.kube_connections.values())


def test_malformed_objects_in_a_list_and_in_watch_events_stop_neither() -> None:
    """SPEC 7, one object never stops the others: objects the API server would never store are
    trimmed to what can be read (the translator rejects them with a reason); the list is delivered
    and the watch goes on to the next event."""
    bad = [{"metadata": ["x"], "spec": "s", "status": [1]},
           {"metadata": {"name": "m", "namespace": ["n"], "uid": "u1"}, "spec": {"containers": 5}, "status": "up"},
           "not an object"]
    good = {"metadata": {"name": "good", "namespace": "dev", "uid": "u2", "resourceVersion": "7"}}
    listing = json.dumps({"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": bad + [good]}).encode()
    events = [json.dumps({"type": "ADDED", "object": {"metadata": "m", "spec": [], "status": 3}}).encode() + b"\n",
              json.dumps({"type": "ADDED", "object": {"metadata": {"name": "late", "namespace": "dev", "uid": "u3",
                                                                   "resourceVersion": "9"}}}).encode() + b"\n"]

    def respond(request: bytes) -> bytes:
        return http_response(chunks=events, end=False) if b"watch=true" in request else http_response(listing)

    seen: List[Tuple[str, Any]] = []
    with ScriptedServer(respond) as server:
        with running([watcher(api_client_for_url(server.url), "pods",
                              lambda resource, event_type, obj: seen.append((event_type, obj)))]):  # type: ignore
            wait_until(lambda: any(e == "ADDED" and o["metadata"].get("name") == "late" for e, o in seen),
                       "the event after the malformed one")
    types = [event_type for event_type, _ in seen]
    assert "LISTED" in types and types.index("LISTED") == 3  # the malformed ones collapse to one key ("", "")
    names = [obj["metadata"].get("name") for event_type, obj in seen if event_type == "ADDED"]
    assert names[-1] == "late" and "good" in names and "m" in names
    malformed = next(obj for event_type, obj in seen if obj.get("metadata", {}).get("name") == "m")
    assert malformed["spec"] == {"containers": []} and malformed["status"] == {}
