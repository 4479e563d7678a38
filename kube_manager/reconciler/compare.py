"""Desired against actual, field by field, and what an object refers to: the reconciler's reading
of config API bodies (pure, no I/O; `diff` plans the writes from it).

Comparison is "desired is a subset of actual": every field we set must read back equal; what the
server adds (uuid, href, id_perms, tag_ids, ...) is ignored, and so are fields we never set. A missing
field, null, [], {} and a dict of empty values are all "empty". Ref lists are compared as sets of (target, attr).
"""
from __future__ import annotations

import json
from collections import Counter
from typing import AbstractSet, Any, Dict, Iterator, List, Mapping, Optional, Tuple

from vnc_client.schema import RESOURCE_TYPES

FqName = Tuple[str, ...]
ObjKey = Tuple[str, FqName]  # (resource type, fq_name)

# Fields that name the object rather than describe it: never sent in an update.
IDENTITY_FIELDS = frozenset({"fq_name", "parent_type", "uuid", "parent_uuid"})
# What `kept` keeps of an object's fields beyond those we set: how to address it, and the id the
# config API gives a tag (shown by introspect).
KEPT_FIELDS = ("uuid", "tag_id")
_ABSENT: Any = object()  # a field a body does not hold
ENDPOINT_FIELDS = ("endpoint_1", "endpoint_2")


# --- references --------------------------------------------------------------------------------


def tag_key(tag: str) -> ObjKey:
    """`"type=value"` (global) or `"domain:project:type=value"` (scoped) as a tag key."""
    return ("tag", tuple(tag.split(":")))


def address_group_key(name: str) -> ObjKey:
    """A rule endpoint's `address_group` (`"default-policy-management:<name>"`) as a key."""
    return ("address-group", tuple(name.split(":")))


def ref_target_type(obj_type: str, ref_field: str) -> str:
    rt = RESOURCE_TYPES.get(obj_type)
    if rt is not None and ref_field in rt.ref_types:
        return rt.ref_types[ref_field]
    return ref_field[: -len("_refs")].replace("_", "-")


def ref_fields(body: Mapping[str, Any]) -> Iterator[str]:
    return (name for name in body if name.endswith("_refs"))


def refs(obj_type: str, body: Mapping[str, Any], ref_field: str) -> List[Tuple[ObjKey, Any]]:
    """The (target key, attr) pairs of one ref list, in body order."""
    target_type = ref_target_type(obj_type, ref_field)
    result = []
    for ref in body.get(ref_field) or []:
        if isinstance(ref, dict) and ref.get("to"):
            result.append(((target_type, tuple(ref["to"])), ref.get("attr")))
    return result


def endpoint_targets(body: Mapping[str, Any]) -> List[ObjKey]:
    """Tags and address groups named in a firewall rule's endpoints."""
    targets: List[ObjKey] = []
    for name in ENDPOINT_FIELDS:
        targets.extend(_named_by(body.get(name)))
    return targets


def _named_by(endpoint: Any) -> List[ObjKey]:
    """Tags and address groups named in one rule endpoint."""
    endpoint = endpoint or {}
    targets = [tag_key(t) for t in endpoint.get("tags") or []]
    if endpoint.get("address_group"):
        targets.append(address_group_key(endpoint["address_group"]))
    return targets


def all_targets(obj_type: str, body: Mapping[str, Any], skip: AbstractSet[str] = frozenset()) -> List[ObjKey]:
    """Every object `body` refers to: ref lists (but those in `skip`) and rule endpoints."""
    return TargetReader()(obj_type, body, skip)


class TargetReader:
    """`all_targets`, each rule endpoint read once per endpoint object: the translator shares
    endpoint bodies between rules (632 distinct among the 185,004 endpoints of 15,000
    NetworkPolicies), and a kept body shares the translator's where it reads the same, so a
    resync's fold of every listed rule reads a few hundred endpoints instead of every one. One
    reader serves one pass over bodies that stay alive meanwhile (it keys endpoints by identity)."""

    def __init__(self) -> None:
        self._endpoints: Dict[int, Tuple[Any, List[ObjKey]]] = {}

    def __call__(self, obj_type: str, body: Mapping[str, Any], skip: AbstractSet[str] = frozenset()) -> List[ObjKey]:
        if type(body) is AsDesired:
            body = body.body  # its fields beyond the desired body's (uuid, tag_id) refer to nothing
        targets = [key for name in ref_fields(body) if name not in skip for key, _attr in refs(obj_type, body, name)]
        if obj_type == "firewall-rule":
            for name in ENDPOINT_FIELDS:
                targets.extend(self._endpoint(body.get(name)))
        return targets

    def _endpoint(self, endpoint: Any) -> List[ObjKey]:
        held = self._endpoints.get(id(endpoint))
        if held is None or held[0] is not endpoint:
            held = self._endpoints[id(endpoint)] = (endpoint, _named_by(endpoint))
        return held[1]


# --- comparison --------------------------------------------------------------------------------


