"""ClusterNetworkPolicies (SPEC 13): their records (tier, priority, spec, manifest, generation)
and the translator's ClusterNetworkPolicy source. What became of each (the firewall policy and
rules it emits, errors, sync state) is the status book's (`kube_manager/status/policies.py`).

Cluster-scoped: the key is ("", name). A CRD: listed and watched by its path where the API server
serves it, an empty list where it does not (404; kube/watcher.py).
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Mapping, Optional

from kube_manager.records.db import ClusterPolicyRecord, Key
from kube_manager.kube.kinds import Kind, collection_lister
from kube_manager.registry import KINDS, WATCH, CLUSTER_NETWORK_POLICIES
from kube_manager.observability.logging_setup import kv
from kube_manager.translator.match_logging import ANNOTATION as LOGGING_ANNOTATION
from kube_manager.translator.staged_policies import STAGED_ANNOTATION
from kube_manager.translator.validation import object_name_problem

from .base import Handler, generation_of, mapping, metadata, trim_annotation, trim_metadata

log = logging.getLogger(__name__)


def trim_cluster_network_policy(obj: Dict[str, Any]) -> Dict[str, Any]:
    """metadata (with its generation, which a status reports as observed) and the spec exactly as
    the server gives it; not the status (the conditions that implementations write would wake
    everyone for nothing)."""
    trimmed = {"apiVersion": CLUSTER_NETWORK_POLICIES.api_version, "kind": CLUSTER_NETWORK_POLICIES.kind,
               "metadata": trim_metadata(obj, "generation")}
    if "spec" in mapping(obj):
        trimmed["spec"] = obj["spec"]
    return trim_annotation(obj, trimmed, LOGGING_ANNOTATION, STAGED_ANNOTATION)


def validate_cluster_network_policy(obj: Mapping[str, Any]) -> Optional[str]:
    problem = object_name_problem(metadata(obj).get("name"))
    return f"metadata.name: {problem}" if problem else None


class ClusterNetworkPolicyHandler(Handler):
    kind = CLUSTER_NETWORK_POLICIES.kind

    def key(self, obj: Mapping[str, Any]) -> Key:
        return "", str(metadata(obj).get("name") or "")

    def _record(self, obj: Mapping[str, Any]) -> ClusterPolicyRecord:
        name = self.key(obj)[1]
        record = self.db.cluster_network_policies.get(name)
        if record is None:
            record = self.db.cluster_network_policies[name] = ClusterPolicyRecord("", "", name)
        return record

    def upsert(self, obj: Dict[str, Any]) -> None:
        record = self._record(obj)
        spec = mapping(obj.get("spec"))
        tier, priority = spec.get("tier"), spec.get("priority")
        record.uid = str(metadata(obj).get("uid") or "")
        record.spec, record.manifest = spec, obj
        record.generation = generation_of(obj)
        record.tier = tier if isinstance(tier, str) else ""
        record.priority = priority if isinstance(priority, int) and not isinstance(priority, bool) else None
        super().upsert(obj)

    def delete(self, obj: Dict[str, Any]) -> None:
        name = self.key(obj)[1]
        record = self.db.cluster_network_policies.pop(name, None)
        super().delete(obj)
        if record is not None:
            log.info("ClusterNetworkPolicy deleted", extra=kv(name=name))

    def failed(self, obj: Dict[str, Any], exc: Exception) -> None:
        """Rejected alone, and shown with a record of its own even if it never had one."""
        super().failed(obj, exc)
        self._record(obj)


KIND = Kind(CLUSTER_NETWORK_POLICIES, collection_lister(CLUSTER_NETWORK_POLICIES), trim_cluster_network_policy, validate_cluster_network_policy, ClusterNetworkPolicyHandler)
KINDS.register(CLUSTER_NETWORK_POLICIES.kind, WATCH, KIND)
