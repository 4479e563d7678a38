"""One table of requests, sent to the emulated and to a real Kubernetes API server alike, with what
each answers in the terms the daemon reads (status codes, reasons, the fields of the causes, the
fields it takes from objects and watch events).

`CASES` is the table: each case is a function of a `Target` (one server, reached by the official
client's `ApiClient`, so the same code carries the real server's TLS and credentials) and returns
its observations; `EXPECTED` holds what the real server's sources say each should be. The emulator
tests assert `observe(case) == EXPECTED[case]`; the parity tests assert it on both servers.
Every case works in namespaces and cluster-scoped names of its own (a random suffix), so that it can
run against a long-lived real server.
"""
from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from urllib.parse import urlencode

import urllib3
from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from tests.support.builders import cluster_policy

Observation = Tuple[Any, ...]
MERGE = "application/merge-patch+json"
CNP_PATH = "/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies"
FAR_AHEAD = 10_000_000  # a resourceVersion no test cluster reaches


@dataclass
class Target:
    """One API server: `api` carries its address and credentials; `compact(path)` forgets its
    history, the collection at `path` included (etcd compaction on a real server, whose caches of
    each kind forget on their own time; `KubeStore.compact` on the emulator)."""

    name: str
    api: client.ApiClient
    compact: Callable[[str], None]

    def call(self, method: str, path: str, body: Any = None, query: Optional[Dict[str, Any]] = None,
             content_type: str = "application/json") -> Tuple[int, Any]:
        answer = self._send(method, path, query or {}, body, content_type, read_timeout=30)
        try:
            return answer.status, json.loads(answer.data or b"null")
        finally:
            answer.release_conn()

    def watch(self, path: str, **query: Any) -> List[Dict[str, Any]]:
        """The events of a watch the server ends after its `timeoutSeconds`."""
        answer = self._send("GET", path, {"watch": "true", **query}, None, "application/json", read_timeout=60)
        try:
            assert answer.status == 200, answer.data
            return [json.loads(line) for line in iter_resp_lines(answer) if line]
        finally:
            answer.release_conn()

    def _send(self, method: str, path: str, query: Dict[str, Any], body: Any, content_type: str,
              read_timeout: float) -> Any:
        """The raw urllib3 answer, through the client's own pool (its TLS and client certificate)
        with its bearer token when it has one: the same on every version of the client."""
        config = self.api.configuration
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        for setting in config.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        url = config.host.rstrip("/") + path + ("?" + urlencode(query) if query else "")
        return self.api.rest_client.pool_manager.request(
            method, url, body=None if body is None else json.dumps(body), headers=headers, preload_content=False,
            timeout=urllib3.Timeout(connect=5, read=read_timeout))

    def namespace(self, prefix: str) -> str:
        name = f"{prefix}-{secrets.token_hex(3)}"
        code, _ = self.call("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        assert code == 201, code
        return name

    def rv(self, path: str) -> int:
        return int(self.call("GET", path)[1]["metadata"]["resourceVersion"])


def forgotten(t: Target, timeout: float) -> Callable[[str], None]:
    """A real server's `compact(path)`: writes (an Event every 2 s, so that etcd's revision moves)
    until the server refuses (410) an exact list of `path` at the version it was at (each kind's
    cache keeps its own snapshots, so the kind asked about is the one probed). kube-apiserver compacts etcd
    every --etcd-compaction-interval, at the revision it saw one interval before, and its watch
    cache drops the paging snapshots older than that within 15 s. (Its watch history it keeps:
    a watch from a compacted version is served as long as the cache holds the events.)"""
    def compacted(path: str) -> None:
        before = t.rv(path)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            name = f"parity-clock-{secrets.token_hex(4)}"
            t.call("POST", "/apis/events.k8s.io/v1/namespaces/default/events", event_body(name, "default"))
            code, _ = t.call("GET", path,
                             query={"resourceVersion": before, "resourceVersionMatch": "Exact", "limit": 1})
            if code == 410:
                return
            time.sleep(2)
        raise TimeoutError(f"the server still lists version {before} {timeout:g} s later: is its "
                           "--etcd-compaction-interval longer?")
    return compacted


def refusal(code: int, body: Any) -> Observation:
    """A refusal as the daemon reads it: code, reason, and (field, cause reason) of each cause."""
    if not isinstance(body, dict) or body.get("kind") != "Status":
        return (code,)
    causes = sorted((c.get("field", ""), c.get("reason", "")) for c in (body.get("details") or {}).get("causes", []))
    return (code, body.get("reason"), tuple(causes))


def pod_body(name: str, **extra: Any) -> Dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "automountServiceAccountToken": False},
            **extra}


