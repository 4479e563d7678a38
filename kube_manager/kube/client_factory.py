"""The one `kubernetes.client.ApiClient` the watchers share, built from the configuration.

Where the API server is, first match wins (SPEC section 9):
1. `kubeconfig = FILE`;
2. `kubernetes_api_server = HOST`: `https://HOST:kubernetes_api_secure_port` with the bearer token
   of `kubernetes_token_file` (re-read when the file changes, as the kubelet rotates a service-account token)
   or of `token` when one is set (as the original kube-manager did), `http://HOST:kubernetes_api_port`
   otherwise;
3. running in a pod: the service account (KUBERNETES_SERVICE_HOST/PORT, its token and CA), with the
   token re-read as the kubelet rotates it;
4. the `KUBECONFIG` environment variable, or `~/.kube/config`.
`kubernetes_api_server = emulated` uses the URL of the in-process emulator.

The client never retries on its own (`retries = False`): the watchers have their own backoff, and a
hidden retry would only hide a dead connection longer. The token is never logged: only the source,
the URL and which settings hold the CA and the identity (`AccessSources`, for the line that says a
wrong CA or a refused identity, kube/access.py).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

import yaml
from kubernetes import client
from kubernetes.config import ConfigException, incluster_config, load_kube_config

from kube_manager.kube.access import AccessSources
from kube_manager.settings import ConfigError, KubernetesSettings
from kube_manager.observability.logging_setup import kv

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# Three watches, their re-lists, and room to spare.
POOL_MAXSIZE = 8


@dataclass(frozen=True)
class KubeEndpoint:
    """Where the client goes, for logs and the introspect page (never a secret)."""

    source: str  # kubeconfig | api-server | in-cluster | default-kubeconfig | emulated
    url: str
    access: AccessSources


def _new_configuration() -> client.Configuration:
    configuration = client.Configuration()
    configuration.retries = False
    configuration.connection_pool_maxsize = POOL_MAXSIZE
    return configuration


def api_client_for_url(url: str) -> client.ApiClient:
    """A client for a plain-HTTP URL without credentials (the emulator)."""
    configuration = _new_configuration()
    configuration.host = url
    return client.ApiClient(configuration)


def _from_kubeconfig(path: str, configuration: client.Configuration, where: str) -> None:
    try:
        load_kube_config(config_file=path, client_configuration=configuration, persist_config=False)
    except (ConfigException, yaml.YAMLError, OSError, TypeError, KeyError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot use {path!r}: {exc}") from None


def _kubeconfig_sources(path: str) -> AccessSources:
    return AccessSources(f"kubeconfig {path} (certificate-authority)", f"kubeconfig {path} (user)")


class TokenFile:
    """`Configuration.refresh_api_key_hook`: the bearer token read from `path` again whenever the
    file changes (the kubelet rotates a projected service-account token in place), one `stat` per
    request otherwise. A file that went missing keeps the last token: the server says if it expired."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stamp: Optional[Tuple[float, int]] = None

    def __call__(self, configuration: client.Configuration) -> None:
        try:
            info = os.stat(self.path)
            stamp = (info.st_mtime, info.st_size)
            if stamp == self._stamp:
                return
            with open(self.path) as stream:
                token = stream.read().strip()
        except OSError as exc:
            log.warning("token file unreadable, keeping the last token", extra=kv(
                path=self.path, error=os.strerror(exc.errno) if exc.errno else str(exc)))
            return
        self._stamp = stamp
        configuration.api_key = {"BearerToken": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}


def _from_api_server(settings: KubernetesSettings, configuration: client.Configuration) -> AccessSources:
    host = settings.api_server
    if ":" in host:
        host = f"[{host}]"
    if not (settings.token_file or settings.token):
        configuration.host = f"http://{host}:{settings.api_port}"
        return AccessSources("plain HTTP (no CA)", "no identity (plain HTTP)")
    configuration.host = f"https://{host}:{settings.api_secure_port}"
    if settings.token_file:
        hook = TokenFile(settings.token_file)
        hook(configuration)
        configuration.refresh_api_key_hook = hook  # type: ignore[assignment]  # typed None by the client
        identity = f"[KUBERNETES] kubernetes_token_file {settings.token_file}"
    else:
        configuration.api_key = {"BearerToken": settings.token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
        identity = "[DEFAULTS] token"
    if settings.ca_cert:
        configuration.ssl_ca_cert = settings.ca_cert
        ca = f"[KUBERNETES] kubernetes_ca_cert {settings.ca_cert}"
    else:
        ca = "the system's CA bundle ([KUBERNETES] kubernetes_ca_cert unset)"
    return AccessSources(ca, identity)


def _in_cluster_available(environ: Mapping[str, str], service_account_dir: str) -> bool:
    return bool(environ.get(incluster_config.SERVICE_HOST_ENV_NAME)
                and environ.get(incluster_config.SERVICE_PORT_ENV_NAME)
                and os.path.isfile(os.path.join(service_account_dir, "token")))


def _from_service_account(configuration: client.Configuration, environ: Mapping[str, str],
                          service_account_dir: str) -> None:
    loader = incluster_config.InClusterConfigLoader(
        token_filename=os.path.join(service_account_dir, "token"),
        cert_filename=os.path.join(service_account_dir, "ca.crt"),
        environ=environ, try_refresh_token=True)
    try:
        loader.load_and_set(configuration)
    except (ConfigException, OSError) as exc:
        raise ConfigError(f"in-cluster service account ({service_account_dir}): {exc}") from None


def build_api_client(settings: KubernetesSettings, emulated_url: Optional[str] = None, *,
                     environ: Optional[Mapping[str, str]] = None,
                     service_account_dir: str = SERVICE_ACCOUNT_DIR,
                     ) -> Tuple[client.ApiClient, KubeEndpoint]:
    """The shared ApiClient and where it points; ConfigError says what is missing or unusable."""
    environ = os.environ if environ is None else environ
    configuration = _new_configuration()
    if settings.emulated:
        if not emulated_url:
            raise ConfigError("[KUBERNETES] kubernetes_api_server: 'emulated' needs the emulator "
                              "to be started first")
        configuration.host = emulated_url
        source, access = "emulated", AccessSources("plain HTTP (no CA)", "no identity (emulated)")
    elif settings.kubeconfig:
        _from_kubeconfig(settings.kubeconfig, configuration, "[KUBERNETES] kubeconfig")
        source, access = "kubeconfig", _kubeconfig_sources(settings.kubeconfig)
    elif settings.api_server:
        source, access = "api-server", _from_api_server(settings, configuration)
    elif _in_cluster_available(environ, service_account_dir):
        _from_service_account(configuration, environ, service_account_dir)
        source, access = "in-cluster", AccessSources(f"service account {service_account_dir}/ca.crt",
                                                     f"service account {service_account_dir}/token")
    else:
        default = environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
        if not environ.get("KUBECONFIG") and not os.path.isfile(default):
            raise ConfigError("[KUBERNETES]: no Kubernetes API server configured: set kubeconfig "
                              "or kubernetes_api_server, or run in a pod with a service account")
        _from_kubeconfig(default, configuration, "KUBECONFIG")
        source, access = "default-kubeconfig", _kubeconfig_sources(default)
    endpoint = KubeEndpoint(source, configuration.host, access)
    log.info("Kubernetes API server", extra=kv(source=endpoint.source, url=endpoint.url))
    return client.ApiClient(configuration), endpoint
