"""The JSON shapes of the Kubernetes objects the translator reads, in one table, and the checker
that holds a manifest fragment to its shape before any of its values is used (SPEC 11).

Type confusion is a class of problem, not a list of bugs: a list where a string belongs (the
`policyTypes: [["Ingress"]]` that once raised TypeError), a string where an object belongs, a
boolean where a number belongs. Checking types where each value happens to be used misses the next
place that forgets; so the type of every field the translator reads is declared here once, and each
parser first conforms its fragment to its shape: the code after that sees only well-typed values.

Nulls are read as the API server decodes them: a null field is absent, a null list entry is the
entry type's zero value (`{}`, `""`). A list marked `each` is a unit of narrow rejection: the
checker only makes sure it is a list and leaves its entries to the parser, which conforms them one
at a time and drops only the bad ones (a peer, a port, a rule block). Closed objects refuse unknown
fields as the API server's strict decoding does, so a misspelt `from` never opens a block.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any, Callable, Iterable, List, Mapping, Tuple

from .validation import InvalidInput


class _Mismatch(Exception):
    """A shape mismatch on its way up: each enclosing level prepends its part of the path, so a
    path is only ever built for a value that does not conform."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.where: List[str] = []


def conform(raw: Any, shape: "Shape", path: str) -> Any:
    """`raw` conformed to `shape` (nulls resolved, unknown fields of open objects left out);
    raises InvalidInput naming the path of the first value that does not fit.

    Well-formed input (every field the shape names of its exact JSON type, no null anywhere the
    shape looks) is checked without copying and returned as it is: conforming copied every pod's
    metadata and labels, a fifth of a bulk load. Only then may an open object come back with its
    unknown fields, which no caller reads (they read fields by name); all else is the same value.
    """
    if shape.fits(raw):
        return raw
    try:
        return shape.conform(raw)
    except _Mismatch as exc:
        where = (path + "".join(reversed(exc.where))).lstrip(".")
        raise InvalidInput(f"{where}: {exc.message}" if where else exc.message) from None


def as_object(raw: Any, path: str) -> Mapping[str, Any]:
    """`raw` itself when it is an object (null is `{}`), for checking its fields one at a time."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InvalidInput(f"{path}: expected an object, got {type(raw).__name__}")
    return raw


def conform_field(body: Mapping[str, Any], shape: "Fields", name: str, path: str) -> Any:
    """Field `name` of an object of `shape` (whose other fields are not touched); None if absent."""
    raw = body.get(name)
    if raw is None:
        return None
    field_shape = shape.fields[name]
    return raw if field_shape.fits(raw) else conform(raw, field_shape, f"{path}.{name}")  # (path made only then)


class Shape:
    """The expected JSON type of one value."""

    @cached_property
    def fits(self) -> Callable[[Any], bool]:
        """`_compile(self)`, made when first asked (shapes are immutable module constants): most
        shapes of the table are only ever met nested in another's check, and compiling them all
        was the largest single cost of importing the translator, on every process's start."""
        return _compile(self)

    def conform(self, raw: Any) -> Any:
        raise NotImplementedError

    def zero(self) -> Any:
        """What a null list entry of this type reads as; None: a null entry is refused."""
        return None


@dataclass(frozen=True)
class Scalar(Shape):
    name: str                      # "a string", for messages
    types: Tuple[type, ...]
    null_entry: Any = None         # what a null list entry reads as (None: refused)

    def conform(self, raw: Any) -> Any:
        # bool is an int to Python, never to JSON
        if isinstance(raw, self.types) and (raw.__class__ is not bool or bool in self.types):
            return raw
        raise _Mismatch(f"expected {self.name}, got {type(raw).__name__}")

    def zero(self) -> Any:
        return self.null_entry


def _entry(shape: Shape, entry: Any, where: Any) -> Any:
    """A list entry or map value (`where`: its index or key); null is the shape's zero, if any."""
    try:
        if entry is None:
            zero = shape.zero()
            if zero is not None:
                return zero
        return shape.conform(entry)
    except _Mismatch as exc:
        exc.where.append(f"[{where!r}]")
        raise


@dataclass(frozen=True)
class ListOf(Shape):
    item: Shape
    each: bool = False  # entries left raw, for the parser to conform (and reject) one at a time

    def conform(self, raw: Any) -> Any:
        if not isinstance(raw, list):
            raise _Mismatch(f"expected a list, got {type(raw).__name__}")
        if self.each:
            return raw
        item = self.item
        return [_entry(item, entry, i) for i, entry in enumerate(raw)]


