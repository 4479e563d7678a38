"""The emulated API server's refusals, as `Status` objects shaped like the real server's
(apimachinery's `pkg/api/errors`: `reason`, `code`, `details` with group, kind, name and, for a 422,
one cause per field), and the checks of a namespaced body the Lease and Event stores share."""
from __future__ import annotations

import json
from typing import Any, Dict, Optional, Sequence, Tuple

# One field error: (cause type, field path, message body), as apimachinery's field.Error renders
# them: type "FieldValueRequired" with body "Required value", and so on.
Cause = Tuple[str, str, str]

# The resource's group and REST plural, as `details` names them (`kind` is the plural there, a
# quirk of the real server's NotFound/AlreadyExists/Conflict).
GroupResource = Tuple[str, str]


class ApiError(Exception):
    """A request the API server refuses; rendered as a `Status` object with `code`."""

    def __init__(self, code: int, reason: str, message: str,
                 details: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> Dict[str, Any]:
        status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            status["details"] = self.details
        return status


def qualified(resource: GroupResource) -> str:
    group, plural = resource
    return f"{plural}.{group}" if group else plural


def not_found(resource: GroupResource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{qualified(resource)} "{name}" not found',
                    {"name": name, "group": resource[0], "kind": resource[1]})


def already_exists(resource: GroupResource, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{qualified(resource)} "{name}" already exists',
                    {"name": name, "group": resource[0], "kind": resource[1]})


def conflict(resource: GroupResource, name: str) -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified(resource)} "{name}": '
                                     "the object has been modified; please apply your changes to the "
                                     "latest version and try again",
                    {"name": name, "group": resource[0], "kind": resource[1]})


def forbidden_in_terminating(resource: GroupResource, name: str, namespace: str) -> ApiError:
    """403 from the NamespaceLifecycle admission: no new object in a Terminating namespace."""
    return ApiError(403, "Forbidden", f'{qualified(resource)} "{name}" is forbidden: unable to create new content '
                                      f"in namespace {namespace} because it is being terminated",
                    {"name": name, "group": resource[0], "kind": resource[1],
                     "causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                 "message": f"namespace {namespace} is being terminated"}]})


def invalid(group: str, kind: str, name: str, causes: Sequence[Cause]) -> ApiError:
    """422 Invalid: `kind` is the object's kind (or, for a missing resourceVersion, the resource's
    plural, as the real server gives it), one cause per field error."""
    errors = [f"{path}: {body}" for _type, path, body in causes]
    joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {joined}',
                    {"name": name, "group": group, "kind": kind,
                     "causes": [{"reason": cause_type, "message": body, "field": path}
                                for cause_type, path, body in causes]})


def missing_resource_version(resource: GroupResource, name: str) -> ApiError:
    """A PUT without `metadata.resourceVersion` to a kind that allows no unconditional update."""
    return invalid(resource[0], resource[1], name, [
        ("FieldValueInvalid", "metadata.resourceVersion", "Invalid value: 0: must be specified for an update")])


def too_large_resource_version(requested: int, current: int) -> ApiError:
    """504 for a list (or a watch-list) from a version the server has not reached (after waiting
    3 s for it there)."""
    return ApiError(504, "Timeout", f"Timeout: Too large resource version: {requested}, current: {current}",
                    {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                     "retryAfterSeconds": 1})


def required(path: str) -> Cause:
    return ("FieldValueRequired", path, "Required value")


def bad_value(path: str, value: Any, detail: str) -> Cause:
    """An `Invalid value` cause; the value rendered as Go renders it (strings quoted, JSON else)."""
    return ("FieldValueInvalid", path, f"Invalid value: {json.dumps(value)}: {detail}")


def unsupported(path: str, value: Any, supported: Sequence[str]) -> Cause:
    allowed = ", ".join(json.dumps(s) for s in supported)
    return ("FieldValueNotSupported", path, f"Unsupported value: {json.dumps(value)}: supported values: {allowed}")


def forbidden(path: str, detail: str) -> Cause:
    return ("FieldValueForbidden", path, f"Forbidden: {detail}")


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
        group = api_version.rpartition("/")[0]
        raise invalid(group, kind, "", [("FieldValueRequired", "metadata.name",
                                         "Required value: name or generateName is required")])
    if meta.get("namespace") not in (None, "", namespace):
        raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the "
                                          "namespace sent on the request")
    meta["namespace"] = namespace
    return obj
