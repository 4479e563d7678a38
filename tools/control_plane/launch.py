"""`up`: build what is missing, start etcd and kube-apiserver on free loopback ports, wait for
/readyz, install the CRD and the documented RBAC, write DIR's files. One line per step, with its
time. The pids go to DIR/env as soon as the processes start, so `down` can stop a half-done `up`."""
from __future__ import annotations

import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from tools.control_plane import local_processes
from tools.control_plane.admin_requests import AdminRequests, poll
from tools.control_plane.bootstrap_objects import (crd_manifest_path, install_cnp_crd,
                                                   install_rbac)
from tools.control_plane.building import Binaries, ensure_built
from tools.control_plane.certificates import Pki, make_pki
from tools.control_plane.env_file import write_env
from tools.control_plane.kubeconfigs import admin_user, kubeconfig, write_kubeconfig, write_private
from tools.control_plane.pins import Pins, read_pins

LOOPBACK = local_processes.LOOPBACK
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc"


@dataclass(frozen=True)
class UpOptions:
    folder: Path
    min_request_timeout: int = 1800            # kube-apiserver's default
    etcd_compaction_interval: str = "5m"       # kube-apiserver's default
    watch_cache: bool = True
    ready_timeout: float = 180.0               # generous: a loaded 2-core machine starts slowly
    extra_apiserver_args: Tuple[str, ...] = ()


