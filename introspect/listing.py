"""The list pages' machinery (SPEC section 10): a `ListPage` is a table over one `Snapshot` of the DB.

Each page has a row builder (`list_rows`), the JSON fields of a row (exactly SPEC section 10's shapes
where it gives them), the HTML columns (some rows carry extra display-only fields), and the query
parameters that filter it (`Filter`). One template renders them all; the pages are in `lists`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlencode

from kube_manager.records.db import Database
from introspect import contrail as c
from introspect.contrail import paced
from introspect.decoded import known_tag_ids
from introspect.redact import Redactor

Row = Dict[str, Any]

# Paths of the list pages that rows link to (the pages, in `lists`, are built from the rows).
TAGS_PATH = "/Snh_TagDatabaseList"
FIREWALL_POLICIES_PATH = "/Snh_FirewallPolicyDatabaseList"
CLUSTER_NETWORK_POLICIES_PATH = "/Snh_ClusterNetworkPolicyDatabaseList"


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


def policy_detail_href(namespace: str, name: str) -> str:
    return href("/Snh_NetworkPolicyDetail", namespace=namespace, name=name)


def pod_detail_href(namespace: str, name: str) -> str:
    return href("/Snh_PodDetail", namespace=namespace, name=name)
