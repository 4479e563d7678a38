"""The registry of kinds: every Kubernetes kind kube-manager reads, once, and each layer's part of it.

A `KindEntry` is one kind: its REST `Resource` (name, API group and version, scope; a CRD or not),
its `reach` (which pods a change of one of its objects may affect, for `what-if`) and the hooks
the layers register for it, each under the layer's name:

| layer | hook | registered by | read by |
| --- | --- | --- | --- |
| `WATCH` | its `Kind` record: lister, trimmer, validator, handler (`kube/kinds.py`) | its `handlers/<kind>.py` | the watchers, the event dispatcher |
| `SOURCE` | `(TranslatorParts) -> KindSource`: the translator's source of the kind | `translator/cluster.py` | `ClusterTranslator` (so `translate()` and the offline commands) |
| `STATUS` | `(StatusParts) -> PolicyBook`: the status of a kind that emits policies (optional) | `status/policies.py` | `StatusBook` |
| `PAGE` | its introspect list page (optional) | `introspect/lists.py` | the introspect server's routes and index |

The offline loader reads the kinds of the registry (and whether each is namespaced), and `what-if`
their reach. The order of the registry is the order a whole cluster is loaded and the order in
which the events held until every initial list is in are applied: what others refer to comes
first. A kind missing a hook its layer needs is a `KindError` where the layer is built, never
handled as some default kind.

This module is the bottom of the product: it imports nothing of it, so that every layer (the pure
translator included) can read it. Adding a kind: docs/architecture.md, "Adding a kind".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Tuple

# The layers' hooks.
WATCH, SOURCE, STATUS, PAGE = "watch", "translator source", "status book", "page"

# Which pods a change of an object of the kind may affect (`what-if` evaluates only pairs with such
# an end): any pod of the cluster; the pods of the object's namespace; the pods of the namespace the
# object is; the pod the object is.
REACHES_CLUSTER, REACHES_ITS_NAMESPACE, REACHES_NAMED_NAMESPACE, REACHES_ITSELF = (
    "cluster", "its namespace", "named namespace", "itself")


class KindError(Exception):
    """A kind registered incompletely, twice, or asked for without being registered."""


@dataclass(frozen=True)
class Resource:
    """A kind's REST resource. `name` is the REST plural (`networkpolicies`): the key of
    `Database.kube_connections`, the `resource` of watch events and the label of the `kube_events`
    metric."""

    name: str          # REST plural: "pods"
    kind: str          # "Pod"
    api_version: str   # "v1", "networking.k8s.io/v1"
    namespaced: bool
    # Served only where its CustomResourceDefinition is installed: absent is a normal state of the
    # cluster (the API server answers 404), not a fault.
    crd: bool = False

    @property
    def api_prefix(self) -> str:
        """`/api/v1` for the core group, `/apis/<group>/<version>` otherwise."""
        return "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"

    @property
    def group(self) -> str:
        """The API group ("" for the core group), as the official client's CustomObjectsApi takes it."""
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def list_kind(self) -> str:
        return self.kind + "List"


@dataclass
class KindEntry:
    """One kind of the registry; `hooks` by layer, filled by the layers."""

    resource: Resource
    reach: str
    hooks: Dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.resource.kind


class Kinds:
    """The registry: the kinds in load order, by Kubernetes kind."""

    def __init__(self, entries: Iterable[KindEntry]) -> None:
        self._entries: Dict[str, KindEntry] = {}
        for entry in entries:
            if entry.kind in self._entries:
                raise KindError(f"kind {entry.kind} is registered twice")
            self._entries[entry.kind] = entry

    def __iter__(self) -> Iterator[KindEntry]:
        return iter(self._entries.values())

    def __contains__(self, kind: object) -> bool:
        return kind in self._entries

    def __getitem__(self, kind: str) -> KindEntry:
        try:
            return self._entries[kind]
        except KeyError:
            raise KindError(f"unknown kind {kind!r} (registered: {', '.join(self._entries)})") from None

    def names(self) -> Tuple[str, ...]:
        return tuple(self._entries)

    def resources(self) -> Dict[str, Resource]:
        """The kinds' resources by REST plural."""
        return {entry.resource.name: entry.resource for entry in self}

    def register(self, kind: str, layer: str, hook: Any) -> None:
        """Plug one layer's part of `kind` in; once per kind and layer."""
        hooks = self[kind].hooks
        if layer in hooks:
            raise KindError(f"kind {kind} has two {layer} hooks")
        hooks[layer] = hook

    def hook(self, kind: str, layer: str) -> Any:
        """The `layer` hook of `kind`; KindError when the kind has none."""
        hook = self[kind].hooks.get(layer)
        if hook is None:
            raise KindError(f"kind {kind} is registered without a {layer} hook")
        return hook

    def hooked(self, layer: str) -> List[Tuple[KindEntry, Any]]:
        """The kinds with a `layer` hook (the optional layers), in order, with it."""
        return [(entry, entry.hooks[layer]) for entry in self if layer in entry.hooks]


NAMESPACES = Resource("namespaces", "Namespace", "v1", namespaced=False)
PODS = Resource("pods", "Pod", "v1", namespaced=True)
NETWORK_POLICIES = Resource("networkpolicies", "NetworkPolicy", "networking.k8s.io/v1", namespaced=True)
# SIG Network's policy API (kubernetes-sigs/network-policy-api), a CRD: SPEC 13.
CLUSTER_NETWORK_POLICIES = Resource("clusternetworkpolicies", "ClusterNetworkPolicy",
                                    "policy.networking.k8s.io/v1alpha2", namespaced=False, crd=True)

# The product's kinds. A NetworkPolicy isolates and admits pods of its namespace only; a
# ClusterNetworkPolicy's subject and peers may be anywhere.
KINDS = Kinds([KindEntry(NAMESPACES, REACHES_NAMED_NAMESPACE), KindEntry(PODS, REACHES_ITSELF),
               KindEntry(NETWORK_POLICIES, REACHES_ITS_NAMESPACE),
               KindEntry(CLUSTER_NETWORK_POLICIES, REACHES_CLUSTER)])
