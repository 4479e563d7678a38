"""The config API's write pipelines over the in-memory store, in the real contrail-api's order of checks.

`ConfigApi` (api.py) answers requests; the writes it accepts run here, as `VncApiServer`'s
`http_resource_*` and `_put_common` run them:
- create: fq_name present and well formed (400), property and ref-attr types (400), type pre-alloc
  hook, fq_name unique per type (409), parent type (400), uuid given unique (409), refs to security
  objects exist (404), parent exists (404, as the contract asks), other refs exist (400), type pre-create hook, tag-ref
  rules (400);
- update (PUT, ref-update, set-tag): object exists (404), property/ref-attr types (400), refs
  (404/400 as above), type pre-update hook, tag-ref rules; fields given replace the stored ones;
- delete: object exists (404), no children (409), no back-refs (409), type post-delete hook.
The type hooks are handed the `ConfigApi` as a `HookedApi` (hooks.py), whose methods they call
back (under the store's re-entrant lock, which the caller holds); neither they nor this module
import api.py.

Each write is logged at DEBUG: the REST client already logs every write it makes at INFO (and the
daemon's reconciler once more), so in the daemon's embedded mode an INFO line here would be the
third line, and its cost, per write.
"""
from __future__ import annotations

import json
import logging
import re
import uuid as uuid_lib
from datetime import datetime, timezone
from typing import Any, Dict, List, Mapping, Optional, Tuple

from vnc_client.schema import RESOURCE_TYPES, ResourceType
from .errors import ApiError, bad_request, conflict, fq_repr, not_found, unknown_id
from .hooks import Change, HookedApi, ResourceHooks, Undo, VirtualMachineInterfaceHooks
from .security import ApplicationPolicySetHooks, FirewallPolicyHooks, FirewallRuleHooks, SecurityHooks
from .store import OneRefChange, Ref, RefMap, Store, StoredObject, copy_json
from .tags import TagHooks, TagTypeHooks, check_tag_refs, predefined_tag_types
from .validation import PROPERTIES, validate_props, validate_ref_attrs

log = logging.getLogger(__name__)

SECURITY_TYPES = frozenset(
    {"application-policy-set", "firewall-policy", "firewall-rule", "service-group", "address-group"})
DEFAULT_OBJECTS: Tuple[Tuple[str, List[str], Optional[str]], ...] = (
    ("domain", ["default-domain"], None),
    ("project", ["default-domain", "default-project"], "domain"),
    ("policy-management", ["default-policy-management"], None),
)
_ILLEGAL_NAME_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_HOOKS: Dict[str, ResourceHooks] = {
    "tag": TagHooks(),
    "tag-type": TagTypeHooks(),
    "firewall-rule": FirewallRuleHooks(),
    "firewall-policy": FirewallPolicyHooks(),
    "application-policy-set": ApplicationPolicySetHooks(),
    "address-group": SecurityHooks(),
    "service-group": SecurityHooks(),
    "virtual-machine-interface": VirtualMachineInterfaceHooks(),
}
_NO_HOOKS = ResourceHooks()


def _now() -> str:
    return datetime.now(timezone.utc).replace(tzinfo=None).isoformat()


def _default_id_perms(obj_uuid: str, now: str) -> Dict[str, Any]:
    number = uuid_lib.UUID(obj_uuid).int
    return {
        "permissions": {"owner": "cloud-admin", "owner_access": 7, "group": "cloud-admin-group",
                        "group_access": 7, "other_access": 7},
        "uuid": {"uuid_mslong": number >> 64, "uuid_lslong": number & ((1 << 64) - 1)},
        "enable": True, "created": now, "last_modified": now, "description": None,
        "user_visible": True, "creator": None,
    }


def _default_perms2() -> Dict[str, Any]:
    return {"owner": "cloud-admin", "owner_access": 7, "global_access": 0, "share": []}