def event_body(name: str, namespace: str, **changes: Any) -> Dict[str, Any]:
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000001Z", time.gmtime())
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
             "eventTime": now, "reportingController": "contrail-kube-manager", "reportingInstance": "km-1",
             "action": "Translate", "reason": "InvalidPolicy", "type": "Warning", "note": "a note",
             "regarding": {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "name": "np",
                           "namespace": namespace, "uid": "u-1"}}
    for key, value in changes.items():
        if value is None:
            event.pop(key, None)
        else:
            event[key] = value
    return event


# --- the cases ---------------------------------------------------------------------------------------


def list_paging(t: Target) -> List[Observation]:
    ns = t.namespace("paging")
    pods = f"/api/v1/namespaces/{ns}/pods"
    for name in ("a", "b", "c"):
        t.call("POST", pods, pod_body(name))
    code, first = t.call("GET", pods, query={"limit": 2})
    t.call("POST", pods, pod_body("d"))  # after the first page: not in the snapshot
    _, rest = t.call("GET", pods, query={"limit": 2, "continue": first["metadata"]["continue"]})
    same_version = rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    names = [i["metadata"]["name"] for i in first["items"] + rest["items"]]
    return [(code, names, same_version, "kind" in first["items"][0], bool(rest["metadata"].get("continue")))]


def list_expired_continue(t: Target) -> List[Observation]:
    ns = t.namespace("expired")
    pods = f"/api/v1/namespaces/{ns}/pods"
    for name in ("a", "b"):
        t.call("POST", pods, pod_body(name))
    _, first = t.call("GET", pods, query={"limit": 1})
    t.call("POST", pods, pod_body("c"))
    t.compact(pods)
    return [refusal(*t.call("GET", pods, query={"limit": 1, "continue": first["metadata"]["continue"]}))]


def list_too_new(t: Target) -> List[Observation]:
    return [refusal(*t.call("GET", "/api/v1/namespaces", query={"resourceVersion": FAR_AHEAD}))]


def watch_bookmarks(t: Target) -> List[Observation]:
    ns = t.namespace("bookmarks")
    # From just before the current version: a bookmark goes out only past the version a watch
    # started from, so one from the current version of a quiet cluster gets none.
    rv = t.rv(f"/api/v1/namespaces/{ns}/pods") - 1
    events = t.watch(f"/api/v1/namespaces/{ns}/pods", resourceVersion=rv, allowWatchBookmarks="true",
                     timeoutSeconds=4)
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    shapes = {(e["object"]["kind"], e["object"]["apiVersion"], int(e["object"]["metadata"]["resourceVersion"]) > rv)
              for e in bookmarks}
    return [(bool(bookmarks), sorted(shapes), [e["type"] for e in events if e["type"] != "BOOKMARK"])]


def watch_events(t: Target) -> List[Observation]:
    ns = t.namespace("events")
    pods = f"/api/v1/namespaces/{ns}/pods"
    rv = t.rv(pods)
    t.call("POST", pods, pod_body("a"))
    t.call("DELETE", f"{pods}/a")
    events = t.watch(pods, resourceVersion=rv, timeoutSeconds=2)
    return [[(e["type"], e["object"]["kind"], e["object"]["apiVersion"], e["object"]["metadata"]["name"])
             for e in events]]


def watch_too_new(t: Target) -> List[Observation]:
    return [[e["type"] for e in t.watch("/api/v1/namespaces", resourceVersion=FAR_AHEAD,
                                        allowWatchBookmarks="true", timeoutSeconds=3)]]


def watch_list(t: Target) -> List[Observation]:
    ns = t.namespace("watchlist")
    pods = f"/api/v1/namespaces/{ns}/pods"
    t.call("POST", pods, pod_body("a"))
    refused = refusal(*t.call("GET", pods, query={"watch": "true", "sendInitialEvents": "true"}))
    events = t.watch(pods, sendInitialEvents="true", resourceVersionMatch="NotOlderThan",
                     allowWatchBookmarks="true", timeoutSeconds=2)
    shape = [(e["type"], (e["object"]["metadata"].get("annotations") or {}).get("k8s.io/initial-events-end"))
             for e in events]
    # What follows the initial events' end (a progress bookmark or none) depends on when the
    # server's own writes move its version: timing, not a rule either server promises.
    ends = [i for i, seen in enumerate(shape) if seen == ("BOOKMARK", "true")]
    return [refused, shape[:ends[0] + 1] if ends else shape]


def _event_refusal(t: Target, **changes: Any) -> List[Observation]:
    ns = t.namespace("event")
    body = event_body("e1", ns, **changes)
    return [refusal(*t.call("POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", body))]


