"""Configuration of the daemon: the INI file of the original contrail-kube-manager plus the command line.

The file is `/etc/contrail/contrail-kubernetes.conf` with the sections DEFAULTS, KUBERNETES, VNC and
AUTH (SPEC section 9). Files written for the original kube-manager keep working: its keys that this
implementation has no use for (rabbit_*, cassandra_*, pod_subnets, ...) are only listed at INFO, and a
known key found in another of the four sections is still honoured, as the original flattened them,
with a warning. Truly unknown keys and sections are warned about. A bad value raises `ConfigError`
naming the section and key (or the command-line flag), so start-up stops with that one message.

Every key also has a command-line flag (`--cluster-name` for `cluster_name`) that overrides the file,
except the secrets, which would otherwise show in `ps` output. All flags use `default=SUPPRESS`, so
that `contrail-kube-manager -c FILE` and `contrail-kube-manager run -c FILE` both work: argparse copies
a subparser's defaults over the values the top-level parser already parsed, and with SUPPRESS there
are no defaults to copy.

Logging is not set up while the configuration loads (it depends on it), so findings are collected in
`Config.warnings` / `Config.ignored_keys` and logged by `Config.log_findings` afterwards.
"""
from __future__ import annotations

import argparse
import configparser
import ipaddress
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

DEFAULT_CONFIG_FILE = "/etc/contrail/contrail-kubernetes.conf"
SECTIONS = ("DEFAULTS", "KUBERNETES", "VNC", "AUTH")
EMBEDDED = "embedded"   # vnc_endpoint_ip: run the in-memory config API in-process
EMULATED = "emulated"   # kubernetes_api_server: run the emulated Kubernetes API server in-process


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names where it came from."""


# Contrail's Sandesh levels, so that files written for the original keep working. Python has no
# NOTICE level; "normal but significant" maps to INFO, so that nothing the operator asked for is hidden.
CONTRAIL_LOG_LEVELS = {
    "SYS_EMERG": logging.CRITICAL,
    "SYS_ALERT": logging.CRITICAL,
    "SYS_CRIT": logging.CRITICAL,
    "SYS_ERR": logging.ERROR,
    "SYS_WARN": logging.WARNING,
    "SYS_NOTICE": logging.INFO,
    "SYS_INFO": logging.INFO,
    "SYS_DEBUG": logging.DEBUG,
}
PYTHON_LOG_LEVELS = {
    "CRITICAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARNING": logging.WARNING,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
}

# Keys of the original kube-manager that have no meaning here (other Contrail features, Sandesh,
# message bus, Cassandra). Listed once at INFO instead of one warning each, so that an upgraded
# host's log is not full of noise.
LEGACY_KEYS = frozenset("""
    orchestrator log_local log_category use_syslog syslog_facility collectors kube_object_cache
    disc_server_ip disc_server_port api_service_link_local nested_mode global_tags aps_name
    secure_project host_ip worker_id logger_class logging_conf
    kubernetes_service_name service_subnets pod_subnets ip_fabric_subnets kubernetes_cluster_domain
    cluster_project cluster_network cluster_pod_network cluster_service_network
    ip_fabric_forwarding ip_fabric_snat host_network_service
    rabbit_server rabbit_port rabbit_user rabbit_password rabbit_vhost rabbit_ha_mode rabbit_use_ssl
    kombu_ssl_version kombu_ssl_keyfile kombu_ssl_certfile kombu_ssl_ca_certs
    cassandra_user cassandra_password cassandra_server_list cassandra_use_ssl cassandra_ca_certs
    cluster_id admin_user admin_password admin_tenant public_fip_pool zk_server_ip