class WritePipelines:
    """Creates, updates and deletes on one `Store`; the caller holds `store.lock`."""

    def __init__(self, api: HookedApi, store: Store) -> None:
        self._api = api
        self.store = store

    def create(self, rt: ResourceType, body: Any) -> StoredObject:
        """A POST (or a hook's internal create): every check before the store changes, and the
        pre-create hook's side effects undone if a later check refuses the object."""
        if not isinstance(body, dict):
            raise bad_request(f"Bad Request, the {rt.name} body must be an object")
        body = copy_json(body)
        fq_name = body.get("fq_name")
        if not fq_name:
            raise bad_request("Bad Request, no fq_name in POST body")
        if not is_fq_name(fq_name):
            raise bad_request("Bad Request, fq_name must be a list of strings")
        if _ILLEGAL_NAME_CHARS.search(fq_name[-1]):
            raise bad_request("Bad Request, name has illegal xml characters")
        if ":" in fq_name[-1]:
            raise bad_request("Bad Request, name has one of invalid chars {':'}")
        validate_props(rt.name, body, "create")
        validate_ref_attrs(rt.name, body, "create")
        hooks = _HOOKS.get(rt.name, _NO_HOOKS)
        hooks.pre_alloc(self._api, body)
        fq_name = body["fq_name"]
        existing = self.store.uuid_for(rt.name, fq_name)
        if existing:
            raise conflict(f"{fq_repr(fq_name)} already exists with uuid: {existing}")
        parent_type = _parent_type(rt, body.get("parent_type"), fq_name)
        obj_uuid = body.get("uuid")
        if obj_uuid is not None:
            if not isinstance(obj_uuid, str) or not _is_canonical_uuid(obj_uuid):
                raise bad_request(f"Invalid UUID format: {obj_uuid}")
            taken = self.store.get(obj_uuid)
            if taken is not None:
                raise conflict(f"{obj_uuid} already exists with fq_name: {fq_repr(taken.fq_name)}")
        refs = self.resolve_refs(rt, body, "create", security=True)
        parent_uuid = None
        if parent_type:
            parent_uuid = self.store.uuid_for(parent_type, fq_name[:-1])
            if parent_uuid is None:
                # The contract asks for 404 here; the upstream server answers 400 with the same text.
                raise not_found(f"Parent {fq_repr(fq_name[:-1])} type {parent_type} does not exist")
        refs.update(self.resolve_refs(rt, body, "create", security=False))

        obj_uuid = obj_uuid or str(uuid_lib.uuid4())
        now = _now()
        props = {k: body[k] for k in PROPERTIES[rt.name] if k in body}
        if props.get("display_name") is None:
            props["display_name"] = fq_name[-1]
        props["id_perms"] = {**_default_id_perms(obj_uuid, now), **(props.get("id_perms") or {})}
        props["perms2"] = {**_default_perms2(), **(props.get("perms2") or {})}
        obj = StoredObject(rt.name, obj_uuid, list(fq_name), parent_type, parent_uuid, props, refs)
        undo: Undo = []
        try:
            hooks.pre_create(self._api, obj, undo)
            check_tag_refs(rt.name, obj.refs.get("tag_refs", {}).values())
        except ApiError:
            for step in reversed(undo):
                step()
            raise
        self.store.insert(obj)
        log.debug("config-api create type=%s fq_name=%s uuid=%s", rt.name, ":".join(obj.fq_name), obj.uuid)
        return obj

    def update_one_ref(self, current: StoredObject, ref_field: str, add: Optional[Ref] = None,
                        drop: Optional[str] = None) -> None:
        """A ref-update: the same checks as a PUT of the whole field, but the hooks see only the one
        new ref as `added` and the store changes one entry, so the work does not grow with the list
        (an APS refers to every firewall policy of the cluster)."""
        stored = current.refs.get(ref_field, {})
        new = OneRefChange(stored, add, drop)  # the whole field for the hooks that need it, not copied
        if add is not None:
            old = stored.get(add.uuid)
            unchanged = old is not None and _attr_key(old.attr) == _attr_key(add.attr)
        else:
            unchanged = drop not in stored
        change = Change(refs={ref_field: new}, added={ref_field: {add.uuid: add} if add else {}})
        self._check_update(current, change)
        if unchanged and not change.props and set(change.refs) == {ref_field}:
            return
        if change.props or set(change.refs) != {ref_field} or change.refs[ref_field] is not new:
            self._commit_update(current, change)  # a hook widened the change: apply it whole
            return
        self._touch(current, {})
        if add is not None:
            self.store.put_ref(current.uuid, ref_field, add)
        elif drop is not None:
            self.store.drop_ref(current.uuid, ref_field, drop)
        log.debug("config-api update type=%s fq_name=%s uuid=%s fields=%s", current.type,
                  ":".join(current.fq_name), current.uuid, ref_field)

    def apply_update(self, current: StoredObject, change: Change) -> None:
        self._check_update(current, change)
        self._commit_update(current, change)

    def _check_update(self, current: StoredObject, change: Change) -> None:
        _HOOKS.get(current.type, _NO_HOOKS).pre_update(self._api, current, change)
        if "tag_refs" in change.refs:
            check_tag_refs(current.type, change.refs["tag_refs"].values())

    def _commit_update(self, current: StoredObject, change: Change) -> None:
        props = {k: v for k, v in change.props.items() if current.props.get(k) != v}
        refs = {f: r for f, r in change.refs.items() if _ref_key(current.refs.get(f, {})) != _ref_key(r)}
        if not props and not refs:
            return
        self._touch(current, props)
        for ref_field, ref_map_ in refs.items():
            self.store.set_refs(current.uuid, ref_field, ref_map_)
        log.debug("config-api update type=%s fq_name=%s uuid=%s fields=%s", current.type,
                  ":".join(current.fq_name), current.uuid, ",".join(sorted(set(props) | set(refs))))

    def _touch(self, current: StoredObject, props: Dict[str, Any]) -> None:
        """Store the changed properties with `id_perms.last_modified` set to now."""
        id_perms = {**current.props["id_perms"], **(props.get("id_perms") or {})}
        id_perms.update(uuid=current.props["id_perms"]["uuid"], created=current.props["id_perms"]["created"],
                        last_modified=_now())
        props["id_perms"] = id_perms
        self.store.set_props(current.uuid, props)

    def delete(self, obj: StoredObject, base_url: str) -> None:
        """Refused (409) while the object has children or is referred to, as the real server does."""
        children = self.store.children(obj.uuid)
        if children:
            hrefs = [f"{base_url}/{c.type}/{c.uuid}" for c in children]
            raise conflict(f"Delete when children still present: {hrefs}")
        referrers = sorted({(src.type, src.uuid) for src, _f, _r in self.store.referrers(obj.uuid)})
        if referrers:
            hrefs = [f"{base_url}/{t}/{u}" for t, u in referrers]
            raise conflict(f"Delete when resource still referred: {hrefs}")
        self.store.remove(obj.uuid)
        log.debug("config-api delete type=%s fq_name=%s uuid=%s", obj.type, ":".join(obj.fq_name), obj.uuid)
        _HOOKS.get(obj.type, _NO_HOOKS).post_delete(self._api, obj)

    def resolve_refs(self, rt: ResourceType, body: Dict[str, Any], operation: str,
                      security: bool) -> Dict[str, RefMap]:
        """Refs of the request to (security or other) objects, resolved by fq_name (`to`) first,
        as the real server's database layer does; a security object may also be named by uuid."""
        resolved: Dict[str, RefMap] = {}
        for ref_field, target in rt.ref_types.items():
            if ref_field not in body or (target in SECURITY_TYPES) != security:
                continue
            raw = body[ref_field] or []
            if not isinstance(raw, list):
                raise bad_request(f"Bad reference in {operation}: {ref_field} must be a list")
            refs: RefMap = {}
            for ref in raw:
                target_obj = self._ref_target(rt, ref_field, target, ref, operation, security)
                refs[target_obj.uuid] = Ref(list(target_obj.fq_name), target_obj.uuid,
                                            copy_json(ref.get("attr")))
            resolved[ref_field] = refs
        return resolved

    def _ref_target(self, rt: ResourceType, ref_field: str, target: str, ref: Any, operation: str,
                    security: bool) -> StoredObject:
        to = ref.get("to") if isinstance(ref, dict) else None
        fq_name: Optional[List[str]] = to if is_fq_name(to) else None
        ref_uuid = ref.get("uuid") if isinstance(ref, dict) else None
        if security and isinstance(ref_uuid, str):  # the real server's pending-delete check reads it by uuid first: 404
            return self.get_typed(target, ref_uuid, not_found(unknown_id(ref_uuid)))
        if fq_name is not None:
            found = self._api.lookup(target, fq_name)
            if found is None and security:
                raise not_found(unknown_id(f"{target.replace('-', '_')} {fq_repr(fq_name)}"))
        elif isinstance(ref_uuid, str):
            found = self.store.get(ref_uuid)
        else:
            raise bad_request(f"Bad reference in {operation}: {ref_field} entry {ref!r} needs 'to' or 'uuid'")
        if found is None or found.type != target:
            raise bad_request(f"Unknown reference in resource {operation} {rt.name}: {ref_field} {ref!r}.")
        return found

    def get_typed(self, obj_type: str, uuid: Any, missing: ApiError) -> StoredObject:
        """The object `uuid`, which must be of `obj_type`: `missing` when absent, 404 when another type."""
        obj = self.store.get(uuid) if isinstance(uuid, str) else None
        if obj is None:
            raise missing
        if obj.type != obj_type:
            raise not_found(f"No {obj_type} object found for id {uuid}")
        return obj

    def provision_defaults(self) -> None:
        """What the real server creates at start and kube-manager relies on."""
        for obj_type, fq_name, parent_type in DEFAULT_OBJECTS:
            self.create(RESOURCE_TYPES[obj_type], {"fq_name": fq_name, "parent_type": parent_type})
        for name, type_id in predefined_tag_types():
            obj_uuid = str(uuid_lib.uuid4())
            props = {"tag_type_id": type_id, "display_name": name, "perms2": _default_perms2(),
                     "id_perms": {**_default_id_perms(obj_uuid, _now()), "user_visible": False}}
            self.store.insert(StoredObject("tag-type", obj_uuid, [name], None, None, props, {}))


