"""What `up` creates in the fresh cluster, as the admin: the ClusterNetworkPolicy CRD published by
sigs.k8s.io/network-policy-api (read from the Go module cache at the pinned version), the RBAC
objects of etc/rbac.yaml exactly as the docs show them, the ServiceAccount those bind, and a token
for it: the kube-manager identity has exactly the documented rules and nothing more."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import yaml

from tools.control_plane.admin_requests import AdminRequests, Json, poll
from tools.control_plane.pins import CRD_MODULE, NETWORK_POLICY_API, Pins, go_command

REPOSITORY = Path(__file__).resolve().parents[2]
RBAC_FILE = REPOSITORY / "etc" / "rbac.yaml"
CRD_FILE = "config/crd/standard/policy.networking.k8s.io_clusternetworkpolicies.yaml"
CNP_GROUP, CNP_VERSION = "policy.networking.k8s.io", "v1alpha2"
# Long enough for a person's afternoon and any test session; the server's default has no cap.
TOKEN_SECONDS = 7 * 24 * 3600


class BootstrapError(RuntimeError):
    """A manifest `up` needs is missing or not what the daemon reads."""


def collection_path(manifest: Json) -> str:
    """The path to POST `manifest` to. Every kind `up` creates has the plural `<kind>s`."""
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    namespace = manifest.get("metadata", {}).get("namespace")
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{prefix}{scope}/{kind.lower()}s"


def create_all(admin: AdminRequests, manifests: List[Json]) -> None:
    for manifest in manifests:
        admin.json("POST", collection_path(manifest), manifest)


def crd_manifest_path(pins: Pins) -> Path:
    """The CRD file of the pinned network-policy-api, downloaded into the module cache if needed."""
    done = subprocess.run([go_command(), "mod", "download", "-json",
                           f"{NETWORK_POLICY_API}@{pins.network_policy_api}"],
                          cwd=CRD_MODULE, capture_output=True, text=True)
    if done.returncode != 0:
        raise BootstrapError(f"go mod download {NETWORK_POLICY_API}@{pins.network_policy_api}: "
                             f"{done.stdout.strip()} {done.stderr.strip()}")
    path = Path(json.loads(done.stdout)["Dir"]) / CRD_FILE
    if not path.is_file():
        raise BootstrapError(f"{NETWORK_POLICY_API}@{pins.network_policy_api} has no {CRD_FILE}")
    return path


def _check_cnp_crd(crd: Json, source: Path) -> None:
    served = {version["name"]: version for version in crd["spec"]["versions"] if version.get("served")}
    version = served.get(CNP_VERSION)
    if version is None or "status" not in version.get("subresources", {}):
        raise BootstrapError(f"{source}: no served {CNP_VERSION} with a status subresource "
                             f"(served: {sorted(served)})")


def install_cnp_crd(admin: AdminRequests, source: Path, timeout: float) -> None:
    """Creates the CRD, then waits until it is established and v1alpha2 answers a list."""
    with open(source, encoding="utf-8") as stream:
        crd: Json = yaml.safe_load(stream)
    _check_cnp_crd(crd, source)
    crd.pop("status", None)
    admin.json("POST", collection_path(crd), crd)
    name = crd["metadata"]["name"]

    def established() -> Optional[str]:
        current = admin.json("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conditions = {c["type"]: c for c in (current.get("status") or {}).get("conditions") or []}
        if conditions.get("Established", {}).get("status") == "True":
            return None
        return str(conditions or "no condition yet")

    def served() -> Optional[str]:
        status, text = admin.call("GET", f"/apis/{CNP_GROUP}/{CNP_VERSION}/clusternetworkpolicies")
        return None if status == 200 else f"{status} {text[:200]}"

    poll(f"CRD {name} established", established, timeout)
    poll(f"{CNP_GROUP}/{CNP_VERSION} served", served, timeout)


def rbac_manifests(path: Path = RBAC_FILE) -> List[Json]:
    with open(path, encoding="utf-8") as stream:
        return [document for document in yaml.safe_load_all(stream) if document]


def bound_service_account(manifests: List[Json]) -> Tuple[str, str]:
    """(namespace, name) of the one ServiceAccount the bindings name."""
    subjects = {(subject["namespace"], subject["name"])
                for manifest in manifests if manifest["kind"].endswith("Binding")
                for subject in manifest["subjects"] if subject["kind"] == "ServiceAccount"}
    if len(subjects) != 1:
        raise BootstrapError(f"{RBAC_FILE}: the bindings must name one ServiceAccount, not {subjects}")
    return subjects.pop()


def wait_for_namespace(admin: AdminRequests, namespace: str, timeout: float) -> None:
    """The server creates its system namespaces just after it starts serving."""
    def exists() -> Optional[str]:
        status, _ = admin.call("GET", f"/api/v1/namespaces/{namespace}")
        return None if status == 200 else f"GET namespace {namespace}: {status}"
    poll(f"namespace {namespace}", exists, timeout)


def install_rbac(admin: AdminRequests, timeout: float) -> Tuple[str, str, str]:
    """Applies etc/rbac.yaml and returns (namespace, name, token) of the identity it binds."""
    manifests = rbac_manifests()
    namespace, name = bound_service_account(manifests)
    for needed in sorted({m["metadata"]["namespace"] for m in manifests if "namespace" in m["metadata"]}
                         | {namespace}):
        wait_for_namespace(admin, needed, timeout)
    account: Dict[str, Any] = {"apiVersion": "v1", "kind": "ServiceAccount",
                               "metadata": {"name": name, "namespace": namespace}}
    create_all(admin, [account, *manifests])
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": TOKEN_SECONDS}}
    answer = admin.json("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                        request)
    return namespace, name, str(answer["status"]["token"])
