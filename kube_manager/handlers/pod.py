"""Pods: their records (uid, IP, labels) and the translator's pod source."""
from __future__ import annotations

from typing import Any, Dict

from kube_manager.records.db import PodRecord
from kube_manager.kube.kinds import Kind, collection_lister
from kube_manager.registry import KINDS, WATCH, PODS
from .base import Handler, mapping, metadata, trim_metadata, validate_namespaced


def trim_pod(obj: Dict[str, Any]) -> Dict[str, Any]:
    """metadata, `spec.containers[].name/ports` (named ports), `spec.hostNetwork` when true (such a
    pod has no interface of its own to tag) and `status.podIP`."""
    spec = mapping(mapping(obj).get("spec"))
    containers = []
    listed = spec.get("containers")
    for container in listed if isinstance(listed, list) else ():
        if isinstance(container, dict):
            containers.append({key: container[key] for key in ("name", "ports")
                               if container.get(key) is not None})
    trimmed: Dict[str, Any] = {"apiVersion": PODS.api_version, "kind": PODS.kind,
                               "metadata": trim_metadata(obj), "spec": {"containers": containers}}
    if spec.get("hostNetwork") is True:
        trimmed["spec"]["hostNetwork"] = True
    pod_ip = mapping(mapping(obj).get("status")).get("podIP")
    trimmed["status"] = {"podIP": pod_ip} if pod_ip else {}
    return trimmed


class PodHandler(Handler):
    """The pods' records (uid, IP, labels, manifest); their tags and tagging states are the status
    book's."""

    kind = PODS.kind

    def upsert(self, obj: Dict[str, Any]) -> None:
        key = self.key(obj)
        meta = metadata(obj)
        record = self.db.pods.get(key)
        uid = str(meta.get("uid") or "")
        if record is None or record.uid != uid:
            record = PodRecord(uid, key[0], key[1])  # a re-created pod starts its tagging anew
            self.db.pods[key] = record
        record.host_network = mapping(obj.get("spec")).get("hostNetwork") is True
        ip = mapping(obj.get("status")).get("podIP")
        record.ip = ip if isinstance(ip, str) else None
        record.manifest = obj
        record.labels = labels = dict(mapping(meta.get("labels")))
        super().upsert(obj)
        # The translator's labels where equal, instead of a copy of the record's own (a copy per pod
        # adds up at scale: docs/operations.md, "Measurements behind the code"); a rejected pod keeps
        # its own.
        held = self.translator.pod_labels(*key)
        if held is not None and held == labels:
            record.labels = held

    def delete(self, obj: Dict[str, Any]) -> None:
        key = self.key(obj)
        self.db.pods.pop(key, None)
        super().delete(obj)


KIND = Kind(PODS, collection_lister(PODS), trim_pod, validate_namespaced,
            PodHandler)
KINDS.register(PODS.kind, WATCH, KIND)
