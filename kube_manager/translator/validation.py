"""The Kubernetes API server's validation rules that the translator re-applies (SPEC 11).

kube-manager reads objects that the API server has already accepted, but the offline `translate`
command reads manifests straight from disk. Re-checking here keeps both paths equal: a part the API
server would refuse is rejected with a reason instead of being half-translated. JSON types and nulls
are settled before these rules run, by conforming each fragment to its shape (shapes.py).
"""
from __future__ import annotations

import re
from typing import Any, Dict, FrozenSet, Mapping, Optional, Set

_DNS1123_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL)
_DNS1123_SUBDOMAIN_RE = re.compile(rf"{_DNS1123_LABEL}(?:\.{_DNS1123_LABEL})*")
_NAME_PART_RE = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PORT_NAME_RE = re.compile(r"[-a-z0-9]+")


class InvalidInput(ValueError):
    """One part of a manifest that the API server would refuse; the message says where and why."""


def label_key_problem(key: Any) -> Optional[str]:
    """Why `key` is not a valid label key (a qualified name), or None when it is."""
    if not isinstance(key, str):
        return f"label key {key!r} is not a string"
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
            return f"label key {key!r}: prefix must be a DNS subdomain"
    if not name or len(name) > 63 or not _NAME_PART_RE.fullmatch(name):
        return (f"label key {key!r}: name must be 1-63 alphanumerics, '-', '_' or '.',"
                " starting and ending with an alphanumeric")
    return None


def label_value_problem(value: Any) -> Optional[str]:
    """Why `value` is not a valid label value, or None when it is."""
    if not isinstance(value, str):
        return f"label value {value!r} is not a string"
    if value and (len(value) > 63 or not _NAME_PART_RE.fullmatch(value)):
        return (f"label value {value!r} must be at most 63 alphanumerics, '-', '_' or '.',"
                " starting and ending with an alphanumeric")
    return None


def port_name_problem(name: str) -> Optional[str]:
    """Why `name` is not a valid IANA service name (a named port), or None when it is."""
    if not 1 <= len(name) <= 15:
        return f"port name {name!r} must be 1-15 characters"
    if not _PORT_NAME_RE.fullmatch(name):
        return f"port name {name!r} may contain only lower-case alphanumerics and '-'"
    if not any("a" <= c <= "z" for c in name):
        return f"port name {name!r} must contain at least one letter"
    if name.startswith("-") or name.endswith("-") or "--" in name:
        return f"port name {name!r} may not start or end with '-' or contain '--'"
    return None


def _dns_name_problem(name: Any, pattern: "re.Pattern[str]", longest: int, what: str) -> Optional[str]:
    if not isinstance(name, str) or not name:
        return "missing"
    if len(name) > longest or not pattern.fullmatch(name):
        return f"{name!r} is not a {what}"
    return None


def namespace_name_problem(name: Any) -> Optional[str]:
    """Why `name` cannot name a namespace (a DNS label), or None."""
    return _dns_name_problem(name, _DNS1123_LABEL_RE, 63, "DNS label")


def object_name_problem(name: Any) -> Optional[str]:
    """Why `name` cannot name a pod or NetworkPolicy (a DNS subdomain), or None."""
    return _dns_name_problem(name, _DNS1123_SUBDOMAIN_RE, 253, "DNS subdomain")


def metadata_problem(namespace: Any, name: Any, known_namespaces: Optional[Set[str]] = None) -> Optional[str]:
    """Why a namespaced object cannot exist, or None. `known_namespaces` holds names already
    found valid (and receives the new ones)."""
    if known_namespaces is None or namespace not in known_namespaces:
        problem = namespace_name_problem(namespace)
        if problem:
            return f"metadata.namespace: {problem}"
        if known_namespaces is not None:
            known_namespaces.add(namespace)
    if name.__class__ is str and 0 < len(name) <= 253 and _DNS1123_SUBDOMAIN_RE.fullmatch(name):
        return None  # (the common case inline: asked for every pod and policy of a bulk load)
    problem = object_name_problem(name)
    return f"metadata.name: {problem}" if problem else None


class KnownLabels:
    """Label keys and values already found valid, so that the labels every pod repeats (`app`,
    `version`, ...) are checked once; values are bounded, as some are unique to a pod."""

    LIMIT = 65536

    def __init__(self) -> None:
        self.keys: Set[str] = set()
        self.values: Set[str] = set()

    def clear(self) -> None:
        self.keys.clear()
        self.values.clear()


_NOTHING_KNOWN: FrozenSet[str] = frozenset()


def check_labels(labels: Mapping[str, str], path: str, known: Optional[KnownLabels] = None) -> Dict[str, str]:
    """A label map (already conformed to shapes.LABELS: string keys and values) as the API server
    validates `metadata.labels` and `matchLabels`, as a copy.

    `known` holds labels already found valid (and learns the new ones).
    """
    keys, values = (known.keys, known.values) if known is not None else (_NOTHING_KNOWN, _NOTHING_KNOWN)
    for key, value in labels.items():
        if value in values and key in keys:
            continue
        problem = label_value_problem(value)
        if problem is None and key not in keys:
            problem = label_key_problem(key)
        if problem:
            raise InvalidInput(f"{path}: {problem}")
        if known is not None:  # (inline: a call per label of every pod would cost more than the check)
            if len(known.values) >= KnownLabels.LIMIT:
                known.values.clear()
            known.keys.add(key)
            known.values.add(value)
    return dict(labels)
