"""What the pages show for opaque Contrail values: selector tags and tag ids (SPEC 10).

A selector tag `label=<cluster>-sel-<h>` is a hash; the translator keeps the object it was hashed
from (`db.selectors`), and every page shows that object (JSON `"selector"`) and a phrase for it.
A tag's id is assigned by the config API; it is known from the tag as last listed or, before the
next resync lists it, from the `tag_ids` the config API filled into the endpoints of the rules
that use it (read back at the same listing or kept from a create). Unknown ids stay empty.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional

from kube_manager.records.db import Database
from kube_manager.translator.decode import describe, is_selector_tag
from introspect import contrail as c


def selector_of(db: Database, tag: str) -> Optional[Any]:
    """The object a selector tag was hashed from, or None (not a selector tag, or unknown)."""
    if not is_selector_tag(tag):
        return None
    try:
        return db.selectors.get(tag)
    except (KeyError, TypeError):
        return None


def selector_text(db: Database, tag: str) -> str:
    selector = selector_of(db, tag)
    return describe(selector) if selector is not None else ""


def selectors_of(db: Database, tags: Iterable[str]) -> Dict[str, Any]:
    """tag -> hash input for the selector tags among `tags` that the translator knows."""
    found = {}
    for tag in tags:
        selector = selector_of(db, tag)
        if selector is not None:
            found[tag] = selector
    return found


def with_phrase(selectors: Mapping[str, Any], tag: str) -> str:
    """`label=k8s-sel-... (pods app=api in namespace shop)` for a tag `selectors` decodes (tag ->
    hash input, as `selectors_of` returns), else the tag as it is."""
    selector = selectors.get(tag)
    return f"{tag} ({describe(selector)})" if selector is not None else tag


def describe_endpoint(selectors: Mapping[str, Any], endpoint: Optional[Mapping[str, Any]]) -> str:
    """A rule endpoint in the wiki's notation, its selector tags decoded."""
    tags = c.endpoint_tags(endpoint)
    if any(tag in selectors for tag in tags):
        return " & ".join(with_phrase(selectors, t) for t in tags)
    return c.describe_endpoint(endpoint)


def known_tag_ids(view: c.ContrailView) -> Dict[str, str]:
    """tag name -> id (`0x...`) from the rules as the config API holds them."""
    found: Dict[str, str] = {}
    for rule in view.objects(c.FIREWALL_RULE):
        for side in c.ENDPOINTS:
            endpoint = (rule.actual or {}).get(side) or {}
            tags, ids = endpoint.get("tags") or [], endpoint.get("tag_ids") or []
            if len(tags) == len(ids):
                for tag, number in zip(tags, ids):
                    if isinstance(number, int):
                        found.setdefault(tag, f"0x{number:08x}")
    return found


__all__ = ["describe_endpoint", "known_tag_ids", "selector_of", "selector_text", "selectors_of",
           "with_phrase"]
