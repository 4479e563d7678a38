"""Tags, tag types and `POST /set-tag`, with the real server's rules (resources/tag.py, tag_type.py,
and `VncApiServer.set_tag`).

- A tag is created from `tag_type_name` and `tag_value`; the type is lower-cased and the name (last
  fq_name element and display_name) becomes `<type>=<value>`.
- Its tag-type object is found or created on the fly (invisible to users), and deleted again with
  the last tag of a user-defined type.
- `tag_id` is the hex string `0x<type id:04x><value id:04x>`, i.e. `type_id << 16 | value_id`: the
  pre-defined types have fixed ids (label 0, application 1, tier 2, deployment 3, site 4), user
  types get the lowest free id from 0x00ff, and values the lowest free id per type from 0; freed ids
  are reused.
- A type is single-valued per object except `label`; address groups may carry `label` tags only.
"""
from __future__ import annotations

import uuid as uuid_lib
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from .errors import ApiError, bad_request, fq_repr, not_found, unknown_id
from .hooks import Change, HookedApi, ResourceHooks, Undo
from .store import Ref, StoredObject, ref_map


PREDEFINED_TAG_TYPES: Dict[str, int] = {"label": 0, "application": 1, "tier": 2, "deployment": 3, "site": 4}
MULTI_VALUED_TAG_TYPES = frozenset({"label"})
ADDRESS_GROUP_TAG_TYPES = frozenset({"label"})

_TYPE_ID_POOL = "tag-type-ids"
_TYPE_ID_START = 0x00FF  # ids below are reserved for pre-defined types
_ID_SPACE = 0xFFFF


def _value_pool(api: HookedApi, type_str: str):
    return api.store.pool(f"tag-values:{type_str}", 0, _ID_SPACE)


def underscored(obj_type: str) -> str:
    return obj_type.replace("-", "_")


def tag_type_of(ref: Ref) -> str:
    return ref.to[-1].partition("=")[0]


class TagTypeHooks(ResourceHooks):
    def pre_create(self, api: HookedApi, obj: StoredObject, undo: Undo) -> None:
        type_str = obj.fq_name[-1]
        obj.props["display_name"] = type_str
        if obj.props.get("tag_type_id") is not None:
            raise bad_request("Tag Type ID is not setable")
        pool = api.store.pool(_TYPE_ID_POOL, _TYPE_ID_START, _ID_SPACE - _TYPE_ID_START)
        type_id = pool.alloc(type_str)
        if type_id is None:
            raise ApiError(500, "Tag type id space exhausted")
        undo.append(lambda: pool.free(type_id, type_str))
        obj.props["tag_type_id"] = f"0x{type_id:04x}"

    def pre_update(self, api: HookedApi, current: StoredObject, change: Change) -> None:
        if change.props.get("display_name") or change.props.get("tag_type_id"):
            raise bad_request("Tag Type value or ID cannot be updated")

    def post_delete(self, api: HookedApi, obj: StoredObject) -> None:
        type_str = obj.fq_name[-1]
        pool = api.store.pool(_TYPE_ID_POOL, _TYPE_ID_START, _ID_SPACE - _TYPE_ID_START)
        pool.free(int(obj.props["tag_type_id"], 0), type_str)
        api.store.drop_pool(f"tag-values:{type_str}")


