"""The list pages of SPEC section 10: which rows each shows, in what order, and how they filter.

Each `ListPage` is a table: a row builder reading one `Snapshot` of the DB, the JSON fields of a row
(exactly SPEC section 10's shapes where it gives them), the HTML columns (some rows carry extra
display-only fields), and the query parameters that filter it. One template renders them all.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlencode

from kube_manager.db import ConnectionStatus, Database
from introspect import contrail as c
from introspect.contrail import paced
from introspect.decoded import (describe_endpoint, known_tag_ids, selector_of, selector_text, selectors_of,
                                with_phrase)
from introspect.redact import Redactor

Row = Dict[str, Any]
Link = Tuple[str, str]  # (text, href)

NETWORK_POLICY_KIND = "NetworkPolicy"


def href(path: str, **params: Any) -> str:
    """A link to `path` with the non-empty `params` as its query string."""
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return f"{path}?{query}" if query else path


@dataclass
class Snapshot:
    """What one request reads: the DB, its Contrail indexes, and the redactor for free text."""

    db: Database
    redactor: Redactor

    @cached_property
    def contrail(self) -> c.ContrailView:
        return c.ContrailView(self.db)

    @cached_property
    def tag_ids(self) -> Dict[str, str]:
        return known_tag_ids(self.contrail)

    @cached_property
    def rule_namespaces(self) -> Dict[str, str]:
        """Rule name -> namespace of the NetworkPolicy that owns it (deny rules included)."""
        found = {rule: record.namespace
                 for record in list(self.db.network_policies.values()) for rule in record.rules}
        for policy in paced(self.contrail.objects(c.FIREWALL_POLICY)):
            namespace = policy.annotation("namespace")
            if not namespace:
                continue  # the cluster's own policies (deny-all, allow-all)
            for rule in [name for name, _seq in policy.refs("firewall_rule_refs")] + c.deny_rule_names(policy):
                found.setdefault(rule, namespace)
        return found


@dataclass(frozen=True)
class Filter:
    """A query parameter selecting rows: `eq` exact value, `substr` case-insensitive substring of a
    text, `member` an item of a list."""

    param: str
    key: str
    mode: str = "eq"
    label: str = ""

    def matches(self, row: Row, wanted: str) -> bool:
        value = row.get(self.key)
        if self.mode == "member":
            return wanted in (value or ())
        if self.mode == "substr":
            return wanted.lower() in str(value or "").lower()
        return str(value if value is not None else "") == wanted


NAMESPACE = Filter("namespace", "namespace", label="namespace")
NAME = Filter("name", "name", label="name")
NAME_CONTAINS = Filter("q", "name", "substr", "name contains")
STATE = Filter("state", "state", label="state")


@dataclass(frozen=True)
class Column:
    """One HTML column. Kinds: text, code, state, bool, time, count, list (strings), links
    ((text, href) pairs), errors. `link(row)` makes the cell a link."""

    key: str
    title: str
    kind: str = "text"
    link: Optional[Callable[[Row], Optional[str]]] = None


@dataclass(frozen=True)
class ListPage:
    path: str
    title: str
    json_key: str
    json_fields: Tuple[str, ...]
    columns: Tuple[Column, ...]
    filters: Tuple[Filter, ...]
    build: Callable[[Snapshot], List[Row]]
    summary: str = ""
    group: str = ""
    state_legend: Tuple[Tuple[str, str], ...] = field(default_factory=tuple)
    # How many rows without building them (the index shows every count); None: build and count.
    count: Optional[Callable[[Snapshot], int]] = None
    # Adds display-only fields to a row, for the rows an HTML page shows (None: rows are complete).
    describe: Optional[Callable[[Row], Row]] = None

    def displayed(self, rows: List[Row]) -> List[Row]:
        return [self.describe(row) for row in rows] if self.describe else rows

    def size(self, snapshot: Snapshot) -> int:
        return self.count(snapshot) if self.count else len(self.build(snapshot))

    def select(self, rows: List[Row], query: Mapping[str, str]) -> List[Row]:
        for flt in self.filters:
            wanted = query.get(flt.param, "")
            if wanted:
                rows = [row for row in rows if flt.matches(row, wanted)]
        return rows

    def to_json(self, row: Row) -> Row:
        return {key: row[key] for key in self.json_fields}


# ---- Kubernetes lists ------------------------------------------------------------------------

def policy_detail_href(namespace: str, name: str) -> str:
    return href("/Snh_NetworkPolicyDetail", namespace=namespace, name=name)


def policy_errors(snapshot: Snapshot) -> Dict[Tuple[str, str], List[str]]:
    """(namespace, name) -> reasons from the translation errors of each NetworkPolicy."""
    found: Dict[Tuple[str, str], List[str]] = {}
    for error in snapshot.db.errors:
        if error.get("kind") == NETWORK_POLICY_KIND:
            found.setdefault((error.get("namespace", ""), error.get("name", "")), []).append(
                str(error.get("reason", "")))
    return found


def network_policy_rows(snapshot: Snapshot) -> List[Row]:
    translation_errors = policy_errors(snapshot)
    rows = []
    for key, record in paced(sorted(snapshot.db.network_policies.items())):
        # The record's own errors (sync failures) and the translator's, each reason once.
        errors = list(dict.fromkeys(list(record.errors) + translation_errors.get(key, [])
                                    + [snapshot.redactor.text(e) for e in record.write_errors]))
        fp_name = record.firewall_policy[-1] if record.firewall_policy else ""
        rows.append({
            "uid": record.uid, "namespace": record.namespace, "name": record.name,
            "spec": record.spec, "firewall_policy": list(record.firewall_policy),
            "rules": list(record.rules), "state": record.state, "errors": errors,
            "firewall_policy_name": fp_name, "rule_count": len(record.rules),
            "sequence": snapshot.contrail.policy_sequence(fp_name),
        })
    return rows


def pod_detail_href(namespace: str, name: str) -> str:
    return href("/Snh_PodDetail", namespace=namespace, name=name)


def pod_rows(snapshot: Snapshot) -> List[Row]:
    return [{
        "uid": pod.uid, "namespace": pod.namespace, "name": pod.name, "ip": pod.ip,
        "tags": list(pod.tags), "vmi_state": pod.vmi_state,
        "vmi_error": snapshot.redactor.text(pod.vmi_error),
        "labels": [f"{k}={v}" for k, v in sorted(pod.labels.items())],
        "tag_links": [(with_phrase(selectors_of(snapshot.db, [tag]), tag), href(TAGS.path, name=tag))
                      for tag in pod.tags],
    } for _key, pod in paced(sorted(snapshot.db.pods.items()))]


def namespace_rows(snapshot: Snapshot) -> List[Row]:
    pods: Dict[str, int] = {}
    policies: Dict[str, int] = {}
    for namespace, _name in snapshot.db.pods:
        pods[namespace] = pods.get(namespace, 0) + 1
    for namespace, _name in snapshot.db.network_policies:
        policies[namespace] = policies.get(namespace, 0) + 1
    return [{
        "uid": ns.uid, "name": ns.name, "labels": dict(sorted(ns.labels.items())),
        "pods": pods.get(ns.name, 0), "network_policies": policies.get(ns.name, 0),
        "label_list": [f"{k}={v}" for k, v in sorted(ns.labels.items())],
    } for _name, ns in sorted(snapshot.db.namespaces.items())]


# ---- Contrail lists --------------------------------------------------------------------------

def _object_fields(obj: c.ContrailObject) -> Row:
    return {"name": obj.name, "fq_name": list(obj.fq_name), "uuid": obj.uuid, "state": obj.state}


def tag_rows(snapshot: Snapshot) -> List[Row]:
    view = snapshot.contrail
    rows = []
    for tag in paced(view.objects(c.TAG)):
        body = tag.body
        tag_type, _, tag_value = tag.name.partition("=")
        pods = view.pods_by_tag.get(tag.name, [])
        rows.append({**_object_fields(tag),
                     "type": body.get("tag_type_name", tag_type),
                     "value": body.get("tag_value", tag_value),
                     "tag_id": (tag.actual or {}).get("tag_id") or snapshot.tag_ids.get(tag.name, ""),
                     "selector": selector_of(snapshot.db, tag.name),
                     "selector_text": selector_text(snapshot.db, tag.name),
                     "pods": pods, "rules": view.rules_by_tag.get(tag.name, []),
                     "pod_count": len(pods), "rule_count": len(view.rules_by_tag.get(tag.name, []))})
    return rows


def address_group_rows(snapshot: Snapshot) -> List[Row]:
    view = snapshot.contrail
    return [{**_object_fields(group), "prefixes": c.prefixes(group.body),
             "rules": view.rules_by_address_group.get(group.name, []),
             "rule_count": len(view.rules_by_address_group.get(group.name, []))}
            for group in paced(view.objects(c.ADDRESS_GROUP))]


def firewall_policy_rows(snapshot: Snapshot) -> List[Row]:
    view = snapshot.contrail
    rows = []
    for policy in paced(view.ordered_policies):
        rules = [name for name, _seq in policy.refs("firewall_rule_refs")]
        namespace, np_name = policy.annotation("namespace"), policy.annotation("name")
        rows.append({**_object_fields(policy), "namespace": namespace or None,
                     "network_policy": f"{namespace}/{np_name}" if np_name else None,
                     "sequence": view.policy_sequence(policy.name), "rules": rules,
                     "rule_count": len(rules)})
    return rows


def firewall_rule_rows(snapshot: Snapshot) -> List[Row]:
    return [rule_row(snapshot, rule, membership)
            for rule, membership in paced(snapshot.contrail.ordered_rules())]


def rule_row(snapshot: Snapshot, rule: c.ContrailObject, membership: Optional[c.Membership]) -> Row:
    """A rule's JSON fields and what the filters need; `describe_rule` adds the display text."""
    body = rule.body
    ep1, ep2 = body.get("endpoint_1"), body.get("endpoint_2")
    groups = [g for g in (c.endpoint_address_group(ep1), c.endpoint_address_group(ep2)) if g]
    return {
        **_object_fields(rule),
        "namespace": snapshot.rule_namespaces.get(rule.name) or None,
        "policy": membership.policy if membership else None,
        "policy_sequence": membership.policy_sequence if membership else None,
        "sequence": membership.sequence if membership else None,
        "endpoint_1": ep1, "direction": body.get("direction", ""), "endpoint_2": ep2,
        "service": body.get("service"), "action": c.describe_action(body),
        "tags": sorted(set(c.endpoint_tags(ep1)) | set(c.endpoint_tags(ep2))),
        "address_groups": groups,
        "selectors": selectors_of(snapshot.db, c.endpoint_tags(ep1) + c.endpoint_tags(ep2)),
    }


