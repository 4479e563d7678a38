"""Ownership marks: which objects in the config API are ours to change and delete.

SPEC section 1: every object kube-manager creates carries `annotations.key_value_pair` entries
`owner` and `cluster`; those marks, never names alone, decide what kube-manager may touch. An
operator's hand-made `k8s-...` rule, or the objects of a second cluster sharing the same Contrail,
are therefore never repaired or garbage-collected by us.

At start (and at every resync) the reconciler reads the config API once per resource type (the
fields it compares, a page at a time) and sorts each page into the objects we own and the others.
The others still matter: a shared object (tag, address group) made by another cluster is used as
it is, and an unowned rule or policy under one of our names is a conflict to report, not to
overwrite.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Protocol, Sequence, Tuple

from kube_manager.translator.bodies import annotation_values

FqName = Tuple[str, ...]
Objects = Dict[str, Dict[FqName, Dict[str, Any]]]  # resource type -> fq_name -> body

# The types the translator emits, in make order (what others refer to first).
OWNED_TYPES: Tuple[str, ...] = (
    "tag", "address-group", "firewall-rule", "firewall-policy", "application-policy-set")
# Shared objects: referred to by objects of several NetworkPolicies (and clusters).
SHARED_TYPES = frozenset({"tag", "address-group"})


class Lister(Protocol):
    """The part of the config API client a listing needs (vnc_client.client.VncClient fits)."""

    def list_pages(self, obj_type: str, page_limit: Optional[int], *, detail: bool = False,
                   fields: Sequence[str] | None = None,
                   exclude_hrefs: bool = False) -> Iterator[List[Dict[str, Any]]]: ...


def annotation_map(body: Mapping[str, Any]) -> Dict[str, Any]:
    """The `annotations.key_value_pair` list of a body as a dict (empty when absent or malformed)."""
    pairs = (body.get("annotations") or {}).get("key_value_pair") or []
    result: Dict[str, Any] = {}
    for pair in pairs:
        if isinstance(pair, dict) and isinstance(pair.get("key"), str):
            result[pair["key"]] = pair.get("value")
    return result


@dataclass(frozen=True)
class OwnershipMarks:
    """Our `owner` (`kubernetes_cluster_owner`) and `cluster` (`cluster_name`) marks."""

    owner: str
    cluster: str

    def owns(self, body: Mapping[str, Any]) -> bool:
        return annotation_values(body, "owner", "cluster") == (self.owner, self.cluster)

    def describe(self, body: Mapping[str, Any]) -> str:
        """Who owns `body`, for log lines about conflicts."""
        marks = annotation_map(body)
        if "owner" not in marks and "cluster" not in marks:
            return "no owner marks"
        return f"owner={marks.get('owner')!r} cluster={marks.get('cluster')!r}"


@dataclass
class TypeListing:
    """One type read from the config API: our objects, and everyone else's under that type."""

    obj_type: str
    owned: Dict[FqName, Dict[str, Any]] = field(default_factory=dict)
    others: Dict[FqName, Dict[str, Any]] = field(default_factory=dict)


def fq_name_of(body: Mapping[str, Any]) -> FqName:
    return tuple(body.get("fq_name") or ())


def list_type(client: Lister, marks: OwnershipMarks, obj_type: str, fields: Optional[Iterable[str]],
              page_limit: int) -> Iterator[TypeListing]:
    """A listing of `obj_type` in pages of at most `page_limit` objects, each sorted into ours and
    the others by the marks (`ActualState.load` folds them in one at a time).

    `fields`: read only those fields besides the marks (`annotations`), `uuid` and `fq_name`, in a
    plain listing without hrefs; None reads the objects whole (`detail=True`). A resync needs no
    more than the fields it compares, and a detailed listing of 350,000 rules spent most of a
    restart rendering, sending and decoding fields nobody reads.
    """
    if fields is None:
        pages = client.list_pages(obj_type, page_limit, detail=True)
    else:
        pages = client.list_pages(obj_type, page_limit, fields=sorted({"annotations", *fields} - {"uuid", "fq_name"}),
                                  exclude_hrefs=True)
    owns = marks.owns
    ours: Any = None  # annotations found ours: the next equal ones are, without reading their pairs
    for bodies in pages:
        listing = TypeListing(obj_type)
        for body in bodies:
            fq_name = fq_name_of(body)
            if not fq_name:
                continue
            annotations = body.get("annotations")
            if annotations is not None and annotations == ours:
                listing.owned[fq_name] = body
            elif owns(body):
                listing.owned[fq_name] = body
                ours = annotations
            else:
                listing.others[fq_name] = body
        yield listing
