"""Loading the settings: the INI file of the original contrail-kube-manager plus the command line.

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
"""
from __future__ import annotations

import argparse
import configparser
import difflib
from typing import Any, Dict, List, Optional, Sequence

from .keys import assign
from .root import KEYS, SECTIONS, OperatorSettings
from .values import EMBEDDED, EMULATED, ConfigError

DEFAULT_CONFIG_FILE = "/etc/contrail/contrail-kubernetes.conf"

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


# --- command line ------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add `-c/--config-file` and one override flag per non-secret key to `parser`.

    Safe to call on both the top-level parser and the `run` subparser (see the module docstring).
    """
    parser.add_argument("-c", "--config-file", dest="config_file", action="append", metavar="FILE",
                        default=argparse.SUPPRESS,
                        help=f"INI configuration file, e.g. {DEFAULT_CONFIG_FILE} (repeatable; "
                             "later files win)")
    group = parser.add_argument_group("configuration overrides (win over the file)")
    for name, key in KEYS.items():
        if key.secret:
            continue
        group.add_argument(*key.flags, dest=name, metavar="VALUE", default=argparse.SUPPRESS,
                           help=f"{key.where}: {key.doc}")


# --- loading -----------------------------------------------------------------------------------

def _parse_value(name: str, text: str, where: str) -> Any:
    key = KEYS[name]
    try:
        return key.parse(text)
    except ValueError as exc:
        reason = "invalid value" if key.secret else str(exc)
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


def _apply_file(values: Dict[str, Any], settings: OperatorSettings, ini: configparser.ConfigParser) -> None:
    ignored: List[str] = []
    warnings = settings.origin.warnings
    for section in ini.sections():
        if section in LEGACY_SECTIONS:
            ignored.append(f"[{section}]")
            continue
        if section not in SECTIONS:
            warnings.append(f"unknown section [{section}] ignored{_did_you_mean_section(section)}")
            continue
        for name, text in ini.items(section):
            key = KEYS.get(name)
            if key is None:
                if name in LEGACY_KEYS:
                    ignored.append(name)
                else:
                    warnings.append(f"[{section}] {name}: unknown key ignored{_did_you_mean_key(name, section)}")
                continue
            if key.section != section:
                warnings.append(f"[{section}] {name}: belongs in [{key.section}]; used anyway")
            values[name] = _parse_value(name, text, f"[{section}] {name}")
    settings.origin.ignored_keys = sorted(set(ignored))


def _did_you_mean_key(name: str, section: str) -> str:
    """" (did you mean log_level?)" for a key one typo away from a known one (and its section when
    that is another)."""
    close = difflib.get_close_matches(name.lower(), list(KEYS), n=1, cutoff=0.75)
    if not close:
        return ""
    where = "" if KEYS[close[0]].section == section else f", in [{KEYS[close[0]].section}]"
    return f" (did you mean {close[0]}{where}?)"


def _did_you_mean_section(section: str) -> str:
    known = {name.lower(): name for name in SECTIONS}
    close = difflib.get_close_matches(section.lower(), list(known), n=1, cutoff=0.75)
    return f" (did you mean [{known[close[0]]}]?)" if close else ""


def _check_consistency(settings: OperatorSettings) -> None:
    """Rules between keys, checked once everything is merged."""
    auth = settings.auth
    if auth.keystone:
        for name, value in (("auth_user", auth.user), ("auth_password", auth.password)):
            if not value:
                raise ConfigError(f"{KEYS[name].where}: required when auth_token_url is set")
    if settings.vnc.port == 0 and not settings.vnc.embedded:
        raise ConfigError(f"{KEYS['vnc_endpoint_port'].where}: 0 (any free port) only works with "
                          f"vnc_endpoint_ip = {EMBEDDED}")
    if settings.kubernetes.api_port == 0 and not settings.kubernetes.emulated:
        raise ConfigError(f"{KEYS['kubernetes_api_port'].where}: 0 (any free port) only works with "
                          f"kubernetes_api_server = {EMULATED}")
    _check_election_timings(settings)
    if settings.emulation.manifests and not settings.kubernetes.emulated:
        settings.origin.warnings.append(f"{KEYS['emulated_manifests'].where}: ignored unless "
                                        f"kubernetes_api_server = {EMULATED}")


def _check_election_timings(settings: OperatorSettings) -> None:
    """client-go's rule: lease_duration > renew_deadline > 1.2 x retry_period (the jitter factor), so
    that a leader stops writing before a standby may take over, and a renewal gets several tries."""
    election = settings.election
    if not election.enabled:
        return
    if not election.lease_duration > election.renew_deadline:
        raise ConfigError(f"{KEYS['leader_elect_lease_duration'].where}: {election.lease_duration:g} must be "
                          f"greater than leader_elect_renew_deadline ({election.renew_deadline:g})")
    if not election.renew_deadline > 1.2 * election.retry_period:
        raise ConfigError(f"{KEYS['leader_elect_renew_deadline'].where}: {election.renew_deadline:g} must be "
                          f"greater than 1.2 x leader_elect_retry_period ({election.retry_period:g})")


def load_settings(args: Optional[argparse.Namespace] = None,
                  implied: Optional[Dict[str, str]] = None) -> OperatorSettings:
    """Defaults, then `implied` (INI key -> text: what `--demo` stands for), then the `-c` files in
    order, then the command-line overrides: what the operator wrote wins over what was implied.

    Raises ConfigError (naming the section and key, or the flag) for a value that cannot be used.
    """
    settings = OperatorSettings()
    paths = list(getattr(args, "config_file", None) or [])
    values: Dict[str, Any] = {name: _parse_value(name, text, f"{KEYS[name].where} (implied)")
                              for name, text in (implied or {}).items()}
    _apply_file(values, settings, _read_files(paths))
    for name, key in KEYS.items():
        if args is not None and hasattr(args, name):
            values[name] = _parse_value(name, str(getattr(args, name)), f"{key.flag} ({key.where})")
    for name, value in values.items():
        assign(settings, KEYS[name], value)
    settings.origin.files = paths
    _check_consistency(settings)
    return settings
