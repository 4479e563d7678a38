"""What a selector tag `label=<cluster>-sel-<h>` stands for, for people (SPEC 6 and 10).

A selector tag is a hash, so on its own it says nothing. The translator keeps, for every selector
tag it uses, the object it hashed (SPEC 2.1, 4 and 13): `[scope, podSelector]` for a selector,
`[destination, port name, protocol, number]` for a named port, or `{"and": [[sign, term], ...]}` for
a piece of a ClusterNetworkPolicy rule. `SelectorView` exposes that map
read-only (the daemon puts the live view in its DB; `translate()` hands out a copy), and
`describe()` turns one hash input into a phrase such as
`pods app=api in namespace shop where port "http" (TCP) is 9091`. Pure: no I/O.
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, List, Mapping

from .model import SelectorDef

SELECTOR_TAG_MARK = "-sel-"


class SelectorView(Mapping[str, Any]):
    """tag -> hash input of each selector tag in use, over the translator's live tag origins
    (label tags are left out; they read as what they are)."""

    def __init__(self, origins: Mapping[str, Any]) -> None:
        self._origins = origins

    def __getitem__(self, tag: str) -> Any:
        origin = self._origins[tag]
        if not isinstance(origin, SelectorDef):
            raise KeyError(tag)
        return origin.hash_input()

    def __iter__(self) -> Iterator[str]:
        return (tag for tag, origin in list(self._origins.items())
                if isinstance(origin, SelectorDef))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def is_selector_tag(tag: str) -> bool:
    return tag.startswith("label=") and SELECTOR_TAG_MARK in tag


def requirement_phrase(expression: Mapping[str, Any]) -> str:
    key, operator = expression.get("key"), expression.get("operator")
    values = list(expression.get("values") or ())
    if operator == "In":
        return f"{key}={values[0]}" if len(values) == 1 else f"{key} in ({','.join(values)})"
    if operator == "NotIn":
        return f"{key} notin ({','.join(values)})"
    return str(key) if operator == "Exists" else f"!{key}"


def selector_phrase(selector: Any) -> str:
    """A normalised selector as kubectl writes it; `{}` for the empty one."""
    if not isinstance(selector, Mapping):
        return "{}"
    parts: List[str] = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    parts.extend(requirement_phrase(e) for e in selector.get("matchExpressions") or ())
    return ",".join(parts) or "{}"


def _pods(destination: Any) -> str:
    if isinstance(destination, Mapping) and "ipBlock" in destination:
        block = destination["ipBlock"] or {}
        excepts = block.get("except") or []
        return (f"pods with an IP in {block.get('cidr')}"
                + (f" except {', '.join(excepts)}" if excepts else ""))
    scope, pod_selector = destination
    selector = selector_phrase(pod_selector)
    pods = "pods" if selector == "{}" else f"pods {selector}"
    if "namespace" in scope:
        return f"{pods} in namespace {scope['namespace']}"
    namespaces = selector_phrase(scope.get("namespaceSelector"))
    return f"{pods} in every namespace" if namespaces == "{}" else f"{pods} in namespaces {namespaces}"


def _set_phrase(expression: Mapping[str, Any]) -> str:
    """A ClusterNetworkPolicy piece (SPEC 13): `{"and": [[sign, term], ...]}`."""
    parts = []
    for sign, term in expression["and"]:
        if "pods" in term:
            text = _pods(term["pods"])
        elif "ip" in term:
            text = f"pods with an IP in {', '.join(term['ip'])}"
        elif "namedPort" in term:
            name, protocol, number = term["namedPort"]
            text = f'pods where port "{name}" ({protocol}) is {number}'
        else:
            text = f"({_set_phrase(term)})"
        parts.append(text if sign == "+" else f"not {text}")
    return " and ".join(parts)


def describe(hash_input: Any) -> str:
    """The phrase for one hash input; never raises (an unknown shape is shown as it is)."""
    try:
        if isinstance(hash_input, Mapping) and "and" in hash_input:
            return _set_phrase(hash_input)
        if (isinstance(hash_input, list) and len(hash_input) == 4
                and isinstance(hash_input[1], str)):
            destination, name, protocol, number = hash_input
            return f'{_pods(destination)} where port "{name}" ({protocol}) is {number}'
        return _pods(hash_input)
    except (TypeError, ValueError, AttributeError, KeyError):
        return repr(hash_input)


def decode_tags(tags: Any, selectors: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """For each selector tag among `tags` that `selectors` knows: its hash input and phrase."""
    found = {}
    for tag in tags:
        if is_selector_tag(tag) and tag in selectors:
            selector = selectors[tag]
            found[tag] = {"selector": selector, "text": describe(selector)}
    return found


__all__ = ["SelectorView", "decode_tags", "describe", "is_selector_tag", "requirement_phrase",
           "selector_phrase"]
