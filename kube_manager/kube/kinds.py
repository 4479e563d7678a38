"""The kind registry: one record per Kubernetes kind kube-manager watches (issue 9).

A `Kind` says how to list and watch the kind (`lister`: the official client's cluster-wide list
function, which also watches) and what of an object the translator reads (`trimmer`). The watchers
take both from the registry, and the consumer of their events (`KubeCache`) checks at start-up that
it has a handler for every registered kind and for no other. Every gap fails loudly at start-up
with `KindError`, and asking for a kind that is not registered is a `KindError` too: there is no
default kind, so a new kind cannot silently fall into another's lister or handler.

Adding a kind (ClusterNetworkPolicy is next): its `Resource` (resources.py), one `Kind` in the
watcher's `KINDS`, one handler in the cache, one translator source.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

from kube_manager.kube.resources import Resource

# api_client -> the official client's list function for the kind (called with watch=True to watch).
Lister = Callable[[Any], Callable[..., Any]]
# A manifest -> only what the translator reads.
Trimmer = Callable[[Dict[str, Any]], Dict[str, Any]]


class KindError(Exception):
    """A kind registered incompletely, twice, or asked for without being registered."""


@dataclass(frozen=True)
class Kind:
    resource: Resource
    lister: Optional[Lister]
    trimmer: Optional[Trimmer]

    @property
    def name(self) -> str:
        """The REST plural (`networkpolicies`): the `resource` of watch events and of the metrics."""
        return self.resource.name


class KindRegistry:
    """The registered kinds, in the order their events are applied after the initial lists."""

    def __init__(self, kinds: Iterable[Kind]) -> None:
        self._kinds: Dict[str, Kind] = {}
        for kind in kinds:
            for part in ("lister", "trimmer"):
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

    def names(self) -> List[str]:
        return list(self._kinds)

    def check_handlers(self, handlers: Mapping[str, Any], owner: str) -> None:
        """Fail unless `owner` handles exactly the registered kinds, each with a callable."""
        missing = [name for name in self._kinds if not callable(handlers.get(name))]
        if missing:
            raise KindError(f"{owner} has no handler for the registered kind(s) {', '.join(missing)}")
        unknown = [name for name in handlers if name not in self._kinds]
        if unknown:
            raise KindError(f"{owner} handles kind(s) that are not registered: {', '.join(unknown)}")
