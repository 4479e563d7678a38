"""The config API connection as the operator sees it, kept from the outcome of every request.

The client reports each request it made (`VncClient(observer=...)`); this turns that report into
the request metrics and into `Database.vnc_connection`, which the introspect page and `/livez`
show. A request without an answer, or a 5xx, marks the connection down (a reconnect is counted
when it was up); any other answer marks it up.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from kube_manager.records.db import ConnectionStatus
from kube_manager.observability.metrics import Metrics


class ConfigApiObserver:
    """`observer` for VncClient: records one request's outcome (see the module docstring)."""

    def __init__(self, connection: ConnectionStatus, metrics: Metrics,
                 clock: Callable[[], float] = time.time) -> None:
        self._connection = connection
        self._metrics = metrics
        self._clock = clock

    def __call__(self, method: str, template: str, status: Optional[int], seconds: float) -> None:
        self._metrics.observe_config_api_request(method, "error" if status is None else str(status), seconds)
        connection = self._connection
        now = self._clock()
        if status is None or status >= 500:
            if connection.connected:
                connection.reconnects += 1
            connection.connected = False
            connection.last_error = f"{method} {template}: " + ("no answer" if status is None else f"status {status}")
            connection.last_error_at = now
        else:
            connection.connected = True
            connection.last_event_at = now