def event_valid(t: Target) -> List[Observation]:
    ns = t.namespace("event")
    code, made = t.call("POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", event_body("e1", ns))
    return [(code, bool(made["metadata"].get("uid")), made["note"])]


def event_cluster_scoped_regarding(t: Target) -> List[Observation]:
    ns = t.namespace("event")
    regarding = {"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy", "name": "c"}
    outside = refusal(*t.call("POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events",
                              event_body("e1", ns, regarding=regarding)))
    name = f"e-{secrets.token_hex(3)}"
    code, _ = t.call("POST", "/apis/events.k8s.io/v1/namespaces/default/events",
                     event_body(name, "default", regarding=regarding))
    return [outside, (code,)]


def event_update(t: Target) -> List[Observation]:
    ns = t.namespace("event")
    path = f"/apis/events.k8s.io/v1/namespaces/{ns}/events"
    _, made = t.call("POST", path, event_body("e1", ns))
    series = {"count": 2, "lastObservedTime": made["eventTime"]}
    ok = t.call("PATCH", f"{path}/e1", {"series": series}, content_type=MERGE)
    note = t.call("PATCH", f"{path}/e1", {"note": "changed"}, content_type=MERGE)
    short = t.call("PATCH", f"{path}/e1", {"series": {"count": 1, "lastObservedTime": made["eventTime"]}},
                   content_type=MERGE)
    stale = t.call("PUT", f"{path}/e1", dict(made, series=series))
    created = t.call("PUT", f"{path}/e2", event_body("e2", ns))
    return [(ok[0], ok[1]["series"]["count"]), refusal(*note), refusal(*short), refusal(*stale), (created[0],)]


def lease_rules(t: Target) -> List[Observation]:
    ns = t.namespace("lease")
    path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    created = t.call("PUT", f"{path}/l", body)
    unversioned = t.call("PUT", f"{path}/l", body)
    current = created[1]
    renewed = t.call("PUT", f"{path}/l", dict(current, spec=dict(current["spec"], holderIdentity="b")))
    stale = t.call("PUT", f"{path}/l", current)
    zero = t.call("POST", path, dict(body, metadata={"name": "z"}, spec={"leaseDurationSeconds": 0}))
    return [(created[0],), refusal(*unversioned), (renewed[0], renewed[1]["spec"]["holderIdentity"]),
            refusal(*stale), refusal(*zero)]


def cnp_status(t: Target) -> List[Observation]:
    name = f"parity-{secrets.token_hex(3)}"
    policy = cluster_policy(name, priority=10, ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}])
    policy["metadata"].pop("uid", None)
    code, made = t.call("POST", CNP_PATH, policy)
    status_path = f"{CNP_PATH}/{name}/status"
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    good = {"type": "Accepted", "status": "True", "reason": "Accepted", "message": "ok", "lastTransitionTime": now,
            "observedGeneration": 1}
    bare = dict(made, metadata={"name": name})  # no resourceVersion
    unversioned = t.call("PUT", status_path, dict(bare, status={"conditions": [good]}))
    partial = {k: v for k, v in good.items() if k not in ("lastTransitionTime", "message")}
    missing = t.call("PATCH", status_path, {"status": {"conditions": [partial]}}, content_type=MERGE)
    unknown = t.call("PATCH", status_path, {"status": {"conditions": [dict(good, status="Maybe")]}},
                     content_type=MERGE)
    pattern = t.call("PATCH", status_path, {"status": {"conditions": [dict(good, reason="bad reason")]}},
                     content_type=MERGE)
    twice = t.call("PATCH", status_path, {"status": {"conditions": [good, good]}}, content_type=MERGE)
    written = t.call("PUT", status_path, dict(made, spec=dict(made["spec"], priority=20),
                                              status={"conditions": [good]}))
    after = written[1]
    respec = t.call("PUT", f"{CNP_PATH}/{name}", dict(after, spec=dict(after["spec"], priority=30), status=None))
    object_unversioned = t.call("PUT", f"{CNP_PATH}/{name}", dict(after, metadata={"name": name}))
    t.call("DELETE", f"{CNP_PATH}/{name}")
    return [(code, made["metadata"]["generation"]), refusal(*unversioned), refusal(*missing), refusal(*unknown),
            refusal(*pattern), refusal(*twice),
            (written[0], after["metadata"]["generation"], after["spec"]["priority"], len(after["status"]["conditions"])),
            (respec[0], respec[1]["metadata"]["generation"], respec[1]["spec"]["priority"],
             len(respec[1]["status"]["conditions"])), refusal(*object_unversioned)]


