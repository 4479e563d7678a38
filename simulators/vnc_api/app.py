"""The WSGI app of the embedded config API: the real server's URLs, bodies and plain-text errors.

URLs (as `VncApiServer` routes them; `<type>` in hyphen form):
    GET  /                      home page: {"href", "links": [{"link": {"rel", "href", "name", "method"}}]}
    GET  /<type>s               list (parent_fq_name_str, parent_type, parent_id, back_ref_id, obj_uuids,
                                fq_names, detail, count, fields, filters, exclude_hrefs, page_marker,
                                page_limit: then {"<type>s": [...], "marker": <next page's or null>})
    POST /<type>s               create, body {"<type>": {...}}
    GET  /<type>/<uuid>         read (fields, exclude_back_refs, exclude_children, exclude_hrefs)
    PUT  /<type>/<uuid>         partial update, body {"<type>": {...}}
    DELETE /<type>/<uuid>       delete
    POST /fqname-to-id, /id-to-fqname, /ref-update, /set-tag, /list-bulk-collection
Successful answers are JSON; errors are the real server's text with its status. Before handling, the
`FaultInjector` may add latency, answer 503 or drop the connection (raising `DropConnection`, which
the handler of `runner` turns into a closed socket; another WSGI server would answer 500).
"""
from __future__ import annotations

import logging
import time
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple
from urllib.parse import parse_qs

import gevent

from vnc_client import jsoncodec
from vnc_client.schema import RESOURCE_TYPES, type_for_plural
from .api import ConfigApi
from .views import ListQuery, parse_filters
from .errors import ApiError
from .faults import DROP, DROPPED, FAIL, DropConnection, FaultInjector, RequestCounters

log = logging.getLogger(__name__)

MAX_BODY = 16 * 1024 * 1024
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 409: "Conflict", 413: "Request Entity Too Large",
            500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
            503: "Service Unavailable", 504: "Gateway Timeout"}
_JSON = [("Content-Type", "application/json; charset=UTF-8")]
_TEXT = [("Content-Type", "text/plain; charset=UTF-8")]
StartResponse = Callable[..., Any]


@dataclass(frozen=True)
class Route:
    """What a path names: its counter template, its kind and, for objects, the type and uuid."""

    template: str
    kind: str  # "home" | "collection" | "object" | "action" | "unknown"
    obj_type: str = ""
    uuid: str = ""


# (kind or action path, method) -> (handler name, may write)
_HANDLERS: Dict[Tuple[str, str], Tuple[str, bool]] = {
    ("home", "GET"): ("_home", False),
    ("collection", "GET"): ("_list", False),
    ("collection", "POST"): ("_create", True),
    ("object", "GET"): ("_read", False),
    ("object", "PUT"): ("_update", True),
    ("object", "DELETE"): ("_delete", True),
    ("/fqname-to-id", "POST"): ("_fqname_to_id", False),
    ("/id-to-fqname", "POST"): ("_id_to_fqname", False),
    ("/list-bulk-collection", "POST"): ("_list_bulk", False),
    ("/ref-update", "POST"): ("_ref_update", True),
    ("/set-tag", "POST"): ("_set_tag", True),
}
_ACTION_PATHS = {path for path, _m in _HANDLERS if path.startswith("/")}


def route_of(path: str) -> Route:
    if path in ("", "/"):
        return Route("/", "home")
    if path in _ACTION_PATHS:
        return Route(path, "action")
    parts = path.strip("/").split("/")
    if len(parts) == 1:
        rt = type_for_plural(parts[0])
        if rt is not None:
            return Route(f"/{rt.plural}", "collection", rt.name)
    elif len(parts) == 2 and parts[0] in RESOURCE_TYPES and parts[1]:
        return Route(f"/{parts[0]}/{{uuid}}", "object", parts[0], parts[1])
    return Route("<unknown>", "unknown")