""".split())
LEGACY_SECTIONS = frozenset({"SANDESH"})


# --- value parsers: str -> value, raising ValueError with the reason -------------------------------

def _port(allow_zero: bool) -> Callable[[str], int]:
    low = 0 if allow_zero else 1

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a port number") from None
        if not low <= value <= 65535:
            raise ValueError(f"{value} is not a port number ({low}-65535)")
        return value
    return parse


def _int_range(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
        if not low <= value <= high:
            raise ValueError(f"{value} is out of range ({low}-{high})")
        return value
    return parse


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number of seconds") from None
    if value < 1:
        raise ValueError(f"{value} must be at least 1")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"{text!r} must be a positive number of seconds")
    return value


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"{text!r} is not a boolean (true/false, yes/no, on/off, 1/0)")


def _text(text: str) -> str:
    return text.strip()


def _listen_ip(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        raise ValueError(f"{text!r} is not an IP address") from None


_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")


def _host(text: str) -> str:
    """An IP address or a DNS name (brackets around IPv6 literals are dropped)."""
    host = text.strip().strip("[]")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if not _HOSTNAME.match(host):
        raise ValueError(f"{text!r} is neither an IP address nor a host name")
    return host


def _split_list(text: str) -> List[str]:
    """Comma- or space-separated; the original wrote lists as `[a, b]`, so brackets and quotes go."""
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        stripped = stripped[1:-1]
    return [item.strip().strip("'\"") for item in re.split(r"[,\s]+", stripped) if item.strip("'\" ")]


def _api_server(text: str) -> str:
    value = text.strip()
    return EMULATED if value.lower() == EMULATED else (_host(value) if value else "")


def _vnc_endpoints(text: str) -> List[str]:
    items = _split_list(text)
    if not items:
        raise ValueError("no endpoint given")
    if any(item.lower() == EMBEDDED for item in items):
        if len(items) > 1:
            raise ValueError(f"{EMBEDDED!r} cannot be combined with other endpoints")
        return [EMBEDDED]
    return [_host(item) for item in items]


def _existing_file(text: str) -> str:
    path = os.path.expanduser(text.strip())
    if path and not os.path.isfile(path):
        raise ValueError(f"{path!r} is not a readable file")
    return path


def _existing_paths(text: str) -> List[str]:
    paths = [os.path.expanduser(item) for item in _split_list(text)]
    missing = [path for path in paths if path != "-" and not os.path.exists(path)]  # -: standard input
    if missing:
        raise ValueError(f"no such file or directory: {', '.join(missing)}")
    return paths


def _log_file(text: str) -> str:
    path = os.path.expanduser(text.strip())
    if path and os.path.isdir(path):
        raise ValueError(f"{path!r} is a directory")
    return path


def parse_log_level(text: str) -> int:
    """A Python level name (`INFO`) or a Contrail one (`SYS_NOTICE`), case-insensitive."""
    name = text.strip().upper()
    level = PYTHON_LOG_LEVELS.get(name, CONTRAIL_LOG_LEVELS.get(name))
    if level is None:
        known = ", ".join(list(PYTHON_LOG_LEVELS) + list(CONTRAIL_LOG_LEVELS))
        raise ValueError(f"{text!r} is not a log level (one of {known})")
    return level


# The cluster name ends up in tag values (`application=<cluster>`) and object names, so it must not
# carry the separators of either (`=`, `:`) nor spaces.
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")


def _cluster_name(text: str) -> str:
    value = text.strip()
    if not _CLUSTER_NAME.match(value):
        raise ValueError(f"{value!r} must be 1-63 letters, digits, '.', '_' or '-', "
                         "starting and ending with a letter or digit")
    return value


def _nonempty(text: str) -> str:
    value = text.strip()
    if not value:
        raise ValueError("must not be empty")
    return value


@dataclass(frozen=True)
class KeySpec:
    """Where a key lives in the INI file and how its text becomes a value."""

    section: str
    parse: Callable[[str], Any]
    help: str
    secret: bool = False  # never on the command line, never in `public_view`

    @property
    def exposed(self) -> bool:
        return not self.secret and self.section != "AUTH"


KEYS: Dict[str, KeySpec] = {
    # [DEFAULTS]
    "http_server_ip": KeySpec("DEFAULTS", _listen_ip, "introspect listen address"),
    "http_server_port": KeySpec("DEFAULTS", _port(True), "introspect port (0: any free port)"),
    "log_file": KeySpec("DEFAULTS", _log_file, "log file (empty: standard error)"),
    "log_level": KeySpec("DEFAULTS", parse_log_level, "DEBUG/INFO/WARNING/ERROR or SYS_*"),
    "kube_timer_interval": KeySpec("DEFAULTS", _positive_seconds, "seconds between full resyncs"),
    "token": KeySpec("DEFAULTS", _text, "bearer token for kubernetes_api_secure_port", secret=True),
    # [KUBERNETES]
    "cluster_name": KeySpec("KUBERNETES", _cluster_name, "cluster name in Contrail object names"),
    "kubernetes_cluster_owner": KeySpec("KUBERNETES", _nonempty, "owner annotation value"),
    "kubernetes_api_server": KeySpec(
        "KUBERNETES", _api_server, "API server host, or 'emulated' for the in-process emulator"),
    "kubernetes_api_port": KeySpec("KUBERNETES", _port(True), "API server plain HTTP port"),
    "kubernetes_api_secure_port": KeySpec(
        "KUBERNETES", _port(False), "API server HTTPS port (used when a token is set)"),
    "kubernetes_ca_cert": KeySpec("KUBERNETES", _existing_file, "CA bundle for the API server"),
    "kubeconfig": KeySpec("KUBERNETES", _existing_file, "kubeconfig file (wins over the above)"),
    "watch_silence_timeout": KeySpec(
        "KUBERNETES", _positive_seconds, "seconds without an event or bookmark before a watch is restarted"),
    "emulated_manifests": KeySpec(
        "KUBERNETES", _existing_paths, "manifests the emulated API server starts with"),
    "emulated_cni": KeySpec(
        "KUBERNETES", _bool, "with the emulator, create each pod's VM and VMI in the config API"),
    "leader_elect": KeySpec("KUBERNETES", _bool, "elect one writer among instances through a Lease"),
    "leader_elect_namespace": KeySpec("KUBERNETES", _nonempty, "namespace of the election Lease"),
    "leader_elect_name": KeySpec(
        "KUBERNETES", _nonempty, "name of the election Lease (default contrail-kube-manager-<cluster_name>)"),
    "leader_elect_lease_duration": KeySpec(
        "KUBERNETES", _positive_int, "seconds a standby waits before taking an unrenewed Lease"),
    "leader_elect_renew_deadline": KeySpec(
        "KUBERNETES", _positive_seconds, "seconds the leader may go without renewing before it stops writing"),
    "leader_elect_retry_period": KeySpec(
        "KUBERNETES", _positive_seconds, "seconds between attempts to acquire or renew the Lease"),
    # [VNC]
    "vnc_endpoint_ip": KeySpec(
        "VNC", _vnc_endpoints, "config API hosts (comma list), or 'embedded'"),
    "vnc_endpoint_port": KeySpec("VNC", _port(True), "config API port"),
    "vnc_use_ssl": KeySpec("VNC", _bool, "talk HTTPS to the config API"),
    "vnc_ca_cert": KeySpec("VNC", _existing_file, "CA bundle for the config API"),
    "vnc_max_concurrency": KeySpec(
        "VNC", _int_range(1, 256), "concurrent config API requests at most"),
    # [AUTH]
    "auth_token_url": KeySpec("AUTH", _text, "Keystone token URL (set: Keystone auth is used)"),
    "auth_user": KeySpec("AUTH", _text, "Keystone user"),
    "auth_password": KeySpec("AUTH", _text, "Keystone password", secret=True),
    "auth_tenant": KeySpec("AUTH", _text, "Keystone tenant (project)"),
}


@dataclass
class Config:
    """The daemon's settings; field names are the INI keys (see `KEYS` for sections)."""

    # [DEFAULTS]
    http_server_ip: str = "0.0.0.0"
    http_server_port: int = 8108
    log_file: str = ""
    log_level: int = logging.INFO
    kube_timer_interval: float = 120.0
    token: str = ""
    # [KUBERNETES]
    cluster_name: str = "k8s"
    kubernetes_cluster_owner: str = "k8s"
    kubernetes_api_server: str = ""
    kubernetes_api_port: int = 8080
    kubernetes_api_secure_port: int = 6443
    kubernetes_ca_cert: str = ""
    kubeconfig: str = ""
    watch_silence_timeout: float = 60.0
    emulated_manifests: List[str] = field(default_factory=list)
    emulated_cni: bool = True
    leader_elect: bool = True
    leader_elect_namespace: str = "kube-system"
    leader_elect_name: str = ""   # "": contrail-kube-manager-<cluster_name>
    leader_elect_lease_duration: int = 15
    leader_elect_renew_deadline: float = 10.0
    leader_elect_retry_period: float = 2.0
    # [VNC]
    vnc_endpoint_ip: List[str] = field(default_factory=lambda: ["127.0.0.1"])
    vnc_endpoint_port: int = 8082
    vnc_use_ssl: bool = False
    vnc_ca_cert: str = ""
    vnc_max_concurrency: int = 8
    # [AUTH]
    auth_token_url: str = ""
    auth_user: str = ""
    auth_password: str = ""
    auth_tenant: str = "admin"
    # Where the values came from, and what loading found (logged once logging is set up).
    config_files: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    ignored_keys: List[str] = field(default_factory=list)

    @property
    def embedded_vnc(self) -> bool:
        return self.vnc_endpoint_ip == [EMBEDDED]

    @property
    def emulated_kubernetes(self) -> bool:
        return self.kubernetes_api_server == EMULATED

    @property
    def lease_name(self) -> str:
        return self.leader_elect_name or f"contrail-kube-manager-{self.cluster_name}"

    @property
    def keystone_auth(self) -> bool:
        return bool(self.auth_token_url)

    @property
    def log_level_name(self) -> str:
        return logging.getLevelName(self.log_level)

    def secrets(self) -> List[str]:
        """The secret values set, for log redaction."""
        return [getattr(self, key) for key, spec in KEYS.items()
                if spec.secret and getattr(self, key)]

    def public_view(self) -> Dict[str, Any]:
        """The settings safe to show on the introspect page: nothing of AUTH, no secret."""
        view: Dict[str, Any] = {key: getattr(self, key) for key, spec in KEYS.items() if spec.exposed}
        view["log_level"] = self.log_level_name
        view["config_files"] = list(self.config_files)
        return view

    def log_findings(self, logger: logging.Logger) -> None:
        """Log what loading found; called once logging is configured."""
        for warning in self.warnings:
            logger.warning("configuration: %s", warning)
        if self.ignored_keys:
            logger.info("configuration: ignoring settings of the original kube-manager not used "
                        "here: %s", ", ".join(self.ignored_keys))


