"""Support for the introspect tests: a realistic in-memory DB, shaped as the daemon fills it
(SPEC 1-5), and a WSGI caller.

Cluster `k8s`; namespace `shop` with pods `web` and `db`, namespace `tools` with pod `debug`.
- `shop/db-allow-web`: pods `app=db` accept TCP 5432 from `app=web` pods of `shop` (synced);
- `shop/allow-monitoring`: ingress to every `shop` pod from 10.200.0.0/16 except 10.200.1.0/24
  on TCP 9100, its rule still pending in the config API;
- `tools/<script>alert(1)</script>`: a rejected policy whose name and error carry markup, to prove
  the pages escape what they show;
- ClusterNetworkPolicies: `deny-tenants` (Admin, priority 10: a Pass then a Deny, synced) and a
  rejected one whose rule name, action and error carry markup.
Plus one stale rule (in the config API, no longer desired), connection states, and errors.
"""
from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple
from wsgiref.util import setup_testing_defaults

from tests.support.builders import pod as pod_manifest, policy as policy_manifest
from kube_manager.records.db import (SYNCED, PENDING, REJECTED, ClusterPolicyRecord, ConnectionStatus, Database,
                                     NamespaceRecord, PodRecord, PodStatus, PolicyRecord, PolicyStatus)
from tests.support.paths import EXAMPLES
from kube_manager.explain.explainer import Explainer
from kube_manager.offline.manifests import load_manifests
from kube_manager.translator import translate

CLUSTER = "k8s"
PM = "default-policy-management"
NOW = 1_800_000_000.0
APP = f"application={CLUSTER}"
XSS = "<script>alert(1)</script>"


def policy_sequence(name: str) -> str:
    """The APS sequence of SPEC section 5: `1.` and the first 12 digits of int(sha1(name))."""
    return "1." + str(int(hashlib.sha1(name.encode()).hexdigest(), 16))[:12]


def annotations(kind: str, **extra: str) -> Dict[str, Any]:
    pairs = {"owner": CLUSTER, "cluster": CLUSTER, "kind": kind, **extra}
    return {"key_value_pair": [{"key": k, "value": v} for k, v in pairs.items()]}


def tag(name: str) -> Dict[str, Any]:
    tag_type, _, value = name.partition("=")
    return {"fq_name": [name], "name": name, "tag_type_name": tag_type, "tag_value": value,
            "annotations": annotations("tag")}


def service(protocol: str = "any", start: int = 0, end: int = 65535) -> Dict[str, Any]:
    return {"protocol": protocol, "src_ports": {"start_port": 0, "end_port": 65535},
            "dst_ports": {"start_port": start, "end_port": end}}


def rule(name: str, ep1: Dict[str, Any], ep2: Dict[str, Any], svc: Dict[str, Any],
         action: str = "pass") -> Dict[str, Any]:
    return {"fq_name": [PM, name], "parent_type": "policy-management", "name": name,
            "endpoint_1": ep1, "endpoint_2": ep2, "service": svc, "direction": ">",
            "action_list": {"simple_action": action}, "match_tags": {"tag_list": []},
            "annotations": annotations("firewall-rule")}


def policy(fp_name: str, rules: List[str], sequences: Optional[List[str]] = None,
           **marks: str) -> Dict[str, Any]:
    sequences = sequences or ["%05d.0" % i for i in range(len(rules))]
    return {"fq_name": [PM, fp_name], "parent_type": "policy-management", "name": fp_name,
            "firewall_rule_refs": [{"to": [PM, r], "attr": {"sequence": s}}
                                   for r, s in zip(rules, sequences)],
            "annotations": annotations("firewall-policy", **marks)}


def tags_ep(*names: str) -> Dict[str, Any]:
    return {"tags": sorted(names)}


ANY = {"any": True}
DB_POD = tags_ep(APP, "namespace=shop", "app=db")
WEB_POD = tags_ep(APP, "namespace=shop", "app=web")
SHOP = tags_ep(APP, "namespace=shop")
AG_NAME = "10.200.0.0/16-except-10.200.1.0/24"

