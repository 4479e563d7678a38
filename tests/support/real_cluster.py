"""The daemon against the real API server (the `realkube` tier): the session's control plane
(tests/support/control_plane_support.py), a fresh embedded config API per test, an emulated CNI, and
`contrail-kube-manager run` as a real process with the restricted identity's kubeconfig.

What a kubelet and a CNI would do is done here, through the real API as its admin: a pod is created
(the server drops `status` on create), then given its IP through `pods/<name>/status`, then its VM
and VMI are created in the config API. Convergence is checked as in e2e (`ConvergenceChecks`), on
what the real server holds. Each test works in namespaces of its own and removes what it made (the
bare control plane has no namespace controller: a deleted namespace is finalized here), so that the
next test's translation holds no pod without its VM."""
from __future__ import annotations

import itertools
import json
import os
import re
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from kubernetes import client

from simulators.cni import CniEmulator
from simulators.vnc_api.runner import BackgroundServer, run_in_background
from tests.support.control_plane_support import RealKube
from tests.support.e2e_support import ConvergenceChecks, DaemonProcess
from tests.support.reconciler_support import InProcessApi
from vnc_client.client import VncClient

CNP = ("policy.networking.k8s.io", "v1alpha2", "clusternetworkpolicies")
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")
_serial = itertools.count(1)
CLIENT_ERROR = re.compile(r"\b4\d\d [A-Z][a-z]")


def unique(stem: str) -> str:
    """A name no other test of the session uses (objects outlive a test only until its cleanup)."""
    return f"{stem}-{os.getpid() % 1000}-{next(_serial)}"


def as_created(manifest: Dict[str, Any]) -> Dict[str, Any]:
    """A builder's manifest as a client sends it: no status, no server-set metadata."""
    body = {k: v for k, v in manifest.items() if k != "status"}
    body["metadata"] = {k: v for k, v in manifest["metadata"].items() if k not in SERVER_SET}
    return body


