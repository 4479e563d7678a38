"""The kube-manager service: watches -> DB and translator -> reconciler -> config API, in one gevent loop.

The pipeline (records, translator, and per term a reconciler) comes from `build_pipeline`
(kube_manager/service/pipeline.py). `Daemon.run` starts, in this order: the in-process config API
(`vnc_endpoint_ip = embedded`) and the emulated Kubernetes API server with the emulated CNI
(`kubernetes_api_server = emulated`) when configured; the introspect server; one watcher per
registered kind; leader election (SPEC section 12). It waits for a term as leader; what the term does
then, the wait for the first list of each resource, the start-up resync and the resyncs after it,
is `TermResyncs` (term_resyncs.py). The term's reconciler is connected as the term begins: once
every list is in, its first listings go out while the lists are translated
(`Reconciler.initial_lists_in`). A standby keeps watching and translating, serves introspect and
writes nothing.

Each term as leader gets its own config API client, bound to the term's write-gate epoch, and its own
reconciler connected to the pipeline: the start-up resync (one listing per type, repair, garbage collection), then the workers.
From then on events flow continuously, and a full resync repairs drift every `kube_timer_interval`
seconds, or at once on SIGHUP. When the term is lost the gate already refuses the term's writes; the
reconciler's queued and in-flight work is abandoned, and the daemon waits for its next term.

SIGTERM and SIGINT stop everything within a few seconds with status 0. `once=True` converges and
returns 0 only when everything converged; `once_timeout` bounds the whole of it (initial lists and
first resync included): when it expires, one ERROR line names what did not converge (an initial
list and the Kubernetes API's last error, the config API, or the keys still pending), in-flight
work is abandoned and the result is 1.

Everything is greenlets in one hub: the caller must have run `gevent.monkey.patch_all()` before the
network libraries were imported (`cmd_run` does), so that the watchers' blocking socket reads yield.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional

import gevent
import gevent.event

from kube_manager.leader.leadership import Leadership
from kube_manager.observability.logging_setup import kv
from kube_manager.offline.manifests import load_manifests
from kube_manager.observability.metrics import Metrics
from kube_manager.service.pipeline import build_pipeline
from kube_manager.service.term_resyncs import TermResyncs
from kube_manager.reconciler.core import Reconciler
from kube_manager.settings import OperatorSettings
from kube_manager.translator.exact.pairs import pair_rule_prefix
from kube_manager.status.pair_bound import PairRulesBound
from kube_manager.version import VERSION, python_version
from kube_manager.observability.vnc_status import ConfigApiObserver
from kube_manager.status.outbox import KubeApis, StatusOutbox
from kube_manager.status.publisher import StatusPublisher, now_text
from vnc_client.auth import KeystoneCredentials
from vnc_client.client import VncClient

log = logging.getLogger(__name__)

STOP_GRACE = 3.0               # per component; the whole stop stays well under 10 s
ABANDON_GRACE = 0.5            # the same after `--once` timed out: in-flight work is abandoned


@dataclass
class _Running:
    """What `run` started, stopped in reverse order."""

    stoppers: List[Callable[[], None]] = field(default_factory=list)
    greenlets: List[gevent.Greenlet] = field(default_factory=list)


class Daemon:
    """One kube-manager; see the module docstring."""

    def __init__(self, settings: OperatorSettings, *, metrics: Optional[Metrics] = None) -> None:
        self.settings = settings
        self.pipeline = build_pipeline(settings.cluster.name, settings.cluster.owner,
                                       semantics=settings.cluster.semantics)
        self.db = self.pipeline.db
        self.cache = self.pipeline.cache
        self.metrics = metrics or Metrics()
        self.metrics.bind_database(self.db, pair_rule_prefix=pair_rule_prefix(settings.cluster.name))
        self.client: Optional[VncClient] = None  # the current term's (epoch 0 before any: reads only)
        self._observer = ConfigApiObserver(self.db.vnc_connection, self.metrics)
        self.leadership = Leadership(settings, self.db.leader, on_transition=self.metrics.leader_transition)
        from introspect.redact import Redactor
        self.status = StatusPublisher(StatusOutbox(self.metrics), now_text, redact=Redactor(settings).text)
        self.cache.status.observers.append(self.status)  # SPEC 15, from the status book; the leader writes
        bound = PairRulesBound(settings.cluster.pair_rules_bound, self.db.pair_rules, self.status.policy_warned)
        self.cache.status.pair_rule_observers.append(bound.counted)
        self.status.standing.append(bound.standing)
        self._kube_api: Any = None  # the watchers' Kubernetes client, shared by the elector and the status
        self._vnc_endpoints: List[str] = list(settings.vnc.endpoints)
        self._vnc_port = settings.vnc.port
        self.introspect_url = ""
        self._prepare_explain: Callable[[], None] = lambda: None  # /explain's index built ahead, once converged
        self.vnc_url = ""
        self.kube_url = ""
        self._stop = gevent.event.Event()
        self.terms = TermResyncs(self.pipeline, settings.reconciler, self.status, self._stop,
                                 lambda: self._prepare_explain())
        self._stop_grace = STOP_GRACE
        self._running = _Running()

    @property
    def reconciler(self) -> Optional[Reconciler]:
        """The current term's (None between terms)."""
        return self.pipeline.reconciler

    # --- control -----------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop.set()
        self.leadership.halt()

    def request_resync(self) -> None:
        self.terms.resync_now.set()

    def run(self, once: bool = False, once_timeout: float = 300.0) -> int:
        """Run until stopped (0) or, with `once`, until converged (0) or `once_timeout` (1)."""
        handlers = [gevent.signal_handler(signal.SIGTERM, self._on_signal, "SIGTERM"),
                    gevent.signal_handler(signal.SIGINT, self._on_signal, "SIGINT"),
                    gevent.signal_handler(signal.SIGHUP, self._on_signal, "SIGHUP")]
        try:
            if once:
                return self._run_once(once_timeout)
            self._start()
            self._lead()
            return 0
        finally:
            for handler in handlers:
                handler.cancel()
            self._shutdown()

    # --- start-up ----------------------------------------------------------------------------

    def _start(self) -> None:
        settings = self.settings
        log.info("kube-manager starting", extra=kv(version=VERSION, python=python_version(),
                                                   cluster=settings.cluster.name, owner=settings.cluster.owner,
                                                   resync_interval=settings.reconciler.resync_interval))
        if settings.vnc.embedded:
            from simulators.vnc_api.runner import EmbeddedServer
            server = EmbeddedServer("127.0.0.1", settings.vnc.port)
            server.start()
            self._running.stoppers.append(server.stop)
            self._vnc_endpoints, self._vnc_port = [server.host], server.port
        self.client = self._make_client(0)
        self._running.stoppers.append(lambda: self.client.close() if self.client is not None else None)
        self.vnc_url = self.client.current_endpoint
        self.db.vnc_connection.url = self.vnc_url
        log.info("config API", extra=kv(url=self.vnc_url, embedded=settings.vnc.embedded,
                                        keystone=settings.auth.keystone))
        self._start_introspect()
        self._spawn(self._staged_runner().run)
        self._spawn(self.terms.await_lists)
        self._kube_api = self._start_watchers(self._kubernetes_url())
        self.leadership.start(self._kube_api)
        self._spawn(self._heartbeat)

    def _make_client(self, epoch: int) -> VncClient:
        """A config API client whose writes pass only while term `epoch` lasts."""
        vnc, auth = self.settings.vnc, self.settings.auth
        credentials = None
        if auth.keystone:
            credentials = KeystoneCredentials(auth.token_url, auth.user, auth.password, auth.tenant)
        return VncClient(self._vnc_endpoints, self._vnc_port, use_ssl=vnc.use_ssl,
                         ca_file=vnc.ca_cert or None, credentials=credentials, retry=vnc.retry,
                         concurrency=self.settings.reconciler.concurrency, observer=self._observer,
                         write_gate=lambda: self.leadership.gate.check(epoch), agent=self.leadership.identity)

    # --- terms as leader ---------------------------------------------------------------------

    def _begin_term(self, epoch: int) -> gevent.event.Event:
        """A term as leader begins: its own client and reconciler; returns the event of its end."""
        if self.client is not None:
            self.client.close()
        self.client = self._make_client(epoch)
        self.pipeline.connect(self.client, self.settings.reconciler, self.metrics)
        self.status.lead(KubeApis.over(self._kube_api), lambda: self.leadership.gate.check(epoch), self.leadership.identity)
        log.info("leading: start-up resync", extra=kv(term=epoch))
        return self.leadership.term_end

    def _abandon_term(self) -> None:
        """Leadership lost: the term's work is dropped at once (its writes are refused already)."""
        self.status.stand_by()
        self.pipeline.disconnect()

    def _lead(self) -> None:
        """Terms as leader, one after another, until stopped; standing by in between."""
        while not self._stop.is_set():
            if self.leadership.enabled:
                log.info("standing by", extra=kv(leader=self.db.leader.leader or "-"))
            epoch = self.leadership.wait_term(self._stop)
            if epoch is None:
                return
            end = self._begin_term(epoch)
            try:
                if self.terms.wait_for_lists(end) and self.terms.first_resync(end):
                    assert self.reconciler is not None
                    self.reconciler.start()
                    self.terms.serve(end)
            finally:
                if not self._stop.is_set():
                    self._abandon_term()

    def _kubernetes_url(self) -> Optional[str]:
        """Start the emulated API server (and CNI) when configured; its URL, else None."""
        if not self.settings.kubernetes.emulated:
            return None
        from simulators.cni import CniEmulator
        from simulators.kube_api.runner import EmulatorRunner
        from simulators.kube_api.seed import load_seed
        emulation = self.settings.emulation
        manifests = load_manifests(emulation.manifests, warn=lambda note: log.warning(
            "emulated manifests: document skipped or repeated", extra=kv(note=note))) \
            if emulation.manifests else None
        runner = EmulatorRunner(port=self.settings.kubernetes.api_port)
        runner.start()
        self._running.stoppers.append(runner.stop)
        if emulation.cni:
            cni = CniEmulator(VncClient([self.vnc_url]))
            runner.store.add_listener(cni.on_event)
        if manifests is not None:
            load_seed(runner.store, manifests)  # after the CNI listens, so every pod gets its VM
            objects = manifests.objects
            log.info("emulated API server loaded", extra=kv(
                namespaces=len(objects["Namespace"]), pods=len(objects["Pod"]),
                network_policies=len(objects["NetworkPolicy"]),
                cluster_network_policies=len(objects["ClusterNetworkPolicy"])))
        return runner.url

    def _start_watchers(self, emulated_url: Optional[str]) -> Any:
        """The watchers in greenlets; returns their Kubernetes API client (the elector shares it)."""
        from kube_manager.kube.access import AccessExplainer
        from kube_manager.kube.client_factory import build_api_client
        from kube_manager.kube.watcher import make_watchers
        api_client, endpoint = build_api_client(self.settings.kubernetes, emulated_url)
        self.kube_url = endpoint.url
        self._running.stoppers.append(api_client.close)
        watchers = make_watchers(api_client, self.pipeline.kinds, self.cache.on_event, self.db, metrics=self.metrics,
                                 explain=AccessExplainer(endpoint.access).explain,
                                 settings=dataclasses.replace(self.settings.watch,
                                                              absent_recheck=self.settings.reconciler.resync_interval))
        self.terms.look_again = [watcher.look_again for watcher in watchers]  # absent CRDs, at each resync
        for watcher in watchers:
            self._running.stoppers.append(watcher.stop)
            self._spawn(watcher.run)
        return api_client

    def _start_introspect(self) -> None:
        from introspect.deferred import DeferredApp, DeferredExplainer  # each made when first used
        from introspect.health import CachedProbe
        from introspect.server import IntrospectServer
        explain = DeferredExplainer(self.db, self.settings.cluster.name, self.settings.cluster.semantics,
                                    self.cache.status.change_observers)
        self._prepare_explain = explain.prepare  # in steps between events: never on an event's path
        app = DeferredApp(self.db, registry=self.metrics.registry, config=self.settings, explain=explain,
                          config_api_probe=CachedProbe(self._probe_config_api, self.settings.health.probe_ttl),
                          health_policy=self.settings.health.for_silence_timeout(self.settings.watch.silence_timeout),
                          semantics=self.settings.cluster.semantics)
        listen = self.settings.introspect
        server = IntrospectServer(listen.listen_ip, listen.port, app)
        try:
            server.start()
        except OSError as exc:  # the operator must know which of the daemon's ports, and its keys
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise OSError(f"introspect server cannot listen on {listen.listen_ip}:{listen.port} "
                          f"(http_server_ip, http_server_port): {reason}") from None
        self._running.stoppers.append(lambda: server.stop(STOP_GRACE))
        self.introspect_url = server.url

    def _staged_runner(self) -> Any:
        """SPEC 17: what the staged policies would change, computed off the event path."""
        from introspect.deferred import db_objects
        from kube_manager.service.staged_runner import StagedRunner
        return StagedRunner(self.db, self.pipeline.translator, lambda: db_objects(self.db),
                            self.status.staged_reported, self.metrics.registry, stop=self._stop,
                            debounce=self.settings.staged.debounce, budget=self.settings.staged.budget)

    def _probe_config_api(self) -> bool:
        """/readyz: does the config API answer now (a bounded GET, not the last request's outcome)."""
        assert self.client is not None
        return self.client.probe(self.settings.health.probe_timeout)

    # --- running -----------------------------------------------------------------------------

    def _run_once(self, timeout: float) -> int:
        """`--once`: start, list, resync and converge, all within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        bound = gevent.Timeout(timeout)
        bound.start()
        try:
            self._start()
            epoch = self.leadership.wait_term(self._stop)
            if epoch is None:
                return 0
            end = self._begin_term(epoch)
            if self.terms.wait_for_lists(end) and self.terms.first_resync(end):
                assert self.reconciler is not None
                self.reconciler.start()
                if self.reconciler.wait_converged(max(0.0, deadline - time.monotonic()), end):
                    log.info("converged", extra=kv(**self.reconciler.figures()))
                    return 0
            if self._stop.is_set():
                return 0
        except gevent.Timeout as exc:
            if exc is not bound:
                raise
            self._stop_grace = ABANDON_GRACE
        finally:
            bound.close()
        log.error("not converged", extra=kv(timeout=timeout, reason=self._not_converged()))
        return 1

    def _not_converged(self) -> str:
        """What holds `--once` back, in one line: the first stage that is not done."""
        waiting = [status for _name, status in sorted(self.db.kube_connections.items()) if not status.initial_list_done]
        if waiting or not self.db.kube_connections:
            error = next((status.last_error for status in waiting if status.last_error), "")
            return (f"initial list of {', '.join(status.name for status in waiting) or 'every resource'} not done: "
                    f"Kubernetes API at {self.kube_url or 'its address'} "
                    + (f"unreachable ({error})" if error else "did not answer"))
        if not self.db.leader.is_leader:
            return f"this instance is not the leader (leader: {self.db.leader.leader or 'none'})"
        if not self.terms.resynced_once:
            last = self.db.vnc_connection.last_error
            return (f"first resync not done: config API at {self.vnc_url} "
                    + (f"unreachable ({last})" if last else "did not answer"))
        assert self.reconciler is not None
        figures = {**self.reconciler.figures(), **self.reconciler.summary()}
        return (", ".join(f"{k}={v}" for k, v in figures.items())
                + "; pending: " + "; ".join(self.reconciler.unsettled(5)))

    def _heartbeat(self) -> None:
        while not self._stop.is_set():
            self.db.loop_heartbeat_at = time.time()
            self._stop.wait(self.settings.health.heartbeat_interval)

    def _on_signal(self, name: str) -> None:
        if name == "SIGHUP":
            log.info("SIGHUP: resync now")
            self.request_resync()
            return
        log.info("stopping", extra=kv(signal=name))
        self.request_stop()

    def _spawn(self, func: Callable[[], Any]) -> None:
        self._running.greenlets.append(gevent.spawn(func))

    # --- stopping ----------------------------------------------------------------------------

    def _shutdown(self) -> None:
        self._stop.set()
        self.leadership.halt()
        if self.reconciler is not None:
            self.reconciler.stop(self._stop_grace)
        self.status.stand_by()
        self.leadership.release()  # after the last write: a standby takes over at its next try
        for stop in reversed(self._running.stoppers):
            try:
                stop()
            except Exception as exc:  # keep stopping the rest
                log.warning("error while stopping", extra=kv(error=f"{type(exc).__name__}: {exc}"))
        self._running.stoppers.clear()
        gevent.joinall(self._running.greenlets, timeout=self._stop_grace)
        gevent.killall([g for g in self._running.greenlets if not g.dead], timeout=1)
        self._running.greenlets.clear()
        log.info("kube-manager stopped")