def describe_rule(row: Row) -> Row:
    """The wiki-notation columns of a rule row, computed only for the rows a page shows."""
    order = [s for s in (row["policy_sequence"], row["sequence"]) if s]
    return {**row, "source": describe_endpoint(row["selectors"], row["endpoint_1"]),
            "destination": describe_endpoint(row["selectors"], row["endpoint_2"]),
            "service_text": c.describe_service(row["service"]), "order": " / ".join(order)}


def aps_rows(snapshot: Snapshot) -> List[Row]:
    rows = []
    for aps in snapshot.contrail.objects(c.APS):
        policies = aps.refs("firewall_policy_refs")
        rows.append({**_object_fields(aps),
                     "tags": [name for name, _seq in aps.refs("tag_refs")],
                     "firewall_policies": [{"name": n, "sequence": s} for n, s in policies],
                     "policy_links": [(f"{s}  {n}", href(FIREWALL_POLICIES.path, name=n))
                                      for n, s in policies]})
    return rows


def connection_row(snapshot: Snapshot, status: ConnectionStatus) -> Row:
    text = snapshot.redactor.text
    return {"name": status.name, "url": text(status.url), "connected": status.connected,
            "last_event_at": status.last_event_at, "last_error": text(status.last_error),
            "last_error_at": status.last_error_at, "reconnects": status.reconnects,
            "resource_version": status.resource_version,
            "initial_list_done": status.initial_list_done}


