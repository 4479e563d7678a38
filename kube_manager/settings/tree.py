"""The settings tree: one documented dataclass per concern, under `OperatorSettings`.

Modelled on kopf's `OperatorSettings(watching=..., queueing=...)`: each part of the daemon reads its
own branch (`settings.watch`, `settings.reconciler`, ...) and nothing else. Fields declared with
`setting(...)` are the INI keys of SPEC section 9 (section and name as the original
contrail-kube-manager wrote them, so operators' files keep working); the others are tunables with a
default that no file sets. Units are seconds unless a field says otherwise.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import List

from vnc_client.retry import RetryPolicy

from . import values as v
from .keys import setting
from .values import EMBEDDED, EMULATED


@dataclass
class ClusterSettings:
    """Who this kube-manager is: the names its Contrail objects carry."""

    name: str = setting("cluster_name", "KUBERNETES", v.cluster_name,
                        "cluster name in Contrail object names and tag values", "k8s")
    owner: str = setting("kubernetes_cluster_owner", "KUBERNETES", v.nonempty,
                         "owner annotation value: objects carrying it are this cluster's to change", "k8s")
    semantics: str = setting("policy_semantics", "KUBERNETES", v.policy_semantics,
                             "how flows are decided: 'kubernetes' (each end's chain must allow) or"
                             " 'cluster-wide' (a policy at either end may allow)", "kubernetes",
                             short_flag="--semantics")
    pair_rules_bound: int = setting("exact_pair_rules_bound", "KUBERNETES", v.int_range(0, 10 ** 9),
                                    "pair rules (policy_semantics kubernetes) past which the NetworkPolicies"
                                    " contributing most get a Warning Event; all are still written (0: no bound)",
                                    50000)


@dataclass
class KubernetesSettings:
    """How to reach the Kubernetes API server. The first that applies wins: `emulated`, `kubeconfig`,
    `kubernetes_api_server`, the pod's service account, then `$KUBECONFIG` or ~/.kube/config."""

    api_server: str = setting("kubernetes_api_server", "KUBERNETES", v.api_server,
                              "API server host, or 'emulated' for the in-process emulator", "")
    api_port: int = setting("kubernetes_api_port", "KUBERNETES", v.port(True),
                            "API server plain HTTP port (0: any free port, emulator only)", 8080)
    api_secure_port: int = setting("kubernetes_api_secure_port", "KUBERNETES", v.port(False),
                                   "API server HTTPS port (used when a token is set)", 6443)
    ca_cert: str = setting("kubernetes_ca_cert", "KUBERNETES", v.existing_file,
                           "CA bundle for the API server (empty: the system's)", "")
    kubeconfig: str = setting("kubeconfig", "KUBERNETES", v.existing_file,
                              "kubeconfig file (wins over the above)", "")
    token: str = setting("token", "DEFAULTS", v.stripped,
                         "bearer token for kubernetes_api_secure_port", "", secret=True)
    token_file: str = setting("kubernetes_token_file", "KUBERNETES", v.existing_file,
                              "file holding the bearer token for kubernetes_api_secure_port, re-read"
                              " when it changes (a pod's service-account token; wins over token)", "")

    @property
    def emulated(self) -> bool:
        """`kubernetes_api_server = emulated`: the daemon runs the emulated API server itself."""
        return self.api_server == EMULATED


@dataclass
class EmulationSettings:
    """The emulated API server and CNI (demo, tests): used only with `kubernetes_api_server = emulated`."""

    manifests: List[str] = setting("emulated_manifests", "KUBERNETES", v.existing_paths,
                                   "manifests the emulated API server starts with", default_factory=list)
    cni: bool = setting("emulated_cni", "KUBERNETES", v.boolean,
                        "with the emulator, create each pod's VM and VMI in the config API", True)


