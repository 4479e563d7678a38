"""Helpers for the reconciler tests: the embedded config API called in-process, and a cluster.

`InProcessApi` calls the embedded server's `ConfigApi` directly (the same code the HTTP server runs,
so every rule the real server enforces applies) with the REST client's typed errors, yielding to
gevent on every call as network I/O would, so the reconciler's workers really interleave. It records
every write in order, and can fail chosen calls, for the ordering and failure tests.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import gevent

from kube_manager.service.pipeline import build_pipeline
from kube_manager.settings import ReconcilerSettings
from kube_manager.reconciler.ownership import OWNED_TYPES, OwnershipMarks
from vnc_client.errors import ServerError, VncConnectionError, error_for_status
from simulators.vnc_api.api import ConfigApi, ListQuery
from simulators.vnc_api.errors import ApiError
from tests.support.builders import HTTP_8080, allow_from, namespace, pod, policy
from tests.support.waiting import wait_green

VN = ["default-domain", "default-project", "k8s-default-pod-network"]
MARKS = OwnershipMarks(owner="k8s", cluster="k8s")


@dataclass
class Write:
    op: str  # create | update | delete | set-tag
    obj_type: str
    fq_name: Tuple[str, ...]
    body: Dict[str, Any] = field(default_factory=dict)


# fault(op, obj_type, fq_name) -> an exception to raise instead of the call, or None
Fault = Callable[[str, str, Tuple[str, ...]], Optional[Exception]]


class InProcessApi:
    """The reconciler's client Protocol over an in-process embedded `ConfigApi`."""

    def __init__(self, api: Optional[ConfigApi] = None) -> None:
        self.api = api or ConfigApi()
        self.writes: List[Write] = []
        self.requests = 0
        self.inflight = 0
        self.max_inflight = 0
        self.fault: Optional[Fault] = None

    # --- the client Protocol ---------------------------------------------------------------

    def create(self, obj_type: str, body: Mapping[str, Any]) -> Dict[str, Any]:
        fq = tuple(body.get("fq_name") or ())
        answer = self._call("create", obj_type, fq, lambda: self.api.create(obj_type, copy.deepcopy(dict(body))))
        self.writes.append(Write("create", obj_type, fq, copy.deepcopy(dict(body))))
        return {**body, **answer}

    def read(self, obj_type: str, ident: Any, *, fields: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        uuid = ident if isinstance(ident, str) else self._uuid(obj_type, ident)
        return self._call("read", obj_type, (), lambda: self.api.read(obj_type, uuid, fields=fields))

    def update(self, obj_type: str, ident: str, body: Mapping[str, Any]) -> Dict[str, Any]:
        fq = self._fq(ident)
        answer = self._call("update", obj_type, fq, lambda: self.api.update(obj_type, ident, copy.deepcopy(dict(body))))
        self.writes.append(Write("update", obj_type, fq, copy.deepcopy(dict(body))))
        return answer or {}

    def ref_update(self, obj_type: str, uuid: str, ref_type: str, ref_uuid: Optional[str] = None, *,
                   ref_fq_name: Optional[Sequence[str]] = None, operation: str = "ADD", attr: Any = None) -> str:
        fq = self._fq(uuid)
        body = {"operation": operation, "type": obj_type, "uuid": uuid, "ref-type": ref_type,
                "ref-uuid": ref_uuid, "ref-fq-name": list(ref_fq_name or []) or None, "attr": attr}
        self._call("ref-update", obj_type, fq, lambda: self.api.ref_update(body))
        self.writes.append(Write("ref-update", obj_type, fq, {"operation": operation, "ref": list(ref_fq_name or [])}))
        return uuid

    def delete(self, obj_type: str, ident: str) -> None:
        fq = self._fq(ident)
        self._call("delete", obj_type, fq, lambda: self.api.delete(obj_type, ident))
        self.writes.append(Write("delete", obj_type, fq))

    def list_pages(self, obj_type: str, page_limit: Optional[int], *, detail: bool = False,
                   fields: Optional[Sequence[str]] = None, exclude_hrefs: bool = False) -> Iterator[List[Dict[str, Any]]]:
        """As `VncClient.list_pages`: the server's `marker` followed, one request per page."""
        marker: Optional[str] = None
        while True:
            query = ListQuery(detail=detail, fields=list(fields or []), exclude_hrefs=exclude_hrefs,
                              paginated=page_limit is not None, page_marker=marker)
            if page_limit is not None:
                query.page_limit = page_limit
            answer = self._call("list", obj_type, (), lambda: self.api.list(obj_type, query))
            items = answer[obj_type + "s"]
            yield [item[obj_type] for item in items] if detail else items
            marker = answer.get("marker")
            if marker is None:
                return

    def set_tags(self, obj_type: str, obj_uuid: str, changes: Mapping[str, Any]) -> None:
        fq = self._fq(obj_uuid)
        body = {"obj_type": obj_type, "obj_uuid": obj_uuid, **copy.deepcopy(dict(changes))}
        self._call("set-tag", obj_type, fq, lambda: self.api.set_tag(body))
        self.writes.append(Write("set-tag", obj_type, fq, dict(changes)))

    # --- helpers for tests -----------------------------------------------------------------

    def owned(self, marks: OwnershipMarks = MARKS) -> Dict[str, Dict[Tuple[str, ...], Dict[str, Any]]]:
        """Our objects in the store, per type, as a full read returns them."""
        return {t: {tuple(b["fq_name"]): b for b in self.api.dump(t) if marks.owns(b)} for t in OWNED_TYPES}

    def writes_of(self, op: Optional[str] = None) -> List[Write]:
        return [w for w in self.writes if op is None or w.op == op]

    def index_of(self, op: str, obj_type: str, name: str) -> int:
        """Position in the write log of the first `op` on the object whose fq_name ends with `name`."""
        for i, w in enumerate(self.writes):
            if w.op == op and w.obj_type == obj_type and w.fq_name[-1] == name:
                return i
        raise AssertionError(f"no {op} of {obj_type} {name} in {[(w.op, w.fq_name[-1]) for w in self.writes]}")

    def add_pod_vmi(self, pod_uid: str, name: str) -> str:
        """What the CNI does for a pod: its VM (uuid = pod uid) and one VMI; returns the VMI uuid."""
        if self.api.lookup("virtual-network", VN) is None:
            self.api.create("virtual-network", {"fq_name": VN, "parent_type": "project"})
        vm = self.api.create("virtual-machine", {"fq_name": [name], "uuid": pod_uid})
        vmi = self.api.create("virtual-machine-interface", {
            "fq_name": VN[:2] + [name], "parent_type": "project",
            "virtual_machine_refs": [{"to": [name], "uuid": vm["uuid"]}],
            "virtual_network_refs": [{"to": VN}]})
        return vmi["uuid"]

    def vmi_tags(self, pod_uid: str) -> List[str]:
        vm = self.api.read("virtual-machine", pod_uid, fields=["virtual_machine_interface_back_refs"])
        tags: List[str] = []
        for ref in vm.get("virtual_machine_interface_back_refs") or []:
            vmi = self.api.read("virtual-machine-interface", ref["uuid"], fields=["tag_refs"])
            tags.extend(r["to"][-1] for r in vmi.get("tag_refs") or [])
        return sorted(tags)

    # --- internals -------------------------------------------------------------------------

    def _call(self, op: str, obj_type: str, fq: Tuple[str, ...], fn: Callable[[], Any]) -> Any:
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            gevent.sleep(0)  # a network call yields
        finally:
            self.inflight -= 1
        self.requests += 1
        if self.fault is not None:
            exc = self.fault(op, obj_type, fq)
            if exc is not None:
                raise exc
        try:
            return fn()
        except ApiError as exc:
            raise error_for_status(op.upper(), f"/{obj_type}", exc.status, exc.message) from None

    def _uuid(self, obj_type: str, fq_name: Sequence[str]) -> str:
        self.requests += 1
        try:
            return self.api.fqname_to_id({"type": obj_type, "fq_name": list(fq_name)})["uuid"]
        except ApiError as exc:
            raise error_for_status("POST", "/fqname-to-id", exc.status, exc.message) from None

    def _fq(self, uuid: str) -> Tuple[str, ...]:
        obj = self.api.store.get(uuid)
        return tuple(obj.fq_name) if obj is not None else ()


def server_error(op: str = "create") -> Exception:
    return ServerError(op.upper(), "/x", 503, "Service Unavailable")


def connection_error() -> Exception:
    return VncConnectionError("connection reset")


# --- a small cluster, fed to a translator and a DB as the daemon does --------------------------


RESOURCE_OF = {"Namespace": "namespaces", "Pod": "pods", "NetworkPolicy": "networkpolicies",
               "ClusterNetworkPolicy": "clusternetworkpolicies"}


class Cluster:
    """The daemon's pipeline (records, translator; a reconciler once connected) fed events by hand."""

    def __init__(self) -> None:
        self.pipeline = build_pipeline("k8s", "k8s")
        self.db = self.pipeline.db
        self.cache = self.pipeline.cache
        for resource in RESOURCE_OF.values():  # empty first lists: later events apply at once
            self.cache.on_event(resource, "LISTED", {"resourceVersion": "1"})

    def apply(self, *manifests: Dict[str, Any]) -> None:
        for manifest in manifests:
            self.cache.on_event(RESOURCE_OF[manifest["kind"]], "ADDED", copy.deepcopy(manifest))

    def remove(self, *manifests: Dict[str, Any]) -> None:
        for manifest in manifests:
            self.cache.on_event(RESOURCE_OF[manifest["kind"]], "DELETED", copy.deepcopy(manifest))

    def translation(self) -> Dict[str, Any]:
        return self.cache.translator.translation().to_dict()


# --- assertions shared by the reconciler and end-to-end tests ----------------------------------

TRANSLATION_LISTS = {"tag": "tags", "address-group": "address_groups", "firewall-rule": "firewall_rules",
                     "firewall-policy": "firewall_policies"}


def expected_objects(translation: Mapping[str, Any]) -> Dict[str, Dict[Tuple[str, ...], Dict[str, Any]]]:
    """`translate`'s JSON as {type: {fq_name: body}}."""
    expected = {t: {tuple(b["fq_name"]): b for b in translation[name]} for t, name in TRANSLATION_LISTS.items()}
    aps = translation["application_policy_set"]
    expected["application-policy-set"] = {tuple(aps["fq_name"]): aps}
    return expected


def differences(expected: Mapping[str, Mapping[Tuple[str, ...], Any]],
                owned: Mapping[str, Mapping[Tuple[str, ...], Any]]) -> List[str]:
    """What differs between the translation and our objects in the config API (uuids and hrefs
    ignored): missing, extra, and changed objects with the fields that differ."""
    from kube_manager.reconciler.compare import changed_fields
    problems = []
    for obj_type, wanted in expected.items():
        have = owned.get(obj_type, {})
        problems += [f"missing {obj_type} {':'.join(fq)}" for fq in sorted(set(wanted) - set(have))]
        problems += [f"extra {obj_type} {':'.join(fq)}" for fq in sorted(set(have) - set(wanted))]
        for fq in sorted(set(wanted) & set(have)):
            changed = changed_fields(obj_type, wanted[fq], have[fq])
            if changed:
                problems.append(f"changed {obj_type} {':'.join(fq)}: {sorted(changed)}")
    return problems


# --- a reconciler over the in-process API, on a small cluster (the `setup` fixture, conftest.py) ---

NS_A = namespace("a", team="x")
NS_B = namespace("b")
WEB = pod("a", "web", "10.0.0.1", app="web", ports=HTTP_8080)
CLIENT = pod("a", "client", "10.0.0.2", app="client", ports=HTTP_8080)
DB = pod("b", "db", "10.0.1.1", app="db", ports=HTTP_8080)
ALLOW_CLIENT = policy("a", "allow-client", allow_from("client", "web"))
FROM_TEAM = policy("b", "from-team", {
    "podSelector": {"matchLabels": {"app": "db"}},
    "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "x"}}},
                          {"ipBlock": {"cidr": "192.168.0.0/16", "except": ["192.168.1.0/24"]}}]}]})
