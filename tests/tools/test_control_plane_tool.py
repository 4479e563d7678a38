"""tools/control-plane's parts that need no control plane: the pins are consistent, the RBAC it
applies is the one docs/operations.md shows, its env file, paths, CRD check and process handling."""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Dict

import pytest

from tests.support.paths import REPO
from tools.control_plane import local_processes
from tools.control_plane.bootstrap_objects import (RBAC_FILE, BootstrapError, _check_cnp_crd,
                                                   bound_service_account, collection_path,
                                                   rbac_manifests)
from tools.control_plane.env_file import read_env, write_env
from tools.control_plane.pins import (BUILD_MODULE, ETCD, KUBERNETES, Pins, cache_key,
                                      required_version)

DOCS = REPO / "docs" / "operations.md"


def _docs_rbac_block() -> str:
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(r"^RBAC for the daemon.*?\n```yaml\n(.*?)^```", text, re.S | re.M)
    assert found, "docs/operations.md has no RBAC block"
    return found.group(1)


def test_docs_show_exactly_the_rbac_file_the_tool_applies() -> None:
    lines = RBAC_FILE.read_text(encoding="utf-8").splitlines(keepends=True)
    while lines and lines[0].startswith("#"):   # the file's header, about the file itself
        lines.pop(0)
    assert _docs_rbac_block() == "".join(lines)


def test_the_bindings_name_one_service_account() -> None:
    assert bound_service_account(rbac_manifests()) == ("kube-system", "contrail-kube-manager")


def test_every_staging_module_is_replaced_by_the_release_of_the_pinned_kubernetes() -> None:
    go_mod = (BUILD_MODULE / "go.mod").read_text(encoding="utf-8")
    kubernetes = required_version(BUILD_MODULE / "go.mod", KUBERNETES)
    staging = re.findall(r"^\s*(k8s\.io/\S+) => (\S+) (v\S+)$", go_mod, re.M)
    assert len(staging) >= 30
    expected = "v0." + kubernetes.split(".", 1)[1]
    assert [(module, target, version) for module, target, version in staging
            if (target, version) != (module, expected)] == []
    assert required_version(BUILD_MODULE / "go.mod", ETCD).startswith("v3.")


@pytest.mark.parametrize("text", ["require (\n\tk8s.io/kubernetes v1.2.3 // indirect\n)\n",
                                  "require k8s.io/kubernetes v1.2.3\n"])
def test_a_requirement_is_read_in_a_block_or_alone(tmp_path: Path, text: str) -> None:
    (tmp_path / "go.mod").write_text("module m\n\n" + text)
    assert required_version(tmp_path / "go.mod", KUBERNETES) == "v1.2.3"


def test_the_cache_key_changes_with_the_toolchain_and_the_flags() -> None:
    pins = Pins("v1.37.2", "v3.7.0", "v0.3.0", "go1.26.8")
    other_go = Pins("v1.37.2", "v3.7.0", "v0.3.0", "go1.26.9")
    keys = {cache_key(pins, "-trimpath"), cache_key(other_go, "-trimpath"), cache_key(pins, "-x")}
    assert len(keys) == 3 and all(key.startswith("v1.37.2-etcdv3.7.0-") for key in keys)


@pytest.mark.parametrize("manifest, path", [
    ({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "a", "namespace": "ns"}},
     "/api/v1/namespaces/ns/serviceaccounts"),
    ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "a"}},
     "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
    ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
      "metadata": {"name": "a", "namespace": "kube-system"}},
     "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings"),
    ({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "a"}}, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
])
def test_each_object_up_creates_is_posted_to_its_collection(manifest: Dict, path: str) -> None:
    assert collection_path(manifest) == path


@pytest.mark.parametrize("versions", [
    [{"name": "v1beta1", "served": True, "subresources": {"status": {}}}],
    [{"name": "v1alpha2", "served": False, "subresources": {"status": {}}}],
    [{"name": "v1alpha2", "served": True}],
])
def test_a_crd_without_a_served_v1alpha2_status_is_refused(versions: list) -> None:
    with pytest.raises(BootstrapError, match="v1alpha2"):
        _check_cnp_crd({"spec": {"versions": versions}}, Path("crd.yaml"))


def test_the_env_file_reads_back_what_was_written(tmp_path: Path) -> None:
    values = {"APISERVER_URL": "https://127.0.0.1:1234", "CONTROL_PLANE_DIR": "/tmp/a b/it's",
              "EMPTY": ""}
    write_env(tmp_path, values)
    assert read_env(tmp_path) == values
    assert read_env(tmp_path / "missing") == {}


def test_stop_ends_the_process_it_started_and_leaves_another_binary_alone(tmp_path: Path) -> None:
    sleeper = tmp_path / "sleeper"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", sleeper)
    pid = local_processes.start(sleeper, ["60"], tmp_path / "sleeper.log")
    assert local_processes.runs(pid, sleeper)
    assert local_processes.stop(pid, tmp_path / "another") == "not running"
    assert local_processes.runs(pid, sleeper)
    assert local_processes.stop(pid, sleeper) == "stopped"
    assert not local_processes.runs(pid, sleeper)
    assert local_processes.stop(pid, sleeper) == "not running"
