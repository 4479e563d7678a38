"""Label selectors and the small readers shared by the Kubernetes reference model's parsers.

The reference model (k8s_semantics) reads manifests as the API server would and shares no code with
the translator, so that the two can be compared; this module holds what its NetworkPolicy and
ClusterNetworkPolicy parsers have in common: metav1.LabelSelector compiled and matched (every
operator, every value), label syntax checked as the API server checks it, lists read as the API
server decodes them (null is empty, a null entry is `{}`), and `Invalid`, raised for what the API
server would refuse.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Tuple, Union

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
IPNetwork = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

_SELECTOR_FIELDS = {"matchLabels", "matchExpressions"}
_EXPRESSION_FIELDS = {"key", "operator", "values"}
# Label syntax: a value (or a key's name part) is at most 63 of these, alphanumeric at both ends;
# a key may have a DNS-subdomain prefix and a slash.
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class Invalid(ValueError):
    """A part of a manifest the API server would refuse; the message says why."""


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist
    values: frozenset

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present  # DoesNotExist


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled metav1.LabelSelector; the empty selector matches everything."""

    requirements: Tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def object_or_empty(value: Any) -> Mapping[str, Any]:
    """`value` when it is an object, else `{}`: a malformed manifest reads as empty, never raises."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any, what: str) -> List[Any]:
    """A list field as the API server decodes it: null is empty, null entries are {}."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise Invalid(f"{what} must be a list")
    return [{} if item is None else item for item in value]


def check_fields(obj: Any, allowed: set, what: str) -> Dict[str, Any]:
    if not isinstance(obj, dict):
        raise Invalid(f"{what} must be an object")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise Invalid(f"{what} has unknown field(s) {', '.join(map(str, unknown))}")
    return obj


def check_label(key: Any, values: Iterable[Any], what: str) -> str:
    """Refuse a label key or value the API server would refuse in a selector; the key, checked."""
    prefix, slash, name = key.rpartition("/") if isinstance(key, str) else ("", "", "")
    if (not name or len(name) > 63 or not _LABEL_NAME.match(name)
            or (slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)))):
        raise Invalid(f"{what}: invalid label key {key!r}")
    for value in values:
        if not isinstance(value, str) or len(value) > 63 or (value and not _LABEL_NAME.match(value)):
            raise Invalid(f"{what}: invalid label value {value!r} for {key}")
    return key


def compile_selector(raw: Any, what: str = "selector") -> Selector:
    """Compile a label selector; raises Invalid for what the API server would refuse."""
    if raw is None:
        return Selector()
    raw = check_fields(raw, _SELECTOR_FIELDS, what)
    requirements: List[LabelRequirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, dict):
        raise Invalid(f"{what}.matchLabels must be a map")
    for key, value in match_labels.items():
        value = "" if value is None else value
        check_label(key, [value], f"{what}.matchLabels")
        requirements.append(LabelRequirement(key, "In", frozenset([value])))
    for expr in as_list(raw.get("matchExpressions"), f"{what}.matchExpressions"):
        expr = check_fields(expr, _EXPRESSION_FIELDS, f"{what}.matchExpressions entry")
        key, operator = expr.get("key"), expr.get("operator")
        values = as_list(expr.get("values"), f"{what}.matchExpressions values")
        key = check_label(key, values, f"{what}.matchExpressions")
        if operator in ("In", "NotIn"):
            if not values:
                raise Invalid(f"{what}.matchExpressions {key}: {operator} needs values")
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                raise Invalid(f"{what}.matchExpressions {key}: {operator} takes no values")
        else:
            raise Invalid(f"{what}.matchExpressions {key}: unknown operator {operator!r}")
        requirements.append(LabelRequirement(key, operator, frozenset(values)))
    return Selector(tuple(requirements))


def parse_network(text: Any, what: str) -> IPNetwork:
    if not isinstance(text, str):
        raise Invalid(f"{what} must be a CIDR string")
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise Invalid(f"{what} {text!r} is not a valid CIDR") from None


def labels_of(metadata: Mapping[str, Any]) -> Dict[str, str]:
    labels = metadata.get("labels") or {}
    if not isinstance(labels, dict):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in labels.items()}