R_WEB_TO_DB = "k8s-shop-ingress-db-allow-web-0-podSelector-0-0"
R_DB_DENY = "k8s-shop-ingress-db-allow-web-denyall"
R_MONITORING = "k8s-shop-ingress-allow-monitoring-0-ipBlock-0-cidr-10.200.0.0/16-0"
R_MON_DENY = "k8s-shop-ingress-allow-monitoring-denyall"
R_STALE = "k8s-shop-ingress-old-policy-0-allow-all-0"
FP_DB = "k8s-shop-db-allow-web"
FP_MON = "k8s-shop-allow-monitoring"

DB_SPEC = {"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": ["Ingress"],
           "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                        "ports": [{"protocol": "TCP", "port": 5432}]}]}
MON_SPEC = {"podSelector": {}, "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"ipBlock": {"cidr": "10.200.0.0/16", "except": ["10.200.1.0/24"]}}],
                         "ports": [{"protocol": "TCP", "port": 9100}]}]}


def _desired() -> Dict[str, Dict[tuple, Dict[str, Any]]]:
    tags = [APP, "namespace=shop", "namespace=tools", "app=db", "app=web"]
    rules = [
        rule(R_WEB_TO_DB, WEB_POD, DB_POD, service("tcp", 5432, 5432)),
        rule(R_DB_DENY, ANY, DB_POD, service(), "deny"),
        rule(R_MONITORING, {"address_group": f"{PM}:{AG_NAME}"}, SHOP, service("tcp", 9100, 9100)),
        rule(R_MON_DENY, ANY, SHOP, service(), "deny"),
        rule("k8s-allowall-ingress", ANY, tags_ep(APP), service()),
        rule("k8s-allowall-egress", tags_ep(APP), ANY, service()),
    ]
    denies = sorted([R_DB_DENY, R_MON_DENY], key=lambda n: (policy_sequence(n), n))
    policies = [
        policy(FP_DB, [R_WEB_TO_DB], namespace="shop", name="db-allow-web", k8s_uuid="uid-np-db",
               spec_sha256="0" * 64),
        policy(FP_MON, [R_MONITORING], namespace="shop", name="allow-monitoring",
               k8s_uuid="uid-np-mon", spec_sha256="1" * 64),
        policy("k8s-denyall", denies, [policy_sequence(n) for n in denies]),
        policy("k8s-allowall", ["k8s-allowall-ingress", "k8s-allowall-egress"]),
    ]
    aps = {"fq_name": [PM, CLUSTER], "parent_type": "policy-management", "name": CLUSTER,
           "tag_refs": [{"to": [APP], "attr": None}],
           "firewall_policy_refs": [{"to": [PM, FP_DB], "attr": {"sequence": policy_sequence(FP_DB)}},
                                    {"to": [PM, FP_MON], "attr": {"sequence": policy_sequence(FP_MON)}},
                                    {"to": [PM, "k8s-denyall"], "attr": {"sequence": "2.0"}},
                                    {"to": [PM, "k8s-allowall"], "attr": {"sequence": "3.0"}}],
           "annotations": annotations("application-policy-set")}
    group = {"fq_name": [PM, AG_NAME], "parent_type": "policy-management", "name": AG_NAME,
             "address_group_prefix": {"subnet": [
                 {"ip_prefix": "10.200.0.0", "ip_prefix_len": 24},
                 {"ip_prefix": "10.200.2.0", "ip_prefix_len": 23},
                 {"ip_prefix": "10.200.4.0", "ip_prefix_len": 22}]},
             "annotations": annotations("address-group")}
    by_fq = lambda objs: {tuple(o["fq_name"]): o for o in objs}  # noqa: E731
    return {"tag": by_fq([tag(t) for t in tags]), "firewall-rule": by_fq(rules),
            "firewall-policy": by_fq(policies), "application-policy-set": by_fq([aps]),
            "address-group": by_fq([group])}