def kube_connection_rows(snapshot: Snapshot) -> List[Row]:
    return [connection_row(snapshot, status)
            for _name, status in sorted(snapshot.db.kube_connections.items())]


def vnc_connection_rows(snapshot: Snapshot) -> List[Row]:
    return [connection_row(snapshot, snapshot.db.vnc_connection)]


# ---- The pages -------------------------------------------------------------------------------

OBJECT_LEGEND = ((c.PRESENT, "in the config API"), (c.PENDING, "desired, not yet written"),
                 (c.STALE, "in the config API, no longer desired: garbage collection removes it"),
                 (c.MISSING, "named by a policy, known to neither side"),
                 (c.PARKED, "the config API refused its last write (see the NetworkPolicy's errors); "
                            "tried again when it changes or at the next resync"))
UUID = Column("uuid", "uuid", "code")
OBJECT_STATE = Column("state", "state", "state")

NETWORK_POLICIES: ListPage = ListPage(  # named by its own column links, before it exists
    "/Snh_NetworkPolicyDatabaseList", "NetworkPolicies", "network_policies",
    ("uid", "namespace", "name", "spec", "firewall_policy", "rules", "state", "errors"),
    (Column("namespace", "namespace", link=lambda r: href(NETWORK_POLICIES.path, namespace=r["namespace"])),
     Column("name", "name", link=lambda r: policy_detail_href(r["namespace"], r["name"])),
     Column("uid", "uid", "code"),
     Column("firewall_policy_name", "firewall policy",
            link=lambda r: href(FIREWALL_POLICIES.path, name=r["firewall_policy_name"])
            if r["firewall_policy_name"] else None),
     Column("sequence", "APS sequence", "code"),
     Column("rule_count", "rules", "count", link=lambda r: policy_detail_href(r["namespace"], r["name"])),
     Column("state", "sync state", "state"),
     Column("errors", "errors", "errors")),
    (NAMESPACE, NAME, NAME_CONTAINS, Filter("network_policy_uuid", "uid", label="uid"), STATE),
    network_policy_rows, "Each NetworkPolicy, its firewall policy and whether Contrail holds it.",
    "Kubernetes",
    (("synced", "Contrail holds exactly the desired objects"), ("pending", "not yet written"),
     ("retrying", "a write failed; retried with backoff"),
     ("parked", "the config API refused a write for good (see errors); retried when it changes or at the next resync"),
     ("rejected", "invalid input; only the valid part (if any) is written")),
    count=lambda s: len(s.db.network_policies))

