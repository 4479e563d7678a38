"""Pods: their records (uid, IP, labels, the tags their VMIs must carry) and the translator's pod source."""
from __future__ import annotations

from typing import Any, Dict, Set

from kubernetes import client

from kube_manager.records.db import Key, PodRecord
from kube_manager.kube.kinds import Kind
from kube_manager.kube.resources import PODS
from kube_manager.translator import Changes

from .base import Context, Handler, mapping, metadata, trim_metadata, validate_namespaced


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
    kind = PODS.kind

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self._touched: Set[Key] = set()  # pods upserted since the last flush

    def upsert(self, obj: Dict[str, Any]) -> None:
        key = self.key(obj)
        self.context.errors_stale |= key in self.context.rejected.get(self.kind, ())  # fixed
        meta = metadata(obj)
        record = self.db.pods.get(key)
        uid = str(meta.get("uid") or "")
        if record is None or record.uid != uid:
            # A re-created pod keeps the tags of its name until the flush says otherwise: they
            # follow from labels and namespace, and the change report names only tags that moved.
            tags = record.tags if record is not None else []
            record = PodRecord(uid, key[0], key[1], tags=tags)
            self.db.pods[key] = record
        record.host_network = mapping(obj.get("spec")).get("hostNetwork") is True
        if record.host_network:
            record.tags = []  # no interface of its own: never tagged
        ip = mapping(obj.get("status")).get("podIP")
        record.ip = ip if isinstance(ip, str) else None
        record.labels = dict(mapping(meta.get("labels")))  # until the flush (see `flushed`)
        record.manifest = obj
        self.translator.upsert_pod(obj)
        self._touched.add(key)

    def delete(self, obj: Dict[str, Any]) -> None:
        key = self.key(obj)
        self.context.errors_stale |= key in self.context.rejected.get(self.kind, ())
        self.db.pods.pop(key, None)
        self.translator.delete_pod(*key)

    def flushed(self, changes: Changes) -> None:
        """New tags on the records of the pods whose tags moved; a pod the translator does not
        know although it has a record was rejected, so the errors must be read again."""
        touched, self._touched = self._touched, set()
        context = self.context
        for key in changes.pods:
            record = self.db.pods.get(key)
            if record is not None:
                tags = self.translator.pod_tags(*key)
                context.errors_stale |= tags is None  # known, yet without tags: rejected
                record.tags = list(tags or ()) if not record.host_network else []
        for key in touched.difference(changes.pods):  # same tags as before, or still rejected
            context.errors_stale |= key in self.db.pods and self.translator.pod_tags(*key) is None
        self._share_labels(touched)

    def _share_labels(self, keys: Set[Key]) -> None:
        """The records of these pods take the translator's labels where equal, instead of keeping
        a copy of their own (17 MB at XLarge); a rejected pod keeps its own."""
        for key in keys:
            record = self.db.pods.get(key)
            if record is not None:
                held = self.translator.pod_labels(*key)
                if held is not None and held == record.labels:
                    record.labels = held


KIND = Kind(PODS, lambda api: client.CoreV1Api(api).list_pod_for_all_namespaces, trim_pod, validate_namespaced,
            PodHandler)
