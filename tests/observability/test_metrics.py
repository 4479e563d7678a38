"""The metric names and labels others rely on (dashboards, alerts, the docs), and the DB gauges."""
from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kube_manager.records.db import Database, PodRecord, PodStatus, PolicyRecord, PolicyStatus, REJECTED, SYNCED
from kube_manager.observability.metrics import Metrics


def _samples(metrics: Metrics) -> dict:
    """{(sample name, sorted labels): value} of one scrape, as Prometheus would read it."""
    text = generate_latest(metrics.registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_updated_metrics_have_the_documented_names_and_labels():
    metrics = Metrics()
    metrics.kube_events.labels(resource="pods", type="ADDED").inc(3)
    metrics.work_queue_depth.set(7)
    metrics.reconcile_duration.labels(kind="network_policy").observe(0.02)
    metrics.observe_config_api_request("post", 201, 0.004)
    metrics.observe_config_api_request("GET", "error", 1.5)
    metrics.watch_restarts.labels(resource="pods", reason="expired").inc()

    samples = _samples(metrics)
    assert samples[("kube_manager_kube_events_total", (("resource", "pods"), ("type", "ADDED")))] == 3
    assert samples[("kube_manager_work_queue_depth", ())] == 7
    assert samples[("kube_manager_reconcile_duration_seconds_count", (("kind", "network_policy"),))] == 1
    assert samples[("kube_manager_config_api_requests_total", (("method", "POST"), ("status", "201")))] == 1
    assert samples[("kube_manager_config_api_requests_total", (("method", "GET"), ("status", "error")))] == 1
    assert samples[("kube_manager_config_api_request_duration_seconds_bucket",
                    (("le", "0.005"), ("method", "POST")))] == 1
    assert samples[("kube_manager_config_api_request_duration_seconds_bucket",
                    (("le", "1.0"), ("method", "GET")))] == 0
    assert samples[("kube_manager_watch_restarts_total", (("reason", "expired"), ("resource", "pods")))] == 1


def test_every_series_is_prefixed_and_registries_are_independent():
    first, second = Metrics(), Metrics()
    first.work_queue_depth.set(1)
    first.bind_database(Database())
    names = {name for name, _labels in _samples(first)}
    assert names and all(name.startswith("kube_manager_") for name in names)
    assert _samples(second)[("kube_manager_work_queue_depth", ())] == 0


def test_database_gauges_follow_the_db_at_each_scrape():
    db = Database(loop_heartbeat_at=100.0)
    db.actual = {"firewall-rule": {("default-policy-management", "r1"): {}, ("default-policy-management", "r2"): {}}}
    db.desired = {"firewall-rule": {("default-policy-management", "r1"): {},
                                    ("default-policy-management", "k8s--pair-0123456789ab"): {},
                                    ("default-policy-management", "k8s--pair-ba9876543210"): {}},
                  "tag": {("a=b",): {}}}
    db.network_policies[("ns", "good")] = PolicyRecord("u1", "ns", "good", status=PolicyStatus(state=SYNCED))
    db.network_policies[("ns", "bad")] = PolicyRecord("u2", "ns", "bad", status=PolicyStatus(state=REJECTED))
    db.pods[("ns", "p")] = PodRecord("u3", "ns", "p", status=PodStatus(tagging="no-vm"))
    # Two errors of one policy count it once: the gauge counts objects, not reasons.
    db.errors = [
        {"kind": "NetworkPolicy", "namespace": "ns", "name": "bad", "reason": "bad CIDR"},
        {"kind": "NetworkPolicy", "namespace": "ns", "name": "bad", "reason": "bad port"},
    ]
    now = [130.0]
    metrics = Metrics()
    metrics.bind_database(db, clock=lambda: now[0], pair_rule_prefix="k8s--pair-")

    samples = _samples(metrics)
    assert samples[("kube_manager_owned_objects", (("type", "firewall-rule"),))] == 2
    assert samples[("kube_manager_desired_objects", (("type", "firewall-rule"),))] == 3
    assert samples[("kube_manager_exact_pair_rules", ())] == 2
    assert samples[("kube_manager_desired_objects", (("type", "tag"),))] == 1
    assert samples[("kube_manager_rejected_objects", (("kind", "NetworkPolicy"),))] == 1
    assert samples[("kube_manager_network_policies", (("state", "rejected"),))] == 1
    assert samples[("kube_manager_network_policies", (("state", "synced"),))] == 1
    assert samples[("kube_manager_pods", (("vmi_state", "no-vm"),))] == 1
    assert samples[("kube_manager_loop_heartbeat_age_seconds", ())] == 30

    del db.actual["firewall-rule"][("default-policy-management", "r2")]
    db.errors.clear()
    now[0] = 131.0
    samples = _samples(metrics)
    assert samples[("kube_manager_owned_objects", (("type", "firewall-rule"),))] == 1
    assert not any(name == "kube_manager_rejected_objects" for name, _ in samples)
    assert samples[("kube_manager_loop_heartbeat_age_seconds", ())] == 31