def _actual(desired: Dict[str, Dict[tuple, Dict[str, Any]]]) -> Dict[str, Dict[tuple, Dict[str, Any]]]:
    """What the config API holds: everything desired except the monitoring rule (pending), plus a
    stale rule, each with a uuid (and tags with a tag_id)."""
    actual: Dict[str, Dict[tuple, Dict[str, Any]]] = {}
    for number, (kind, objects) in enumerate(sorted(desired.items())):
        actual[kind] = {}
        for index, (fq, body) in enumerate(sorted(objects.items())):
            if fq == (PM, R_MONITORING):
                continue
            read = copy.deepcopy(body)
            read["uuid"] = f"00000000-0000-4000-8000-{number:04d}{index:08d}"
            if kind == "tag":
                read["tag_id"] = f"0x{index + 1:08x}"
            actual[kind][fq] = read
    stale = rule(R_STALE, ANY, SHOP, service())
    stale["uuid"] = "00000000-0000-4000-8000-999999999999"
    actual["firewall-rule"][(PM, R_STALE)] = stale
    return actual


def _pod(namespace: str, name: str, ip: str, labels: Dict[str, str], tags: List[str],
         state: str = SYNCED, error: str = "") -> PodRecord:
    manifest = pod_manifest(namespace, name, ip, labels, uid=f"uid-{namespace}-{name}")
    return PodRecord(f"uid-{namespace}-{name}", namespace, name, ip, dict(labels), manifest,
                     status=PodStatus(sorted(tags), state, error))


def _np(namespace: str, name: str, uid: str, spec: Dict[str, Any], fp: str, rules: List[str],
        state: str, errors: List[str]) -> PolicyRecord:
    manifest = policy_manifest(namespace, name, spec, uid=uid)
    return PolicyRecord(uid, namespace, name, spec, manifest,
                        status=PolicyStatus([PM, fp] if fp else [], rules, state, errors))


FP_CNP = "k8s--cnp-deny-tenants"
R_CNP_DENY = "k8s--admin-deny-tenants-ingress-1-0"
CNP_SPEC = {"tier": "Admin", "priority": 10, "subject": {"namespaces": {"matchLabels": {"team": "payments"}}},
            "ingress": [{"name": "from-monitoring", "action": "Pass",
                         "from": [{"namespaces": {"matchLabels": {"team": "ops"}}}]},
                        {"name": "no-tenants", "action": "Deny",
                         "from": [{"namespaces": {"matchLabels": {"team": "tenants"}}}]}]}
BAD_CNP_SPEC = {"tier": "Admin", "priority": 20, "subject": "everyone",
                "egress": [{"name": XSS, "action": XSS, "to": [{"domainNames": ["example.com"]}]}, "not a rule"]}


def _cnp(name: str, uid: str, spec: Dict[str, Any], fp: str, rules: List[str], state: str,
         errors: List[str]) -> ClusterPolicyRecord:
    manifest = {"kind": "ClusterNetworkPolicy", "metadata": {"name": name, "uid": uid}, "spec": spec}
    return ClusterPolicyRecord(uid, "", name, spec, manifest,
                               status=PolicyStatus([PM, fp] if fp else [], rules, state, errors),
                               tier=spec["tier"], priority=spec["priority"])