def _empty(value: Any) -> bool:
    """None, [], {} or a dict of nothing but empty values (`{"subnet": []}` reads back as null)."""
    if value is None or value == []:
        return True
    if isinstance(value, dict):
        for held in value.values():  # a loop, not all() over a generator: asked of every listed endpoint
            if not _empty(held):
                return False
        return True
    return False


def same(desired: Any, actual: Any) -> bool:
    """`desired` reads back as `actual`: dicts by desired's keys (extra actual keys ignored), lists
    element by element, scalars by equality; empty values are all equal."""
    if desired is actual or desired == actual:
        return True  # the common cases (a field kept as desired, see `kept`), decided at C speed
    if type(desired) is dict and type(actual) is dict and desired.items() <= actual.items():
        # The next commonest, also at C speed: what the server adds to a dict we set (a rule
        # endpoint's `tag_ids`, a service's `protocol_id`).
        return not _empty(desired) or _empty(actual)
    if _empty(desired) or _empty(actual):
        return _empty(desired) and _empty(actual)
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(same(v, actual.get(k)) for k, v in desired.items())
    if isinstance(desired, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(desired) == len(actual)
                and all(same(d, a) for d, a in zip(desired, actual, strict=True)))
    return desired == actual


def attr_key(attr: Any) -> Any:
    """A hashable, order-free form of a ref's attr (`{"sequence": "1.0"}` -> `(("sequence", "1.0"),)`);
    null, {} and a dict of nulls are all None."""
    if isinstance(attr, dict):
        if len(attr) == 1:  # the usual {"sequence": "..."}: no sort needed
            ((name, value),) = attr.items()
            if value is None or isinstance(value, str):
                return None if value is None else ((name, value),)
        items = tuple(sorted((k, v) for k, v in attr.items() if v is not None))
        if not items:
            return None
        try:
            hash(items)
        except TypeError:  # nested values: fall back to canonical JSON
            return json.dumps(dict(items), sort_keys=True)
        return items
    return None if _empty(attr) else json.dumps(attr, sort_keys=True)


