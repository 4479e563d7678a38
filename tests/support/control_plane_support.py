"""The real control plane for the `realkube` tier: `tools/control-plane up` into a folder, what it
wrote (DIR/env), clients for its two identities, and etcd compaction for the 410 tests.

Without the binaries built for the current pins the tier is skipped, unless KUBE_MANAGER_REALKUBE=1
(CI sets it after building): then a control plane that cannot start fails the tests, so CI can
never pass by silently skipping them."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List

import pytest
from kubernetes import client, config

from tests.support.paths import REPO
from tools.control_plane.commands import NOT_BUILT
from tools.control_plane.env_file import read_env

TOOL = REPO / "tools" / "control-plane"
REQUIRED_VARIABLE = "KUBE_MANAGER_REALKUBE"
# Short, so that a test sees the server end a watch: kube-apiserver ends each watch after between
# this and twice this many seconds.
MIN_REQUEST_TIMEOUT = 30
UP_TIMEOUT = 1800.0   # includes a first build on a loaded 2-core machine


def real_kube_required() -> bool:
    return os.environ.get(REQUIRED_VARIABLE) == "1"


@dataclass(frozen=True)
class RealKube:
    """One running control plane: its folder and the values of its DIR/env."""

    folder: Path
    env: Dict[str, str]

    @property
    def url(self) -> str:
        return self.env["APISERVER_URL"]

    @property
    def admin_kubeconfig(self) -> str:
        return self.env["ADMIN_KUBECONFIG"]

    @property
    def kube_manager_kubeconfig(self) -> str:
        return self.env["KUBE_MANAGER_KUBECONFIG"]

    def api_client(self, kubeconfig: str) -> client.ApiClient:
        return config.new_client_from_config(config_file=kubeconfig)

    def admin(self) -> client.ApiClient:
        return self.api_client(self.admin_kubeconfig)

    def kube_manager(self) -> client.ApiClient:
        return self.api_client(self.kube_manager_kubeconfig)


def run_tool(*arguments: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *arguments], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _skip_unless_built() -> None:
    """Skips (outside CI) when the binaries are not built, saying how to build them."""
    if real_kube_required():
        return
    check = run_tool("build", "--check")
    if check.returncode == NOT_BUILT:
        pytest.skip(f"the real control plane is not built for the current pins: run "
                    f"`tools/control-plane build` (or set {REQUIRED_VARIABLE}=1 to build and require it)")
    if check.returncode != 0:
        pytest.skip(f"the real control plane cannot be built here: {check.stdout}{check.stderr}")


def start_real_kube(folder: Path, extra: List[str]) -> RealKube:
    """`up` into `folder`, skipped or failed as the module docstring says."""
    _skip_unless_built()
    done = run_tool("up", "--dir", str(folder), *extra, timeout=UP_TIMEOUT)
    sys.stderr.write(done.stdout)
    if done.returncode != 0:
        pytest.fail(f"tools/control-plane up failed (exit {done.returncode}):\n"
                    f"{done.stdout}{done.stderr}", pytrace=False)
    return RealKube(folder, read_env(folder))


def stop_real_kube(real: RealKube) -> None:
    done = run_tool("down", "--dir", str(real.folder))
    assert done.returncode == 0, done.stdout + done.stderr


def _etcd(real: RealKube, path: str, body: Dict[str, object]) -> Dict[str, object]:
    request = urllib.request.Request(real.env["ETCD_ENDPOINT"] + path, data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        result: Dict[str, object] = json.loads(answer.read())
        return result


def etcd_revision(real: RealKube) -> int:
    """etcd's current revision (kube-apiserver's resourceVersions are etcd revisions)."""
    answer = _etcd(real, "/v3/kv/range", {"key": base64.b64encode(b"\0").decode(), "limit": 1})
    header = answer["header"]
    assert isinstance(header, dict)
    return int(header["revision"])


def compact_etcd(real: RealKube) -> int:
    """Compacts etcd at its current revision, as kube-apiserver's periodic compaction would: any
    older resourceVersion is gone from then on. Returns the revision compacted at."""
    revision = etcd_revision(real)
    _etcd(real, "/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision
