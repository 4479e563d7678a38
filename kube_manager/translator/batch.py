"""`translate()`: a whole cluster's manifests translated in one go, for the offline commands."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from kube_manager.plumbing.gcpolicy import collector_paused
from kube_manager.registry import KINDS, Kinds

from .cluster import ClusterTranslator
from .semantics import KUBERNETES
from .translation import Translation

# A cluster's manifests, by kind (the registry's kinds: `kube_manager/registry.py`).
ManifestsByKind = Mapping[str, Iterable[Mapping[str, Any]]]


def translate(manifests: ManifestsByKind, *, cluster_name: str = "k8s", owner: str = "k8s",
              semantics: str = KUBERNETES, kinds: Kinds = KINDS) -> Translation:
    """Translate plain manifests (as the API server returns them) in one go, each kind in the
    translator's order whatever the mapping's; KeyError for a kind the translator does not read.

    Equal, by construction, to a ClusterTranslator fed the same objects: it is one, without the
    change log the daemon needs. `semantics` is SPEC 14's `policy_semantics`; `kinds` the registry
    of the kinds read.
    """
    with collector_paused():
        translator = ClusterTranslator(cluster_name, owner, track_changes=False, semantics=semantics, kinds=kinds)
        read = translator.kinds()
        unknown = [kind for kind in manifests if kind not in read]
        if unknown:
            raise KeyError(f"no translator source for kind {unknown[0]!r} (there are: {', '.join(read)})")
        upsert = translator.upsert
        for kind in read:
            for manifest in manifests.get(kind, ()):
                upsert(kind, manifest)
        translator.flush()
        return translator.translation()
