#!/usr/bin/env python3
"""Cluster dumps for the offline benchmarks (issue 12): what an operator pipes into `translate -f`.

- `antrea`: Antrea's benchmark shape (bench_translate.py's cluster: per namespace 4 pods and 3
  NetworkPolicies), 5,000 namespaces by default, as one JSON `List` (about 15 MB): lean objects,
  so the file is mostly what the translator reads.
- `kubectl`: what `kubectl get ns,pods,netpol -A -o json` prints for a busy cluster, 300 namespaces
  by default (about 22 MB, indented by 4 as kubectl does): every object carries managedFields, the
  last-applied annotation, ownerReferences and a full status, so most of the file is what the
  translator never reads.

Both are deterministic (same arguments, same bytes).

    python bench/cluster_dumps.py antrea /tmp/antrea.json [--namespaces 5000]
    python bench/cluster_dumps.py kubectl /tmp/kubectl.json [--namespaces 300]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import zlib
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_translate import cluster  # noqa: E402

CREATED = "2026-01-05T10:00:00Z"
PODS_PER_NAMESPACE = 4


def antrea_dump(namespaces: int) -> Dict[str, Any]:
    """bench_translate's cluster as one `List` with kinds and API versions."""
    objects = cluster(namespaces)
    items = ([dict(o, apiVersion="v1", kind="Namespace") for o in objects["namespaces"]]
             + [dict(o, apiVersion="v1", kind="Pod") for o in objects["pods"]]
             + [dict(o, apiVersion="networking.k8s.io/v1", kind="NetworkPolicy") for o in objects["policies"]])
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def _managed_fields(manager: str, fields: Dict[str, Any], subresource: str = "") -> Dict[str, Any]:
    entry = {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": fields, "manager": manager,
             "operation": "Update", "time": CREATED}
    if subresource:
        entry["subresource"] = subresource
    return entry


def _metadata(name: str, namespace: str, uid: str, labels: Dict[str, str], extra: Dict[str, Any]) -> Dict[str, Any]:
    metadata = {"creationTimestamp": CREATED, "labels": labels, "name": name,
                "resourceVersion": str(zlib.crc32(uid.encode()) % 10**7), "uid": uid}
    if namespace:
        metadata["namespace"] = namespace
    metadata.update(extra)
    return metadata


def _kubectl_namespace(i: int) -> Dict[str, Any]:
    name = f"team-{i:03d}"
    labels = {"kubernetes.io/metadata.name": name, "team": f"t{i % 20}", "env": ("prod", "staging")[i % 2]}
    fields = {"f:metadata": {"f:labels": {".": {}, **{f"f:{k}": {} for k in labels}}}}
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": _metadata(name, "", f"00000000-0000-4000-8000-{i:012d}", labels,
                                  {"managedFields": [_managed_fields("kubectl-create", fields)]}),
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def _kubectl_pod(i: int, j: int) -> Dict[str, Any]:
    namespace, app = f"team-{i:03d}", ("web", "api", "db", "cache")[j % 4]
    address = i * PODS_PER_NAMESPACE + j
    ip = f"10.{address >> 16 & 255}.{address >> 8 & 255}.{address & 255}"
    replica_set = f"{app}-{i:03d}7f9c6d5b"
    name = f"{replica_set}-{j:05x}"
    labels = {"app": app, "pod-template-hash": f"{i:03d}7f9c6d5b", "tier": ("front", "back")[j % 2]}
    container = {
        "env": [{"name": f"SETTING_{k}", "value": f"value-{k}-{app}"} for k in range(5)],
        "image": f"registry.example.com/{app}:1.{j % 7}.3", "imagePullPolicy": "IfNotPresent", "name": app,
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"},
                  {"containerPort": 9090, "name": "metrics", "protocol": "TCP"}],
        "readinessProbe": {"failureThreshold": 3, "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                           "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1},
        "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                          "name": f"kube-api-access-{j:05x}", "readOnly": True}],
    }
    spec_fields = {"f:spec": {"f:containers": {f'k:{{"name":"{app}"}}': {
        ".": {}, "f:env": {".": {}, **{f'k:{{"name":"SETTING_{k}"}}': {".": {}, "f:name": {}, "f:value": {}}
                                     for k in range(5)}},
        "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
        "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': {".": {}, "f:containerPort": {},
                                                                          "f:name": {}, "f:protocol": {}}},
        "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}},
                        "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}}}},
        "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}}}
    status_fields = {"f:status": {"f:conditions": {f'k:{{"type":"{t}"}}': {".": {}, "f:lastProbeTime": {},
                                                                         "f:lastTransitionTime": {}, "f:status": {},
                                                                         "f:type": {}}
                                                   for t in ("ContainersReady", "Initialized", "Ready")},
                                  "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {},
                                  "f:podIPs": {".": {}, f'k:{{"ip":"{ip}"}}': {".": {}, "f:ip": {}}},
                                  "f:startTime": {}}}
    extra = {
        "annotations": {"kubectl.kubernetes.io/restartedAt": CREATED,
                        "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
        "generateName": f"{replica_set}-",
        "managedFields": [_managed_fields("kube-controller-manager", spec_fields),
                          _managed_fields("kubelet", status_fields, "status")],
        "ownerReferences": [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                             "kind": "ReplicaSet", "name": replica_set,
                             "uid": f"10000000-0000-4000-8000-{address:012d}"}],
    }
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": _metadata(name, namespace, f"20000000-0000-4000-8000-{address:012d}", labels, extra),
        "spec": {"containers": [container], "dnsPolicy": "ClusterFirst", "enableServiceLinks": True,
                 "nodeName": f"node-{address % 40:02d}", "preemptionPolicy": "PreemptLowerPriority",
                 "priority": 0, "restartPolicy": "Always", "schedulerName": "default-scheduler",
                 "securityContext": {}, "serviceAccount": "default", "serviceAccountName": "default",
                 "terminationGracePeriodSeconds": 30,
                 "tolerations": [{"effect": "NoExecute", "key": f"node.kubernetes.io/{t}", "operator": "Exists",
                                  "tolerationSeconds": 300} for t in ("not-ready", "unreachable")],
                 "volumes": [{"name": f"kube-api-access-{j:05x}", "projected": {"defaultMode": 420, "sources": [
                     {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                     {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                     {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1",
                                                             "fieldPath": "metadata.namespace"},
                                                "path": "namespace"}]}}]}}]},
        "status": {
            "conditions": [{"lastProbeTime": None, "lastTransitionTime": CREATED, "status": "True", "type": t}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"containerID": f"containerd://{address:064x}",
                                   "image": container["image"], "imageID": f"sha256:{address * 7:064x}",
                                   "lastState": {}, "name": app, "ready": True, "restartCount": 0,
                                   "started": True, "state": {"running": {"startedAt": CREATED}}}],
            "hostIP": f"192.168.{address % 40}.10", "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "qosClass": "Burstable", "startTime": CREATED},
    }