class Steps:
    """Prints one line per step: what was done and how long it took."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.started = time.monotonic()

    @contextmanager
    def step(self, what: str) -> Iterator[Dict[str, str]]:
        """The dict lets a step add details to its line (pid, port, ...)."""
        details: Dict[str, str] = {}
        started = time.monotonic()
        yield details
        extra = "".join(f" {key}={value}" for key, value in details.items())
        self.say(f"{what}{':' + extra if extra else ''} ({time.monotonic() - started:.2f} s)")


def _etcd_args(folder: Path, client_port: int, peer_port: int) -> List[str]:
    peer = f"http://{LOOPBACK}:{peer_port}"
    client = f"http://{LOOPBACK}:{client_port}"
    return [f"--name=control-plane", f"--data-dir={folder / 'etcd-data'}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=control-plane={peer}", "--log-level=warn",
            # A throwaway cluster on a shared machine: durability is not worth the fsync latency.
            "--unsafe-no-fsync",
            # The API server's watch cache learns etcd's revision from these notifications; at etcd's
            # default (10 minutes) a quiet kind's watchers get their bookmarks only as rarely.
            "--watch-progress-notify-interval=1s"]


def _apiserver_args(options: UpOptions, pki: Pki, etcd_port: int, port: int) -> List[str]:
    return [
        f"--etcd-servers=http://{LOOPBACK}:{etcd_port}",
        f"--bind-address={LOOPBACK}", f"--advertise-address={LOOPBACK}", f"--secure-port={port}",
        f"--tls-cert-file={pki.path('apiserver.crt')}",
        f"--tls-private-key-file={pki.path('apiserver.key')}",
        f"--client-ca-file={pki.ca_cert}", f"--cert-dir={pki.folder}",
        "--authorization-mode=RBAC",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki.path('service-account.pub')}",
        f"--service-account-signing-key-file={pki.path('service-account.key')}",
        "--service-cluster-ip-range=10.96.0.0/16",
        # No kube-controller-manager runs to create each namespace's `default` ServiceAccount, which
        # this admission plugin requires of every pod; and loopback is no valid Endpoints address.
        "--disable-admission-plugins=ServiceAccount", "--endpoint-reconciler-type=none",
        f"--min-request-timeout={options.min_request_timeout}",
        f"--etcd-compaction-interval={options.etcd_compaction_interval}",
        f"--watch-cache={'true' if options.watch_cache else 'false'}",
        "--profiling=false",
        *options.extra_apiserver_args,
    ]


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_ready(admin: AdminRequests, binaries: Binaries, pids: Dict[str, int], folder: Path,
                timeout: float) -> None:
    def ready() -> Optional[str]:
        for name, binary in (("etcd", binaries.etcd), ("kube-apiserver", binaries.apiserver)):
            if not local_processes.runs(pids[name], binary):
                raise RuntimeError(f"{name} exited; the end of {folder / (name + '.log')}:\n"
                                   + _log_tail(folder / f"{name}.log"))
        try:
            status, text = admin.call("GET", "/readyz?verbose")
        except OSError as exc:  # not listening yet
            return str(exc)
        return None if status == 200 else f"{status}: " + " ".join(
            line for line in text.splitlines() if "failed" in line)
    poll("kube-apiserver /readyz", ready, timeout, interval=0.25)


def _describe(pins: Pins) -> Dict[str, str]:
    return {"KUBERNETES_VERSION": pins.kubernetes, "ETCD_VERSION": pins.etcd,
            "NETWORK_POLICY_API_VERSION": pins.network_policy_api, "GO_VERSION": pins.go_version}


def up(options: UpOptions, say: Callable[[str], None]) -> Dict[str, str]:
    """Starts the control plane into options.folder; returns what DIR/env holds."""
    steps = Steps(say)
    folder = options.folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    with steps.step("pins read") as line:
        pins = read_pins()
        line.update(kubernetes=pins.kubernetes, etcd=pins.etcd, go=pins.go_version)
    with steps.step("binaries ready"):
        binaries = ensure_built(pins, say)
    with steps.step("CRD source found") as line:
        crd_source = crd_manifest_path(pins)
        line.update(network_policy_api=pins.network_policy_api)
    with steps.step("certificates made"):
        pki = make_pki(folder / "pki")
        shutil.copyfile(pki.ca_cert, folder / "ca.crt")
    etcd_port, etcd_peer_port, port = (local_processes.free_port() for _ in range(3))
    url = f"https://{LOOPBACK}:{port}"
    env = {"CONTROL_PLANE_DIR": str(folder), **_describe(pins), "BIN_DIR": str(binaries.folder),
           "ETCD_BIN": str(binaries.etcd), "APISERVER_BIN": str(binaries.apiserver)}
    pids: Dict[str, int] = {}
    # A folder used before: etcd would take its old membership (and ports) from a kept data dir.
    shutil.rmtree(folder / "etcd-data", ignore_errors=True)
    with steps.step("etcd started") as line:
        pids["etcd"] = local_processes.start(binaries.etcd, _etcd_args(folder, etcd_port, etcd_peer_port),
                                             folder / "etcd.log")
        env.update(ETCD_PID=str(pids["etcd"]), ETCD_CLIENT_PORT=str(etcd_port),
                   ETCD_PEER_PORT=str(etcd_peer_port), ETCD_ENDPOINT=f"http://{LOOPBACK}:{etcd_port}")
        line.update(pid=env["ETCD_PID"], endpoint=env["ETCD_ENDPOINT"])
    with steps.step("kube-apiserver started") as line:
        pids["kube-apiserver"] = local_processes.start(
            binaries.apiserver, _apiserver_args(options, pki, etcd_port, port), folder / "kube-apiserver.log")
        env.update(APISERVER_PID=str(pids["kube-apiserver"]), APISERVER_PORT=str(port),
                   APISERVER_URL=url, MIN_REQUEST_TIMEOUT=str(options.min_request_timeout),
                   ETCD_COMPACTION_INTERVAL=options.etcd_compaction_interval)
        write_env(folder, env)
        line.update(pid=env["APISERVER_PID"], url=url)
    admin = AdminRequests(url, pki.ca_cert, pki.path("admin.crt"), pki.path("admin.key"))
    with steps.step("kube-apiserver ready (/readyz)"):
        _wait_ready(admin, binaries, pids, folder, options.ready_timeout)
    with steps.step("ClusterNetworkPolicy CRD installed") as line:
        install_cnp_crd(admin, crd_source, options.ready_timeout)
        line.update(source=str(crd_source))
    with steps.step("RBAC applied (etc/rbac.yaml)") as line:
        namespace, account, token = install_rbac(admin, options.ready_timeout)
        line.update(identity=f"system:serviceaccount:{namespace}:{account}")
    with steps.step("kubeconfigs written"):
        write_kubeconfig(folder / "admin.kubeconfig", kubeconfig(
            url, pki.ca_cert, "admin", admin_user(pki.path("admin.crt"), pki.path("admin.key"))))
        write_kubeconfig(folder / "kube-manager.kubeconfig", kubeconfig(
            url, pki.ca_cert, account, {"token": token}))
        write_private(folder / "kube-manager.token", token)
        env.update(ADMIN_KUBECONFIG=str(folder / "admin.kubeconfig"),
                   KUBE_MANAGER_KUBECONFIG=str(folder / "kube-manager.kubeconfig"),
                   KUBE_MANAGER_TOKEN_FILE=str(folder / "kube-manager.token"),
                   KUBE_MANAGER_IDENTITY=f"system:serviceaccount:{namespace}:{account}",
                   CA_CERT=str(folder / "ca.crt"))
        write_env(folder, env)
    say(f"control plane up in {time.monotonic() - steps.started:.1f} s: {url} "
        f"(kubeconfigs and env in {folder})")
    return env
