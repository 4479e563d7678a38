"""The config API connection as the introspect page shows it (kube_manager/observability/vnc_status.py), kept from
each request's outcome: down on no answer or a 5xx (a reconnect counted once per outage), up on any
other answer, and every request in the metrics."""
from __future__ import annotations

import itertools

from kube_manager.records.db import ConnectionStatus
from kube_manager.observability.metrics import Metrics
from kube_manager.observability.vnc_status import ConfigApiObserver


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_outages_and_recoveries_as_the_operator_sees_them() -> None:
    connection, metrics = ConnectionStatus(name="config-api"), Metrics()
    clock = itertools.count(100)
    observe = ConfigApiObserver(connection, metrics, clock=lambda: float(next(clock)))

    observe("GET", "/firewall-rules", 200, 0.01)
    assert connection.connected and connection.last_event_at == 100.0 and connection.reconnects == 0

    observe("POST", "/firewall-rules", None, 2.0)   # no answer: down, one reconnect
    observe("POST", "/firewall-rules", 503, 0.01)   # still down: not counted again
    assert not connection.connected and connection.reconnects == 1
    assert (connection.last_error, connection.last_error_at) == ("POST /firewall-rules: status 503", 102.0)

    observe("PUT", "/firewall-rule/{uuid}", 404, 0.01)  # an answer, even a refusal: up again
    assert connection.connected and connection.last_event_at == 103.0
    assert connection.last_error == "POST /firewall-rules: status 503"  # the last error stays shown

    assert sample(metrics, "kube_manager_config_api_requests_total", method="POST", status="error") == 1
    assert sample(metrics, "kube_manager_config_api_requests_total", method="POST", status="503") == 1
    assert sample(metrics, "kube_manager_config_api_requests_total", method="GET", status="200") == 1
