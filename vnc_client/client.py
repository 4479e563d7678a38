"""REST client of the Contrail config API (contrail-api, port 8082): what the requests mean.

URLs and bodies follow the official library (vnc_api.py) exactly: `POST /<type>s` with
`{"<type>": body}`, `GET|PUT|DELETE /<type>/<uuid>`, list filters as `key==<json>` comma lists, and
the action URLs `/fqname-to-id`, `/id-to-fqname`, `/ref-update` and `/set-tag`. How they travel
(fail-over, retries, auth, the write gate) is `transport.Transport`'s, which `VncClient` extends.

Every call may raise the typed errors of `vnc_client.errors`. Retried calls are safe for the way
kube-manager writes: a create that reached the server before the connection died comes back as 409
(the reconciler reads, compares and updates), a repeated delete as 404 (success), and ref-update and
set-tag are idempotent on the server.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import quote

from .logfields import kv

from .errors import InvalidResponse
from .schema import ResourceType, resource_type
from .transport import LIST_BULK_PATH, Transport

log = logging.getLogger(__name__)

Body = Mapping[str, Any]
# A uuid (str) or an fq_name (list of str); reads, updates and deletes accept either.
Ident = Union[str, Sequence[str]]

# Above this many ids in one list selector, list through POST /list-bulk-collection (as vnc_api does).
LIST_BULK_THRESHOLD = 25
_REF_OPERATIONS = ("ADD", "DELETE")


def encode_filters(filters: Mapping[str, Any]) -> str:
    """`{"k": v, "k2": [a, b]}` as the API's `k==<json v>,k2==<json a>,k2==<json b>`."""
    terms = []
    for key, value in filters.items():
        for item in value if isinstance(value, list) else [value]:
            encoded = json.dumps(item)
            if "," in encoded or "," in key:
                # The server splits the whole parameter on commas; such a term would be mangled.
                raise ValueError(f"list filter {key}=={encoded} cannot contain a comma")
            terms.append(f"{key}=={encoded}")
    return ",".join(terms)


def _comma_list(value: Union[str, Sequence[str]]) -> str:
    return value if isinstance(value, str) else ",".join(value)


def _fq_str(fq_name: Any) -> str:
    """An fq_name for log lines; "-" when the call named the object by uuid only."""
    if isinstance(fq_name, (list, tuple)):
        return ":".join(str(p) for p in fq_name)
    return "-" if fq_name is None or isinstance(fq_name, str) else str(fq_name)


