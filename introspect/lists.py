"""The list pages of SPEC section 10: which rows each shows, in what order, and how they filter
(the machinery is in `listing`, the rows in `list_rows`). A kind's own page is its `PAGE` hook in
the registry of kinds (`kube_manager/registry.py`); the server shows the registry's kinds' pages,
in its order, then the others.
"""
from __future__ import annotations

from typing import Tuple

from introspect import contrail as c
from introspect.cluster_policies import cluster_network_policy_rows
from introspect.list_rows import (address_group_rows, aps_rows, describe_rule, firewall_policy_rows,
                                  firewall_rule_rows, kube_connection_rows, namespace_rows, network_policy_rows,
                                  pod_rows, tag_rows, vnc_connection_rows)
from kube_manager import registry
from kube_manager.registry import PAGE, Kinds
from introspect.listing import (CLUSTER_NETWORK_POLICIES_PATH, FIREWALL_POLICIES_PATH, NAME, NAME_CONTAINS,
                                NAMESPACE, STATE, TAGS_PATH, Column, Filter, ListPage, href, pod_detail_href,
                                policy_detail_href)

OBJECT_LEGEND = ((c.PRESENT, "in the config API"), (c.PENDING, "desired, not yet written"),
                 (c.STALE, "in the config API, no longer desired: garbage collection removes it"),
                 (c.MISSING, "named by a policy, known to neither side"),
                 (c.PARKED, "the config API refused its last write (see the NetworkPolicy's errors); "
                            "tried again when it changes or at the next resync"))
POLICY_LEGEND = (
    ("synced", "Contrail holds exactly the desired objects"), ("pending", "not yet written"),
    ("retrying", "a write failed; retried with backoff"),
    ("parked", "the config API refused a write for good (see errors); retried when it changes or at the next resync"),
    ("rejected", "invalid input; only the valid part (if any) is written"))
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
    "Kubernetes", POLICY_LEGEND,
    count=lambda s: len(s.db.network_policies))

CLUSTER_NETWORK_POLICIES: ListPage = ListPage(  # named by its own column links, before it exists
    CLUSTER_NETWORK_POLICIES_PATH, "ClusterNetworkPolicies", "cluster_network_policies",
    ("uid", "name", "tier", "priority", "subject", "spec", "actions", "firewall_policy", "rules", "state",
     "errors"),
    (Column("name", "name", link=lambda r: href(CLUSTER_NETWORK_POLICIES.path, name=r["name"])),
     Column("tier", "tier"), Column("priority", "priority", "code"),
     Column("subject_text", "subject", "code"), Column("action_list", "rules (action)", "list"),
     Column("firewall_policy_name", "firewall policy",
            link=lambda r: href(FIREWALL_POLICIES.path, name=r["firewall_policy_name"])
            if r["firewall_policy_name"] else None),
     Column("sequence", "APS sequence", "code"),
     Column("rules", "emitted rules", "list"),
     Column("state", "sync state", "state"), Column("errors", "errors and rejections", "errors"),
     Column("uid", "uid", "code")),
    (NAME, NAME_CONTAINS, Filter("tier", "tier", label="tier"), STATE),
    cluster_network_policy_rows,
    "Each ClusterNetworkPolicy (Admin and Baseline tiers), the firewall policy and rules it emits "
    "and whether Contrail holds them.", "Kubernetes", POLICY_LEGEND,
    count=lambda s: len(s.db.cluster_network_policies))

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
    TAGS_PATH, "Tags", "tags",
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
    FIREWALL_POLICIES_PATH, "Firewall policies", "firewall_policies",
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
    Column("name", "name"), Column("served", "served", "bool"),
    Column("connected", "connected", "bool"), Column("url", "URL", "code"),
    Column("initial_list_done", "initial list done", "bool"),
    Column("last_event_at", "last event or bookmark (config API: answer)", "time"), Column("reconnects", "reconnects", "count"),
    Column("last_error", "last error", "errors"), Column("last_error_at", "last error at", "time"),
    Column("resource_version", "resourceVersion", "code"))
_CONNECTION_FIELDS = ("name", "url", "connected", "last_event_at", "last_error", "last_error_at",
                      "reconnects", "resource_version", "initial_list_done", "served")
# The config API is no watch: no list to finish, no resourceVersion, no CRD to be installed.
_WATCH_ONLY = ("initial_list_done", "resource_version", "served")

KUBE_CONNECTIONS = ListPage(
    "/Snh_KubeApiConnectionStatus", "Kubernetes API connections", "kube_api_connections",
    _CONNECTION_FIELDS, _CONNECTION_COLUMNS, (NAME,), kube_connection_rows,
    "One watch per resource: list, then watch from its resourceVersion. A custom resource whose CRD "
    "the API server does not serve (ClusterNetworkPolicy) shows served = no: it counts as an empty "
    "list and is looked for again at each resync.", "Connections")

VNC_CONNECTIONS = ListPage(
    "/Snh_VncApiConnectionStatus", "Config API connection", "vnc_api_connections",
    tuple(f for f in _CONNECTION_FIELDS if f not in _WATCH_ONLY),
    tuple(col for col in _CONNECTION_COLUMNS if col.key not in _WATCH_ONLY), (NAME,), vnc_connection_rows,
    "The Contrail config API (contrail-api) kube-manager writes to.", "Connections")

registry.KINDS.register(registry.NAMESPACES.kind, PAGE, NAMESPACES)
registry.KINDS.register(registry.PODS.kind, PAGE, PODS)
registry.KINDS.register(registry.NETWORK_POLICIES.kind, PAGE, NETWORK_POLICIES)
registry.KINDS.register(registry.CLUSTER_NETWORK_POLICIES.kind, PAGE, CLUSTER_NETWORK_POLICIES)
OTHER_PAGES = (TAGS, ADDRESS_GROUPS, FIREWALL_POLICIES, FIREWALL_RULES, APPLICATION_POLICY_SETS, KUBE_CONNECTIONS,
               VNC_CONNECTIONS)


def list_pages(kinds: Kinds) -> Tuple[ListPage, ...]:
    """The list pages of a server over `kinds`: each kind's own, in the registry's order, then the others."""
    return tuple(page for _entry, page in kinds.hooked(PAGE)) + OTHER_PAGES


LIST_PAGES = list_pages(registry.KINDS)  # the product's