PODS: ListPage = ListPage(  # named by its own column links, before it exists
    "/Snh_PodDatabaseList", "Pods", "pods", ("uid", "namespace", "name", "ip", "tags", "vmi_state"),
    (Column("namespace", "namespace", link=lambda r: href(PODS.path, namespace=r["namespace"])),
     Column("name", "name", link=lambda r: pod_detail_href(r["namespace"], r["name"])),
     Column("ip", "IP", "code"), Column("labels", "labels", "list"),
     Column("tag_links", "tags on its VMIs", "links"), Column("vmi_state", "VMI state", "state"),
     Column("vmi_error", "VMI error", "errors"), Column("uid", "uid", "code")),
    (NAMESPACE, NAME, NAME_CONTAINS, Filter("tag", "tags", "member", "carries tag"),
     Filter("ip", "ip", label="IP"), Filter("vmi_state", "vmi_state", label="VMI state")),
    pod_rows, "Each pod, the tags its virtual-machine-interfaces must carry, and whether they do.",
    "Kubernetes",
    (("synced", "its VMIs carry exactly these tags"), ("pending", "not tagged yet"),
     ("retrying", "tagging failed; retried with backoff"),
     ("parked", "the config API refused the tagging for good (see the VMI error); retried when the pod changes or at the next resync"),
     ("no-vm", "its virtual machine or VMIs do not exist yet (CNI not done)"),
     ("host-network", "on its node's network (spec.hostNetwork): no VMI of its own, never tagged")),
    count=lambda s: len(s.db.pods))

