"""A watch from a version the API server has not reached: after etcd was restored from a backup,
the server's versions start again below every version its clients hold. The server accepts such a
watch and says nothing until it reaches that version; the watcher must list again, not wait."""
from __future__ import annotations

from prometheus_client import CollectorRegistry

from tests.support.builders import namespace
from tests.kube.test_kube_watcher import restart_reasons
from tests.support.kube_helpers import Recorder, running, watcher
from tests.support.waiting import wait_until
from kube_manager.kube.client_factory import api_client_for_url
from kube_manager.observability.metrics import Metrics
from kube_manager.records.db import Database
from kube_manager.settings import WatchSettings
from simulators.kube_api.runner import EmulatorRunner


def test_a_server_restored_to_an_older_version_is_listed_again_and_nothing_is_lost() -> None:
    rec, db, metrics = Recorder(), Database(), Metrics(CollectorRegistry())
    before = EmulatorRunner(system_namespaces=False).start()
    try:
        for name in ("kept", "gone", "churn-1", "churn-2", "churn-3"):
            before.store.create(namespace(name))
        port = int(before.url.rsplit(":", 1)[1])
        w = watcher(api_client_for_url(before.url), "namespaces", rec, db, metrics=metrics,
                    settings=WatchSettings(silence_timeout=0.3))
        with running([w]):
            rec.wait_for("LISTED")
            held = int(db.kube_connections["namespaces"].resource_version or 0)
            before.stop()
            # The backup: older than anything the watcher saw, and changed since (`new` is a
            # namespace created after the restore, at versions the watcher already went past).
            with EmulatorRunner(system_namespaces=False, port=port) as after:
                after.store.create(namespace("kept"))
                after.store.create(namespace("new"))
                assert after.store.resource_version < held
                rec.wait_for("RELISTED")
                rec.wait_for("ADDED", "new")
                wait_until(lambda: db.kube_connections["namespaces"].resource_version
                           == str(after.store.resource_version), "the restored server's version")
                after.store.create(namespace("later"))
                rec.wait_for("ADDED", "later")
    finally:
        before.stop()
    assert {name for _resource, _namespace, name in rec.state} == {"kept", "new", "later"}
    assert {"gone", "churn-1", "churn-2", "churn-3"} <= {name for kind, name in rec.types() if kind == "DELETED"}
    assert set(restart_reasons(metrics)) >= {"silent"}
