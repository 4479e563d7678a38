"""The kind record: what the watchers and the event dispatcher know of each Kubernetes kind.

A `Kind` is the kind's `WATCH` hook in the registry of kinds (`kube_manager/registry.py`), registered
by its handler's module:
- `resource`: its REST resource (the registry's), the name of its events, watch and metrics;
- `lister`: the cluster-wide list function (also used to watch), `collection_lister(resource)`
  for every kind the daemon watches;
- `trimmer`: what of an object the translator reads (the rest of the object is dropped at once);
- `validator`: why an object of the kind cannot be handled at all (its identity is unreadable), or
  None; an object it refuses is rejected with that reason and goes no further;
- `handler`: a factory, called once per pipeline with the handlers' shared `Context`
  (`kube_manager/handlers/base.py`), of the `KindHandler` that turns the kind's events into records
  and translator input.

The watchers take the lister and trimmer from the record, the event dispatcher (`EventDispatcher`) the
validator and handler; `watched_kinds` gathers the records of a registry, in its order. `KindRegistry` refuses a record that misses any part, or a kind registered
twice, with `KindError` when the pipeline is built; asking for a kind that is not registered is a
`KindError` too. There is no default kind: a new kind can never silently fall into another's
lister or handler.

Adding a kind: docs/architecture.md, "Adding a kind", the one recipe.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Protocol, Tuple

from kube_manager.kube import raw_requests
from kube_manager.registry import WATCH, KindError, Kinds, Resource

# api_client -> the list function of the kind, called with the official client's keyword arguments
# (watch=True to watch): `collection_lister`.
Lister = Callable[[Any], Callable[..., Any]]


def collection_lister(resource: Resource) -> Lister:
    """The cluster-wide list (and watch) of `resource` by its REST path, answered as raw JSON
    (plumbing/raw_requests.py says why not through the official client's typed API classes)."""
    return raw_requests.collection_lister(f"{resource.api_prefix}/{resource.name}")


# A manifest -> only what the translator reads.
Trimmer = Callable[[Dict[str, Any]], Dict[str, Any]]
# A trimmed object -> why it cannot be handled at all, or None.
Validator = Callable[[Mapping[str, Any]], Optional[str]]


class KindHandler(Protocol):
    """Turns one kind's events into records and translator input (one per kind and pipeline)."""

    kind: str  # the Kubernetes kind, as the records' status and the translator's rejections name it

    def key(self, obj: Mapping[str, Any]) -> Tuple[str, str]:
        """The object's (namespace, name); ("", name) when cluster-scoped."""

    def upsert(self, obj: Dict[str, Any]) -> None:
        """An object was added or modified (already trimmed and validated)."""

    def delete(self, obj: Dict[str, Any]) -> None:
        """An object was deleted."""

    def failed(self, obj: Dict[str, Any], exc: Exception) -> None:
        """Handling `obj` raised `exc` (or its validator refused it): record it as rejected."""



# The handlers' shared context -> the kind's handler.
HandlerFactory = Callable[[Any], KindHandler]

_PARTS = ("lister", "trimmer", "validator", "handler")


@dataclass(frozen=True)
class Kind:
    resource: Resource
    lister: Optional[Lister]
    trimmer: Optional[Trimmer]
    validator: Optional[Validator]
    handler: Optional[HandlerFactory]

    @property
    def name(self) -> str:
        """The REST plural (`networkpolicies`): the `resource` of watch events and of the metrics."""
        return self.resource.name


class KindRegistry:
    """The registered kinds, in the order their events are applied after the initial lists."""

    def __init__(self, kinds: Iterable[Kind]) -> None:
        self._kinds: Dict[str, Kind] = {}
        for kind in kinds:
            for part in _PARTS:
                if not callable(getattr(kind, part)):
                    raise KindError(f"kind {kind.resource.kind} ({kind.name}) is registered without a {part}")
            if kind.name in self._kinds:
                raise KindError(f"kind {kind.resource.kind} ({kind.name}) is registered twice")
            self._kinds[kind.name] = kind

    def __getitem__(self, name: str) -> Kind:
        try:
            return self._kinds[name]
        except KeyError:
            raise KindError(f"unknown kind {name!r} (registered: {', '.join(self._kinds)})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def __iter__(self) -> Iterator[Kind]:
        return iter(self._kinds.values())

    def names(self) -> List[str]:
        return list(self._kinds)


def watched_kinds(kinds: Kinds) -> KindRegistry:
    """The registry's kinds as the watchers and the event dispatcher take them: each one's `Kind`
    record (its `WATCH` hook), in the registry's order; KindError for a kind without one."""
    return KindRegistry(kinds.hook(entry.kind, WATCH) for entry in kinds)