@dataclass
class WatchSettings:
    """The watchers' timeouts and backoff; the defaults are the production values."""

    # A quiet watch must still say something: neither an event nor a bookmark for this long is a
    # stuck connection (read timeout), and the watch is restarted. The API server bookmarks about
    # once a minute; at 60 s the two raced and idle watches restarted as silent every minute.
    silence_timeout: float = setting("watch_silence_timeout", "KUBERNETES", v.positive_seconds,
                                     "seconds without an event or bookmark before a watch is restarted", 90.0)
    # The server ends each watch after a random timeout in [min, max], as client-go asks, so that
    # many watchers do not reconnect in lock-step.
    min_timeout_seconds: int = 300
    max_timeout_seconds: int = 600
    connect_timeout: float = 10.0     # TCP connect to the API server
    list_read_timeout: float = 60.0   # per read of one list page
    initial_backoff: float = 0.8      # first retry after a failed list or watch, doubled per failure
    max_backoff: float = 30.0         # ... up to this
    page_size: int = 500              # objects per list page (limit/continue), bounding memory
    # A custom resource the API server does not serve (its CRD is not installed) is looked for
    # again this often, and at once at each resync (the daemon sets it to kube_timer_interval).
    absent_recheck: float = 120.0


@dataclass
class LeaderElectionSettings:
    """Leader election over a Lease (SPEC section 12); client-go's defaults and timing rule."""

    enabled: bool = setting("leader_elect", "KUBERNETES", v.boolean,
                            "elect one writer among instances through a Lease", True)
    namespace: str = setting("leader_elect_namespace", "KUBERNETES", v.nonempty,
                             "namespace of the election Lease", "kube-system")
    name: str = setting("leader_elect_name", "KUBERNETES", v.nonempty,
                        "name of the election Lease (default contrail-kube-manager-<cluster_name>)", "")
    lease_duration: int = setting("leader_elect_lease_duration", "KUBERNETES", v.positive_int,
                                  "seconds a standby waits before taking an unrenewed Lease", 15)
    renew_deadline: float = setting("leader_elect_renew_deadline", "KUBERNETES", v.positive_seconds,
                                    "seconds the leader may go without renewing before it stops writing", 10.0)
    retry_period: float = setting("leader_elect_retry_period", "KUBERNETES", v.positive_seconds,
                                  "seconds between attempts to acquire or renew the Lease", 2.0)

    def lease_name(self, cluster_name: str) -> str:
        """The Lease's name: `leader_elect_name`, else one per cluster, so clusters never share one."""
        return self.name or f"contrail-kube-manager-{cluster_name}"


@dataclass
class VncSettings:
    """How to reach the Contrail config API."""

    endpoints: List[str] = setting("vnc_endpoint_ip", "VNC", v.vnc_endpoints,
                                   "config API hosts (comma list, failed over in order), or 'embedded'",
                                   default_factory=lambda: ["127.0.0.1"])
    port: int = setting("vnc_endpoint_port", "VNC", v.port(True),
                        "config API port (0: any free port, embedded only)", 8082)
    use_ssl: bool = setting("vnc_use_ssl", "VNC", v.boolean, "talk HTTPS to the config API", False)
    ca_cert: str = setting("vnc_ca_cert", "VNC", v.existing_file,
                           "CA bundle for the config API (empty: the system's)", "")
    # Each request is retried on connection errors and 502/503/504, with capped, jittered backoff.
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @property
    def embedded(self) -> bool:
        """`vnc_endpoint_ip = embedded`: the daemon runs the in-memory config API in-process."""
        return self.endpoints == [EMBEDDED]


@dataclass
class AuthSettings:
    """Keystone authentication to the config API, used exactly when `auth_token_url` is set."""

    token_url: str = setting("auth_token_url", "AUTH", v.stripped,
                             "Keystone token URL (set: Keystone auth is used)", "")
    user: str = setting("auth_user", "AUTH", v.stripped, "Keystone user", "")
    password: str = setting("auth_password", "AUTH", v.stripped, "Keystone password", "", secret=True)
    tenant: str = setting("auth_tenant", "AUTH", v.stripped, "Keystone tenant (project)", "admin")

    @property
    def keystone(self) -> bool:
        return bool(self.token_url)


