"""Paginated listings of the embedded config API, as the real server answers them
(`VncApiServer._list_collection`): `page_marker` turns pagination on ("None" or empty: the first
page), `page_limit` bounds a page (256 by default), the answer's `marker` names where the next page
starts (null after the last). Unanchored walks follow the `<fq_name>:<uuid>` columns in byte order;
anchored ones (parent, back-ref, uuid selectors) follow uuids."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from tests.support.vnc_server_support import PM, expect_error, group_body

# Under one parent, "g-1" (a '-' before the ':') comes before "g" in column order, after it in
# fq_name order: the walk must follow the columns.
NAMES = ["g", "g-1", "g0", "g:x", "h", "g-2", "a"]


def walk(http, path: str, limit: int, **params: Any) -> Tuple[List[List[Dict[str, Any]]], List[Optional[str]]]:
    """Every page of a paginated listing: (pages, markers), following each answer's marker."""
    pages: List[List[Dict[str, Any]]] = []
    markers: List[Optional[str]] = []
    marker: Optional[str] = "None"
    while marker is not None:
        answer = http.get(path, page_marker=marker, page_limit=limit, **params).json()
        pages.append(answer[path.strip("/")])
        marker = answer["marker"]
        markers.append(marker)
    return pages, markers


def columns(groups: List[Dict[str, Any]]) -> List[str]:
    return [":".join(g["fq_name"]) + ":" + g["uuid"] for g in groups]


def make_groups(http, names: List[str]) -> List[Dict[str, Any]]:
    return [http.create("address-group", group_body(name.replace(":", "-colon-"), "10.0.0.0/8")) for name in names]


def test_an_unanchored_walk_lists_every_object_once_in_column_order(http):
    groups = make_groups(http, NAMES)
    pages, markers = walk(http, "/address-groups", 3, fields="address_group_prefix")
    assert [len(p) for p in pages] == [3, 3, 1]
    listed = [item for page in pages for item in page]
    assert columns(listed) == sorted(columns(groups))
    assert [item["fq_name"][-1] for item in listed][:3] == ["a", "g-1", "g-2"]
    assert markers == [columns(listed)[2], columns(listed)[5], None]  # a full page's last column
    assert all(item["address_group_prefix"]["subnet"][0]["ip_prefix"] == "10.0.0.0" for item in listed)


def test_a_full_last_page_still_names_a_marker_then_an_empty_page_ends_the_walk(http):
    make_groups(http, ["a", "b", "c", "d"])
    pages, markers = walk(http, "/address-groups", 2)
    assert [len(p) for p in pages] == [2, 2, 0]
    assert markers[-1] is None and None not in markers[:-1]


def test_page_marker_turns_pagination_on_and_page_limit_alone_does_not(http):
    make_groups(http, [f"g{i}" for i in range(300)])
    first = http.get("/address-groups", page_marker="").json()
    assert len(first["address-groups"]) == 256 and first["marker"] is not None  # the real default
    unpaged = http.get("/address-groups", page_limit=5).json()
    assert len(unpaged["address-groups"]) == 300 and "marker" not in unpaged
    count = http.get("/address-groups", count="true", page_marker="None", page_limit=7).json()
    assert count["address-groups"] == {"count": 7} and count["marker"] is not None


def test_bad_page_limit_and_marker_are_refused_as_the_real_server_does(http):
    for limit in ("0", "-1", "x"):
        expect_error(http.get("/address-groups", page_marker="None", page_limit=limit), 400, "Invalid page_limit")
    expect_error(http.get("/address-groups", page_limit="0"), 400, "Invalid page_limit")
    expect_error(http.get("/address-groups", page_marker="default-policy-management:g:not-a-uuid"), 400,
                 "Invalid page_marker")


def test_objects_made_or_removed_between_pages(http):
    """A walk is not a snapshot: an object made behind the marker is missed, one made ahead of
    it is listed, one removed ahead of it is not; nothing is listed twice."""
    groups = {g["fq_name"][-1]: g for g in make_groups(http, ["b", "d", "f", "h"])}
    first = http.get("/address-groups", page_marker="None", page_limit=2).json()
    assert [g["fq_name"][-1] for g in first["address-groups"]] == ["b", "d"]
    make_groups(http, ["a", "e"])
    assert http.delete(f"/address-group/{groups['h']['uuid']}").status_code == 200
    rest = http.get("/address-groups", page_marker=first["marker"], page_limit=10).json()
    assert [g["fq_name"][-1] for g in rest["address-groups"]] == ["e", "f"] and rest["marker"] is None


def test_an_anchored_walk_follows_uuids_and_names_the_last_uuid(http):
    groups = make_groups(http, ["a", "b", "c", "d", "e"])
    chosen = sorted(g["uuid"] for g in groups[:4])
    pages, markers = walk(http, "/address-groups", 3, obj_uuids=",".join(g["uuid"] for g in groups[:4]))
    assert [[g["uuid"] for g in page] for page in pages] == [chosen[:3], chosen[3:]]
    assert markers == [chosen[2], None]


def test_list_bulk_collection_paginates_from_its_body(http):
    groups = make_groups(http, ["a", "b", "c"])
    body = {"type": "address-group", "obj_uuids": ",".join(g["uuid"] for g in groups), "page_marker": None,
            "page_limit": 2}
    first = http.action("/list-bulk-collection", body)
    assert len(first["address-groups"]) == 2 and first["marker"] == max(g["uuid"] for g in first["address-groups"])
    rest = http.action("/list-bulk-collection", {**body, "page_marker": first["marker"]})
    assert len(rest["address-groups"]) == 1 and rest["marker"] is None
    assert {g["uuid"] for g in first["address-groups"] + rest["address-groups"]} == {g["uuid"] for g in groups}