def _policy(ns: str, port: Dict[str, Any], peer: Dict[str, Any], egress: bool = False) -> Dict[str, Any]:
    rule = {"ports": [port], ("to" if egress else "from"): [peer]}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "np", "namespace": ns},
            "spec": {"podSelector": {}, ("egress" if egress else "ingress"): [rule]}}


def network_policy_admission(t: Target) -> List[Observation]:
    ns = t.namespace("np")
    path = f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"
    pods = {"podSelector": {}}
    lower = t.call("POST", path, _policy(ns, {"protocol": "tcp", "port": 80}, pods))
    cidr = t.call("POST", path, _policy(ns, {"port": 80}, {"ipBlock": {"cidr": "10.0.0.0/33"}}))
    both = t.call("POST", path, _policy(ns, {"port": 0}, {"ipBlock": {"cidr": "10.0.0.0/8"}, **pods}))
    code, made = t.call("POST", path, _policy(ns, {"port": 80}, pods, egress=True))
    return [refusal(*lower), refusal(*cidr), refusal(*both),
            (code, made["spec"]["egress"][0]["ports"][0]["protocol"], made["spec"]["policyTypes"],
             made["metadata"]["generation"])]


def pod_status(t: Target) -> List[Observation]:
    ns = t.namespace("pods")
    path = f"/api/v1/namespaces/{ns}/pods"
    given = pod_body("p", status={"podIP": "10.9.9.9", "phase": "Running"})
    given["metadata"]["uid"] = "11111111-2222-3333-4444-555555555555"
    code, made = t.call("POST", path, given)
    uid_kept = made["metadata"]["uid"] == given["metadata"]["uid"]
    status = t.call("PUT", f"{path}/p/status", dict(made, status=dict(made["status"], podIP="10.1.1.1",
                                                                       podIPs=[{"ip": "10.1.1.1"}])))
    relabel = dict(status[1], metadata=dict(status[1]["metadata"], labels={"app": "q"}),
                   status=dict(status[1]["status"], podIP="10.2.2.2"))
    put = t.call("PUT", f"{path}/p", relabel)
    return [(code, made["status"].get("podIP"), made["status"]["phase"], uid_kept, made["metadata"]["generation"]),
            (status[0], status[1]["status"]["podIP"]), (put[0], put[1]["status"]["podIP"], put[1]["metadata"]["labels"])]


def namespace_delete(t: Target) -> List[Observation]:
    ns = t.namespace("gone")
    t.call("POST", f"/api/v1/namespaces/{ns}/pods", pod_body("p"))
    code, deleted = t.call("DELETE", f"/api/v1/namespaces/{ns}")
    _, held = t.call("GET", f"/api/v1/namespaces/{ns}")
    refused = t.call("POST", f"/api/v1/namespaces/{ns}/pods", pod_body("q"))
    system = t.call("DELETE", "/api/v1/namespaces/default")
    _, listed = t.call("GET", "/api/v1/namespaces")
    names = {i["metadata"]["name"] for i in listed["items"]}
    return [(code, deleted["status"]["phase"], bool(deleted["metadata"].get("deletionTimestamp"))),
            (held["status"]["phase"],), refusal(*refused)[:2], refusal(*system)[:2],
            tuple(sorted({"default", "kube-system", "kube-public", "kube-node-lease"} & names))]


def refusals(t: Target) -> List[Observation]:
    ns = t.namespace("refusals")
    path = f"/api/v1/namespaces/{ns}/pods"
    missing = t.call("GET", f"{path}/nothing")
    t.call("POST", path, pod_body("p"))
    again = t.call("POST", path, pod_body("p"))
    _, held = t.call("GET", f"{path}/p")
    held["metadata"]["resourceVersion"] = "1"
    stale = t.call("PUT", f"{path}/p", held)
    details = missing[1].get("details", {})
    return [refusal(*missing) + ((details.get("kind"), details.get("name")),), refusal(*again), refusal(*stale),
            ("selfLink" in held["metadata"],)]


def _event_row(**changes: Any) -> Callable[[Target], List[Observation]]:
    def case(t: Target) -> List[Observation]:
        return _event_refusal(t, **changes)
    return case


def _invalid(*causes: Tuple[str, str]) -> Observation:
    return (422, "Invalid", tuple(sorted(causes)))


REQUIRED, INVALID, UNSUPPORTED, FORBIDDEN = ("FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported",
                                             "FieldValueForbidden")
NOW_CONFLICT = (409, "Conflict", ())
CEL_SKIPPED = ("<nil>", INVALID)  # the CRD's CEL rules not checked after a schema error

