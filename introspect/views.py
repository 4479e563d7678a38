"""The page handlers: each reads one snapshot of the DB and answers HTML or, with ?format=json, JSON.

Handlers never write to the DB. Bad input raises `BadQuery` (shown as a 400 page); a missing
object answers 404. Templates are rendered with autoescaping on, so names and error texts that
contain markup are shown as text.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import yaml
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kube_manager.records.db import Database
from kube_manager.registry import KINDS, Kinds
from kube_manager.settings import HealthSettings
from kube_manager.version import VERSION, python_version
from vnc_client.schema import DEFAULT_POLICY_MANAGEMENT
from introspect import list_rows, lists
from introspect.contrail import FIREWALL_POLICY, FIREWALL_RULE, UNREFERENCED, deny_rule_names
from introspect.explain import EXPLAIN_FIELDS, ExplainFn, ExplainPage, deciding_row
from introspect.health import ConfigApiProbe, liveness, readiness, render_text
from introspect.http import BadQuery, Request, Response
from introspect.listing import (NAME, NAME_CONTAINS, NAMESPACE, ListPage, Snapshot, href, pod_detail_href,
                                policy_detail_href)
from introspect.lists import list_pages
from introspect import pod_page
from introspect.redact import Redactor
from introspect.staged_page import StagedPages

HTML_PAGE_SIZE = 500  # rows per HTML page; JSON returns everything unless limit= is given
GROUPS = ("Kubernetes", "Contrail", "Connections")


@dataclass(frozen=True)
class Page:
    """The part of a request the list template needs to draw filters and pagination."""

    offset: int
    limit: Optional[int]

    @classmethod
    def from_request(cls, request: Request, default_limit: Optional[int]) -> "Page":
        offset = _non_negative(request, "offset", 0) or 0
        limit = _non_negative(request, "limit", default_limit)
        if limit == 0:
            raise BadQuery("limit must be at least 1")
        return cls(offset, limit)

    def slice(self, rows: List[Any]) -> List[Any]:
        end = None if self.limit is None else self.offset + self.limit
        return rows[self.offset:end]


def _non_negative(request: Request, name: str, default: Optional[int]) -> Optional[int]:
    text = request.param(name)
    if not text:
        return default
    if not (text.isascii() and text.isdigit()):
        raise BadQuery(f"{name} must be a whole number, not {text!r}")
    return int(text)


class Pages:
    """Every page of the introspect server, over one DB."""

    def __init__(self, db: Database, *, redactor: Redactor, registry: Optional[CollectorRegistry],
                 explain: Optional[ExplainFn], config_api_probe: Optional[ConfigApiProbe],
                 health_policy: HealthSettings, clock: Callable[[], float],
                 semantics: str = "kubernetes", kinds: Kinds = KINDS) -> None:
        self.db = db
        self.list_pages = list_pages(kinds)
        self.semantics = semantics
        self.redactor = redactor
        self.registry = registry
        self.explain_page = ExplainPage(explain)
        self.config_api_probe = config_api_probe
        self.health_policy = health_policy
        self.clock = clock
        self.templates = Environment(
            loader=PackageLoader("introspect", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.templates.filters.update(when=self._when, slug=_slug)
        self.templates.globals.update(nav=self.list_pages, groups=GROUPS, href=href,
                                      policy_detail_href=policy_detail_href,
                                      pod_detail_href=pod_detail_href,
                                      has_config=redactor.config_view is not None,
                                      pages=lists)
        self.staged = StagedPages(db, semantics, self.render)  # SPEC 17
        self.staged_explain_page = ExplainPage(self.staged.explain)

    # ---- helpers ---------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return Snapshot(self.db, self.redactor)

    def render(self, template: str, status: int = 200, **context: Any) -> Response:
        html = self.templates.get_template(template).render(**context)
        return Response(status, html.encode("utf-8"))

    def error(self, request: Request, status: int, message: str) -> Response:
        if request.query.get("format", "").strip().lower() == "json":
            return Response.json(status, {"error": message})
        return self.render("error.html", status, title=f"{status} {_TITLES.get(status, 'Error')}",
                           message=message)

    def _when(self, timestamp: Optional[float]) -> str:
        if not timestamp:
            return "never"
        moment = datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc)
        ago = max(0.0, self.clock() - timestamp)
        return f"{moment:%Y-%m-%d %H:%M:%S}Z ({_duration(ago)} ago)"

    # ---- pages -----------------------------------------------------------------------------

    def index(self, request: Request) -> Response:
        request.check_params(["format"])
        snapshot = self.snapshot()
        counts = {page.path: page.size(snapshot) for page in self.list_pages}
        live = liveness(self.db, self.health_policy, self.clock())
        if request.wants_json():
            return Response.json(200, {
                "lists": [{"path": p.path, "title": p.title, "count": counts[p.path]} for p in self.list_pages],
                "errors": len(self.db.errors), "liveness": [c.to_dict() for c in live], "role": leader_role(self.db),
                "version": VERSION, "python": python_version(), "policy_semantics": self.semantics})
        return self.render("index.html", title="kube-manager introspect", counts=counts,
                           errors=len(self.db.errors), live=live, role=leader_role(self.db),
                           uptime=_duration(self.clock() - self.db.started_at), version=VERSION,
                           python=python_version(), semantics=self.semantics)

    def list_page(self, page: ListPage, request: Request) -> Response:
        request.check_params([f.param for f in page.filters] + ["format", "limit", "offset"])
        wants_json = request.wants_json()
        window = Page.from_request(request, None if wants_json else HTML_PAGE_SIZE)
        snapshot = self.snapshot()
        every = page.build(snapshot)
        rows = page.select(every, request.query)
        shown = window.slice(rows)
        if page is lists.NETWORK_POLICIES and request.param("network_policy_uuid") and len(rows) == 1 \
                and not wants_json:
            # A uid names one policy: lead to it (JSON keeps the SPEC's filtered list).
            return Response.redirect(policy_detail_href(rows[0]["namespace"], rows[0]["name"]))
        if wants_json:
            return Response.json(200, {page.json_key: [page.to_json(row) for row in shown]})
        return self.render("list.html", title=page.title, page=page, rows=page.displayed(shown),
                           total=len(every),
                           matched=len(rows), window=window, query=request.query,
                           translation_errors=self._translation_errors(page, request))

    def _translation_errors(self, page: ListPage, request: Request) -> List[Dict[str, str]]:
        """On the NetworkPolicy list: every rejection of the translator, filtered like the rows."""
        if page is not lists.NETWORK_POLICIES:
            return []
        rows = [dict(error) for error in self.db.errors]
        for flt in (NAMESPACE, NAME, NAME_CONTAINS):
            wanted = request.param(flt.param)
            if wanted:
                rows = [row for row in rows if flt.matches(row, wanted)]
        return sorted(rows, key=lambda e: (e.get("kind", ""), e.get("namespace", ""), e.get("name", "")))

    def policy_detail(self, request: Request) -> Response:
        request.check_params(["namespace", "name", "format"])
        namespace, name = request.param("namespace"), request.param("name")
        if not namespace or not name:
            raise BadQuery("give both namespace= and name= of the NetworkPolicy")
        snapshot = self.snapshot()
        matches = [r for r in list_rows.network_policy_rows(snapshot)
                   if (r["namespace"], r["name"]) == (namespace, name)]
        if not matches:
            return self.error(request, 404, f"no NetworkPolicy {namespace}/{name} in the database")
        detail = _policy_detail(snapshot, matches[0])
        if request.wants_json():
            return Response.json(200, {"network_policy": detail["json"]})
        return self.render("policy.html", title=f"NetworkPolicy {namespace}/{name}", **detail)

    def pod_detail(self, request: Request) -> Response:
        request.check_params(["namespace", "name", "format"])
        namespace, name = request.param("namespace"), request.param("name")
        if not namespace or not name:
            raise BadQuery("give both namespace= and name= of the pod")
        detail = pod_page.pod_detail(self.snapshot(), namespace, name)
        if detail is None:
            return self.error(request, 404, f"no pod {namespace}/{name} in the database")
        if request.wants_json():
            return Response.json(200, pod_page.to_json(detail))
        return self.render("pod.html", title=f"Pod {namespace}/{name}", detail=detail)

    def explain(self, request: Request) -> Response:
        request.check_params(list(EXPLAIN_FIELDS) + ["format", "staged"])
        wants_json = request.wants_json()
        staged = request.param("staged") in ("1", "true")  # SPEC 17: beside the staged policies' verdict
        outcome = (self.staged_explain_page if staged else self.explain_page).answer(request.query, blank_ok=not wants_json)
        if wants_json:
            if outcome.error:
                return Response.json(outcome.status, {"error": outcome.error})
            return Response.json(outcome.status, outcome.result)
        if staged:
            return self.render("staged_explain.html", outcome.status, title="Explain a flow, staged policies enforced",
                               form=outcome.form, outcome=outcome)
        rule_state = None
        if outcome.result and outcome.result.get("rule"):
            rule = self.snapshot().contrail.find(
                FIREWALL_RULE, DEFAULT_POLICY_MANAGEMENT + [outcome.result["rule"]])
            rule_state = rule.state if rule is not None else None
        return self.render("explain.html", outcome.status, title="Explain a flow", form=outcome.form,
                           outcome=outcome, rule_state=rule_state,
                           deciding=deciding_row(outcome.result) if outcome.result else None,
                           available=self.explain_page.available)

    def staged_list(self, request: Request) -> Response:
        request.check_params(["format"])
        if request.wants_json():
            return Response.json(200, self.staged.listing(True))
        response: Response = self.staged.listing(False)
        return response

    def config(self, request: Request) -> Response:
        request.check_params(["format"])
        view = self.redactor.config_view
        if view is None:
            return self.error(request, 404, "no configuration was given to the introspect server")
        if request.wants_json():
            return Response.json(200, {"config": view})
        return self.render("config.html", title="Configuration (secrets redacted)",
                           text=yaml.safe_dump(view, sort_keys=False, default_flow_style=False))

    def leader_election(self, request: Request) -> Response:
        request.check_params(["format"])
        status = self.db.leader
        if request.wants_json():
            return Response.json(200, {key: getattr(status, key) for key in LEADER_FIELDS})
        return self.render("leader.html", title="Leader election", election=status, role=leader_role(self.db),
                           last_error=self.redactor.text(status.last_error))

    def livez(self, request: Request) -> Response:
        request.check_params(["format", "verbose"])
        return self._health(request, "livez", liveness(self.db, self.health_policy, self.clock()))

    def readyz(self, request: Request) -> Response:
        request.check_params(["format", "verbose"])
        return self._health(request, "readyz", readiness(self.db, self.config_api_probe, self.redactor))

    def _health(self, request: Request, what: str, checks: list) -> Response:
        ok = all(check.ok for check in checks)
        status = 200 if ok else 503
        if request.wants_json():
            return Response.json(status, {"status": "ok" if ok else "failed",
                                          "checks": [check.to_dict() for check in checks]})
        return Response.text(status, render_text(checks, what))

    def metrics(self, request: Request) -> Response:
        request.check_params([])
        if self.registry is None:
            return self.error(request, 404, "no metrics registry was given to the introspect server")
        return Response(200, generate_latest(self.registry), CONTENT_TYPE_LATEST)


LEADER_FIELDS = ("enabled", "identity", "is_leader", "leader", "namespace", "name", "transitions")


def leader_role(db: Database) -> str:
    """`leader`, `standby`, or `single writer` (election disabled)."""
    if not db.leader.enabled:
        return "single writer"
    return "leader" if db.leader.is_leader else "standby"


def _policy_detail(snapshot: Snapshot, row: Dict[str, Any]) -> Dict[str, Any]:
    """One NetworkPolicy with its rules (pass rules in its firewall policy, deny rules in the
    cluster's deny-all policy), the tags and address groups those rules use."""
    view = snapshot.contrail
    named = list(row["rules"])
    optional: List[str] = []
    own = view.find(FIREWALL_POLICY, row["firewall_policy"])
    if own is not None:
        named += [name for name, _seq in own.refs("firewall_rule_refs")]
        optional = deny_rule_names(own)
    found = {}
    for name in dict.fromkeys(named + optional):
        rule = view.find(FIREWALL_RULE, DEFAULT_POLICY_MANAGEMENT + [name])
        if rule is not None:
            found[name] = list_rows.rule_row(snapshot, rule, view.memberships.get(name))
    rules = sorted(found.values(), key=lambda r: (r["policy_sequence"] or UNREFERENCED,
                                                   r["sequence"] or UNREFERENCED, r["name"]))
    missing = sorted(set(named) - set(found))
    tag_names = {t for r in rules for t in r["tags"]}
    group_names = {g for r in rules for g in r["address_groups"]}
    tags = [t for t in list_rows.tag_rows(snapshot) if t["name"] in tag_names]
    groups = [g for g in list_rows.address_group_rows(snapshot) if g["name"] in group_names]
    as_json = {
        **lists.NETWORK_POLICIES.to_json(row),
        "firewall_rules": [lists.FIREWALL_RULES.to_json(r) for r in rules],
        "missing_rules": missing,
        "tags": [lists.TAGS.to_json(t) for t in tags],
        "address_groups": [lists.ADDRESS_GROUPS.to_json(g) for g in groups],
    }
    return {"policy": row, "rules": lists.FIREWALL_RULES.displayed(rules), "missing_rules": missing,
            "tags": tags, "groups": groups,
            "spec_yaml": yaml.safe_dump(row["spec"], sort_keys=False, default_flow_style=False),
            "json": as_json}


def _slug(value: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(value).lower()).strip("-") or "none"


def _duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"


_TITLES = {400: "Bad request", 404: "Not found", 405: "Method not allowed", 500: "Internal error",
           503: "Unavailable"}
