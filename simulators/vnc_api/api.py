"""The config API's requests over the in-memory store, answered as the real contrail-api answers them.

`ConfigApi` is what the WSGI app (`app`) calls for each request, and what tests may call directly
(every public method takes the store lock, so it is safe from any thread). Each method returns the
JSON-ready answer of the real server or raises `ApiError` with the real server's status and text.
The writes run through `pipelines` (the real server's order of checks and the type hooks); reads
and lists are rendered by `views`: refs and back-refs come sorted by uuid and children in creation
order, as the real server's Cassandra rows do, so clients must order sequenced refs themselves.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from kube_manager.plumbing.gcpolicy import collector_paused
from vnc_client.schema import RESOURCE_TYPES, ResourceType

from .errors import ApiError, bad_request, fq_repr, not_found, unknown_id
from .hooks import Change
from .pipelines import WritePipelines, is_fq_name
from .store import Ref, Store, StoredObject, copy_json
from .tags import set_tag
from .validation import PROPERTIES, validate_props, validate_ref_attrs
from .views import ListQuery, Views

# Action links of the home page: (uri, link name, method), as the real server names them.
ACTIONS: Tuple[Tuple[str, str, str], ...] = (
    ("/ref-update", "ref-update", "POST"),
    ("/fqname-to-id", "name-to-id", "POST"),
    ("/id-to-fqname", "id-to-name", "POST"),
    ("/list-bulk-collection", "list-bulk-collection", "POST"),
    ("/set-tag", "set-tag", "POST"),
)


class ConfigApi:
    """The config API over one `Store` (a new one with the default objects when none is given)."""

    def __init__(self, store: Optional[Store] = None) -> None:
        self.store = store if store is not None else Store()
        self._by_any_name: Dict[str, str] = {}
        for rt in RESOURCE_TYPES.values():
            self._by_any_name[rt.name] = rt.name
            self._by_any_name[rt.field_name] = rt.name
        self.views = Views(self.store)
        self._writes = WritePipelines(self, self.store)
        with self.store.lock:
            if len(self.store) == 0:
                self._writes.provision_defaults()

    # --- type names ---------------------------------------------------------------------------

    def resolve_type(self, name: Any, status: int = 404) -> str:
        """The resource type named `name` (hyphen or underscore form). Unknown: `status`, with the
        real server's words for that case."""
        if isinstance(name, str) and name in self._by_any_name:
            return self._by_any_name[name]
        if status == 400:
            raise bad_request(f"Invalid Contrail resource type: {name}")
        raise ApiError(status, f"Resource type '{name}' not found")

    def resource(self, name: str) -> ResourceType:
        return RESOURCE_TYPES[self.resolve_type(name)]

    # --- lookups for hooks and tests ----------------------------------------------------------

    def lookup(self, obj_type: str, fq_name: List[str]) -> Optional[StoredObject]:
        with self.store.lock:
            uuid = self.store.uuid_for(obj_type, fq_name)
            return self.store.get(uuid) if uuid else None

    def dump(self, obj_type: str) -> List[Dict[str, Any]]:
        """Every object of a type as a full read would return it (no hrefs), sorted by fq_name."""
        with self.store.lock:
            rt = self.resource(obj_type)
            objs = sorted(self.store.objects_of_type(rt.name), key=lambda o: (o.fq_name, o.uuid))
            return [self.views.render(o, "", False, all_fields=True, extra=self.views.link_fields(rt.name))
                    for o in objs]

    # --- CRUD ---------------------------------------------------------------------------------

    def create(self, obj_type: str, body: Any, base_url: str = "") -> Dict[str, Any]:
        with self.store.lock:
            rt = self.resource(obj_type)
            obj = self._writes.create(rt, body)
            answer: Dict[str, Any] = {"name": obj.fq_name[-1], "fq_name": list(obj.fq_name), "uuid": obj.uuid,
                                      "href": f"{base_url}/{obj.type}/{obj.uuid}"}
            if obj.parent_type:
                answer.update(parent_type=obj.parent_type, parent_uuid=obj.parent_uuid,
                              parent_href=f"{base_url}/{obj.parent_type}/{obj.parent_uuid}")
            return answer

    def read(self, obj_type: str, uuid: str, *, fields: Optional[Iterable[str]] = None,
             exclude_back_refs: bool = False, exclude_children: bool = False,
             base_url: str = "", hrefs: bool = True, copy_values: bool = True) -> Dict[str, Any]:
        """One object as the real server renders it; `copy_values=False`: see `views`."""
        with self.store.lock:
            rt = self.resource(obj_type)
            obj = self._writes.get_typed(rt.name, uuid, not_found(unknown_id(uuid)))
            if fields is not None:
                return self.views.render(obj, base_url, hrefs, all_fields=False,
                                         extra=set(fields) | {"id_perms", "perms2"}, copy_values=copy_values)
            extra: Set[str] = set()
            if not exclude_back_refs:
                extra |= self.views.back_ref_fields(rt.name)
            if not exclude_children:
                extra |= self.views.children_fields(rt.name)
            return self.views.render(obj, base_url, hrefs, all_fields=True, extra=extra, copy_values=copy_values)

    def update(self, obj_type: str, uuid: str, body: Any, base_url: str = "") -> Optional[Dict[str, Any]]:
        """PUT: the fields given replace the stored ones. An empty body changes nothing (None)."""
        with self.store.lock:
            rt = self.resource(obj_type)
            current = self._writes.get_typed(rt.name, uuid, not_found(unknown_id(uuid)))
            if not body:
                return None
            if not isinstance(body, dict):
                raise bad_request(f"Bad Request, the {rt.name} body must be an object")
            body = copy_json(body)
            if "perms2" in body and "owner" not in (body["perms2"] or {}):
                raise bad_request("owner in perms2 must be present")
            validate_props(rt.name, body, "http_put")
            validate_ref_attrs(rt.name, body, "http_put")
            change = Change(props={k: body[k] for k in PROPERTIES[rt.name] if k in body},
                            refs={**self._writes.resolve_refs(rt, body, "update", security=True),
                                  **self._writes.resolve_refs(rt, body, "update", security=False)})
            self._writes.apply_update(current, change)
            return {"uuid": uuid, "href": f"{base_url}/{rt.name}/{uuid}"}

    def delete(self, obj_type: str, uuid: str, base_url: str = "") -> None:
        with self.store.lock:
            rt = self.resource(obj_type)
            obj = self.store.get(uuid)
            if obj is None:
                raise not_found(f"ID {uuid} does not exist")
            if obj.type != rt.name:
                raise not_found(f"No {rt.name} object found for id {uuid}")
            self._writes.delete(obj, base_url)

    def list(self, obj_type: str, query: ListQuery, base_url: str = "",
             copy_values: bool = True) -> Dict[str, Any]:
        """The objects a list query selects; `copy_values=False`: see `views`. Rendered with the
        collector paused: a listing of 100,000 objects is as many new dicts, each batch of which
        would otherwise start a collection over every stored object (most of a large listing's
        time); the answer holds no cycles and is dropped once sent."""
        with self.store.lock, collector_paused():
            rt = self.resource(obj_type)
            if query.parent_type:
                query = replace(query, parent_type=self.resolve_type(query.parent_type))
            if query.paginated:
                items, marker = self.views.page(rt, query, base_url, copy_values)
                return {rt.plural: items, "marker": marker}
            return {rt.plural: self.views.list_answer(rt, query, base_url, copy_values)}

    # --- actions ------------------------------------------------------------------------------

    def fqname_to_id(self, body: Any) -> Dict[str, Any]:
        body = _expect_object(body)
        with self.store.lock:
            rt_name = self.resolve_type(body.get("type"))
            fq_name = body.get("fq_name")
            if not is_fq_name(fq_name):
                raise bad_request("Bad Request, fq_name must be a list of strings")
            uuid = self.store.uuid_for(rt_name, fq_name)
            if uuid is None:
                raise not_found(f"Name {fq_repr(fq_name)} not found")
            return {"uuid": uuid}

    def id_to_fqname(self, body: Any) -> Dict[str, Any]:
        body = _expect_object(body)
        uuid = body.get("uuid")
        if not isinstance(uuid, str):
            raise bad_request("Bad Request, uuid must be a string")
        with self.store.lock:
            obj = self.store.get(uuid)
            if obj is None:
                raise not_found(f"UUID {uuid} not found")
            return {"fq_name": list(obj.fq_name), "type": obj.type}

    def ref_update(self, body: Any) -> Dict[str, Any]:
        body = _expect_object(body)
        with self.store.lock:
            obj_type, ref_type = body.get("type"), body.get("ref-type")
            obj_uuid, operation = body.get("uuid"), body.get("operation")
            if None in (obj_type, obj_uuid, ref_type, operation):
                raise bad_request("Bad Request: type/uuid/ref-type/operation is null: "
                                  f"{obj_type}, {obj_uuid}, {ref_type}, {operation}.")
            rt = self.resource(obj_type)
            ref_rt = self.resource(ref_type)
            operation = str(operation).upper()
            if operation not in ("ADD", "DELETE"):
                raise bad_request(f"Bad Request: operation should be add or delete: {operation}")
            ref_uuid, ref_fq_name = body.get("ref-uuid"), body.get("ref-fq-name")
            if not ref_uuid and not ref_fq_name:
                raise bad_request("Bad Request: ref-uuid or ref-fq-name must be specified")
            if not ref_uuid:
                if not is_fq_name(ref_fq_name):
                    raise bad_request("Bad Request: ref-fq-name must be a list of strings")
                ref_uuid = self.store.uuid_for(ref_rt.name, ref_fq_name)
                if ref_uuid is None:
                    raise not_found(f"Name {fq_repr(ref_fq_name)} not found")
            elif operation == "ADD":
                ref_fq_name = self._writes.get_typed(ref_rt.name, ref_uuid, not_found(unknown_id(ref_uuid))).fq_name
            obj = self._writes.get_typed(rt.name, obj_uuid, not_found(unknown_id(obj_uuid)))
            ref_field = f"{ref_rt.field_name}_refs"
            if ref_field not in rt.ref_types:
                raise bad_request(f"Bad Request: {rt.name} has no reference to {ref_rt.name}")
            if operation == "ADD":
                attr = body.get("attr")
                validate_ref_attrs(rt.name, {ref_field: [{"to": ref_fq_name, "attr": attr}]}, "ref-update")
                self._writes.update_one_ref(obj, ref_field, add=Ref(list(ref_fq_name), ref_uuid, copy_json(attr)))
            else:
                if ref_uuid not in obj.refs.get(ref_field, {}) and is_fq_name(ref_fq_name):
                    ref_uuid = self.store.uuid_for(ref_rt.name, ref_fq_name) or ref_uuid
                self._writes.update_one_ref(obj, ref_field, drop=ref_uuid)
            return {"uuid": obj_uuid}

    def set_tag(self, body: Any) -> Dict[str, Any]:
        body = _expect_object(body)
        with self.store.lock:
            return set_tag(self, body)

    def homepage(self, base_url: str) -> Dict[str, Any]:
        links = []
        for rt in RESOURCE_TYPES.values():
            links.append({"link": {"rel": "collection", "href": f"{base_url}/{rt.plural}", "name": rt.name,
                                   "method": None}})
        for rt in RESOURCE_TYPES.values():
            links.append({"link": {"rel": "resource-base", "href": f"{base_url}/{rt.name}", "name": rt.name,
                                   "method": None}})
        for uri, name, method in ACTIONS:
            links.append({"link": {"rel": "action", "href": f"{base_url}{uri}", "name": name, "method": method}})
        return {"href": base_url, "links": links}

    # --- internal operations for hooks --------------------------------------------------------

    def create_internal(self, obj_type: str, body: Dict[str, Any]) -> StoredObject:
        with self.store.lock:
            return self._writes.create(RESOURCE_TYPES[obj_type], body)

    def delete_internal(self, obj_type: str, uuid: str) -> None:
        with self.store.lock:
            obj = self.store.get(uuid)
            if obj is None or obj.type != obj_type:
                raise not_found(f"ID {uuid} does not exist")
            self._writes.delete(obj, "")

    def update_internal(self, obj: StoredObject, change: Change) -> None:
        with self.store.lock:
            self._writes.apply_update(obj, change)


def _expect_object(body: Any) -> Dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request("Bad Request, the body must be a JSON object")
    return body
