"""What an API server said when it refused a request, in one line: its status, its reason and the
message of its `Status` body (e.g. `403 Forbidden: pods is forbidden: User "..." cannot list
resource "pods" in API group "" at the cluster scope`), never its headers. The message is what
names the verb, the resource or the field refused, so every log line about a refusal carries it.
A standalone module (no kube_manager import), so that the status outbox and the leader lock,
which may not import the Kubernetes layer, share it."""
from __future__ import annotations

import json
from typing import Any

MESSAGE_LIMIT = 300


def server_message(body: Any) -> str:
    """The `message` of a Kubernetes `Status` body, or the body's start when it is not one."""
    try:
        decoded = json.loads(body)
        return str(decoded.get("message", ""))[:MESSAGE_LIMIT]
    except (ValueError, TypeError, AttributeError):
        return (body.decode(errors="replace") if isinstance(body, bytes) else str(body or ""))[:MESSAGE_LIMIT]


def refusal(exc: BaseException) -> str:
    """`<status> <reason>: <message>` for an HTTP error answer (`kubernetes` ApiException), else
    the exception's first line."""
    status = getattr(exc, "status", None)
    if status is not None:
        head = f"{status} {getattr(exc, 'reason', '') or ''}".strip()
        message = server_message(getattr(exc, "body", None))
        return f"{head}: {message}" if message else head
    text = str(exc)
    return text.splitlines()[0] if text else ""
