"""Prometheus metrics of kube-manager, on one dedicated registry served by the introspect `/metrics`.

A dedicated `CollectorRegistry` (not prometheus_client's global one) so that tests and several
daemons in one process never share counters, and so that `/metrics` shows exactly kube-manager's own
series. The daemon builds one `Metrics` and hands it to the watchers, the reconciler and the config
API client, which update the objects below; it also binds its `Database`, from which the level
metrics (objects owned, objects rejected, sync states) are read at scrape time, so they can never
drift from what the introspect pages show.
"""
from __future__ import annotations

import time
from collections import Counter as Tally
from typing import Any, Callable, Iterable, Iterator, Optional

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kube_manager.records.db import Database
from kube_manager.version import VERSION, python_version

PREFIX = "kube_manager"

# Config API calls are quick on a LAN but can stall behind a busy contrail-api; reconciles of one key
# are milliseconds, a full resync of a large cluster takes seconds to minutes.
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
RECONCILE_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0)


class Metrics:
    """Every metric object kube-manager updates, registered on `self.registry`.

    Label values, so that dashboards can rely on them:
    - `kube_events`: resource `namespaces` | `pods` | `networkpolicies`; type as the watch event says
      (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`), or `LISTED` for each object of a list
      (the initial list and every re-list after a 410).
    - `reconcile_duration`: kind `namespace` | `pod` | `network_policy` | `resync`.
    - `config_api_requests` / `config_api_request_duration`: method the HTTP verb (`GET`, `POST`,
      `PUT`, `DELETE`); status the HTTP status code as a string, or `error` when no response came.
    - `watch_restarts`: resource as above; reason `expired` (410 Gone, re-list), `error`
      (connection or API error) or `timeout` (the client-side timeout fired).
    - `kubernetes_events`: reason `InvalidPolicy` | `WriteFailed` | `Synced`; `status_failures`:
      target `event` | `status`, reason `error` (refused, unreachable), `timeout` or `dropped`
      (the outbox was full).
    """

    def __init__(self, registry: Optional[CollectorRegistry] = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.kube_events = Counter(
            f"{PREFIX}_kube_events", "Watch events and listed objects received from the Kubernetes API server",
            ["resource", "type"], registry=reg)
        self.work_queue_depth = Gauge(
            f"{PREFIX}_work_queue_depth", "Keys waiting in the reconcile work queue", registry=reg)
        self.reconcile_duration = Histogram(
            f"{PREFIX}_reconcile_duration_seconds", "Time to reconcile one key (or one full resync)",
            ["kind"], buckets=RECONCILE_BUCKETS, registry=reg)
        self.config_api_requests = Counter(
            f"{PREFIX}_config_api_requests", "Requests sent to the Contrail config API",
            ["method", "status"], registry=reg)
        self.config_api_request_duration = Histogram(
            f"{PREFIX}_config_api_request_duration_seconds",
            "Latency of Contrail config API requests, retries counted separately",
            ["method"], buckets=REQUEST_BUCKETS, registry=reg)
        self.watch_restarts = Counter(
            f"{PREFIX}_watch_restarts", "Kubernetes watches restarted", ["resource", "reason"],
            registry=reg)
        self.leader_is_leader = Gauge(
            f"{PREFIX}_leader_is_leader", "1 while this instance holds the election Lease (the only one writing)",
            registry=reg)
        # The usual build_info idiom: one series, value 1, whose labels say what is running, so that a
        # dashboard can tell which instances run which version after a rolling upgrade.
        self.build_info = Gauge(
            f"{PREFIX}_build_info", "1, labelled with the running kube-manager and Python versions",
            ["version", "python"], registry=reg)
        self.build_info.labels(version=VERSION, python=python_version()).set(1)
        self.leader_transitions = Counter(
            f"{PREFIX}_leader_transitions", "Times this instance became the leader or stopped being it",
            registry=reg)

        self.kubernetes_events = Counter(
            f"{PREFIX}_kubernetes_events", "Events about policies written to the Kubernetes API (SPEC 15), "
            "a series update counted as one", ["reason"], registry=reg)
        self.status_writes = Counter(
            f"{PREFIX}_status_writes", "ClusterNetworkPolicy status writes (conditions) to the Kubernetes API",
            registry=reg)
        self.status_failures = Counter(
            f"{PREFIX}_status_failures", "Events and status writes that failed or were dropped",
            ["target", "reason"], registry=reg)

    def leader_transition(self, leading: bool) -> None:
        """The elector's hook: this instance started or stopped leading."""
        self.leader_is_leader.set(1 if leading else 0)
        self.leader_transitions.inc()

    # The status outbox's (kube_manager.status.outbox.OutboxCounters).

    def status_written(self, job: Any) -> None:
        if job.target == "event":
            self.kubernetes_events.labels(reason=job.reason).inc()
        else:
            self.status_writes.inc()

    def status_failed(self, target: str, reason: str) -> None:
        self.status_failures.labels(target=target, reason=reason).inc()

    # The reconciler's observer hooks (kube_manager.reconciler.core.Observer).

    def queue_depth(self, depth: int) -> None:
        self.work_queue_depth.set(depth)

    def reconciled(self, kind: str, seconds: float) -> None:
        self.reconcile_duration.labels(kind=kind).observe(seconds)

    def observe_config_api_request(self, method: str, status: str, seconds: float) -> None:
        """Count one config API request and record its latency (both series move together)."""
        self.config_api_requests.labels(method=method.upper(), status=str(status)).inc()
        self.config_api_request_duration.labels(method=method.upper()).observe(seconds)

    def bind_database(self, db: Database, clock: Callable[[], float] = time.time, pair_rule_prefix: str = "") -> None:
        """Export the level metrics read from `db` at every scrape (see `DatabaseCollector`)."""
        self.registry.register(DatabaseCollector(db, clock, pair_rule_prefix))


class DatabaseCollector(Collector):
    """Gauges computed from the in-memory DB when scraped, instead of being kept up to date by hand.

    `owned_objects` counts what the config API holds of ours (`db.actual`), `desired_objects` what
    the translator wants (`db.desired`); a persistent gap between the two is a stuck reconcile.
    `exact_pair_rules` counts the desired firewall rules named with `pair_rule_prefix` (the
    `kubernetes` mode's pair rules, SPEC 14): the one part of the output that can grow faster than
    the NetworkPolicies (docs/operations.md, *Enforcement semantics*).
    """

    def __init__(self, db: Database, clock: Callable[[], float] = time.time, pair_rule_prefix: str = "") -> None:
        self._db = db
        self._clock = clock
        self._pair_rule_prefix = pair_rule_prefix

    def collect(self) -> Iterator[GaugeMetricFamily]:
        db = self._db
        yield _family("owned_objects", "Contrail objects of ours present in the config API", "type",
                      {kind: len(objects) for kind, objects in db.actual.items()})
        yield _family("desired_objects", "Contrail objects the translator wants", "type",
                      {kind: len(objects) for kind, objects in db.desired.items()})
        if self._pair_rule_prefix:
            pairs = GaugeMetricFamily(f"{PREFIX}_exact_pair_rules",
                                      "Pair rules the kubernetes policy semantics wants (SPEC 14)")
            pairs.add_metric([], sum(fq_name[-1].startswith(self._pair_rule_prefix)
                                     for fq_name in db.desired.get("firewall-rule", {})))
            yield pairs
        rejected = {(e.get("kind", ""), e.get("namespace", ""), e.get("name", "")) for e in db.errors}
        yield _family("rejected_objects", "Kubernetes objects with a rejected (invalid) part", "kind",
                      Tally(kind for kind, _ns, _name in rejected))
        yield _family("network_policies", "NetworkPolicies by sync state", "state",
                      Tally(record.state for record in db.network_policies.values()))
        yield _family("pods", "Pods by VMI tagging state", "vmi_state",
                      Tally(record.vmi_state for record in db.pods.values()))
        age = GaugeMetricFamily(f"{PREFIX}_loop_heartbeat_age_seconds",
                                "Seconds since the main loop last reported alive")
        age.add_metric([], max(0.0, self._clock() - db.loop_heartbeat_at))
        yield age

    def describe(self) -> Iterable[GaugeMetricFamily]:
        # Nothing at registration time: collect() reads the DB, which may still be empty.
        return []


def _family(name: str, documentation: str, label: str, counts: "dict[str, int]") -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"{PREFIX}_{name}", documentation, labels=[label])
    for value in sorted(counts):
        family.add_metric([value], counts[value])
    return family