# --- command line ------------------------------------------------------------------------------

def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `-c/--config-file` and one override flag per non-secret key to `parser`.

    Safe to call on both the top-level parser and the `run` subparser (see the module docstring).
    """
    parser.add_argument("-c", "--config-file", dest="config_file", action="append", metavar="FILE",
                        default=argparse.SUPPRESS,
                        help=f"INI configuration file, e.g. {DEFAULT_CONFIG_FILE} (repeatable; "
                             "later files win)")
    group = parser.add_argument_group("configuration overrides (win over the file)")
    for key, spec in KEYS.items():
        if spec.secret:
            continue
        group.add_argument(_flag(key), dest=key, metavar="VALUE", default=argparse.SUPPRESS,
                           help=f"[{spec.section}] {key}: {spec.help}")


# --- loading -----------------------------------------------------------------------------------

def _parse_value(key: str, text: str, where: str) -> Any:
    spec = KEYS[key]
    try:
        return spec.parse(text)
    except ValueError as exc:
        reason = "invalid value" if spec.secret else str(exc)
        raise ConfigError(f"{where}: {reason}") from None


def _read_files(paths: Sequence[str]) -> configparser.ConfigParser:
    # No interpolation: passwords may contain '%'. A private default section, so that a "[DEFAULT]"
    # written by mistake is reported like any other unknown section instead of leaking everywhere.
    parser = configparser.ConfigParser(interpolation=None, default_section="\x00default")
    for path in paths:
        try:
            with open(path, encoding="utf-8") as stream:
                parser.read_file(stream, source=path)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read configuration file: {exc.strerror or exc}") from None
        except configparser.Error as exc:
            raise ConfigError(f"{path}: not a valid INI file: {exc}") from None
    return parser


def _apply_file(values: Dict[str, Any], config: Config, ini: configparser.ConfigParser) -> None:
    ignored: List[str] = []
    for section in ini.sections():
        if section in LEGACY_SECTIONS:
            ignored.append(f"[{section}]")
            continue
        if section not in SECTIONS:
            config.warnings.append(f"unknown section [{section}] ignored")
            continue
        for key, text in ini.items(section):
            spec = KEYS.get(key)
            if spec is None:
                if key in LEGACY_KEYS:
                    ignored.append(key)
                else:
                    config.warnings.append(f"[{section}] {key}: unknown key ignored")
                continue
            if spec.section != section:
                config.warnings.append(f"[{section}] {key}: belongs in [{spec.section}]; used anyway")
            values[key] = _parse_value(key, text, f"[{section}] {key}")
    config.ignored_keys = sorted(set(ignored))


def _check_consistency(config: Config) -> None:
    """Rules between keys, checked once everything is merged."""
    if config.keystone_auth:
        for key in ("auth_user", "auth_password"):
            if not getattr(config, key):
                raise ConfigError(f"[AUTH] {key}: required when auth_token_url is set")
    if config.vnc_endpoint_port == 0 and not config.embedded_vnc:
        raise ConfigError("[VNC] vnc_endpoint_port: 0 (any free port) only works with "
                          f"vnc_endpoint_ip = {EMBEDDED}")
    if config.kubernetes_api_port == 0 and not config.emulated_kubernetes:
        raise ConfigError("[KUBERNETES] kubernetes_api_port: 0 (any free port) only works with "
                          f"kubernetes_api_server = {EMULATED}")
    _check_election_timings(config)
    if config.emulated_manifests and not config.emulated_kubernetes:
        config.warnings.append("[KUBERNETES] emulated_manifests: ignored unless "
                               f"kubernetes_api_server = {EMULATED}")


def _check_election_timings(config: Config) -> None:
    """client-go's rule: lease_duration > renew_deadline > 1.2 x retry_period (the jitter factor), so
    that a leader stops writing before a standby may take over, and a renewal gets several tries."""
    if not config.leader_elect:
        return
    if not config.leader_elect_lease_duration > config.leader_elect_renew_deadline:
        raise ConfigError(f"[KUBERNETES] leader_elect_lease_duration: {config.leader_elect_lease_duration:g} must be "
                          f"greater than leader_elect_renew_deadline ({config.leader_elect_renew_deadline:g})")
    if not config.leader_elect_renew_deadline > 1.2 * config.leader_elect_retry_period:
        raise ConfigError(f"[KUBERNETES] leader_elect_renew_deadline: {config.leader_elect_renew_deadline:g} must be "
                          f"greater than 1.2 x leader_elect_retry_period ({config.leader_elect_retry_period:g})")


def load_config(args: Optional[argparse.Namespace] = None) -> Config:
    """Defaults, then the `-c` files in order, then the command-line overrides.

    Raises ConfigError (naming the section and key, or the flag) for a value that cannot be used.
    """
    config = Config()
    paths = list(getattr(args, "config_file", None) or [])
    values: Dict[str, Any] = {}
    _apply_file(values, config, _read_files(paths))
    for key in KEYS:
        if args is not None and hasattr(args, key):
            values[key] = _parse_value(key, str(getattr(args, key)),
                                       f"{_flag(key)} ([{KEYS[key].section}] {key})")
    for key, value in values.items():
        setattr(config, key, value)
    config.config_files = paths
    _check_consistency(config)
    return config
