"""Typed errors of the config API client.

Callers decide on the class, never on parsing text: the reconciler treats `Conflict` on create as
"read, compare, update", `NotFound` on delete as success, retries what `is_temporary` calls
temporary with backoff, and parks an object whose write failed otherwise (SPEC section 7). Every HTTP error keeps the method, path, status and the server's
plain-text body, because the real contrail-api explains its refusals only in that body.
"""
from __future__ import annotations

from typing import Dict, Optional, Type

# Keep log lines and exception messages bounded even when a proxy answers with a whole HTML page.
_MAX_BODY_CHARS = 2000


class VncError(Exception):
    """Base class of every error raised by vnc_client."""


class VncConnectionError(VncError):
    """No endpoint could be reached (refused, reset, timed out) after every allowed attempt."""


class WriteRefused(VncError):
    """The client's write gate refused a write before it was sent: this kube-manager is not the
    leader (any more). Never retried: the work that wanted to write is abandoned."""


class InvalidResponse(VncError):
    """The server answered with a success status but a body that is not the expected JSON."""


class VncHttpError(VncError):
    """The server answered with an error status."""

    status: int = 0

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        self.method = method
        self.path = path
        self.status = status
        self.body = body
        text = body.strip()
        if len(text) > _MAX_BODY_CHARS:
            text = text[:_MAX_BODY_CHARS] + "..."
        super().__init__(f"{method} {path} -> {status}: {text}" if text else f"{method} {path} -> {status}")


class BadRequest(VncHttpError):
    """400: the server refused the body (validation, unknown ref, bad field)."""


class Unauthorized(VncHttpError):
    """401: no valid token (after the single re-authentication), or Keystone refused the credentials."""


class Forbidden(VncHttpError):
    """403: the token is valid but not allowed to do this."""


class NotFound(VncHttpError):
    """404: unknown uuid, fq_name, parent or referred object."""


class Conflict(VncHttpError):
    """409: fq_name already taken, or a delete refused because of refs or children."""


class ServerError(VncHttpError):
    """5xx: the server failed (after retries for 502, 503 and 504)."""


_BY_STATUS: Dict[int, Type[VncHttpError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
}


def error_for_status(method: str, path: str, status: int, body: str) -> VncHttpError:
    """The typed error for an HTTP error status; other 4xx codes get the generic VncHttpError."""
    cls: Optional[Type[VncHttpError]] = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else VncHttpError
    return cls(method, path, status, body)


# SPEC section 7: connection errors, timeouts, 5xx and 409 may pass by themselves; any other refusal
# (400, 401, 403, 404 ...) is the server's answer to this body and repeats until something changes.
_TEMPORARY = (VncConnectionError, ServerError, Conflict, InvalidResponse)


def is_temporary(exc: BaseException) -> bool:
    """Whether a failed call is worth retrying as it is (with backoff); else it is permanent."""
    return isinstance(exc, _TEMPORARY)