def build_db(now: float = NOW) -> Database:
    db = Database(started_at=now - 3600, loop_heartbeat_at=now - 1)
    for name in ("shop", "tools"):
        db.namespaces[name] = NamespaceRecord(f"uid-ns-{name}", name,
                                              {"kubernetes.io/metadata.name": name})
    db.namespaces["shop"].labels["team"] = "payments"
    shop_tags = [APP, "namespace=shop"]
    db.pods[("shop", "web")] = _pod("shop", "web", "10.0.1.10", {"app": "web"}, shop_tags + ["app=web"])
    db.pods[("shop", "db")] = _pod("shop", "db", "10.0.1.20", {"app": "db"}, shop_tags + ["app=db"])
    db.pods[("tools", "debug")] = _pod("tools", "debug", "10.0.2.5", {"app": "debug"},
                                       [APP, "namespace=tools"], "no-vm",
                                       "virtual-machine uid-tools-debug not found")
    db.network_policies[("shop", "db-allow-web")] = _np(
        "shop", "db-allow-web", "uid-np-db", DB_SPEC, FP_DB, [R_WEB_TO_DB, R_DB_DENY], SYNCED, [])
    db.network_policies[("shop", "allow-monitoring")] = _np(
        "shop", "allow-monitoring", "uid-np-mon", MON_SPEC, FP_MON, [R_MONITORING, R_MON_DENY],
        PENDING, [])
    bad_spec = {"podSelector": {"matchExpressions": [{"key": "app", "operator": "Sometimes"}]}}
    db.network_policies[("tools", XSS)] = _np("tools", XSS, "uid-np-bad", bad_spec, "", [], REJECTED,
                                              [f"write failed: {XSS}"])
    db.cluster_network_policies["deny-tenants"] = _cnp(
        "deny-tenants", "uid-cnp-tenants", CNP_SPEC, FP_CNP, [R_CNP_DENY], SYNCED, [])
    db.cluster_network_policies["bad"] = _cnp("bad", "uid-cnp-bad", BAD_CNP_SPEC, "", [], REJECTED,
                                              [f"egress[0]: unknown action {XSS}"])
    db.errors = [{"kind": "NetworkPolicy", "namespace": "tools", "name": XSS,
                  "reason": f"podSelector: unknown operator 'Sometimes' {XSS}"}]
    db.desired = _desired()
    db.actual = _actual(db.desired)
    for resource in ("namespaces", "pods", "networkpolicies"):
        db.kube_connections[resource] = ConnectionStatus(
            resource, url=f"https://10.96.0.1:443/api/v1/{resource}", connected=True,
            last_event_at=now - 5, last_progress_at=now - 5, resource_version="4711", initial_list_done=True)
    db.kube_connections["pods"].reconnects = 2
    db.kube_connections["pods"].last_error = "410 Gone: too old resource version"
    db.kube_connections["pods"].last_error_at = now - 600
    db.vnc_connection = ConnectionStatus("config-api", url="http://10.0.0.5:8082", connected=True,
                                         last_event_at=now - 2)
    return db


@dataclass
class Reply:
    status: int
    headers: Dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.body)


def call(app: Callable[..., Any], url: str, method: str = "GET") -> Reply:
    """One request through the WSGI app, as the server would make it."""
    path, _, query = url.partition("?")
    environ: Dict[str, Any] = {}
    setup_testing_defaults(environ)
    environ.update(PATH_INFO=path, QUERY_STRING=query, REQUEST_METHOD=method)
    started: Dict[str, Any] = {}

    def start_response(status: str, headers: List[Tuple[str, str]]) -> None:
        started.update(status=int(status.split()[0]), headers=dict(headers))

    body = b"".join(app(environ, start_response))
    return Reply(started["status"], started["headers"], body)


DEMO = EXAMPLES / "demo"


def demo_db() -> Database:
    """A DB the real cache and translator filled from examples/demo, as the daemon would (no
    config API behind it: nothing actual). Shows what only a translator knows, such as what a
    selector tag stands for."""
    from kube_manager.service.dispatcher import EventDispatcher
    from kube_manager.handlers import KINDS
    from kube_manager.offline.manifests import load_manifests
    from kube_manager.translator import ClusterTranslator

    manifests = load_manifests([str(DEMO)])
    db = Database()
    cache = EventDispatcher(db, ClusterTranslator(CLUSTER, CLUSTER))
    for resource, objects in (("namespaces", manifests.objects["Namespace"]), ("pods", manifests.objects["Pod"]),
                              ("networkpolicies", manifests.objects["NetworkPolicy"])):
        for obj in objects:
            cache.on_event(resource, "ADDED", obj)
    for resource in KINDS.names():
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})
    return db


def offline_explainer(paths: Iterable[str]) -> Explainer:
    """The real explainer over manifests on disk, as `explain -f` builds it: for /explain pages
    over a cluster the support DB does not hold."""
    manifests = load_manifests(paths)
    translation = translate(manifests.objects)
    return Explainer(translation.to_dict(), manifests, "k8s", translation.selectors)