@dataclass(frozen=True)
class MapOf(Shape):
    """A map with string keys (labels)."""

    value: Shape

    def conform(self, raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise _Mismatch(f"expected an object, got {type(raw).__name__}")
        value, result = self.value, {}
        for key, entry in raw.items():
            if key.__class__ is not str:
                raise _Mismatch(f"key {key!r} is not a string")
            result[key] = _entry(value, entry, key)
        return result


def unknown_fields(unknown: List[str], known: Iterable[str]) -> str:
    """"unknown field 'podSelectr' (did you mean 'podSelector'?)": a misspelling is the likely cause,
    and the person reading it should not have to compare the two by eye."""
    known = list(known)
    named = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        named.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    return f"unknown field {', '.join(named)}"


@dataclass(frozen=True)
class Fields(Shape):
    """An object with known fields; `closed`: any other field is refused."""

    fields: Mapping[str, Shape]
    closed: bool = True

    def conform(self, raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise _Mismatch(f"expected an object, got {type(raw).__name__}")
        fields, result = self.fields, {}
        if self.closed:
            unknown = sorted(str(k) for k in raw if k not in fields)
            if unknown:
                raise _Mismatch(unknown_fields(unknown, fields))
        for key, value in raw.items():
            shape = fields.get(key)
            if shape is None or value is None:
                continue
            try:
                result[key] = shape.conform(value)
            except _Mismatch as exc:
                exc.where.append(f".{key}")
                raise
        return result

    def zero(self) -> Any:
        return {}


def fields(closed: bool = True, **shapes: Shape) -> Fields:
    return Fields(MappingProxyType(shapes), closed)


def _compile(shape: Shape) -> Callable[[Any], bool]:
    """A check that `raw` already is its own conformed value: exact JSON classes (a subclass takes
    the full path), no null where a zero or a refusal would apply, no unknown field of a closed
    object. It builds nothing and reports nothing; False only means "take the full path".

    The check of a whole shape is written out as one function (nested shapes inline, as loops
    and `if`s): one call per pod or policy instead of one per nested object and a generator per
    list, which were a third of reading a pod.
    """
    constants: dict = {"_ABSENT": _ABSENT}
    lines = ["def fits(v0):"]
    _emit(shape, "v0", 1, lines, constants)
    lines.append("    return True")
    exec("\n".join(lines), constants)  # noqa: S102 - source built above from the shape table only
    return constants["fits"]


def _emit(shape: Shape, var: str, depth: int, lines: List[str], constants: dict) -> None:
    """Append the statements checking variable `var` against `shape` (indented by `depth`)."""
    pad, name = "    " * depth, f"c{len(constants)}"
    if isinstance(shape, Scalar):  # bool only where named, as Scalar.conform has it
        constants[name] = frozenset(shape.types)
        lines.append(f"{pad}if {var}.__class__ not in {name}: return False")
    elif isinstance(shape, ListOf):
        lines.append(f"{pad}if {var}.__class__ is not list: return False")
        if not shape.each:
            item = f"v{depth}"
            lines.append(f"{pad}for {item} in {var}:")
            lines.append(f"{pad}    if {item} is None: return False")
            _emit(shape.item, item, depth + 1, lines, constants)
    elif isinstance(shape, MapOf):
        key, value = f"k{depth}", f"v{depth}"
        lines.append(f"{pad}if {var}.__class__ is not dict: return False")
        lines.append(f"{pad}for {key}, {value} in {var}.items():")
        lines.append(f"{pad}    if {key}.__class__ is not str or {value} is None: return False")
        _emit(shape.value, value, depth + 1, lines, constants)
    else:
        assert isinstance(shape, Fields), shape
        lines.append(f"{pad}if {var}.__class__ is not dict: return False")
        if shape.closed:
            constants[name] = frozenset(shape.fields)
            lines.append(f"{pad}if not {name} >= {var}.keys(): return False")
        for key, field_shape in shape.fields.items():
            value = f"v{depth}"
            lines.append(f"{pad}{value} = {var}.get({key!r}, _ABSENT)")
            lines.append(f"{pad}if {value} is not _ABSENT:")  # a null fails every check
            _emit(field_shape, value, depth + 1, lines, constants)


class _Absent:
    """The class of _ABSENT, what a missing field reads as in the fast checks."""


_ABSENT = _Absent()


# --- the table --------------------------------------------------------------------------------

STRING = Scalar("a string", (str,), "")
INTEGER = Scalar("an integer", (int,))
BOOLEAN = Scalar("a boolean", (bool,))
INT_OR_STRING = Scalar("an integer or a string", (int, str))
LABELS = MapOf(STRING)

# Namespace and Pod: only what the translator and the daemon read (other fields are not looked at).
OBJECT_META = fields(closed=False, name=STRING, namespace=STRING, uid=STRING, labels=LABELS)
NAMESPACE = fields(closed=False, metadata=OBJECT_META)
CONTAINER_PORT = fields(closed=False, name=STRING, containerPort=INTEGER, protocol=STRING)
CONTAINER = fields(closed=False, ports=ListOf(CONTAINER_PORT, each=True))
POD_SPEC = fields(closed=False, hostNetwork=BOOLEAN, containers=ListOf(CONTAINER, each=True))
POD = fields(closed=False, metadata=OBJECT_META, spec=POD_SPEC, status=fields(closed=False, podIP=STRING))

# NetworkPolicy (networking.k8s.io/v1): the whole spec, closed as the API server decodes it. The
# object's own shape leaves the spec out: parse_spec conforms it part by part (narrow rejection).
POLICY = fields(closed=False, metadata=fields(closed=False, name=STRING, namespace=STRING, uid=STRING))
REQUIREMENT = fields(key=STRING, operator=STRING, values=ListOf(STRING))
LABEL_SELECTOR = fields(matchLabels=LABELS, matchExpressions=ListOf(REQUIREMENT))
# `except` and `from` are Python keywords, so those two shapes are built without fields().
IP_BLOCK = Fields(MappingProxyType({"cidr": STRING, "except": ListOf(STRING)}))
PEER = fields(podSelector=LABEL_SELECTOR, namespaceSelector=LABEL_SELECTOR, ipBlock=IP_BLOCK)
POLICY_PORT = fields(protocol=STRING, port=INT_OR_STRING, endPort=INTEGER)
INGRESS_RULE = Fields(MappingProxyType({"ports": ListOf(POLICY_PORT, each=True), "from": ListOf(PEER, each=True)}))
EGRESS_RULE = fields(ports=ListOf(POLICY_PORT, each=True), to=ListOf(PEER, each=True))
# Open only so that an unknown spec field can be reported and ignored rather than reject the policy.
POLICY_SPEC = fields(closed=False, podSelector=LABEL_SELECTOR, policyTypes=ListOf(STRING),
                     ingress=ListOf(INGRESS_RULE, each=True), egress=ListOf(EGRESS_RULE, each=True))

# ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2, SPEC 13): closed as the CRD's structural
# schema prunes nothing the translator reads; a peer or protocol of an unknown kind (a newer API)
# fails to conform, and the parser fails that rule closed. Rules and their lists are `each`: one bad
# rule, peer or protocol fails closed alone.
CNP = fields(closed=False, metadata=fields(closed=False, name=STRING, uid=STRING))
NAMESPACED_POD = fields(namespaceSelector=LABEL_SELECTOR, podSelector=LABEL_SELECTOR)
CNP_SUBJECT = fields(namespaces=LABEL_SELECTOR, pods=NAMESPACED_POD)
CNP_PEER = fields(namespaces=LABEL_SELECTOR, pods=NAMESPACED_POD, networks=ListOf(STRING),
                  nodes=LABEL_SELECTOR, domainNames=ListOf(STRING))
CNP_PORT = fields(number=INTEGER, range=fields(start=INTEGER, end=INTEGER))
CNP_PROTOCOL_PORT = fields(destinationPort=CNP_PORT)
CNP_PROTOCOL = fields(tcp=CNP_PROTOCOL_PORT, udp=CNP_PROTOCOL_PORT, sctp=CNP_PROTOCOL_PORT,
                      destinationNamedPort=STRING)
CNP_INGRESS_RULE = Fields(MappingProxyType({"name": STRING, "action": STRING, "from": ListOf(CNP_PEER, each=True),
                                            "protocols": ListOf(CNP_PROTOCOL, each=True)}))
CNP_EGRESS_RULE = fields(name=STRING, action=STRING, to=ListOf(CNP_PEER, each=True),
                         protocols=ListOf(CNP_PROTOCOL, each=True))
CNP_SPEC = fields(closed=False, tier=STRING, priority=INTEGER, subject=CNP_SUBJECT,
                  ingress=ListOf(CNP_INGRESS_RULE, each=True), egress=ListOf(CNP_EGRESS_RULE, each=True))