EGRESS = policy("a", "egress", {
    "podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "client"]}]},
    "policyTypes": ["Egress"], "egress": [{"to": [{"podSelector": {}}], "ports": [{"port": 53, "protocol": "UDP"}]}]})
PODS = (WEB, CLIENT, DB)
BASE = (NS_A, NS_B) + PODS + (ALLOW_CLIENT, FROM_TEAM, EGRESS)
FAST = ReconcilerSettings(concurrency=4, retry_base=0.01, retry_cap=0.05)


class Setup:
    def __init__(self, api: Optional[InProcessApi] = None, settings: ReconcilerSettings = FAST,
                 manifests=BASE, vmis: bool = True) -> None:
        self.api = api or InProcessApi()
        self.cluster = Cluster()
        self.rec = self.cluster.pipeline.connect(self.api, settings)
        self.cluster.apply(*manifests)
        if vmis:
            for manifest in manifests:
                if manifest["kind"] == "Pod" and self.api.api.lookup("virtual-machine", [manifest["metadata"]["name"]]) is None:
                    self.api.add_pod_vmi(manifest["metadata"]["uid"], manifest["metadata"]["name"])

    def start(self) -> "Setup":
        self.rec.start()
        self.rec.resync()
        return self

    def converge(self, timeout: float = 10.0) -> None:
        wait_green(self.rec.converged, "convergence", timeout)
        assert differences(expected_objects(self.cluster.translation()), self.api.owned()) == []
        for workload in self.cluster.translation()["workloads"]:
            uid = self.cluster.db.pods[(workload["namespace"], workload["name"])].uid
            assert self.api.vmi_tags(uid) == workload["tags"], workload

    def stop(self) -> None:
        self.rec.stop()