NAMESPACES = ListPage(
    "/Snh_NamespaceDatabaseList", "Namespaces", "namespaces",
    ("uid", "name", "labels", "pods", "network_policies"),
    (Column("name", "name"), Column("label_list", "labels", "list"),
     Column("pods", "pods", "count", link=lambda r: href(PODS.path, namespace=r["name"])),
     Column("network_policies", "NetworkPolicies", "count",
            link=lambda r: href(NETWORK_POLICIES.path, namespace=r["name"])),
     Column("uid", "uid", "code")),
    (Filter("namespace", "name", label="namespace"), NAME_CONTAINS),
    namespace_rows, "Each namespace with its labels (namespace label tags come from these).",
    "Kubernetes",
    count=lambda s: len(s.db.namespaces))

TAGS = ListPage(
    "/Snh_TagDatabaseList", "Tags", "tags",
    ("name", "fq_name", "type", "value", "tag_id", "uuid", "pods", "rules", "state", "selector"),
    (Column("name", "tag", "code"), Column("type", "type"), Column("value", "value"),
     Column("selector_text", "stands for"),
     Column("pod_count", "pods", "count", link=lambda r: href(PODS.path, tag=r["name"])),
     Column("rule_count", "rules", "count", link=lambda r: href(FIREWALL_RULES.path, tag=r["name"])),
     Column("tag_id", "tag id", "code"), OBJECT_STATE, UUID),
    (NAME, NAME_CONTAINS, Filter("type", "type", label="type"), STATE),
    tag_rows, "Tags kube-manager uses, the pods that carry them and the rules that name them.",
    "Contrail", OBJECT_LEGEND,
    count=lambda s: s.contrail.count(c.TAG))

ADDRESS_GROUPS = ListPage(
    "/Snh_AddressGroupDatabaseList", "Address groups", "address_groups",
    ("name", "fq_name", "prefixes", "uuid", "rules", "state"),
    (Column("name", "name", "code"), Column("prefixes", "prefixes", "list"),
     Column("rule_count", "rules", "count",
            link=lambda r: href(FIREWALL_RULES.path, address_group=r["name"])),
     OBJECT_STATE, UUID),
    (NAME, NAME_CONTAINS, STATE),
    address_group_rows, "ipBlocks as address groups: the CIDR minus its excepts.", "Contrail",
    OBJECT_LEGEND,
    count=lambda s: s.contrail.count(c.ADDRESS_GROUP))

FIREWALL_POLICIES: ListPage = ListPage(  # named by its own column links, before it exists
    "/Snh_FirewallPolicyDatabaseList", "Firewall policies", "firewall_policies",
    ("name", "fq_name", "namespace", "network_policy", "sequence", "rules", "uuid", "state"),
    (Column("sequence", "APS sequence", "code"), Column("name", "name", "code"),
     Column("network_policy", "NetworkPolicy",
            link=lambda r: policy_detail_href(*r["network_policy"].split("/", 1))
            if r["network_policy"] else None),
     Column("rule_count", "rules", "count", link=lambda r: href(FIREWALL_RULES.path, policy=r["name"])),
     OBJECT_STATE, UUID),
    (NAMESPACE, NAME, NAME_CONTAINS, STATE),
    firewall_policy_rows, "Firewall policies in the order the APS evaluates them.", "Contrail",
    OBJECT_LEGEND,
    count=lambda s: s.contrail.count(c.FIREWALL_POLICY))