@dataclass
class ReconcilerSettings:
    """The reconciler's pace: how much at once, how often a full resync, how patient with failures."""

    # Bounds both the reconciler's workers and the config API client's connections, so that a
    # large change does not flood contrail-api.
    concurrency: int = setting("vnc_max_concurrency", "VNC", v.int_range(1, 256),
                               "concurrent config API requests at most", 8)
    # A resync lists each type in pages of this many objects (`page_limit`), each folded in and
    # dropped before the next is taken: the daemon never holds a whole listing (hundreds of
    # thousands of firewall rules on a large cluster) at once. Larger pages cost fewer round trips and more memory at the peak.
    list_page_limit: int = setting("vnc_list_page_limit", "VNC", v.int_range(1, 1_000_000),
                                   "objects per config API listing request at a resync", 5000)
    # A full resync (list, repair drift, collect garbage) at this interval, and on SIGHUP.
    resync_interval: float = setting("kube_timer_interval", "DEFAULTS", v.positive_seconds,
                                     "seconds between full resyncs", 120.0)
    retry_base: float = 0.2    # first retry delay of a failed key, doubled up to retry_cap
    retry_cap: float = 30.0
    # A pod whose VM/VMI is missing waits for the CNI, which takes seconds: a retry is one cheap read,
    # and a low cap keeps the pod's tags from lagging far behind its VMI.
    pod_retry_cap: float = 5.0
    # A term's start-up resync while the config API cannot be reached: retried after this delay,
    # doubled up to start_retry_cap (no jitter: one daemon, one resync).
    start_retry_base: float = 1.0
    start_retry_cap: float = 30.0


@dataclass
class StagedSettings:
    """The staged runs (SPEC 17): what each staged policy would change, computed off the event path."""

    # A run starts once the cluster has been quiet this long: a rollout's burst of changes costs one run.
    debounce: float = setting("staged_run_debounce", "KUBERNETES", v.positive_seconds,
                              "seconds of quiet after a change before the staged policies' flows are computed", 2.0)
    # Past it, a run reports "too large to compute" with what it found; its child gets a grace
    # period more before it is killed.
    budget: float = setting("staged_run_budget", "KUBERNETES", v.positive_seconds,
                            "seconds a run computing the staged policies' flows may take", 30.0)


@dataclass
class IntrospectSettings:
    """The read-only introspect HTTP server (SPEC section 10)."""

    listen_ip: str = setting("http_server_ip", "DEFAULTS", v.listen_ip, "introspect listen address",
                             "0.0.0.0")
    port: int = setting("http_server_port", "DEFAULTS", v.port(True), "introspect port (0: any free port)",
                        8108)


# /livez's watch stall limit per second of watch_silence_timeout (HealthSettings.for_silence_timeout),
# as a fraction so that the default 90 s gives exactly 120.
STALL_PER_SILENCE_NUM, STALL_PER_SILENCE_DEN = 4, 3


@dataclass(frozen=True)
class HealthSettings:
    """What `/livez` and `/readyz` check (introspect/health.py), and how often."""

    heartbeat_interval: float = 2.0   # the loop records a heartbeat this often ...
    heartbeat_timeout: float = 120.0  # ... and this long without one is a hang
    # /readyz asks the config API `GET /` and wants an answer within probe_timeout (per connect and
    # per read); one answer serves every probe and scrape for probe_ttl, so a scrape storm costs
    # the config API one request per probe_ttl.
    probe_timeout: float = 2.0
    probe_ttl: float = 2.0
    # A watch gets a bookmark about every minute and is restarted after watch_silence_timeout
    # without one, the restart counting as progress; this long without an event, a bookmark, a list
    # or a restart is a stall (SPEC 7: 2 minutes at the default silence of 90 s).
    watch_stall_timeout: float = 120.0

    def for_silence_timeout(self, silence_timeout: float) -> "HealthSettings":
        """These limits for a configured `watch_silence_timeout`, in proportion to it (4/3: the
        default 90 s gives 2 minutes): a silent watch is restarted well before it counts as stalled,
        and a restart that cannot reach the API server within a third of a silence does."""
        return replace(self, watch_stall_timeout=silence_timeout * STALL_PER_SILENCE_NUM / STALL_PER_SILENCE_DEN)


@dataclass
class LogSettings:
    """Where the daemon logs, and how much."""

    file: str = setting("log_file", "DEFAULTS", v.log_file, "log file (empty: standard error)", "")
    level: int = setting("log_level", "DEFAULTS", v.parse_log_level, "DEBUG/INFO/WARNING/ERROR or SYS_*",
                         logging.INFO)

    @property
    def level_name(self) -> str:
        return logging.getLevelName(self.level)
