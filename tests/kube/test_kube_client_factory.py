"""Building the shared ApiClient: kubeconfig, INI host/port, in-cluster service account."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Dict

import pytest
import yaml
from kubernetes import client

from kube_manager.settings import ConfigError, KubernetesSettings
from kube_manager.kube.client_factory import build_api_client
from simulators.kube_api.runner import EmulatorRunner

TOKEN = "tok-0123456789-secret"


def auth_header(api_client: client.ApiClient) -> str:
    settings = api_client.configuration.auth_settings()
    return settings["BearerToken"]["value"] if settings else ""


def write_kubeconfig(path: Path, server: str) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))
    return str(path)


def service_account(tmp_path: Path) -> str:
    directory = tmp_path / "sa"
    directory.mkdir()
    (directory / "token").write_text(TOKEN)
    (directory / "ca.crt").write_text("not checked until a connection is made")
    return str(directory)


IN_CLUSTER_ENV: Dict[str, str] = {"KUBERNETES_SERVICE_HOST": "10.96.0.1",
                                  "KUBERNETES_SERVICE_PORT": "443"}


def test_api_server_over_http_without_token() -> None:
    api_client, endpoint = build_api_client(
        KubernetesSettings(api_server="10.0.0.10", api_port=8081), environ={})
    assert (endpoint.source, endpoint.url) == ("api-server", "http://10.0.0.10:8081")
    assert api_client.configuration.host == "http://10.0.0.10:8081"
    assert auth_header(api_client) == ""
    assert api_client.configuration.retries is False


def test_api_server_with_token_uses_https_secure_port(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    api_client, endpoint = build_api_client(
        KubernetesSettings(api_server="fd00::10", token=TOKEN, api_secure_port=6443,
                           ca_cert=str(ca)), environ={})
    assert endpoint.url == "https://[fd00::10]:6443"
    assert auth_header(api_client) == f"Bearer {TOKEN}"
    assert api_client.configuration.ssl_ca_cert == str(ca)
    assert api_client.configuration.verify_ssl


def test_kubeconfig_wins_and_the_token_is_never_logged(tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    path = write_kubeconfig(tmp_path / "kubeconfig", "https://api.example.com:6443")
    with caplog.at_level(logging.DEBUG):
        api_client, endpoint = build_api_client(
            KubernetesSettings(kubeconfig=path, api_server="10.0.0.10"),
            environ=IN_CLUSTER_ENV, service_account_dir=service_account(tmp_path))
    assert (endpoint.source, endpoint.url) == ("kubeconfig", "https://api.example.com:6443")
    assert auth_header(api_client) == f"Bearer {TOKEN}"
    logged = " ".join(r.getMessage() + repr(r.__dict__) for r in caplog.records)
    assert "api.example.com" in logged and TOKEN not in logged


def test_in_cluster_service_account(tmp_path: Path) -> None:
    api_client, endpoint = build_api_client(KubernetesSettings(), environ=IN_CLUSTER_ENV,
                                            service_account_dir=service_account(tmp_path))
    assert (endpoint.source, endpoint.url) == ("in-cluster", "https://10.96.0.1:443")
    assert auth_header(api_client).lower() == f"bearer {TOKEN}"
    assert api_client.configuration.ssl_ca_cert.endswith("ca.crt")


def test_api_server_wins_over_in_cluster(tmp_path: Path) -> None:
    _client, endpoint = build_api_client(KubernetesSettings(api_server="k8s.local"),
                                         environ=IN_CLUSTER_ENV,
                                         service_account_dir=service_account(tmp_path))
    assert endpoint.source == "api-server"


def test_default_kubeconfig_from_environment(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kc", "https://from-env:6443")
    _client, endpoint = build_api_client(KubernetesSettings(), environ={"KUBECONFIG": path},
                                         service_account_dir=str(tmp_path / "none"))
    assert (endpoint.source, endpoint.url) == ("default-kubeconfig", "https://from-env:6443")


def test_nothing_configured_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    with pytest.raises(ConfigError, match="no Kubernetes API server configured"):
        build_api_client(KubernetesSettings(), environ={}, service_account_dir=str(tmp_path / "none"))


def test_broken_kubeconfig_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "kc"
    path.write_text("apiVersion: v1\nkind: Config\n")
    with pytest.raises(ConfigError, match=r"^\[KUBERNETES\] kubeconfig: cannot use"):
        build_api_client(KubernetesSettings(kubeconfig=str(path)), environ={})


def test_emulated_needs_the_emulator_url() -> None:
    config = KubernetesSettings(api_server="emulated")
    with pytest.raises(ConfigError, match="'emulated' needs the emulator"):
        build_api_client(config, environ={})
    _client, endpoint = build_api_client(config, "http://127.0.0.1:1234", environ={})
    assert (endpoint.source, endpoint.url) == ("emulated", "http://127.0.0.1:1234")


def test_ini_host_and_port_reach_the_emulator() -> None:
    with EmulatorRunner() as kube:
        kube.store.create({"kind": "Namespace", "metadata": {"name": "dev"}})
        port = int(kube.url.rsplit(":", 1)[1])
        api_client, _endpoint = build_api_client(
            KubernetesSettings(api_server="127.0.0.1", api_port=port), environ={})
        names = [n.metadata.name for n in client.CoreV1Api(api_client).list_namespace().items]
    assert names == ["default", "dev", "kube-node-lease", "kube-public", "kube-system"]


def test_token_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text(TOKEN + "\n")
    ca.write_text("x")
    api_client, endpoint = build_api_client(
        KubernetesSettings(api_server="10.0.0.10", token_file=str(token), token="ignored", ca_cert=str(ca)),
        environ={})
    assert endpoint.url == "https://10.0.0.10:6443" and api_client.configuration.ssl_ca_cert == str(ca)
    assert auth_header(api_client) == f"Bearer {TOKEN}"
    token.write_text("rotated-token-of-another-length\n")
    assert auth_header(api_client) == "Bearer rotated-token-of-another-length"
    token.unlink()  # a file gone for a moment keeps the last token
    assert auth_header(api_client) == "Bearer rotated-token-of-another-length"
    assert (endpoint.access.identity, endpoint.access.ca) == (
        f"[KUBERNETES] kubernetes_token_file {token}", f"[KUBERNETES] kubernetes_ca_cert {ca}")


def test_each_source_names_the_settings_of_its_ca_and_identity(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kubeconfig", "https://api.example.com:6443")
    _, endpoint = build_api_client(KubernetesSettings(kubeconfig=path), environ={})
    assert endpoint.access.ca == f"kubeconfig {path} (certificate-authority)"
    assert endpoint.access.identity == f"kubeconfig {path} (user)"
    _, endpoint = build_api_client(KubernetesSettings(api_server="h", token=TOKEN), environ={})
    assert endpoint.access.identity == "[DEFAULTS] token" and "kubernetes_ca_cert unset" in endpoint.access.ca
    directory = service_account(tmp_path)
    _, endpoint = build_api_client(KubernetesSettings(), environ=IN_CLUSTER_ENV, service_account_dir=directory)
    assert endpoint.access.identity == f"service account {directory}/token"
