"""NetworkPolicies: their records (uid, spec, manifest, generation) and the translator's
NetworkPolicy source. What became of each (its firewall policy and rules, errors, sync state) is
the status book's (`kube_manager/status/policies.py`).
"""
from __future__ import annotations

import logging
from typing import Any, Dict

from kube_manager.records.db import PolicyRecord
from kube_manager.kube.kinds import Kind, collection_lister
from kube_manager.registry import KINDS, WATCH, NETWORK_POLICIES
from kube_manager.observability.logging_setup import kv
from kube_manager.translator.staged_policies import STAGED_ANNOTATION

from .base import Handler, generation_of, mapping, metadata, trim_annotation, trim_metadata, validate_namespaced

log = logging.getLogger(__name__)


def trim_network_policy(obj: Dict[str, Any]) -> Dict[str, Any]:
    """metadata (with its generation, which a status reports as observed, and the staged
    annotation, SPEC 17) and the spec exactly as the server gives it (its sha256 is an annotation)."""
    trimmed = {"apiVersion": NETWORK_POLICIES.api_version, "kind": NETWORK_POLICIES.kind,
               "metadata": trim_metadata(obj, "generation")}
    if "spec" in mapping(obj):
        trimmed["spec"] = obj["spec"]
    return trim_annotation(obj, trimmed, STAGED_ANNOTATION)


class NetworkPolicyHandler(Handler):
    kind = NETWORK_POLICIES.kind

    def upsert(self, obj: Dict[str, Any]) -> None:
        key = self.key(obj)
        meta = metadata(obj)
        spec = obj.get("spec")
        record = self.db.network_policies.get(key)
        if record is None:
            record = self.db.network_policies[key] = PolicyRecord(str(meta.get("uid") or ""), key[0], key[1])
        record.uid = str(meta.get("uid") or "")
        record.spec = spec if isinstance(spec, dict) else {}
        record.manifest = obj
        record.generation = generation_of(obj)
        super().upsert(obj)

    def delete(self, obj: Dict[str, Any]) -> None:
        key = self.key(obj)
        record = self.db.network_policies.pop(key, None)
        super().delete(obj)
        if record is not None:
            log.info("NetworkPolicy deleted", extra=kv(namespace=key[0], name=key[1]))

    def failed(self, obj: Dict[str, Any], exc: Exception) -> None:
        """Rejected, and shown with a record of its own even if it never had one."""
        super().failed(obj, exc)
        namespace, name = key = self.key(obj)
        self.db.network_policies.setdefault(key, PolicyRecord("", namespace, name))


KIND = Kind(NETWORK_POLICIES, collection_lister(NETWORK_POLICIES),
            trim_network_policy, validate_namespaced, NetworkPolicyHandler)
KINDS.register(NETWORK_POLICIES.kind, WATCH, KIND)
