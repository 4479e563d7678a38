"""The in-memory database of kube-manager: what Kubernetes told us, what we want in Contrail, what
Contrail has, and how the connections are doing.

Each record type has one writer, named in its docstring (docs/architecture.md, "The rooms", has
the table): what Kubernetes said is the kind handlers' (kube_manager/handlers); what became of it
(the objects a policy emits, its errors, its sync state, a pod's tags and tagging state) is the
status book's (kube_manager/status), fed downstream by the translator's change report and the
reconciler's progress; what the config API holds and refused is the reconciler's; the connections'
and the leader's are their owners'. Everyone else, the introspect server first, only reads.
Everything runs in one gevent loop, so no locks.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from kube_manager.plumbing.packed import pack, unpack

EMPTY = pack({})

Key = Tuple[str, str]  # (namespace, name)
FqName = Tuple[str, ...]
ObjKey = Tuple[str, FqName]  # a Contrail object: (resource type, fq_name)

# Sync states shown on the introspect pages.
PENDING = "pending"      # known, not yet written to Contrail
SYNCED = "synced"        # Contrail holds exactly the desired objects
RETRYING = "retrying"    # a write failed; retried with backoff
REJECTED = "rejected"    # invalid input, nothing (or only part) written; see errors
PARKED = "parked"        # the config API refused a write for good (4xx); retried on change or resync
STAGED = "staged"        # a staged policy (SPEC 17): translated and shown, nothing written
# Pod tagging states besides those.
NO_VM = "no-vm"          # the pod's VM or VMI is not in the config API yet: retried with backoff
HOST_NETWORK = "host-network"  # spec.hostNetwork: no VM nor VMI of its own, never tagged


class Packed:
    """A record field holding a Kubernetes object (a manifest, a spec) packed (`kube_manager.plumbing.packed`),
    decoded anew on each read: pages and the explain index read them, the daemon's own path never
    does. A dataclass field whose default is this descriptor: the constructor's argument goes
    through `__set__`, None meaning empty."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = "_packed_" + name

    def __get__(self, record: Any, owner: Optional[type] = None) -> Any:
        if record is None:
            return None  # the dataclass default: the constructor passes None, stored as {}
        return unpack(getattr(record, self._name, EMPTY))

    def __set__(self, record: Any, value: Optional[Mapping[str, Any]]) -> None:
        setattr(record, self._name, pack(value if value is not None else {}))


def held(record: Any, name: str) -> Any:
    """The value a `Packed` field holds as it is held (its JSON bytes): each time the field is
    set it holds a new object, so a reader keeping it knows by comparing whether the field was
    set anew since, without decoding it."""
    return getattr(record, "_packed_" + name, EMPTY)


@dataclass
class NamespaceRecord:
    """A namespace as Kubernetes gave it. Writer: the namespace handler."""

    uid: str
    name: str
    labels: Dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)  # one per pod: no instance dict
class PodStatus:
    """What became of a pod: the tags its VMIs must carry (the translator's) and how tagging them
    goes (the reconciler's). Writer: the status book (kube_manager/status)."""

    tags: List[str] = field(default_factory=list)  # "type=value" its VMIs must carry
    tagging: str = PENDING  # pending | synced | retrying | parked | no-vm
    vmi_error: str = ""


@dataclass
class PodRecord:
    """A pod as Kubernetes gave it. Writer: the pod handler; its `status` is the status book's."""

    uid: str
    namespace: str
    name: str
    ip: Optional[str] = None
    labels: Mapping[str, str] = field(default_factory=dict)  # read-only: shared with the translator
    manifest: Packed = Packed()  # the trimmed object the translator reads
    host_network: bool = False                              # spec.hostNetwork: never tagged
    status: PodStatus = field(default_factory=PodStatus)

    @property
    def tags(self) -> List[str]:
        return self.status.tags

    @property
    def tagging(self) -> str:
        return self.status.tagging

    @property
    def vmi_error(self) -> str:
        return self.status.vmi_error

    @property
    def vmi_state(self) -> str:
        """What the pages show: `host-network` for such a pod (a Kubernetes fact, shown even where
        nothing is tagged: a standby), else the reconciler's tagging state."""
        return HOST_NETWORK if self.host_network else self.status.tagging


@dataclass(slots=True)  # one per policy: no instance dict
class PolicyStatus:
    """What became of a policy: the objects it emits, why any part of it was refused, and where
    writing them stands. Writer: the status book (kube_manager/status), from the translator's
    change report and the reconciler's progress."""

    firewall_policy: List[str] = field(default_factory=list)  # fq_name
    rules: List[str] = field(default_factory=list)            # rule names, sequence order
    state: str = PENDING
    errors: List[str] = field(default_factory=list)
    write_errors: List[str] = field(default_factory=list)   # why its parked objects were refused


@dataclass
class PolicyRecord:
    """A NetworkPolicy as Kubernetes gave it. Writer: its kind's handler; its `status` is the
    status book's."""

    uid: str
    namespace: str
    name: str
    spec: Packed = Packed()
    manifest: Packed = Packed()
    generation: Optional[int] = None  # metadata.generation: what a status reports it observed
    status: PolicyStatus = field(default_factory=PolicyStatus)

    @property
    def firewall_policy(self) -> List[str]:
        return self.status.firewall_policy

    @property
    def rules(self) -> List[str]:
        return self.status.rules

    @property
    def state(self) -> str:
        return self.status.state

    @property
    def errors(self) -> List[str]:
        return self.status.errors

    @property
    def write_errors(self) -> List[str]:
        return self.status.write_errors