FIREWALL_RULES: ListPage = ListPage(  # named by its own column links, before it exists
    "/Snh_FirewallRuleDatabaseList", "Firewall rules", "firewall_rules",
    ("name", "fq_name", "namespace", "policy", "sequence", "endpoint_1", "direction", "endpoint_2",
     "service", "action", "uuid", "state", "selectors"),
    (Column("order", "order", "code"),
     Column("policy", "policy", link=lambda r: href(FIREWALL_POLICIES.path, name=r["policy"])),
     Column("name", "name", "code", link=lambda r: href(FIREWALL_RULES.path, name=r["name"])),
     Column("source", "endpoint 1 (source)", "code"), Column("direction", "dir", "code"),
     Column("destination", "endpoint 2 (destination)", "code"),
     Column("service_text", "service", "code"), Column("action", "action", "state"),
     OBJECT_STATE),
    (NAMESPACE, NAME, NAME_CONTAINS, Filter("policy", "policy", label="policy"),
     Filter("tag", "tags", "member", "uses tag"),
     Filter("address_group", "address_groups", "member", "uses address group"), STATE),
    firewall_rule_rows,
    "Every rule in evaluation order: by policy sequence, then rule sequence. The first rule "
    "matching a flow decides it.", "Contrail", OBJECT_LEGEND,
    count=lambda s: s.contrail.count(c.FIREWALL_RULE), describe=describe_rule)

APPLICATION_POLICY_SETS = ListPage(
    "/Snh_ApplicationPolicySetDatabaseList", "Application policy sets", "application_policy_sets",
    ("name", "fq_name", "tags", "firewall_policies", "uuid", "state"),
    (Column("name", "name", "code"), Column("tags", "tags", "list"),
     Column("policy_links", "firewall policies (sequence, name)", "links"), OBJECT_STATE, UUID),
    (NAME, STATE),
    aps_rows, "The cluster's APS and the firewall policies it applies, in sequence.", "Contrail",
    OBJECT_LEGEND,
    count=lambda s: s.contrail.count(c.APS))

_CONNECTION_COLUMNS = (
    Column("name", "name"), Column("connected", "connected", "bool"), Column("url", "URL", "code"),
    Column("initial_list_done", "initial list done", "bool"),
    Column("last_event_at", "last event or bookmark (config API: answer)", "time"), Column("reconnects", "reconnects", "count"),
    Column("last_error", "last error", "errors"), Column("last_error_at", "last error at", "time"),
    Column("resource_version", "resourceVersion", "code"))
_CONNECTION_FIELDS = ("name", "url", "connected", "last_event_at", "last_error", "last_error_at",
                      "reconnects", "resource_version", "initial_list_done")
# The config API is no watch: no list to finish, no resourceVersion.
_WATCH_ONLY = ("initial_list_done", "resource_version")

KUBE_CONNECTIONS = ListPage(
    "/Snh_KubeApiConnectionStatus", "Kubernetes API connections", "kube_api_connections",
    _CONNECTION_FIELDS, _CONNECTION_COLUMNS, (NAME,), kube_connection_rows,
    "One watch per resource: list, then watch from its resourceVersion.", "Connections")

VNC_CONNECTIONS = ListPage(
    "/Snh_VncApiConnectionStatus", "Config API connection", "vnc_api_connections",
    tuple(f for f in _CONNECTION_FIELDS if f not in _WATCH_ONLY),
    tuple(col for col in _CONNECTION_COLUMNS if col.key not in _WATCH_ONLY), (NAME,), vnc_connection_rows,
    "The Contrail config API (contrail-api) kube-manager writes to.", "Connections")

LIST_PAGES: Tuple[ListPage, ...] = (
    NETWORK_POLICIES, PODS, NAMESPACES, TAGS, ADDRESS_GROUPS, FIREWALL_POLICIES, FIREWALL_RULES,
    APPLICATION_POLICY_SETS, KUBE_CONNECTIONS, VNC_CONNECTIONS)
