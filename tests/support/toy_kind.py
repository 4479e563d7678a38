"""A kind defined only here ("Toy", cluster-scoped): one translator source and one handler, plugged
in without editing a product file, to show what a new kind takes (docs/architecture.md, "Adding a
kind")."""
from __future__ import annotations

from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

from kube_manager.handlers import KINDS
from kube_manager.handlers.base import Handler, metadata
from kube_manager.kube.kinds import Kind, KindRegistry
from kube_manager.kube.resources import Resource
from kube_manager.translator.kind_source import Emitted
from kube_manager.translator.validation import InvalidInput

TOY = "Toy"
TOYS = Resource("toys", TOY, "example.com/v1", namespaced=False)
TOO_BIG = "spec.size: over 10; kept, but reported"


class ToySource:
    """Toys by name, with their size; a size that is not an integer cannot be read."""

    kind = TOY

    def __init__(self) -> None:
        self.sizes: Dict[str, int] = {}

    def identity(self, manifest: Any) -> Tuple[str, str]:
        return "", str(manifest.get("metadata", {}).get("name") or "")

    def upsert(self, manifest: Mapping[str, Any]) -> Tuple[str, str]:
        name = manifest["metadata"]["name"]
        size = manifest.get("spec", {}).get("size")
        if not isinstance(size, int):
            raise InvalidInput(f"spec.size: {size!r} is not an integer")
        self.sizes[name] = size
        return "", name

    def remove(self, namespace: str, name: str) -> None:
        self.sizes.pop(name, None)

    def status(self, namespace: str, name: str) -> Optional[Emitted]:
        return None

    def errors(self) -> Iterator[Dict[str, str]]:
        for name, size in self.sizes.items():
            if size > 10:
                yield {"kind": TOY, "namespace": "", "name": name, "reason": TOO_BIG}


def toy(name: str, size: Any) -> Dict[str, Any]:
    return {"apiVersion": TOYS.api_version, "kind": TOY, "metadata": {"name": name}, "spec": {"size": size}}


class ToyHandler(Handler):
    """No records of its own: the base class gives every event to the translator's source."""

    kind = TOY

    def key(self, obj: Mapping[str, Any]) -> Tuple[str, str]:
        return "", str(metadata(obj).get("name") or "")


TOY_KIND = Kind(TOYS, lambda api: None, lambda obj: obj, lambda obj: None, ToyHandler)
KINDS_WITH_TOYS = KindRegistry(list(KINDS) + [TOY_KIND])
