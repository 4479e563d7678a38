"""The small slice of HTTP the introspect server needs: a parsed request and a response to send.

Plain WSGI rather than a web framework: the server is read-only, has a dozen fixed routes and must
stay importable without extra dependencies.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Tuple
from urllib.parse import parse_qsl

HTML = "text/html; charset=utf-8"
JSON = "application/json"
TEXT = "text/plain; charset=utf-8"

REASONS = {200: "OK", 302: "Found", 400: "Bad Request", 404: "Not Found",
           405: "Method Not Allowed", 500: "Internal Server Error", 503: "Service Unavailable"}


class BadQuery(ValueError):
    """A request the page cannot answer; the message is shown to the user as is."""


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: Dict[str, str]

    @classmethod
    def from_environ(cls, environ: Mapping[str, Any]) -> "Request":
        # The last value wins for a repeated parameter, as in most frameworks.
        query = dict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        return cls(str(environ.get("REQUEST_METHOD", "GET")).upper(),
                   environ.get("PATH_INFO", "") or "/", query)

    def param(self, name: str) -> str:
        return self.query.get(name, "").strip()

    def check_params(self, allowed: Iterable[str]) -> None:
        """Refuse unknown parameters: a misspelt filter must not silently show everything."""
        allowed = set(allowed)
        unknown = sorted(set(self.query) - allowed)
        if unknown:
            raise BadQuery(f"unknown query parameter(s) {', '.join(unknown)}; "
                             f"this page accepts: {', '.join(sorted(allowed))}")

    def wants_json(self) -> bool:
        fmt = self.param("format").lower()
        if fmt not in ("", "html", "json"):
            raise BadQuery(f"unknown format {fmt!r}: use format=json, or leave it out for HTML")
        return fmt == "json"


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = HTML
    headers: List[Tuple[str, str]] = field(default_factory=list)

    @classmethod
    def text(cls, status: int, text: str, content_type: str = TEXT) -> "Response":
        return cls(status, text.encode("utf-8"), content_type)

    @classmethod
    def json(cls, status: int, data: Any) -> "Response":
        body = json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n"
        return cls(status, body.encode("utf-8"), JSON)

    @classmethod
    def redirect(cls, location: str) -> "Response":
        return cls(302, b"", TEXT, [("Location", location)])

    def status_line(self) -> str:
        return f"{self.status} {REASONS.get(self.status, 'Unknown')}"

    def all_headers(self) -> List[Tuple[str, str]]:
        return [("Content-Type", self.content_type), ("Content-Length", str(len(self.body))),
                ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")] + self.headers