@dataclass
class ClusterPolicyRecord(PolicyRecord):
    """A ClusterNetworkPolicy (SPEC 13): cluster-scoped (`namespace` is ""), with its tier and
    priority. `firewall_policy` is its own policy (its Accept rules); `rules` names every rule it
    emits, its Deny rules in the tier's deny policy included. Writer: its handler; its `status`
    is the status book's."""

    tier: str = ""
    priority: Optional[int] = None


@dataclass
class StagedRecord:
    """What a staged policy would change (SPEC 17), as of the last staged run over the cluster.
    Writer: the staged runner (kube_manager/service/staged_runner.py)."""

    kind: str
    namespace: str  # "" for a ClusterNetworkPolicy
    name: str
    generation: int = 0  # the policy's metadata.generation the run saw
    computing: bool = True  # a run is under way, or due, for what changed since `report`
    report: Dict[str, Any] = field(default_factory=dict)  # StagedFlows.to_dict() of the last run
    computed_at: Optional[float] = None
    seconds: float = 0.0  # how long the last run took, for all staged policies


@dataclass
class ConnectionStatus:
    """One connection (a watch, or the config API) as shown on the introspect pages. Writer: its
    owner (a watch's: its watcher; the config API's: `ConfigApiObserver`)."""

    name: str
    url: str = ""
    connected: bool = False
    last_event_at: Optional[float] = None     # a watch: its last event or bookmark
    last_progress_at: Optional[float] = None  # a watch: its last event, bookmark or completed list
    last_error: str = ""
    last_error_at: Optional[float] = None
    reconnects: int = 0
    resource_version: str = ""
    initial_list_done: bool = False
    # A custom resource the API server does not serve (CRD not installed): listed as empty, looked
    # for again at each resync.
    absent: bool = False


@dataclass
class LeaderStatus:
    """Leader election as shown on `/Snh_LeaderElectionStatus`. Writer: the elector."""

    enabled: bool = False
    identity: str = ""
    is_leader: bool = False
    leader: str = ""          # the holder of the Lease as last read ("" when none)
    namespace: str = ""
    name: str = ""
    transitions: int = 0      # times this instance became leader or stopped being leader
    last_renew_at: Optional[float] = None
    last_error: str = ""
    blocked: str = ""         # why no attempt can succeed until the operator acts; /readyz fails with it


@dataclass
class PairRulesStatus:
    """The `kubernetes` mode's pair rules against `exact_pair_rules_bound` (SPEC 14), as of the last
    flush. Writer: the status room's `PairRulesBound`; read by /readyz and /metrics."""

    total: int = 0
    bound: int = 0            # 0: no bound
    over: bool = False
    top: Tuple[Tuple[str, str, int], ...] = ()  # (namespace, name, pairs) of the policies warned


@dataclass
class Database:
    """Every record, by kind; each field's writer is named beside it."""

    # The kind handlers' (each its own kind's).
    namespaces: Dict[str, NamespaceRecord] = field(default_factory=dict)
    pods: Dict[Key, PodRecord] = field(default_factory=dict)
    network_policies: Dict[Key, PolicyRecord] = field(default_factory=dict)
    cluster_network_policies: Dict[str, ClusterPolicyRecord] = field(default_factory=dict)  # by name
    # Contrail objects by resource type then fq_name: the translator's bodies (its live, read-only
    # view, set once by the event dispatcher), and what the config API holds (the reconciler's:
    # bodies as read back, with "uuid"; one that reads back exactly as desired is a
    # `reconciler.compare.AsDesired` sharing the desired body).
    desired: Mapping[str, Mapping[FqName, Mapping[str, Any]]] = field(default_factory=dict)
    actual: Dict[str, Dict[FqName, Mapping[str, Any]]] = field(default_factory=dict)
    # Selector tag -> the object it was hashed from (the translator's live view), to decode tags.
    selectors: Mapping[str, Any] = field(default_factory=dict)
    # Translation errors: {"kind", "namespace", "name", "reason"}. The status book's.
    errors: List[Dict[str, str]] = field(default_factory=list)
    # Objects whose last write the config API refused for good, (type, fq_name) -> the server's
    # message. The reconciler's.
    parked: Dict[Tuple[str, FqName], str] = field(default_factory=dict)
    kube_connections: Dict[str, ConnectionStatus] = field(default_factory=dict)  # each its watcher's
    vnc_connection: ConnectionStatus = field(default_factory=lambda: ConnectionStatus("config-api"))
    leader: LeaderStatus = field(default_factory=LeaderStatus)
    # The staged policies' flows and would-be objects, by (kind, namespace, name). The staged runner's.
    staged: Dict[Tuple[str, str, str], StagedRecord] = field(default_factory=dict)
    pair_rules: PairRulesStatus = field(default_factory=PairRulesStatus)
    # Bumped by the event dispatcher (its one writer) whenever a Kubernetes record, and so possibly the desired state, changes:
    # readers that derive something costly from both (introspect's explain index) rebuild it only
    # when it moved.
    generation: int = 0
    started_at: float = field(default_factory=time.time)  # the daemon's
    loop_heartbeat_at: float = field(default_factory=time.time)
