"""`/Snh_LeaderElectionStatus`, the role on the index, the readiness line and the two metrics, as the
elector's hooks leave them (the pages only read what the owner pushed)."""
from __future__ import annotations

import json

from introspect.app import create_app
from kube_manager.records.db import Database, LeaderStatus
from kube_manager.observability.metrics import Metrics

from tests.support.introspect_support import call

FIELDS = {"enabled", "identity", "is_leader", "leader", "namespace", "name", "transitions"}


def _app(status: LeaderStatus, metrics: Metrics = None):
    db = Database(leader=status)
    return create_app(db, registry=(metrics or Metrics()).registry)


def _standby() -> LeaderStatus:
    return LeaderStatus(enabled=True, identity="node-b_2", is_leader=False, leader="node-a_1",
                        namespace="kube-system", name="contrail-kube-manager-k8s", transitions=2,
                        last_error="500 Internal Server Error: <b>boom</b>")


def test_status_json_has_exactly_the_spec_fields() -> None:
    reply = call(_app(_standby()), "/Snh_LeaderElectionStatus?format=json")
    assert reply.status == 200
    assert reply.json() == {"enabled": True, "identity": "node-b_2", "is_leader": False, "leader": "node-a_1",
                            "namespace": "kube-system", "name": "contrail-kube-manager-k8s", "transitions": 2}
    assert set(reply.json()) == FIELDS


def test_status_html_shows_role_holder_and_lease_escaped() -> None:
    text = call(_app(_standby()), "/Snh_LeaderElectionStatus").text
    assert "standby" in text and "node-a_1" in text and "node-b_2" in text
    assert "kube-system/contrail-kube-manager-k8s" in text
    assert "&lt;b&gt;boom&lt;/b&gt;" in text and "<b>boom</b>" not in text


def test_index_shows_the_role() -> None:
    app = _app(_standby())
    assert 'state-standby">standby' in call(app, "/").text
    assert call(app, "/?format=json").json()["role"] == "standby"
    leader = _app(LeaderStatus(enabled=True, identity="a", is_leader=True, leader="a"))
    assert call(leader, "/?format=json").json()["role"] == "leader"
    assert call(_app(LeaderStatus()), "/?format=json").json()["role"] == "single writer"


def test_a_standby_is_ready_and_says_so() -> None:
    db = Database(leader=_standby())
    for status in db.kube_connections.values():
        status.initial_list_done = True
    app = create_app(db, config_api_probe=lambda: True)
    reply = call(app, "/readyz?format=json")
    checks = {check["name"]: check for check in reply.json()["checks"]}
    assert checks["leader-election"] == {"name": "leader-election", "ok": True, "detail": "standby (leader: node-a_1)"}
    assert "[+]leader-election ok: standby" in call(app, "/readyz").text


def test_metrics_follow_the_transitions() -> None:
    metrics = Metrics()
    app = _app(_standby(), metrics)
    assert "kube_manager_leader_is_leader 0.0" in call(app, "/metrics").text
    metrics.leader_transition(True)
    text = call(app, "/metrics").text
    assert "kube_manager_leader_is_leader 1.0" in text
    assert "kube_manager_leader_transitions_total 1.0" in text
    metrics.leader_transition(False)
    text = call(app, "/metrics").text
    assert "kube_manager_leader_is_leader 0.0" in text and "kube_manager_leader_transitions_total 2.0" in text