class RealCluster(ConvergenceChecks):
    """One test's view of the real control plane, with its own config API and CNI."""

    def __init__(self, real: RealKube) -> None:
        self.real = real
        self.admin = real.admin()
        self.core = client.CoreV1Api(self.admin)
        self.net = client.NetworkingV1Api(self.admin)
        self.custom = client.CustomObjectsApi(self.admin)
        self.vnc: BackgroundServer = run_in_background()
        self.contrail = InProcessApi(self.vnc.api)
        self.cni = CniEmulator(VncClient([self.vnc.host], self.vnc.port))
        self.daemons: List[DaemonProcess] = []
        self._made: List[Tuple[str, str, str]] = []  # (kind, namespace, name), in creation order
        for existing in self.objects("pods"):  # another test's, not cleaned up: give them VMs too
            self.cni.attach(existing)

    # --- Kubernetes side, through the real API -----------------------------------------------

    def apply(self, *manifests: Dict[str, Any]) -> None:
        """Create each object, or replace it (with the resourceVersion it holds) when it exists."""
        for manifest in manifests:
            kind, meta = manifest["kind"], manifest["metadata"]
            key = (kind, meta.get("namespace", ""), meta["name"])
            if key in self._made:
                self._replace(manifest)
            else:
                self._create(manifest)
                self._made.append(key)

    def _create(self, manifest: Dict[str, Any]) -> None:
        kind, body, namespace = manifest["kind"], as_created(manifest), manifest["metadata"].get("namespace")
        if kind == "Namespace":
            self.core.create_namespace(body)
        elif kind == "NetworkPolicy":
            self.net.create_namespaced_network_policy(namespace, body)
        elif kind == "ClusterNetworkPolicy":
            self.custom.create_cluster_custom_object(*CNP, body)
        elif kind == "Pod":
            self.core.create_namespaced_pod(namespace, body)
            self.set_pod_ip(namespace, body["metadata"]["name"], manifest["status"]["podIP"])
            self.cni.attach(self.read("pods", namespace, body["metadata"]["name"]))
        else:
            raise ValueError(f"no way to create a {kind}")

    def set_pod_ip(self, namespace: str, name: str, ip: str) -> None:
        """What a kubelet does once the pod's sandbox has its address."""
        self.core.patch_namespaced_pod_status(name, namespace, {"status": {
            "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}})

    def _replace(self, manifest: Dict[str, Any]) -> None:
        kind, meta = manifest["kind"], manifest["metadata"]
        namespace, name = meta.get("namespace"), meta["name"]
        if kind == "Namespace":
            self.core.patch_namespace(name, {"metadata": {"labels": meta.get("labels") or {}}})
        elif kind == "Pod":
            held = self.read("pods", namespace, name)
            labels = {k: None for k in held["metadata"].get("labels") or {}}
            labels.update(meta.get("labels") or {})
            self.core.patch_namespaced_pod(name, namespace, {"metadata": {"labels": labels}})
        elif kind == "NetworkPolicy":
            body = as_created(manifest)
            body["metadata"]["resourceVersion"] = self.read("networkpolicies", namespace, name)[
                "metadata"]["resourceVersion"]
            self.net.replace_namespaced_network_policy(name, namespace, body)
        elif kind == "ClusterNetworkPolicy":
            body = as_created(manifest)
            body["metadata"]["resourceVersion"] = self.read("clusternetworkpolicies", "", name)[
                "metadata"]["resourceVersion"]
            self.custom.replace_cluster_custom_object(*CNP, name, body)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        if kind == "Pod":
            held = self.read("pods", namespace, name)
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
            self.cni.detach(held)
        elif kind == "NetworkPolicy":
            self.net.delete_namespaced_network_policy(name, namespace)
        elif kind == "ClusterNetworkPolicy":
            self.custom.delete_cluster_custom_object(*CNP, name)
        elif kind == "Namespace":
            self._delete_namespace(name)
        self._made = [key for key in self._made if key != (kind, namespace if kind != "Namespace" else "", name)]

    def _delete_namespace(self, name: str) -> None:
        """Delete and finalize (no namespace controller runs here): gone at once. Its content must
        be gone already."""
        self.core.delete_namespace(name)
        self.core.replace_namespace_finalize(name, client.V1Namespace(
            metadata=client.V1ObjectMeta(name=name), spec=client.V1NamespaceSpec(finalizers=[])))

    def read(self, resource: str, namespace: Optional[str], name: str) -> Dict[str, Any]:
        path = (f"/apis/{'/'.join(CNP[:2])}/{resource}/{name}" if resource == "clusternetworkpolicies"
                else self._path(resource, namespace) + f"/{name}")
        return self._get(path)

    @staticmethod
    def _path(resource: str, namespace: Optional[str]) -> str:
        group = {"networkpolicies": "/apis/networking.k8s.io/v1", "clusternetworkpolicies": "/apis/" + "/".join(CNP[:2]),
                 "events": "/apis/events.k8s.io/v1", "leases": "/apis/coordination.k8s.io/v1"}.get(resource, "/api/v1")
        return group + (f"/namespaces/{namespace}" if namespace else "") + f"/{resource}"

    def _get(self, path: str) -> Dict[str, Any]:
        answer = self.admin.call_api("GET", self.admin.configuration.host + path)
        answer.read()
        if answer.status != 200:
            raise AssertionError(f"GET {path}: {answer.status} {answer.data[:300]!r}")
        result: Dict[str, Any] = json.loads(answer.data)
        return result

    def objects(self, resource: str, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        """What the real server holds, in API-server form (camelCase, as the daemon reads it)."""
        items: List[Dict[str, Any]] = self._get(self._path(resource, namespace))["items"]
        return items

    def events(self, namespace: Optional[str] = None) -> List[Dict[str, Any]]:
        return self.objects("events", namespace)

    def events_about(self, kind: str, name: str, reason: Optional[str] = None) -> List[Dict[str, Any]]:
        return [e for e in self.events() if e["regarding"]["kind"] == kind and e["regarding"]["name"] == name
                and reason in (None, e["reason"])]

    # --- the daemon --------------------------------------------------------------------------

    def config_file(self, kubernetes: str = "", **extra: str) -> str:
        """`run -c` for this config API; `kubernetes`: the [KUBERNETES] lines that reach the API
        server (default: the restricted identity's kubeconfig); `extra`: more [KUBERNETES] keys."""
        reach = kubernetes or f"kubeconfig = {self.real.kube_manager_kubeconfig}"
        keys = {"leader_elect": "false", **extra}
        handle, path = tempfile.mkstemp(prefix="kube-manager-realkube-", suffix=".conf")
        with os.fdopen(handle, "w") as stream:
            stream.write("[DEFAULTS]\nhttp_server_ip = 127.0.0.1\nhttp_server_port = 0\n"
                         "kube_timer_interval = 3600\nlog_level = INFO\n\n"
                         f"[KUBERNETES]\ncluster_name = k8s\n{reach}\n"
                         + "".join(f"{key} = {value}\n" for key, value in keys.items())
                         + f"\n[VNC]\nvnc_endpoint_ip = 127.0.0.1\nvnc_endpoint_port = {self.vnc.port}\n")
        return path

    def start_daemon(self, kubernetes: str = "", **extra: str) -> DaemonProcess:
        daemon = DaemonProcess(self.config_file(kubernetes, **extra))
        self.daemons.append(daemon)
        return daemon

    def close(self) -> None:
        for daemon in self.daemons:
            daemon.kill()
        for kind, namespace, name in reversed(self._made):
            try:
                self.delete(kind, namespace, name)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
        self.vnc.stop()


def client_errors(lines: List[str]) -> List[str]:
    """Log lines that tell of a 4xx answer (`403 Forbidden`, `422 Unprocessable Entity`, ...)."""
    return [line for line in lines if CLIENT_ERROR.search(line)]