class TagHooks(ResourceHooks):
    def pre_alloc(self, api: HookedApi, body: Dict[str, Any]) -> None:
        type_str = body.get("tag_type_name")
        value_str = body.get("tag_value")
        if type_str is None or value_str is None:
            raise bad_request("Tag must be created with a type and a value")
        type_str = type_str.lower()
        name = f"{type_str}={value_str}"
        body["fq_name"][-1] = name
        body["display_name"] = name
        body["tag_type_name"] = type_str

    def pre_create(self, api: HookedApi, obj: StoredObject, undo: Undo) -> None:
        if obj.props.get("tag_id") is not None:
            raise bad_request("Tag ID is not setable")
        if "tag_type_refs" in obj.refs:
            raise bad_request("Tag Type reference is not setable")
        type_str = obj.props["tag_type_name"]
        tag_type = api.lookup("tag-type", [type_str])
        if tag_type is None:
            tag_type = api.create_internal("tag-type", {
                "fq_name": [type_str], "id_perms": {"user_visible": False}})
            created_uuid = tag_type.uuid
            undo.append(lambda: api.delete_internal("tag-type", created_uuid))
        obj.refs["tag_type_refs"] = {tag_type.uuid: Ref(list(tag_type.fq_name), tag_type.uuid, None)}
        owner = ":".join(obj.fq_name)
        pool = _value_pool(api, type_str)
        value_id = pool.alloc(owner)
        if value_id is None:
            raise ApiError(500, f"Tag value id space of type {type_str!r} exhausted")
        undo.append(lambda: pool.free(value_id, owner))
        obj.props["tag_id"] = f"{tag_type.props['tag_type_id']}{value_id:04x}"
        obj.props["perms2"] = {**obj.props.get("perms2", {}), "owner": "cloud-admin", "global_access": 7}

    def pre_update(self, api: HookedApi, current: StoredObject, change: Change) -> None:
        if any(change.props.get(p) is not None for p in ("display_name", "tag_type_name", "tag_value", "tag_id")):
            raise bad_request("Tag name, type, value or ID cannot be updated")
        if "tag_type_refs" in change.refs:
            raise bad_request("Tag-type reference cannot be updated")

    def post_delete(self, api: HookedApi, obj: StoredObject) -> None:
        type_str = obj.props["tag_type_name"]
        _value_pool(api, type_str).free(int(obj.props["tag_id"], 0) & 0xFFFF, ":".join(obj.fq_name))
        if type_str in PREDEFINED_TAG_TYPES:
            return
        for ref in obj.refs.get("tag_type_refs", {}).values():
            try:
                api.delete_internal("tag-type", ref.uuid)
            except ApiError as exc:
                if exc.status not in (404, 409):  # 409: other tags of the type remain
                    raise


def check_tag_refs(obj_type: str, tag_refs: Iterable[Ref]) -> None:
    """The constraints every object's tag refs obey (`_validate_tag_refs` of the real server)."""
    per_type: Dict[str, int] = {}
    for ref in tag_refs:
        tag_type = tag_type_of(ref)
        per_type[tag_type] = per_type.get(tag_type, 0) + 1
    for tag_type, count in per_type.items():
        if count > 1 and tag_type not in MULTI_VALUED_TAG_TYPES and obj_type != "firewall-rule":
            raise bad_request(f"Tag type '{tag_type}' cannot be set multiple times on the same "
                              f"{underscored(obj_type).replace('_', ' ').title()} resource type")
        if obj_type == "address-group" and tag_type not in ADDRESS_GROUP_TAG_TYPES:
            raise bad_request(f"Invalid tag type {tag_type} for object type {underscored(obj_type)}")


def tag_type_id(api: HookedApi, type_str: str) -> int:
    """The numeric id of a tag type (pre-defined, or an existing tag-type object: else 404)."""
    if type_str in PREDEFINED_TAG_TYPES:
        return PREDEFINED_TAG_TYPES[type_str]
    tag_type = api.lookup("tag-type", [type_str])
    if tag_type is None:
        raise not_found(unknown_id(f"tag_type {fq_repr([type_str])}"))
    return int(tag_type.props["tag_type_id"], 0)


def set_tag(api: HookedApi, body: Dict[str, Any]) -> Dict[str, Any]:
    """`POST /set-tag`: set, replace or remove tags of one object (see module docstring)."""
    body = dict(body)
    obj_type = body.pop("obj_type", None)
    obj_uuid = body.pop("obj_uuid", None)
    if obj_type is None or obj_uuid is None:
        raise bad_request("Object type and UUID must be specified")
    rt_name = api.resolve_type(obj_type, status=400)
    obj = api.store.get(obj_uuid) if isinstance(obj_uuid, str) else None
    if obj is None or obj.type != rt_name:
        raise not_found(unknown_id(obj_uuid))

    stored = list(obj.refs.get("tag_refs", {}).values())
    refs = stored
    for raw_type, attrs in body.items():
        tag_type = str(raw_type).lower()
        if attrs is None:
            refs = [r for r in refs if tag_type_of(r) != tag_type]
            continue
        refs = _apply_tag_change(api, obj, tag_type, attrs, refs)
    if refs != stored:
        api.update_internal(obj, Change(refs={"tag_refs": ref_map(refs)}))
    return {}