class ConfigApiApp:
    """The WSGI callable. `api`, `faults` and `counters` are public so tests can reach them."""

    def __init__(self, api: Optional[ConfigApi] = None, faults: Optional[FaultInjector] = None,
                 counters: Optional[RequestCounters] = None) -> None:
        self.api = api if api is not None else ConfigApi()
        self.faults = faults if faults is not None else FaultInjector()
        self.counters = counters if counters is not None else RequestCounters()

    def __call__(self, environ: Dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        started, arrived = time.monotonic(), time.time()
        method = environ.get("REQUEST_METHOD", "GET").upper()
        path = environ.get("PATH_INFO") or "/"
        route = route_of(path)
        handler = _HANDLERS.get((route.template if route.kind == "action" else route.kind, method))
        write = bool(handler and handler[1])
        agent = environ.get("HTTP_USER_AGENT", "")
        fault, fault_status = self.faults.decide()
        if self.faults.latency:
            gevent.sleep(self.faults.latency)
        if fault == DROP:
            self.counters.record(method, route.template, DROPPED, write=write, agent=agent, at=arrived)
            log.info("config-api injected fault: dropping %s %s", method, path)
            raise DropConnection(f"{method} {path}")
        if fault == FAIL:
            status, payload = fault_status, f"Service Unavailable (injected fault on {method} {path})"
            log.info("config-api injected fault: %s on %s %s", fault_status, method, path)
        elif handler is None:
            status, payload = self._no_handler(route, path)
        else:
            status, payload = self._handle(handler[0], route, environ)
        self.counters.record(method, route.template, status, write=write, agent=agent, at=arrived)
        log.debug("config-api %s %s -> %d (%.1f ms)", method, path, status, (time.monotonic() - started) * 1e3)
        return _respond(start_response, status, payload)

    def _no_handler(self, route: Route, path: str) -> Tuple[int, Any]:
        if route.kind == "unknown":
            return 404, f"Not found: '{path}'"
        return 405, "Method not allowed."

    def _handle(self, name: str, route: Route, environ: Dict[str, Any]) -> Tuple[int, Any]:
        try:
            return 200, getattr(self, name)(route, _Request(environ))
        except ApiError as exc:
            level = logging.WARNING if exc.status >= 500 else logging.INFO
            log.log(level, "config-api %s %s -> %d %s", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"),
                    exc.status, exc.message)
            return exc.status, exc.message
        except Exception as exc:  # noqa: BLE001 - the real server answers 500 with the last traceback line
            log.exception("config-api internal error on %s %s", environ.get("REQUEST_METHOD"),
                          environ.get("PATH_INFO"))
            return 500, f"{type(exc).__name__}: {exc}"

    # --- handlers -----------------------------------------------------------------------------

    def _home(self, route: Route, request: "_Request") -> Any:
        return self.api.homepage(request.base_url)

    def _create(self, route: Route, request: "_Request") -> Any:
        inner = _wrapped(route.obj_type, request.json(), required=True)
        fq_name = inner.get("fq_name")
        refusal = self.faults.refusal(str(fq_name[-1])) if isinstance(fq_name, list) and fq_name else None
        if refusal is not None:
            raise ApiError(*refusal)
        return {route.obj_type: self.api.create(route.obj_type, inner, request.base_url)}

    def _read(self, route: Route, request: "_Request") -> Any:
        q = request.query
        fields = _split(q["fields"]) if "fields" in q else None
        body = self.api.read(route.obj_type, route.uuid, fields=fields,
                             exclude_back_refs="exclude_back_refs" in q, exclude_children="exclude_children" in q,
                             base_url=request.base_url, hrefs="exclude_hrefs" not in q, copy_values=False)
        return {route.obj_type: body}

    def _update(self, route: Route, request: "_Request") -> Any:
        inner = _wrapped(route.obj_type, request.json(), required=False)
        answer = self.api.update(route.obj_type, route.uuid, inner, request.base_url)
        return None if answer is None else {route.obj_type: answer}

    def _delete(self, route: Route, request: "_Request") -> Any:
        self.api.delete(route.obj_type, route.uuid, request.base_url)
        return None

    def _list(self, route: Route, request: "_Request") -> Any:
        return self.api.list(route.obj_type, list_query(request.query), request.base_url, copy_values=False)

    def _list_bulk(self, route: Route, request: "_Request") -> Any:
        body = request.json()
        if not isinstance(body, dict):
            raise ApiError(400, "Bad Request, the body must be a JSON object")
        obj_type = self.api.resolve_type(body.get("type"))
        return self.api.list(obj_type, list_query(body), request.base_url, copy_values=False)

    def _fqname_to_id(self, route: Route, request: "_Request") -> Any:
        return self.api.fqname_to_id(request.json())

    def _id_to_fqname(self, route: Route, request: "_Request") -> Any:
        return self.api.id_to_fqname(request.json())

    def _ref_update(self, route: Route, request: "_Request") -> Any:
        return self.api.ref_update(request.json())

    def _set_tag(self, route: Route, request: "_Request") -> Any:
        return self.api.set_tag(request.json())


class _Request:
    """The parts of a WSGI request the handlers use."""

    def __init__(self, environ: Dict[str, Any]) -> None:
        self._environ = environ
        parsed = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        self.query: Dict[str, str] = {k: v[-1] for k, v in parsed.items()}

    @property
    def base_url(self) -> str:
        """`scheme://host[:port]` as the client addressed us; hrefs are built on it, as the real
        server builds them on the request URL."""
        env = self._environ
        host = env.get("HTTP_HOST") or f"{env.get('SERVER_NAME', 'localhost')}:{env.get('SERVER_PORT', '80')}"
        return f"{env.get('wsgi.url_scheme', 'http')}://{host}"

    def json(self) -> Any:
        try:
            length = int(self._environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise ApiError(400, "Bad Request, invalid Content-Length") from None
        if length > MAX_BODY:
            raise ApiError(413, f"Request body of {length} bytes exceeds {MAX_BODY}")
        raw = self._environ["wsgi.input"].read(length) if length > 0 else b""
        if not raw.strip():
            return None
        try:
            return jsoncodec.loads(raw)
        except ValueError as exc:
            raise ApiError(400, f"Bad Request, invalid JSON body: {exc}") from None


def _wrapped(obj_type: str, body: Any, required: bool) -> Any:
    """The inner object of a `{"<type>": {...}}` body (None for an empty update body)."""
    if body is None and not required:
        return None
    if not isinstance(body, dict) or (obj_type not in body and (required or body)):
        raise ApiError(400, f'Bad Request, the body must be {{"{obj_type}": {{...}}}}')
    return body.get(obj_type)


def _split(value: Any) -> List[str]:
    """A comma list parameter (GET query or list-bulk-collection body) as its non-empty items."""
    if value is None:
        return []
    if not isinstance(value, str):
        raise ApiError(400, f"Bad Request, expected a comma-separated string, got {value!r}")
    return [p for p in value.split(",") if p]


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and "true" in value.lower())


def list_query(params: Mapping[str, Any]) -> ListQuery:
    """A `ListQuery` from query parameters (GET) or the JSON body of list-bulk-collection."""
    query = ListQuery(detail=_flag(params.get("detail")), count=_flag(params.get("count")),
                      fields=_split(params.get("fields")),
                      exclude_hrefs=params.get("exclude_hrefs", False) not in (False, None),
                      filters=parse_filters(params.get("filters")))
    if "parent_fq_name_str" in params:
        query.parent_fq_name = str(params["parent_fq_name_str"]).split(":")
        query.parent_type = params.get("parent_type") or None
    elif "parent_id" in params:
        query.parent_uuids = _split(params["parent_id"])
    if "back_ref_id" in params:
        query.back_ref_uuids = _split(params["back_ref_id"])
    if "obj_uuids" in params:
        query.obj_uuids = _split(params["obj_uuids"])
    if "fq_names" in params:
        query.fq_names = [name.split(":") for name in _split(params["fq_names"])]
    if "page_marker" in params:
        query.paginated, query.page_marker = True, page_marker(params["page_marker"])
    if "page_limit" in params:  # checked even where no page_marker makes the listing paginated
        query.page_limit = page_limit(params["page_limit"])
    return query


def page_marker(value: Any) -> Optional[str]:
    """A `page_marker` as the real server reads it: empty or "None" for the first page, else a
    marker whose last ':' part is a uuid (an anchored walk's uuid, an unanchored one's column)."""
    if value is None or (isinstance(value, str) and value.lower() in ("", "none")):
        return None
    try:
        uuidlib.UUID(str(value).split(":")[-1])
    except ValueError as exc:
        raise ApiError(400, f"Invalid page_marker {value}: {exc}") from None
    return str(value)


def page_limit(value: Any) -> int:
    """A `page_limit`: an integer above zero."""
    try:
        limit = int(value)
    except (TypeError, ValueError) as exc:
        raise ApiError(400, f"Invalid page_limit {value}: {exc}") from None
    if limit <= 0:
        raise ApiError(400, f"Invalid page_limit {value}: page_limit has to be greater than zero")
    return limit


def _respond(start_response: StartResponse, status: int, payload: Any) -> List[bytes]:
    status_line = f"{status} {_REASONS.get(status, 'Error')}"
    if status >= 400:
        body = str(payload).encode("utf-8")
        start_response(status_line, _TEXT + [("Content-Length", str(len(body)))])
        return [body]
    body = b"" if payload is None else jsoncodec.dumps(payload)
    start_response(status_line, _JSON + [("Content-Length", str(len(body)))])
    return [body]