def _kubectl_policies(i: int) -> List[Dict[str, Any]]:
    namespace = f"team-{i:03d}"
    specs = {
        "default-deny": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                         "egress": [{"to": [{"namespaceSelector": {"matchLabels": {
                             "kubernetes.io/metadata.name": "kube-system"}}}],
                             "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}]},
        "web-ingress": {"podSelector": {"matchLabels": {"app": "web"}},
                        "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}],
                                     "ports": [{"port": "http", "protocol": "TCP"}]}]},
        "api-from-web": {"podSelector": {"matchLabels": {"app": "api"}},
                         "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                                      "ports": [{"port": 8080, "protocol": "TCP"}]}]},
        "db-from-api": {"podSelector": {"matchLabels": {"app": "db"}},
                        "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "api"}}},
                                              {"namespaceSelector": {"matchLabels": {"team": f"t{i % 20}"}},
                                               "podSelector": {"matchLabels": {"tier": "back"}}}],
                                     "ports": [{"port": 5432, "protocol": "TCP"}]}]},
        "metrics": {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": "monitoring"}}}], "ports": [{"port": "metrics", "protocol": "TCP"}]}]},
    }
    result = []
    for k, (name, spec) in enumerate(specs.items()):
        applied = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                   "metadata": {"annotations": {}, "name": name, "namespace": namespace}, "spec": spec}
        extra = {"annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                                 json.dumps(applied, separators=(",", ":")) + "\n"},
                 "generation": 1,
                 "managedFields": [_managed_fields("kubectl-client-side-apply", {"f:metadata": {"f:annotations": {
                     ".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}}, "f:spec": {
                     f"f:{key}": {} for key in spec}})]}
        result.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                       "metadata": _metadata(name, namespace, f"30000000-0000-4000-8000-{i * 10 + k:012d}", {},
                                             extra),
                       "spec": spec})
    return result


def kubectl_dump(namespaces: int) -> Dict[str, Any]:
    """`kubectl get ns,pods,netpol -A -o json` of a busy cluster: full objects, one `List`."""
    items: List[Dict[str, Any]] = [_kubectl_namespace(i) for i in range(namespaces)]
    for i in range(namespaces):
        items += [_kubectl_pod(i, j) for j in range(PODS_PER_NAMESPACE)]
    for i in range(namespaces):
        items += _kubectl_policies(i)
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def write(shape: str, path: str, namespaces: int) -> None:
    if shape == "antrea":
        text = json.dumps(antrea_dump(namespaces))
    else:
        text = json.dumps(kubectl_dump(namespaces), indent=4)
    with open(path, "w", encoding="utf-8") as stream:
        stream.write(text + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shape", choices=("antrea", "kubectl"))
    parser.add_argument("path")
    parser.add_argument("--namespaces", type=int, help="default 5,000 (antrea) or 300 (kubectl)")
    args = parser.parse_args()
    write(args.shape, args.path, args.namespaces or (5000 if args.shape == "antrea" else 300))
    print(f"{args.path}: {os.path.getsize(args.path) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