def _apply_tag_change(api: HookedApi, obj: StoredObject, tag_type: str, attrs: Any,
                      refs: List[Ref]) -> List[Ref]:
    if not isinstance(attrs, dict):
        raise bad_request(f"Tag type {tag_type}: expected an object or null, got {attrs!r}")
    is_global = bool(attrs.get("is_global", False))
    value = attrs.get("value")
    add_values = _string_set(tag_type, "add_values", attrs.get("add_values", []))
    delete_values = _string_set(tag_type, "delete_values", attrs.get("delete_values", []))
    multi = tag_type in MULTI_VALUED_TAG_TYPES
    if not multi and (add_values or delete_values):
        raise bad_request(f"Tag type {tag_type} cannot be set multiple times on a same object.")
    if obj.type == "address-group" and tag_type not in ADDRESS_GROUP_TAG_TYPES:
        raise bad_request(f"Invalid tag type {tag_type} for object type {underscored(obj.type)}")
    current = {r.to[-1].partition("=")[2]: r for r in refs if tag_type_of(r) == tag_type}
    if not multi:
        if not isinstance(value, str):
            raise bad_request(f"No valid value provided for tag type {tag_type}")
        if value in current:
            return refs
        refs = [r for r in refs if tag_type_of(r) != tag_type]
        return refs + [_locate_tag(api, obj, tag_type, value, is_global)]
    if value is not None:
        if not isinstance(value, str):
            raise bad_request(f"No valid value provided for tag type {tag_type}")
        add_values.add(value)
    refs = refs + [_locate_tag(api, obj, tag_type, v, is_global) for v in sorted(add_values - set(current))]
    drop = {current[v].uuid for v in delete_values & set(current)}
    return [r for r in refs if r.uuid not in drop]


def _string_set(tag_type: str, key: str, values: Any) -> Set[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise bad_request(f"Tag type {tag_type}: {key} must be a list of strings")
    return set(values)


def _locate_tag(api: HookedApi, obj: StoredObject, tag_type: str, value: str, is_global: bool) -> Ref:
    name = f"{tag_type}={value}"
    fq_name = _tag_scope(api, obj, name) if not is_global else [name]
    tag = api.lookup("tag", fq_name)
    if tag is None:
        raise not_found(f"Tag with FQName {fq_repr(fq_name)} not found")
    return Ref(list(tag.fq_name), tag.uuid, None)


def _tag_scope(api: HookedApi, obj: StoredObject, name: str) -> List[str]:
    """Where a non-global tag lives: in the object's project (or the owner's), as on the real server."""
    if obj.type == "project":
        return obj.fq_name + [name]
    if obj.parent_type == "project":
        return obj.fq_name[:-1] + [name]
    owner = _owner_uuid(obj)
    if owner is not None:
        owner_obj = api.store.get(owner)
        if owner_obj is None:
            raise not_found(f"Cannot find {underscored(obj.type)} {obj.uuid} owner")
        return owner_obj.fq_name + [name]
    raise not_found(f"Not able to determine the scope of the tag '{name}'")


def _owner_uuid(obj: StoredObject) -> Optional[str]:
    owner = (obj.props.get("perms2") or {}).get("owner")
    try:
        return str(uuid_lib.UUID(owner)) if isinstance(owner, str) else None
    except ValueError:
        return None


def predefined_tag_types() -> List[Tuple[str, str]]:
    """(name, tag_type_id) of the tag types the real server provisions at start."""
    return [(name, f"0x{type_id:04x}") for name, type_id in PREDEFINED_TAG_TYPES.items()]
