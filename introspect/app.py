"""The introspect WSGI application: routing, the read-only rule, and never a traceback on a page.

`create_app` is what the daemon calls, with its DB, its metrics registry, its configuration (shown
redacted), an explain callable and a config API probe. Only GET and HEAD are answered; anything else
is a 405 with an `Allow` header, so the server can never change the daemon's state.
"""
from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from prometheus_client import CollectorRegistry

from kube_manager.records.db import Database
from kube_manager.settings import HealthSettings
from kube_manager.registry import KINDS, Kinds
from introspect.explain import ExplainFn
from introspect.health import ConfigApiProbe
from introspect.http import TEXT, BadQuery, Request, Response
from introspect.redact import Redactor
from introspect.views import Pages

log = logging.getLogger(__name__)

ALLOWED_METHODS = ("GET", "HEAD")
STATIC_DIR = Path(__file__).with_name("static")
STATIC_TYPES = {".css": "text/css; charset=utf-8"}

StartResponse = Callable[[str, List[Tuple[str, str]]], Any]
Handler = Callable[[Request], Response]


class IntrospectApp:
    """A WSGI callable serving the pages of `Pages`."""

    def __init__(self, pages: Pages) -> None:
        self.pages = pages
        self.routes: Dict[str, Handler] = {
            "/": pages.index,
            "/kube_introspect.xml": lambda request: Response.redirect("/"),
            "/Snh_NetworkPolicyDetail": pages.policy_detail,
            "/Snh_PodDetail": pages.pod_detail,
            "/explain": pages.explain,
            "/Snh_StagedPolicyList": pages.staged_list,
            "/config": pages.config,
            "/Snh_LeaderElectionStatus": pages.leader_election,
            "/livez": pages.livez,
            "/readyz": pages.readyz,
            "/metrics": pages.metrics,
        }
        for page in pages.list_pages:
            self.routes[page.path] = functools.partial(pages.list_page, page)
        self.static = {f"/static/{path.name}": path for path in sorted(STATIC_DIR.glob("*"))
                       if path.suffix in STATIC_TYPES}

    def __call__(self, environ: Mapping[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        request = Request.from_environ(environ)
        response = self.respond(request)
        log.debug("%s %s -> %d", request.method, request.path, response.status)
        start_response(response.status_line(), response.all_headers())
        return [b""] if request.method == "HEAD" else [response.body]

    def respond(self, request: Request) -> Response:
        if request.method not in ALLOWED_METHODS:
            response = Response.text(405, f"{request.method} is not allowed: the introspect server "
                                          f"is read-only\n")
            response.headers.append(("Allow", ", ".join(ALLOWED_METHODS)))
            return response
        if request.path in self.static:
            path = self.static[request.path]
            return Response(200, path.read_bytes(), STATIC_TYPES[path.suffix])
        handler = self.routes.get(request.path)
        if handler is None:
            return self.pages.error(request, 404, f"no page at {request.path}; the index at / "
                                                  f"lists every page")
        try:
            return handler(request)
        except BadQuery as exc:
            return self.pages.error(request, 400, str(exc))
        except Exception:  # a page bug answers 500 with no detail; the log has the traceback
            log.exception("introspect page %s failed", request.path)
            return Response.text(500, "internal error while rendering this page; the kube-manager "
                                      "log has the details\n", TEXT)


def create_app(db: Database, *, registry: Optional[CollectorRegistry] = None,
               config: Optional[Any] = None, explain: Optional[ExplainFn] = None,
               config_api_probe: Optional[ConfigApiProbe] = None,
               health_policy: HealthSettings = HealthSettings(),
               clock: Callable[[], float] = time.time, semantics: str = "kubernetes",
               kinds: Kinds = KINDS) -> IntrospectApp:
    """The introspect application over `db`.

    - registry: the `Metrics.registry` served at /metrics (404 there when None).
    - config: the daemon's configuration (sections -> keys -> values, a flat mapping, or a
      dataclass); shown at /config with every secret redacted, and its secret values are masked
      in any free text shown (errors, URLs). /config answers 404 when None.
    - explain: `explain(from, to, port, protocol) -> dict` (SPEC section 6 keys), raising ValueError
      with a message on bad input; `introspect.explain.db_explainer(db, cluster_name)` builds it.
    - config_api_probe: `() -> bool`, True when the config API answers now (raise or return False
      otherwise); without it /readyz trusts `db.vnc_connection.connected`.
    - semantics: the daemon's `policy_semantics`, shown on the index.
    - kinds: the registry of kinds whose pages are served (`kube_manager/registry.py`).
    """
    pages = Pages(db, redactor=Redactor(config), registry=registry, explain=explain,
                  config_api_probe=config_api_probe, health_policy=health_policy, clock=clock,
                  semantics=semantics, kinds=kinds)
    return IntrospectApp(pages)
