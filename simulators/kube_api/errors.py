"""The emulated API server's refusals, shared by the object store and the Lease and Event stores,
and the checks of a namespaced body those two share."""
from __future__ import annotations

import json
from typing import Any, Dict


class ApiError(Exception):
    """A request the API server refuses; rendered as a `Status` object with `code`."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def status(self) -> Dict[str, Any]:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}


def copy_json(obj: Any) -> Any:
    """A deep copy through JSON: also proves the object is what an API server could hold."""
    return json.loads(json.dumps(obj))


def namespaced_body(kind: str, api_version: str, namespace: str, body: Any) -> Dict[str, Any]:
    """A copy of `body`, an object of `kind` named in the URL's `namespace`, as the API server
    checks it (400 for a wrong kind or namespace, 422 without a name)."""
    if not isinstance(body, dict) or body.get("kind", kind) != kind:
        raise ApiError(400, "BadRequest", f"the body must be a {kind}")
    obj = copy_json(body)
    obj["kind"], obj["apiVersion"] = kind, api_version
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ApiError(422, "Invalid", f"{kind}: metadata.name is required")
    if meta.get("namespace") not in (None, "", namespace):
        raise ApiError(400, "BadRequest", "the namespace of the object does not match the namespace in the URL")
    meta["namespace"] = namespace
    return obj