class VncClient(Transport):
    """A client of one Contrail config API cluster; the constructor is `Transport`'s."""

    # --- CRUD --------------------------------------------------------------------------------

    def home(self) -> Dict[str, Any]:
        """`GET /`: the home page with its links; a cheap liveness probe of the API."""
        return self._expect_dict("GET", "/", self._call("GET", "/", "/"))

    def create(self, obj_type: str, body: Body) -> Dict[str, Any]:
        """Create; returns the body sent merged with what the server returned (uuid, fq_name, ...)."""
        rt = _resource(obj_type)
        data = _body_dict(obj_type, body)
        path = f"/{rt.plural}"
        created = self._unwrap("POST", path, obj_type, self._call("POST", path, path, json_body={obj_type: data}))
        result = {**data, **created}
        log.debug("vnc write", extra=kv(op="create", type=obj_type, fq_name=_fq_str(result.get("fq_name")),
                                        uuid=result.get("uuid")))
        return result

    def read(
        self,
        obj_type: str,
        ident: Ident,
        *,
        fields: Optional[Sequence[str]] = None,
        exclude_back_refs: bool = False,
        exclude_children: bool = False,
    ) -> Dict[str, Any]:
        """Read one object by uuid or fq_name; `fields` limits the answer to those fields."""
        rt = _resource(obj_type)
        params: Dict[str, str] = {}
        if fields:
            params["fields"] = ",".join(fields)
        if exclude_back_refs:
            params["exclude_back_refs"] = "True"
        if exclude_children:
            params["exclude_children"] = "True"
        uuid = self._uuid_of(obj_type, ident)
        path = f"/{rt.name}/{quote(uuid, safe='')}"
        return self._unwrap("GET", path, obj_type, self._call("GET", path, f"/{rt.name}/{{uuid}}", params=params))

    def update(self, obj_type: str, ident: Ident, body: Body) -> Dict[str, Any]:
        """Partial update (PUT): only the fields in `body` change. Returns the server's answer
        (`{"uuid", "href"}`; `{}` when the body named nothing to change)."""
        rt = _resource(obj_type)
        data = _body_dict(obj_type, body)
        uuid = self._uuid_of(obj_type, ident)
        path = f"/{rt.name}/{quote(uuid, safe='')}"
        result = self._call("PUT", path, f"/{rt.name}/{{uuid}}", json_body={obj_type: data})
        log.debug("vnc write", extra=kv(op="update", type=obj_type, fq_name=_fq_str(data.get("fq_name") or ident),
                                        uuid=uuid, fields=",".join(sorted(data))))
        # The server answers an empty update (nothing to change) with an empty body.
        return {} if result is None else self._unwrap("PUT", path, obj_type, result)

    def delete(self, obj_type: str, ident: Ident) -> None:
        """Delete by uuid or fq_name. A missing object raises NotFound (the caller decides)."""
        rt = _resource(obj_type)
        uuid = self._uuid_of(obj_type, ident)
        path = f"/{rt.name}/{quote(uuid, safe='')}"
        self._call("DELETE", path, f"/{rt.name}/{{uuid}}")
        log.debug("vnc write", extra=kv(op="delete", type=obj_type, fq_name=_fq_str(ident), uuid=uuid))

    def list(self, obj_type: str, **options: Any) -> List[Dict[str, Any]]:
        """List objects of a type in one request; `options` are `list_pages`'s (selectors, `detail`,
        `fields`, `exclude_hrefs`)."""
        return next(self.list_pages(obj_type, None, **options), [])

    def list_pages(
        self,
        obj_type: str,
        page_limit: Optional[int],
        *,
        detail: bool = False,
        fields: Optional[Sequence[str]] = None,
        filters: Optional[Mapping[str, Any]] = None,
        parent_id: Union[str, Sequence[str], None] = None,
        parent_fq_name: Optional[Sequence[str]] = None,
        back_ref_id: Union[str, Sequence[str], None] = None,
        obj_uuids: Optional[Sequence[str]] = None,
        exclude_hrefs: bool = False,
    ) -> Iterator[List[Dict[str, Any]]]:
        """List objects of a type, a page of at most `page_limit` at a time (None: one page of them
        all), each requested when the previous one has been taken: a caller that folds each page in
        and drops it never holds a whole large collection at once.

        Without `detail` each item is `{"uuid", "fq_name", "href"}` (plus `fields`); with `detail`
        each item is the full object (unwrapped). An empty id list given to `parent_id`,
        `back_ref_id` or `obj_uuids` matches nothing (no page), as in the official library; a list
        of more than LIST_BULK_THRESHOLD ids goes in a POST body instead of the URL.
        `exclude_hrefs`: no `href` in the items and their refs (a third of a VMI listing's bytes).

        As the real server paginates: `page_marker` ("None" for the first page) and `page_limit`
        in the query (or the list-bulk-collection body); the answer's `marker` names where the
        next page starts, null after the last. A server that answers without a `marker` did not
        paginate and sent everything in one page. The pages are not one snapshot: an object made
        or removed between two requests may be missing from the walk (never listed twice under one
        uuid), which a caller must treat as "not known", not as "not there"."""
        rt = _resource(obj_type)
        if page_limit is not None and page_limit <= 0:
            raise ValueError(f"page_limit must be above zero, got {page_limit}")
        for ids in (parent_id, back_ref_id, obj_uuids):
            if ids is not None and not isinstance(ids, str) and len(ids) == 0:
                return
        params: Dict[str, str] = {}
        if parent_fq_name:
            params["parent_fq_name_str"] = ":".join(parent_fq_name)
        if parent_id is not None:
            params["parent_id"] = _comma_list(parent_id)
        if back_ref_id is not None:
            params["back_ref_id"] = _comma_list(back_ref_id)
        if obj_uuids is not None:
            params["obj_uuids"] = _comma_list(obj_uuids)
        if fields:
            params["fields"] = ",".join(fields)
        if detail:
            params["detail"] = "True"
        if exclude_hrefs:
            params["exclude_hrefs"] = "True"
        if filters:
            params["filters"] = encode_filters(filters)
        path = f"/{rt.plural}"
        # Long id lists would make an over-long URL; the API takes the same query as a POST body.
        bulk = any(len(ids) > LIST_BULK_THRESHOLD for ids in (parent_id, back_ref_id, obj_uuids)
                   if ids is not None and not isinstance(ids, str))
        marker = "None"
        while True:
            if page_limit is not None:
                params.update(page_marker=marker, page_limit=str(page_limit))
            page, next_marker = self._list_page(rt, params, bulk, detail)
            yield page
            del page  # taken: not held while the next page is asked for and decoded
            if page_limit is None or next_marker is None:
                return
            if not isinstance(next_marker, str) or next_marker == marker:
                raise InvalidResponse(f"GET {path}: page marker {next_marker!r} does not move the walk on")
            marker = next_marker

    def _list_page(self, rt: ResourceType, params: Dict[str, str], bulk: bool,
                   detail: bool) -> Tuple[List[Dict[str, Any]], Any]:
        """One list request: its items (unwrapped with `detail`) and the answer's `marker`."""
        path = f"/{rt.plural}"
        if bulk:
            answer = self._action(LIST_BULK_PATH, {**params, "type": rt.name, "detail": detail})
        else:
            answer = self._expect_dict("GET", path, self._call("GET", path, path, params=params))
        items = answer.get(rt.plural)
        if not isinstance(items, list):
            raise InvalidResponse(f"GET {path}: answer has no {rt.plural!r} list")
        if detail:
            items = [self._unwrap("GET", path, rt.name, item) for item in items]
        return items, answer.get("marker")

    # --- actions -----------------------------------------------------------------------------

    def fqname_to_id(self, obj_type: str, fq_name: Sequence[str]) -> str:
        """The uuid of `obj_type` named `fq_name`; NotFound when there is none."""
        _resource(obj_type)
        answer = self._action("/fqname-to-id", {"type": obj_type, "fq_name": list(fq_name)})
        return self._field("/fqname-to-id", answer, "uuid")

    def id_to_fqname(self, uuid: str) -> Dict[str, Any]:
        """`{"type": <resource type>, "fq_name": [...]}` of a uuid; NotFound when unknown."""
        answer = self._action("/id-to-fqname", {"uuid": uuid})
        return {"type": self._field("/id-to-fqname", answer, "type"),
                "fq_name": self._field("/id-to-fqname", answer, "fq_name")}

    def ref_update(
        self,
        obj_type: str,
        uuid: str,
        ref_type: str,
        ref_uuid: Optional[str] = None,
        *,
        ref_fq_name: Optional[Sequence[str]] = None,
        operation: str = "ADD",
        attr: Optional[Mapping[str, Any]] = None,
    ) -> str:
        """Add or delete one ref of object `uuid` to a `ref_type` object (by uuid or fq_name).

        `ref_type` is the referred type ("firewall-rule"); the ref field name
        ("firewall_rule_refs") is accepted too, as by the official library. Returns the object uuid.
        """
        _resource(obj_type)
        if ref_type.endswith(("_refs", "-refs")):
            ref_type = ref_type[:-5].replace("_", "-")
        _resource(ref_type)
        if operation not in _REF_OPERATIONS:
            raise ValueError(f"ref_update operation must be ADD or DELETE, got {operation!r}")
        if ref_uuid is None and ref_fq_name is None:
            raise ValueError("ref_update needs ref_uuid or ref_fq_name")
        body: Dict[str, Any] = {"operation": operation, "type": obj_type, "uuid": uuid, "ref-type": ref_type}
        if ref_uuid is not None:
            body["ref-uuid"] = ref_uuid
        if ref_fq_name is not None:
            body["ref-fq-name"] = list(ref_fq_name)
        body["attr"] = dict(attr) if attr is not None else None
        answer = self._action("/ref-update", body)
        log.debug("vnc write", extra=kv(op=f"ref-{operation.lower()}", type=obj_type, uuid=uuid, ref_type=ref_type,
                                        ref=ref_uuid or _fq_str(ref_fq_name), attr=json.dumps(body["attr"])))
        return self._field("/ref-update", answer, "uuid")

    def set_tags(self, obj_type: str, obj_uuid: str, changes: Mapping[str, Optional[Mapping[str, Any]]]) -> None:
        """`POST /set-tag`: `changes` maps a tag type to `{"is_global", "value"}`, to
        `{"is_global", "add_values", "delete_values"}` for the multi-valued `label` type, or to None
        (remove every tag of that type from the object)."""
        _resource(obj_type)
        if not changes:
            raise ValueError("set_tags needs at least one tag type")
        reserved = {"obj_type", "obj_uuid"} & set(changes)
        if reserved:
            raise ValueError(f"{sorted(reserved)} is not a tag type")
        body: Dict[str, Any] = {"obj_type": obj_type, "obj_uuid": obj_uuid}
        body.update({tag_type: (dict(c) if c is not None else None) for tag_type, c in changes.items()})
        self._action("/set-tag", body)
        log.debug("vnc write", extra=kv(op="set-tag", type=obj_type, uuid=obj_uuid,
                                        tags=json.dumps(body, sort_keys=True, separators=(",", ":"))))

    def set_tag(self, obj_type: str, obj_uuid: str, tag_type: str, value: Optional[str], *,
                is_global: bool = True) -> None:
        """Set the single tag of `tag_type` on an object; `value=None` removes it."""
        change = None if value is None else {"is_global": is_global, "value": value}
        self.set_tags(obj_type, obj_uuid, {tag_type: change})

    def set_labels(self, obj_type: str, obj_uuid: str, *, add: Sequence[str] = (), delete: Sequence[str] = (),
                   is_global: bool = True) -> None:
        """Add and remove values of the multi-valued `label` tag type in one call."""
        self.set_tags(obj_type, obj_uuid, {
            "label": {"is_global": is_global, "add_values": list(add), "delete_values": list(delete)}})

    # --- plumbing ----------------------------------------------------------------------------

    def _uuid_of(self, obj_type: str, ident: Ident) -> str:
        if isinstance(ident, str):
            if not ident:
                raise ValueError("empty uuid")
            return ident
        return self.fqname_to_id(obj_type, ident)

    def _action(self, path: str, body: Dict[str, Any]) -> Dict[str, Any]:
        return self._expect_dict("POST", path, self._call("POST", path, path, json_body=body))

    @staticmethod
    def _expect_dict(method: str, path: str, answer: Any) -> Dict[str, Any]:
        if answer is None:
            return {}
        if not isinstance(answer, dict):
            raise InvalidResponse(f"{method} {path}: expected a JSON object, got {type(answer).__name__}")
        return answer

    def _unwrap(self, method: str, path: str, obj_type: str, answer: Any) -> Dict[str, Any]:
        inner = self._expect_dict(method, path, answer).get(obj_type)
        if not isinstance(inner, dict):
            raise InvalidResponse(f"{method} {path}: answer has no {obj_type!r} object")
        return inner

    @staticmethod
    def _field(path: str, answer: Dict[str, Any], name: str) -> Any:
        if name not in answer:
            raise InvalidResponse(f"POST {path}: answer has no {name!r}")
        return answer[name]


def _resource(obj_type: str) -> ResourceType:
    try:
        return resource_type(obj_type)
    except KeyError:
        raise ValueError(f"unknown resource type {obj_type!r}") from None


def _body_dict(obj_type: str, body: Body) -> Dict[str, Any]:
    if isinstance(body, Mapping):
        return dict(body)
    raise ValueError(f"a {obj_type} body must be a dict, got {type(body).__name__}")
