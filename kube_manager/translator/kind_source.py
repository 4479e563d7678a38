"""What the translator asks of each Kubernetes kind it reads: one `KindSource` per kind.

`ClusterTranslator` holds one source per kind of the registry of kinds (`kube_manager/registry.py`:
each kind's `SOURCE` hook builds it, in the registry's order, the order a whole cluster is loaded),
and does for all of them what is the same for every kind: the try/except around reading a
manifest, the rejection of an object that cannot be read (or whose handling failed), the discard
of an earlier rejection, the list of errors. A source only reads its manifests and keeps what it
read (docs/architecture.md, "Adding a kind").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, Mapping, Optional, Protocol, Tuple

from .bodies import FqName

Identity = Tuple[str, str]  # (namespace, name); namespace "" for a cluster-scoped object


class Emitted(Protocol):
    """What one object emitted as of the last flush, for its status record and the pages."""

    @property
    def firewall_policy(self) -> Optional[FqName]:
        """Its firewall policy; None when it emits nothing (rejected whole)."""

    @property
    def rules(self) -> Tuple[FqName, ...]:
        """Its pass rules, in sequence order."""

    @property
    def deny_rules(self) -> Tuple[FqName, ...]:
        """Its deny rules."""

    @property
    def errors(self) -> Tuple[str, ...]:
        """Why part or all of it is not translated."""


@dataclass(frozen=True)
class Unrendered:
    """The status of an object that emits nothing: rejected whole, for `errors`."""

    errors: Tuple[str, ...]
    firewall_policy: Optional[FqName] = None
    rules: Tuple[FqName, ...] = ()
    deny_rules: Tuple[FqName, ...] = ()


class KindSource(Protocol):
    """One kind's input to the translator. Its objects are known by their `Identity`."""

    kind: str  # the Kubernetes kind, as rejections and errors name it

    def identity(self, manifest: Any) -> Identity:
        """The manifest's (namespace, name) as far as it can be read, to report its rejection."""

    def upsert(self, manifest: Mapping[str, Any]) -> Identity:
        """Read the manifest and record the object (replacing any earlier state of it); its
        identity. Raises InvalidInput (or, a bug confined to the object, anything) when it cannot
        be read, before changing anything."""

    def remove(self, namespace: str, name: str) -> None:
        """Forget the object, if known (deleted, or rejected)."""

    def status(self, namespace: str, name: str) -> Optional[Emitted]:
        """What the object emitted as of the last flush; None when it is unknown or emits no
        policy of its own (namespaces, pods)."""

    def errors(self) -> Iterable[Dict[str, str]]:
        """Its objects' errors of the last flush (`kind`, `namespace`, `name`, `reason`), whole
        rejections apart (they are the translator's)."""


class KindTable:
    """The sources by kind, in the order a whole cluster is loaded. There is no default: an
    unknown kind is a `KeyError` naming the kinds there are."""

    def __init__(self, sources: Iterable[KindSource]) -> None:
        self._sources: Dict[str, KindSource] = {}
        for source in sources:
            self.add(source)

    def __getitem__(self, kind: str) -> KindSource:
        source = self._sources.get(kind)
        if source is None:
            raise KeyError(f"no translator source for kind {kind!r} (there are: {', '.join(self._sources)})")
        return source

    def kinds(self) -> Tuple[str, ...]:
        return tuple(self._sources)

    def sources(self) -> Tuple[KindSource, ...]:
        return tuple(self._sources.values())

    def add(self, source: KindSource) -> None:
        """Plug one more kind in (after those there are)."""
        if source.kind in self._sources:
            raise ValueError(f"kind {source.kind} has two translator sources")
        self._sources[source.kind] = source
