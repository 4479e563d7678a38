"""Reading the store the way the real server answers: object renderings and list selections.

A rendered object carries its identity (`uuid`, `name`, `fq_name`, parent, hrefs), its properties and
refs (`{"to", "uuid", "attr", "href"}`), and the back-refs (`<type>_back_refs`) and children
(`<child type>s`, e.g. `firewall_policys`) asked for. Refs and back-refs are sorted by uuid and
children come in creation order, as the real server's Cassandra rows list them.

A rendering is the caller's own: property values and ref attributes are copies. A caller that only
encodes it (the HTTP app) passes `copy_values=False` and gets the stored values themselves, which
is safe because the store never changes a value in place (see `store`): copying is half the cost of
listing thousands of objects.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Dict, List, Optional, Set, Tuple

from vnc_client.schema import RESOURCE_TYPES, ResourceType
from .errors import bad_request
from .ordered import column, uuid_of
from .store import Store, StoredObject, copy_json

# Items per page when a paginated listing names no page_limit: the real server's `paginate_count`.
DEFAULT_PAGE_LIMIT = 256


@dataclass
class ListQuery:
    """The selectors and options of `GET /<plural>` (and `POST /list-bulk-collection`).

    Selectors given together must all match (parent, back-ref target, uuid and fq_name lists,
    property filters)."""

    parent_uuids: Optional[List[str]] = None
    parent_fq_name: Optional[List[str]] = None
    parent_type: Optional[str] = None  # with parent_fq_name: the parent's type (else any allowed one)
    back_ref_uuids: Optional[List[str]] = None
    obj_uuids: Optional[List[str]] = None
    fq_names: Optional[List[List[str]]] = None
    detail: bool = False
    count: bool = False
    fields: List[str] = field(default_factory=list)
    filters: Dict[str, List[Any]] = field(default_factory=dict)
    exclude_hrefs: bool = False
    # A paginated listing (`page_marker` given, even empty or "None": the first page): at most
    # `page_limit` items after `page_marker`, and the marker of the next page in the answer.
    paginated: bool = False
    page_marker: Optional[str] = None
    page_limit: int = DEFAULT_PAGE_LIMIT

    @property
    def anchored(self) -> bool:
        """Selected by parent, back-ref or uuid (the real server walks those by uuid)."""
        return (self.parent_uuids is not None or self.parent_fq_name is not None
                or self.back_ref_uuids is not None or self.obj_uuids is not None or self.fq_names is not None)


def parse_filters(text: Any) -> Dict[str, List[Any]]:
    """`k==<json>,k2==<json>` as the real server reads it (values are JSON, else plain strings;
    values of one key are alternatives, keys are all required)."""
    result: Dict[str, List[Any]] = {}
    if not text:
        return result
    if not isinstance(text, str):
        raise bad_request(f"Invalid filter {text!r}")
    for term in text.split(","):
        parts = term.split("==")
        if len(parts) != 2:
            raise bad_request(f"Invalid filter {text}")
        key, raw = parts
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if isinstance(value, (dict, list)):
            raise bad_request(f"Invalid filter {text}")
        values = result.setdefault(key, [])
        if value not in values:
            values.append(value)
    return result


class Views:
    """Renderings of the objects of one store (callers hold the store lock)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        # target type -> back-ref field names; parent type -> children field names
        self._back_ref_fields: Dict[str, Set[str]] = {}
        self._children_fields: Dict[str, Set[str]] = {}
        for rt in RESOURCE_TYPES.values():
            for target in rt.ref_types.values():
                self._back_ref_fields.setdefault(target, set()).add(f"{rt.field_name}_back_refs")
            for parent in rt.parent_types:
                self._children_fields.setdefault(parent, set()).add(f"{rt.field_name}s")

    def back_ref_fields(self, obj_type: str) -> Set[str]:
        return set(self._back_ref_fields.get(obj_type, ()))

    def children_fields(self, obj_type: str) -> Set[str]:
        return set(self._children_fields.get(obj_type, ()))

    def link_fields(self, obj_type: str) -> Set[str]:
        """Names of the back-ref and children fields a read of `obj_type` can return."""
        return self.back_ref_fields(obj_type) | self.children_fields(obj_type)

    def render(self, obj: StoredObject, base_url: str, hrefs: bool, *, all_fields: bool,
               extra: Set[str], copy_values: bool = True) -> Dict[str, Any]:
        """An object with all its properties and refs (or only those in `extra`), and the back-refs
        and children named in `extra`."""
        out: Dict[str, Any] = {"uuid": obj.uuid, "name": obj.fq_name[-1], "fq_name": list(obj.fq_name)}
        if obj.parent_type:
            out["parent_type"] = obj.parent_type
            out["parent_uuid"] = obj.parent_uuid
            if hrefs:
                out["parent_href"] = f"{base_url}/{obj.parent_type}/{obj.parent_uuid}"
        if hrefs:
            out["href"] = f"{base_url}/{obj.type}/{obj.uuid}"
        self._fill(out, obj, base_url, hrefs, None if all_fields else extra, extra, copy_values)
        return out

    def list_answer(self, rt: ResourceType, query: ListQuery, base_url: str, copy_values: bool = True) -> Any:
        """The value of `{"<plural>": ...}`: `{"count": n}`, plain items `{"uuid", "fq_name",
        "href"}` plus the fields asked for, or detailed items `{"<type>": {...}}`."""
        selected = self._select(rt, query)
        if query.count:
            return {"count": len(selected)}
        selected.sort(key=lambda o: (o.fq_name, o.uuid))
        return self._items(rt, selected, query, base_url, copy_values)

    def page(self, rt: ResourceType, query: ListQuery, base_url: str,
             copy_values: bool = True) -> Tuple[Any, Optional[str]]:
        """A paginated listing's items (or count) and the next page's marker (None: this was the
        last page), as the real server walks them: unanchored, along the type's `ordered.column`s
        after the marker (O(log n + page) with no filter); anchored, by uuid. The marker is the
        last item's column (uuid) when the page is full, even if nothing follows."""
        if query.anchored:
            chosen = sorted(self._select(rt, query), key=lambda o: o.uuid)
            if query.page_marker is not None:
                chosen = [o for o in chosen if o.uuid > uuid_of(query.page_marker)]
            chosen = chosen[:query.page_limit]
        else:
            objects = (self._store.get(uuid_of(key)) for key in self._store.ordered(rt.name).after(query.page_marker))
            chosen = list(islice((o for o in objects if o is not None and self._matches(o, query)), query.page_limit))
        marker = None
        if len(chosen) == query.page_limit:
            last = chosen[-1]
            marker = last.uuid if query.anchored else column(last.fq_name, last.uuid)
        if query.count:
            return {"count": len(chosen)}, marker
        return self._items(rt, chosen, query, base_url, copy_values), marker

    def _items(self, rt: ResourceType, selected: List[StoredObject], query: ListQuery, base_url: str,
               copy_values: bool) -> List[Dict[str, Any]]:
        wanted = set(query.fields)
        hrefs = not query.exclude_hrefs
        if query.detail:
            return [{rt.name: self.render(o, base_url, hrefs, all_fields=True, extra=wanted, copy_values=copy_values)}
                    for o in selected]
        # A plain item is built directly (not rendered in full, then trimmed): a restart lists
        # every object the daemon owns this way, a hundred thousand at the largest scales.
        items = []
        for obj in selected:
            item: Dict[str, Any] = {"uuid": obj.uuid, "fq_name": list(obj.fq_name)}
            if hrefs:
                item["href"] = f"{base_url}/{obj.type}/{obj.uuid}"
            self._fill(item, obj, base_url, hrefs, wanted, wanted, copy_values)
            items.append(item)
        return items

    def _fill(self, out: Dict[str, Any], obj: StoredObject, base_url: str, hrefs: bool,
              fields: Optional[Set[str]], extra: Set[str], copy_values: bool) -> None:
        """Add to `out` the properties and refs in `fields` (all of them: None), and the back-refs
        and children named in `extra`."""
        value = copy_json if copy_values else _as_is
        for name, prop in obj.props.items():
            if fields is None or name in fields:
                out[name] = value(prop)
        ref_types = RESOURCE_TYPES[obj.type].ref_types
        for ref_field, refs in obj.refs.items():
            if fields is None or ref_field in fields:
                out[ref_field] = [
                    _link(r.to, ref_types.get(ref_field, ""), r.uuid, base_url, hrefs, value(r.attr))
                    for _uuid, r in sorted(refs.items())]
        if not extra:
            return
        if not extra.isdisjoint(self._back_ref_fields.get(obj.type, ())):
            for src, _field, ref in sorted(self._store.referrers(obj.uuid), key=lambda t: t[0].uuid):
                name = f"{RESOURCE_TYPES[src.type].field_name}_back_refs"
                if name in extra:
                    out.setdefault(name, []).append(
                        _link(src.fq_name, src.type, src.uuid, base_url, hrefs, value(ref.attr)))
        if not extra.isdisjoint(self._children_fields.get(obj.type, ())):
            for child in self._store.children(obj.uuid):
                name = f"{RESOURCE_TYPES[child.type].field_name}s"
                if name in extra:
                    out.setdefault(name, []).append(_link(child.fq_name, child.type, child.uuid, base_url, hrefs))

    def _select(self, rt: ResourceType, query: ListQuery) -> List[StoredObject]:
        parents = query.parent_uuids
        if query.parent_fq_name is not None:
            types = [query.parent_type] if query.parent_type else [t for t in rt.parent_types if t != "config-root"]
            parents = [u for u in (self._store.uuid_for(t, query.parent_fq_name) for t in types) if u]
        obj_uuids = query.obj_uuids
        if query.fq_names is not None:
            obj_uuids = (obj_uuids or []) + [
                u for u in (self._store.uuid_for(rt.name, fq) for fq in query.fq_names) if u]
            if not obj_uuids:
                return []
        if obj_uuids is None and query.back_ref_uuids is None and parents == []:
            return []  # the parent named does not exist
        # Sets: a list-bulk-collection query may name thousands of ids, checked against every object.
        parent_set, uuid_set, back_set = (None if ids is None else set(ids)
                                          for ids in (parents, obj_uuids, query.back_ref_uuids))
        selected = []
        for obj in self._store.objects_of_type(rt.name):
            if parent_set is not None and obj.parent_uuid not in parent_set:
                continue
            if uuid_set is not None and obj.uuid not in uuid_set:
                continue
            if back_set is not None and not any(not back_set.isdisjoint(refs) for refs in obj.refs.values()):
                continue
            if self._matches(obj, query):
                selected.append(obj)
        return selected

    @staticmethod
    def _matches(obj: StoredObject, query: ListQuery) -> bool:
        """Whether `obj` passes the query's property filters."""
        return not query.filters or all(obj.props.get(k) in values for k, values in query.filters.items())


_NO_ATTR = object()  # a child link has no `attr` key at all (a ref's may be None)


def _as_is(value: Any) -> Any:
    return value


def _link(to: List[str], obj_type: str, uuid: str, base_url: str, hrefs: bool,
          attr: Any = _NO_ATTR) -> Dict[str, Any]:
    """A ref, back-ref or child entry (`attr` only on refs and back-refs)."""
    link: Dict[str, Any] = {"to": list(to), "uuid": uuid}
    if attr is not _NO_ATTR:
        link["attr"] = attr
    if hrefs:
        link["href"] = f"{base_url}/{obj_type}/{uuid}"
    return link
