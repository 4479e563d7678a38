"""SeenObjects (kube/seen.py), fed from data tables: lists and watch events become the events a
consumer must see, once each, whichever way an object arrived."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest

from kube_manager.kube.seen import SeenObjects, trimmed_key


def obj(name: str, uid: str = "u1", rv: str = "1", **labels: str) -> Dict[str, Any]:
    return {"metadata": {"namespace": "dev", "name": name, "uid": uid, "resourceVersion": rv,
                         "labels": labels}}


def feed(seen: SeenObjects, steps: List[Tuple[str, Any]]) -> List[Tuple[str, str, str]]:
    """Apply each (what, payload) step; the events as (type, name, uid)."""
    out: List[Tuple[str, str, str]] = []
    for what, payload in steps:
        if what == "list":
            events = list(seen.listed({trimmed_key(o): o for o in payload}))
        elif what == "upsert":
            events = list(seen.upserted(payload))
        else:
            gone = seen.deleted(payload)
            events = [gone] if gone else []
        out += [(t, o["metadata"]["name"], o["metadata"]["uid"]) for t, o in events]
    return out


CASES = {
    "a list adds each object once, in key order": (
        [("list", [obj("b"), obj("a")])],
        [("ADDED", "a", "u1"), ("ADDED", "b", "u1")]),
    "a new resourceVersion alone is no change": (
        [("upsert", obj("a")), ("upsert", obj("a", rv="2"))],
        [("ADDED", "a", "u1")]),
    "a changed label is one MODIFIED": (
        [("upsert", obj("a")), ("upsert", obj("a", rv="2", app="web"))],
        [("ADDED", "a", "u1"), ("MODIFIED", "a", "u1")]),
    "a re-created object (new uid) is DELETED then ADDED": (
        [("upsert", obj("a")), ("upsert", obj("a", uid="u2"))],
        [("ADDED", "a", "u1"), ("DELETED", "a", "u1"), ("ADDED", "a", "u2")]),
    "a re-list deletes what it no longer holds, first, and adds nothing known": (
        [("list", [obj("a"), obj("b")]), ("list", [obj("b", rv="5"), obj("c")])],
        [("ADDED", "a", "u1"), ("ADDED", "b", "u1"), ("DELETED", "a", "u1"), ("ADDED", "c", "u1")]),
    "a DELETED of an unknown object is dropped": (
        [("delete", obj("ghost"))],
        []),
    "a DELETED of a known object is delivered once": (
        [("upsert", obj("a")), ("delete", obj("a")), ("delete", obj("a"))],
        [("ADDED", "a", "u1"), ("DELETED", "a", "u1")]),
    "an empty list (an absent CRD) deletes everything known": (
        [("list", [obj("a")]), ("list", [])],
        [("ADDED", "a", "u1"), ("DELETED", "a", "u1")]),
}


@pytest.mark.parametrize("steps, expected", CASES.values(), ids=list(CASES))
def test_events_from_lists_and_watch_events(steps: List[Tuple[str, Any]], expected: List[Tuple[str, str, str]]) -> None:
    assert feed(SeenObjects(), steps) == expected


def test_a_deleted_object_carries_the_last_object_delivered_whatever_the_consumer_did() -> None:
    seen = SeenObjects()
    [(_, delivered)] = list(seen.upserted(obj("a", app="web")))
    delivered["metadata"]["labels"] = {"changed": "by the consumer"}
    [(event_type, last)] = list(seen.listed({}))
    assert (event_type, last["metadata"]["labels"]) == ("DELETED", {"app": "web"})
    assert len(seen) == 0