def same_refs(obj_type: str, ref_field: str, desired: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    wanted, held = desired.get(ref_field) or (), actual.get(ref_field) or ()
    if len(wanted) == len(held):
        # The usual case first, at C speed: the same targets with equal attrs, in whatever order
        # (a listing answers a policy's refs in its own order, each with a uuid besides).
        by_target = _by_target(wanted)
        if by_target is not None and by_target == _by_target(held):
            return True

    def canon(body: Mapping[str, Any]) -> Counter:
        return Counter((key, attr_key(attr)) for key, attr in refs(obj_type, body, ref_field))
    return canon(desired) == canon(actual)


def _by_target(ref_list: Any) -> Optional[Dict[Tuple[str, ...], Any]]:
    """A ref list as {target fq_name: attr as it is}; None unless every ref is a dict naming a
    target of its own (then `same_refs` compares the lists as multisets, attrs normalised)."""
    found = {}
    for ref in ref_list:
        to = ref.get("to") if type(ref) is dict else None
        if not to:
            return None
        found[tuple(to)] = ref.get("attr")
    return found if len(found) == len(ref_list) else None


def changed_fields(obj_type: str, desired: Mapping[str, Any], actual: Mapping[str, Any],
                   skip: AbstractSet[str] = frozenset()) -> Dict[str, Any]:
    """The top-level fields of `desired` that `actual` does not hold; what a partial PUT sends."""
    if isinstance(actual, AsDesired) and actual.body is desired:
        return {}  # kept as this very body: every field reads back as desired
    changed = {}
    for name, value in desired.items():
        if name in IDENTITY_FIELDS or name in skip or value is actual.get(name):
            continue
        equal = (same_refs(obj_type, name, desired, actual) if name.endswith("_refs")
                 else same(value, actual.get(name)) and (name != "action_list" or _same_logging(value, actual.get(name))))
        if not equal:
            changed[name] = value
    return changed


def _same_logging(desired: Any, actual: Any) -> bool:
    """A rule's `action_list.log` (SPEC 15), absent meaning false: a rule that stops logging is
    written, though a subset comparison would take the server's `log: true` for something it adds."""
    return bool(desired.get("log")) == bool(actual.get("log") if isinstance(actual, dict) else False)


class AsDesired(Mapping[str, Any]):
    """What `kept` keeps of an object that reads back exactly as desired: the desired body itself
    (shared; bodies are replaced, never changed) and the KEPT_FIELDS the config API gave it, in a
    fraction of a dict's size: nearly every object is as desired, and a dict of the same fields
    per object was the largest item of the reconciler's memory on a large cluster."""

    __slots__ = ("body", "_uuid", "_tag_id")

    def __init__(self, body: Mapping[str, Any], uuid: Optional[str], tag_id: Optional[str]) -> None:
        self.body, self._uuid, self._tag_id = body, uuid, tag_id

    def __getitem__(self, name: str) -> Any:
        if name == "uuid" and self._uuid is not None:
            return self._uuid
        if name == "tag_id" and self._tag_id is not None:
            return self._tag_id
        return self.body[name]

    def __iter__(self) -> Iterator[str]:
        if self._uuid is not None:
            yield "uuid"
        if self._tag_id is not None:
            yield "tag_id"
        yield from self.body

    def __len__(self) -> int:
        return len(self.body) + (self._uuid is not None) + (self._tag_id is not None)

    def __repr__(self) -> str:
        return f"AsDesired({dict(self)!r})"


def same_desired(held: Optional[Mapping[str, Any]], other: Optional[Mapping[str, Any]]) -> bool:
    """`held` is kept as the very desired body `other` is (or as the body `other` keeps): both
    read the same in every field we set, and refer to the same objects."""
    if type(held) is not AsDesired:
        return False
    return held.body is (other.body if type(other) is AsDesired else other)


def kept(obj_type: str, desired: Optional[Mapping[str, Any]], actual: Mapping[str, Any],
         skip: AbstractSet[str] = frozenset(), readings: Optional["Readings"] = None) -> Mapping[str, Any]:
    """What the reconciler keeps of `actual`, an object as the config API holds it, to diff it
    against `desired` later: its KEPT_FIELDS and the fields we set, each field that reads back as
    desired kept as desired's own (shared) value. A full copy of every written object (what the
    server adds: name, hrefs, parent uuid; every value decoded anew) was most of the daemon's memory
    on a large cluster. An object we do not want (desired None) is kept whole: it is
    deleted soon, and introspect shows it as the config API has it. `skip`: fields kept as they
    are (the ref lists a RefListIndex owns). An object all of whose fields read back as desired
    (nearly all of them) is kept as an `AsDesired`. `readings`: a listing's page shares one."""
    if desired is None:
        return actual
    readings = readings or Readings()
    as_desired = not skip and "uuid" not in desired and "tag_id" not in desired
    if as_desired and readings.as_desired(obj_type, desired, actual):
        tag_id = actual.get("tag_id")  # a tag's only
        return AsDesired(desired, own_copy(actual.get("uuid")), None if tag_id is None else own_copy(tag_id))
    result = {name: own_copy(actual[name]) for name in KEPT_FIELDS if name in actual}
    for name, value in desired.items():
        if name not in actual:
            # A listing answers no `parent_type`: an identity field is never compared (nor
            # written in an update), its absence no difference.
            as_desired = as_desired and name in IDENTITY_FIELDS
            continue
        held = actual[name]
        if name not in skip and readings.same_field(obj_type, name, desired, actual):
            held = value
        else:
            as_desired = False
        result[name] = held
    if as_desired:
        return AsDesired(desired, result.get("uuid"), result.get("tag_id"))
    return result


class Readings:
    """`kept`'s reading of fields, with what it found read the same: a desired value (by
    identity) and a value it read back as, so that the next equal value read for it is decided
    by one comparison at C speed. The translator shares endpoints and services between rules, and
    the config API adds to each (`tag_ids`, `protocol_id`), so nearly every rule's endpoints and
    service were read field by field (`same`). One per page of a listing: what it keeps of the
    page lives no longer than the page."""

    def __init__(self) -> None:
        self._same: Dict[int, Tuple[Any, Any]] = {}

    def as_desired(self, obj_type: str, desired: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
        """Every field of `desired` reads back as desired in `actual` (an identity field may be
        absent: a listing answers no `parent_type`). Asked of every listed object: `same_field`'s
        first steps are inlined."""
        known = self._same
        for name, value in desired.items():
            held = actual.get(name, _ABSENT)
            if value == held:
                continue
            if held is _ABSENT:
                if name in IDENTITY_FIELDS:
                    continue
                return False
            found = known.get(id(value))
            if (found is None or found[0] is not value or found[1] != held) and not self.same_field(
                    obj_type, name, desired, actual):
                return False
        return True

    def same_field(self, obj_type: str, name: str, desired: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
        """Field `name` (held by both) of `desired` reads back as desired in `actual`."""
        value, held = desired[name], actual[name]
        if value == held:
            return True  # the common case (most fields read back exactly as set), at C speed
        if name.endswith("_refs"):
            return same_refs(obj_type, name, desired, actual)  # lists of one object's own: nothing to share
        found = self._same.get(id(value))
        if found is not None and found[0] is value and found[1] == held:
            return True
        if not same(value, held):
            return False
        self._same[id(value)] = (value, held)
        return True


def own_copy(value: Any) -> Any:
    """A string kept for long as a fresh copy of its own, other values as they are. A listing (or a
    create's answer) is decoded into one block of memory; one string of each body kept from it (its
    uuid) kept every page of that memory from going back to the system (docs/operations.md,
    "Measurements behind the code")."""
    return value.encode().decode() if isinstance(value, str) else value


def matches(obj_type: str, desired: Mapping[str, Any], actual: Optional[Mapping[str, Any]]) -> bool:
    """The object in the config API is exactly as desired (for every field we set)."""
    return actual is not None and not changed_fields(obj_type, desired, actual)
