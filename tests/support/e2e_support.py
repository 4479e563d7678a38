"""End-to-end test rig: the emulated Kubernetes API server and the embedded config API run in this
process (each in its own thread), the daemon runs as a real `contrail-kube-manager run` process
talking to both over HTTP, and an emulated CNI gives each new pod its VM and VMI.

Convergence is checked against `translate` of what the emulated API server holds at that moment,
compared with our objects in the config API (uuids and hrefs ignored) and with the tags on every
pod's VMIs. Waiting is polling with deadlines (tests/support/waiting.py); the daemon is synchronised with
through /metrics, /readyz and its introspect JSON, and signals (SIGHUP: resync now, SIGTERM: stop);
its log only tells the introspect port, and is read where a test checks a line itself.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import urllib.request
from typing import Any, Callable, Dict, List, Optional

from prometheus_client.parser import text_string_to_metric_families

from simulators.cni import CniEmulator
from simulators.kube_api.server import DEFAULT_BOOKMARK_INTERVAL
from simulators.kube_api.store import DEFAULT_PROGRESS_INTERVAL
from simulators.kube_api.runner import EmulatorRunner
from simulators.kube_api.seed import load_seed
from kube_manager.offline.manifests import Manifests
from kube_manager.translator import translate
from tests.support.builders import HTTP_8080, allow_from, namespace, pod, policy
from tests.support.waiting import wait_until
from tests.support.reconciler_support import InProcessApi, differences, expected_objects
from vnc_client.client import VncClient
from simulators.vnc_api.runner import BackgroundServer, run_in_background

DEADLINE = 20.0

# The cluster the end-to-end tests start from: two namespaces, three pods, two NetworkPolicies.
NS_SHOP = namespace("shop", team="shop")
NS_OPS = namespace("ops", team="ops")
WEB = pod("shop", "web", "10.1.0.1", app="web", ports=HTTP_8080)
API = pod("shop", "api", "10.1.0.2", app="api", ports=HTTP_8080)
MONITOR = pod("ops", "monitor", "10.2.0.1", app="monitor", ports=HTTP_8080)
API_FROM_WEB = policy("shop", "api-from-web", allow_from("web", "api", 8080))


def monitoring(team: str) -> dict:
    return policy("shop", "from-ops", {
        "podSelector": {}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": team}}},
                              {"ipBlock": {"cidr": "10.9.0.0/16", "except": ["10.9.1.0/24"]}}],
                     "ports": [{"port": "http"}]}]})


BASE = Manifests({"Namespace": [NS_SHOP, NS_OPS],
                  "Pod": [WEB, API, MONITOR],
                  "NetworkPolicy": [API_FROM_WEB, monitoring("ops")]})
STOP_LIMIT = 10.0  # SPEC section 8: a clean stop within 10 s
RESOURCE_OF = {"Namespace": "namespaces", "Pod": "pods", "NetworkPolicy": "networkpolicies",
               "ClusterNetworkPolicy": "clusternetworkpolicies"}


def closed_port() -> int:
    """A local port nothing listens on (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_config(path: str, kube_server: str, kube_port: int, vnc: str, vnc_port: int) -> str:
    """A minimal configuration file for `run -c` (introspect on a free local port); returns `path`."""
    with open(path, "w") as stream:
        stream.write(textwrap.dedent(f"""\
            [DEFAULTS]
            http_server_ip = 127.0.0.1
            http_server_port = 0
            [KUBERNETES]
            kubernetes_api_server = {kube_server}
            kubernetes_api_port = {kube_port}
            leader_elect = false
            [VNC]
            vnc_endpoint_ip = {vnc}
            vnc_endpoint_port = {vnc_port}
            """))
    return path


class ConvergenceChecks:
    """Convergence of the config API on `translate` of what a Kubernetes API server holds; the
    server is the subclass's (`objects`), the config API the embedded one (`contrail`)."""

    contrail: InProcessApi

    def objects(self, resource: str) -> List[Dict[str, Any]]:
        raise NotImplementedError

    def translation(self) -> Dict[str, Any]:
        return translate({"Namespace": self.objects("namespaces"),
                          "Pod": self.objects("pods"),
                          "NetworkPolicy": self.objects("networkpolicies"),
                          "ClusterNetworkPolicy": self.objects("clusternetworkpolicies")}, cluster_name="k8s", owner="k8s").to_dict()

    def problems(self) -> List[str]:
        """What keeps the config API from matching `translate` of the current cluster."""
        translation = self.translation()
        problems = differences(expected_objects(translation), self.contrail.owned())
        uids = {(p["metadata"]["namespace"], p["metadata"]["name"]): p["metadata"]["uid"]
                for p in self.objects("pods")}
        for workload in translation["workloads"]:
            uid = uids[(workload["namespace"], workload["name"])]
            try:
                tags = self.contrail.vmi_tags(uid)
            except Exception as exc:  # the VM is not there (yet)
                tags = [f"<{type(exc).__name__}>"]
            if tags != workload["tags"]:
                problems.append(f"pod {workload['namespace']}/{workload['name']} tags {tags} != {workload['tags']}")
        return problems

    def wait_converged(self, timeout: float = DEADLINE) -> None:
        last: List[List[str]] = [[]]

        def done() -> bool:
            last[0] = self.problems()
            return not last[0]
        try:
            wait_until(done, "convergence", timeout)
        except AssertionError:
            raise AssertionError(f"not converged: {last[0][:10]}") from None


class Environment(ConvergenceChecks):
    """The emulated API server, the embedded config API and the emulated CNI."""

    def __init__(self, manifests: Manifests, late: Callable[[Dict[str, Any]], bool] = lambda pod: False,
                 bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL, crds: Optional[List[str]] = None,
                 progress_interval: float = DEFAULT_PROGRESS_INTERVAL) -> None:
        """`crds`: the emulator's installed custom resources (None: all, [] a cluster without any);
        `progress_interval`: how often the API server renews its own Lease, which moves the version
        a quiet watch's bookmarks carry past the watch's own (none is sent before)."""
        self.vnc: BackgroundServer = run_in_background()
        self.kube = EmulatorRunner(bookmark_interval=bookmark_interval, crds=crds, progress_interval=progress_interval)
        self.kube.start()
        self.contrail = InProcessApi(self.vnc.api)  # reads of the server's store, for checks
        self.cni = CniEmulator(VncClient([self.vnc.host], self.vnc.port))
        self._late = late

        def listener(resource: str, event_type: str, obj: Dict[str, Any]) -> None:
            if not (resource == "pods" and event_type == "ADDED" and late(obj)):
                self.cni.on_event(resource, event_type, obj)
        self.kube.store.add_listener(listener)
        load_seed(self.kube.store, manifests)
        self.daemons: List[DaemonProcess] = []

    # --- Kubernetes side -------------------------------------------------------------------

    def apply(self, *manifests: Dict[str, Any]) -> None:
        for manifest in manifests:
            self.kube.store.apply(manifest)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        self.kube.store.delete(RESOURCE_OF[kind], namespace, name)

    def objects(self, resource: str) -> List[Dict[str, Any]]:
        """The objects of `resource`; none of a custom resource whose CRD is not installed."""
        return self.kube.store.list(resource) if self.kube.store.served(resource) else []

    # --- the daemon ------------------------------------------------------------------------

    def config_file(self) -> str:
        handle, path = tempfile.mkstemp(prefix="kube-manager-e2e-", suffix=".conf")
        with os.fdopen(handle, "w") as stream:
            stream.write(f"""[DEFAULTS]
http_server_ip = 127.0.0.1
http_server_port = 0
kube_timer_interval = 3600
log_level = INFO

[KUBERNETES]
cluster_name = k8s
kubernetes_api_server = 127.0.0.1
kubernetes_api_port = {self.kube.url.rsplit(':', 1)[1]}

[VNC]
vnc_endpoint_ip = 127.0.0.1
vnc_endpoint_port = {self.vnc.port}
""")
        return path

    def start_daemon(self, *args: str) -> "DaemonProcess":
        daemon = DaemonProcess(self.config_file(), args)
        self.daemons.append(daemon)
        return daemon

    def close(self) -> None:
        for daemon in self.daemons:
            daemon.kill()
        self.kube.stop()
        self.vnc.stop()


class DaemonProcess:
    """`python -m kube_manager run -c FILE ...` with its log lines collected."""

    def __init__(self, config_path: str, args: tuple = ()) -> None:
        self.config_path = config_path
        self.lines: List[str] = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kube_manager", "run", "-c", config_path, *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._url: Optional[str] = None

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def log(self) -> List[str]:
        with self._lock:
            return list(self.lines)

    def wait_log(self, text: str, timeout: float = DEADLINE) -> str:
        return wait_until(lambda: next((l for l in self.log() if text in l), None) or self._died(),
                          f"log line {text!r}", timeout)

    def _died(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"daemon exited with {self.proc.returncode}:\n" + "\n".join(self.log()[-30:]))

    @property
    def introspect_url(self) -> str:
        if self._url is None:
            line = self.wait_log("introspect server listening on ")
            self._url = line.split("introspect server listening on ")[1].split()[0].strip('"')
        return self._url

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.introspect_url + path, timeout=5) as answer:
            body = answer.read().decode()
        return json.loads(body) if "format=json" in path else body

    def metric(self, name: str, **labels: str) -> float:
        """The sum of the samples `name` on /metrics whose labels include `labels` (0 when none)."""
        return sum(sample.value for family in text_string_to_metric_families(self.get("/metrics"))
                   for sample in family.samples
                   if sample.name == name and labels.items() <= sample.labels.items())

    def resync(self) -> None:
        """Ask for a resync (SIGHUP)."""
        self.proc.send_signal(signal.SIGHUP)

    def stop(self) -> int:
        """SIGTERM; the exit status (it must come within STOP_LIMIT seconds)."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(STOP_LIMIT)

    def wait_exit(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        try:
            os.unlink(self.config_path)
        except OSError:
            pass
