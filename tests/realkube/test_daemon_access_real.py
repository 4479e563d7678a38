"""How the daemon reaches a real API server (SPEC 16): by kubeconfig, or by a token file and a CA
file (the in-cluster layout) with the token read again as it rotates, TLS verified. A wrong CA or a
refused identity is one ERROR line naming the setting, and /readyz says why it is not ready."""
from __future__ import annotations

import base64
import subprocess
import urllib.error
from pathlib import Path
from typing import Iterator, List

import pytest
import yaml

from tests.support.builders import HTTP_8080, namespace, pod
from tests.support.control_plane_support import RealKube
from tests.support.e2e_support import DaemonProcess
from tests.support.real_cluster import RealCluster, unique
from tests.support.waiting import wait_until

CONVERGE = 60.0


@pytest.fixture
def cluster(real_kube: RealKube) -> Iterator[RealCluster]:
    made = RealCluster(real_kube)
    ns = unique("shop")
    made.apply(namespace(ns, team="shop"), pod(ns, "web", "10.1.0.1", app="web", ports=HTTP_8080))
    yield made
    made.close()


def readyz(daemon: DaemonProcess) -> str:
    try:
        return str(daemon.get("/readyz?verbose=1"))
    except urllib.error.HTTPError as refused:
        return f"{refused.code} " + refused.read().decode()


def refusals(daemon: DaemonProcess) -> List[str]:
    return [line for line in daemon.log() if "Kubernetes API server refused access" in line]


def token_file_settings(real: RealKube, token: Path, ca: str) -> str:
    return (f"kubernetes_api_server = 127.0.0.1\nkubernetes_api_secure_port = {real.env['APISERVER_PORT']}\n"
            f"kubernetes_token_file = {token}\nkubernetes_ca_cert = {ca}")


def test_token_file_and_ca_file_with_the_token_read_again_as_it_rotates(
        real_kube: RealKube, cluster: RealCluster, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("not-a-token-the-server-knows\n")
    daemon = cluster.start_daemon(token_file_settings(real_kube, token, real_kube.env["CA_CERT"]))
    expected = f"[KUBERNETES] kubernetes_token_file {token}: the API server refused the identity (401 Unauthorized"
    wait_until(lambda: expected in readyz(daemon), "/readyz saying the identity is refused", CONVERGE)
    assert readyz(daemon).startswith("503 ")
    assert len(refusals(daemon)) == 1 and expected in refusals(daemon)[0]  # one line for all the watches
    # the kubelet rotates the token in place: the next attempt uses the new one
    token.write_text(Path(real_kube.env["KUBE_MANAGER_TOKEN_FILE"]).read_text())
    cluster.wait_converged(CONVERGE)
    wait_until(lambda: not readyz(daemon).startswith("503"), "ready", CONVERGE)
    assert daemon.stop() == 0
    secrets = ("not-a-token-the-server-knows", token.read_text().strip())
    assert not [line for line in daemon.log() if any(secret in line for secret in secrets)]  # no token logged


def other_ca(folder: Path) -> Path:
    """A CA that signed nothing the API server holds."""
    key, cert = folder / "other-ca.key", folder / "other-ca.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other-ca",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert


def test_a_kubeconfig_with_another_ca_is_named_as_the_reason(real_kube: RealKube, cluster: RealCluster,
                                                             tmp_path: Path) -> None:
    config = yaml.safe_load(Path(real_kube.kube_manager_kubeconfig).read_text())
    config["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(
        other_ca(tmp_path).read_bytes()).decode()
    wrong = tmp_path / "wrong-ca.kubeconfig"
    wrong.write_text(yaml.safe_dump(config))
    daemon = cluster.start_daemon(f"kubeconfig = {wrong}")
    expected = (f"kubeconfig {wrong} (certificate-authority): the API server's certificate does not verify "
                "against this CA")
    wait_until(lambda: expected in readyz(daemon), "/readyz naming the CA", CONVERGE)
    assert len(refusals(daemon)) == 1 and expected in refusals(daemon)[0]
    assert daemon.stop() == 0


def test_a_wrong_ca_file_beside_the_token_file_is_named(real_kube: RealKube, cluster: RealCluster,
                                                        tmp_path: Path) -> None:
    ca = other_ca(tmp_path)
    daemon = cluster.start_daemon(token_file_settings(real_kube, Path(real_kube.env["KUBE_MANAGER_TOKEN_FILE"]), str(ca)))
    expected = f"[KUBERNETES] kubernetes_ca_cert {ca}: the API server's certificate does not verify against this CA"
    wait_until(lambda: expected in readyz(daemon), "/readyz naming the CA file", CONVERGE)
    assert daemon.stop() == 0