def _parent_type(rt: ResourceType, given: Any, fq_name: List[str]) -> Optional[str]:
    """The parent type of a new object, checked as `validate_parent_type` does (None: no parent)."""
    allowed = list(rt.parent_types)
    if given == "config-root":
        given = None
    if given is not None:
        if given not in allowed:
            raise bad_request(f"Invalid parent type: {given}. Allowed types: {allowed}")
        parent_type: Optional[str] = given
    elif len(allowed) > 1 and "config-root" not in allowed:
        raise bad_request(f"Missing parent type: None. Allowed types: {allowed}")
    else:
        parent_type = allowed[0] if len(allowed) == 1 else None
    if parent_type in (None, "config-root"):
        if len(fq_name) != 1:
            raise bad_request(f"Invalid fq-name of an object with no parent: {fq_name}")
        return None
    if len(fq_name) < 2:
        raise bad_request(f"Invalid fq-name for object with parent_type {parent_type}: {fq_name}")
    return parent_type


def is_fq_name(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(p, str) and p for p in value)


def _is_canonical_uuid(value: str) -> bool:
    try:
        return str(uuid_lib.UUID(value)) == value
    except ValueError:
        return False


def _ref_key(refs: Mapping[str, Ref]) -> Dict[str, str]:
    return {uuid: _attr_key(r.attr) for uuid, r in refs.items()}


def _attr_key(attr: Any) -> str:
    return json.dumps(attr, sort_keys=True)