# case name -> (the requests, what the real server answers according to its sources)
CASES: Dict[str, Tuple[Callable[[Target], List[Observation]], List[Observation]]] = {
    "list pages are one snapshot": (list_paging, [(200, ["a", "b", "c"], True, False, False)]),
    "list: an expired continue token is 410": (list_expired_continue, [(410, "Expired", ())]),
    "list: a version not reached is 504": (list_too_new, [(504, "Timeout", (("", "ResourceVersionTooLarge"),))]),
    "watch: bookmarks, one before the timeout": (watch_bookmarks, [(True, [("Pod", "v1", True)], [])]),
    "watch: events carry kind and apiVersion": (watch_events, [[("ADDED", "Pod", "v1", "a"),
                                                                ("MODIFIED", "Pod", "v1", "a"),
                                                                ("DELETED", "Pod", "v1", "a")]]),
    "watch: a version not reached is silent": (watch_too_new, [[]]),
    "watch-list: NotOlderThan, ends with a bookmark": (watch_list, [
        _invalid(("resourceVersionMatch", FORBIDDEN)), [("ADDED", None), ("BOOKMARK", "true")]]),
    "event: valid": (event_valid, [(201, True, "a note")]),
    "event: reportingInstance required": (_event_row(reportingInstance=None), [_invalid(("reportingInstance", REQUIRED))]),
    "event: action at most 128": (_event_row(action="a" * 129), [_invalid(("action", INVALID))]),
    "event: reason required": (_event_row(reason=None), [_invalid(("reason", REQUIRED))]),
    "event: note at most 1 KiB": (_event_row(note="n" * 1025), [_invalid(("message", INVALID))]),
    "event: type Normal or Warning": (_event_row(type="Bad"), [_invalid(("type", INVALID))]),
    "event: eventTime required": (_event_row(eventTime=None), [_invalid(("eventTime", REQUIRED))]),
    "event: deprecated fields unset": (_event_row(deprecatedCount=3), [_invalid(("count", INVALID))]),
    "event: series count >= 2 with a time": (_event_row(series={"count": 1}), [
        _invalid(("series.count", INVALID), ("series.lastObservedTime", REQUIRED))]),
    "event: reportingController a qualified name": (_event_row(reportingController="not a name!"), [
        _invalid(("reportingController", INVALID))]),
    "event: about a cluster-scoped object, in default": (event_cluster_scoped_regarding, [
        _invalid(("involvedObject.namespace", INVALID)), (201,)]),
    "event: update changes series only": (event_update, [
        (200, 2), _invalid(("message", INVALID)), _invalid(("series.count", INVALID)), NOW_CONFLICT, (201,)]),
    "lease: create on PUT, versions, duration": (lease_rules, [
        (201,), _invalid(("metadata.resourceVersion", INVALID)), (200, "b"), NOW_CONFLICT,
        _invalid(("spec.leaseDurationSeconds", INVALID))]),
    "cnp: status subresource and generation": (cnp_status, [
        (201, 1), _invalid(("metadata.resourceVersion", INVALID)),
        _invalid(("status.conditions[0].lastTransitionTime", REQUIRED), ("status.conditions[0].message", REQUIRED),
                 CEL_SKIPPED),
        _invalid(("status.conditions[0].status", UNSUPPORTED), CEL_SKIPPED),
        _invalid(("status.conditions[0].reason", INVALID)), _invalid(("status.conditions[1]", "FieldValueDuplicate")),
        (200, 1, 10, 1), (200, 2, 30, 1),
        _invalid(("metadata.resourceVersion", INVALID))]),
    "networkpolicy: validated and defaulted": (network_policy_admission, [
        _invalid(("spec.ingress[0].ports[0].protocol", UNSUPPORTED)),
        _invalid(("spec.ingress[0].from[0].ipBlock.cidr", INVALID)),
        _invalid(("spec.ingress[0].from[0]", FORBIDDEN), ("spec.ingress[0].ports[0].port", INVALID)),
        (201, "TCP", ["Ingress", "Egress"], 1)]),
    "pod: status through its subresource": (pod_status, [
        (201, None, "Pending", False, 1), (200, "10.1.1.1"), (200, "10.1.1.1", {"app": "q"})]),
    "namespace: deleted is Terminating": (namespace_delete, [
        (200, "Terminating", True), ("Terminating",), (403, "Forbidden"), (403, "Forbidden"),
        ("default", "kube-node-lease", "kube-public", "kube-system")]),
    "refusals: Status bodies": (refusals, [
        (404, "NotFound", (), ("pods", "nothing")), (409, "AlreadyExists", ()), NOW_CONFLICT, (False,)]),
}
