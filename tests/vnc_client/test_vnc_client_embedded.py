"""Issue 3's contract scenario through our own client, against the embedded server over real HTTP.

The official library drives the same scenario in the server's own tests; here our client must get
the same answers from the same server (typed errors included), and its retry and fail-over paths
are exercised against real sockets: injected 503s, dropped connections, and a dead endpoint.
"""
from __future__ import annotations

import socket
from typing import Any, Dict, Iterator, List

import pytest

from vnc_client.client import LIST_BULK_THRESHOLD, VncClient
from vnc_client.errors import BadRequest, Conflict, NotFound, ServerError, VncConnectionError
from vnc_client.retry import RetryPolicy
from simulators.vnc_api.runner import BackgroundServer, run_in_background

PM = ["default-policy-management"]
PROJECT = ["default-domain", "default-project"]
MARKS = {"key_value_pair": [{"key": "cluster", "value": "k8s"}, {"key": "owner", "value": "k8s"}]}
PM_PARENT = {"parent_type": "policy-management", "annotations": MARKS}


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with run_in_background() as srv:
        yield srv


@pytest.fixture
def client(server: BackgroundServer) -> Iterator[VncClient]:
    server.faults.clear()
    with VncClient(server.url, sleep=lambda s: None) as c:
        yield c


def free_port() -> int:
    """A port nothing listens on (bound and released), for a dead endpoint."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rule(name: str, endpoint_1: Dict[str, Any], port: int) -> Dict[str, Any]:
    return {"fq_name": PM + [name], **PM_PARENT, "action_list": {"simple_action": "pass"},
            "service": {"protocol": "tcp", "dst_ports": {"start_port": port, "end_port": port}},
            "endpoint_1": endpoint_1, "endpoint_2": {"tags": ["application=scen", "app=web"]},
            "direction": ">", "match_tags": {"tag_list": []}}


def tag(tag_type: str, value: str) -> Dict[str, Any]:
    """A global tag `type=value`, named as the server names it."""
    return {"fq_name": [f"{tag_type}={value}"], "tag_type_name": tag_type, "tag_value": value}


def sequenced(fq_name: List[str], sequence: str) -> Dict[str, Any]:
    return {"to": fq_name, "attr": {"sequence": sequence}}


def ref_names(refs: List[dict]) -> List[str]:
    return sorted(r["to"][-1] for r in refs or [])


def test_full_scenario(client: VncClient) -> None:
    home = client.home()
    assert {"name-to-id", "id-to-name", "ref-update", "set-tag"} <= {link["link"]["name"] for link in home["links"]}
    pm_uuid = client.fqname_to_id("policy-management", PM)

    # Tags: the server lower-cases the type, names them type=value and gives each a tag_id.
    tags = {}
    for tag_type, value in [("application", "scen"), ("namespace", "scen-ns"), ("APP", "web"),
                            ("label", "scen-sel-1"), ("label", "scen-sel-2")]:
        created = client.create("tag", dict(tag(tag_type, value), annotations=MARKS))
        tags[f"{tag_type.lower()}={value}"] = created["uuid"]
    app_tag = client.read("tag", ["app=web"])
    assert (app_tag["tag_type_name"], app_tag["tag_value"], app_tag["fq_name"]) == ("app", "web", ["app=web"])
    assert app_tag["tag_id"] and app_tag["annotations"] == MARKS

    group = {"fq_name": PM + ["10.1.0.0/16"], **PM_PARENT,
             "address_group_prefix": {"subnet": [{"ip_prefix": "10.1.0.0", "ip_prefix_len": 16}]}}
    group_uuid = client.create("address-group", group)["uuid"]

    # Rules, one tag endpoint and one address-group endpoint, then a policy with sequenced refs.
    r1 = client.create("firewall-rule", rule("scen-r1", {"tags": ["application=scen"]}, 80))
    r2 = client.create("firewall-rule", rule(
        "scen-r2", {"address_group": "default-policy-management:10.1.0.0/16"}, 443))
    assert r1["parent_uuid"] == pm_uuid and r1["fq_name"] == PM + ["scen-r1"]
    policy = {"fq_name": PM + ["scen-policy"], **PM_PARENT, "firewall_rule_refs": [
        sequenced(PM + ["scen-r1"], "00000.0"), sequenced(PM + ["scen-r2"], "00001.0")]}
    policy_uuid = client.create("firewall-policy", policy)["uuid"]
    aps_uuid = client.create("application-policy-set", {
        "fq_name": PM + ["scen"], **PM_PARENT, "tag_refs": [{"to": ["application=scen"], "attr": None}],
        "firewall_policy_refs": [sequenced(PM + ["scen-policy"], "1.000000000001")]})["uuid"]

    read_policy = client.read("firewall-policy", policy_uuid)
    assert sorted((r["to"], r["uuid"], r["attr"]["sequence"]) for r in read_policy["firewall_rule_refs"]) == [
        (PM + ["scen-r1"], r1["uuid"], "00000.0"), (PM + ["scen-r2"], r2["uuid"], "00001.0")]
    read_r2 = client.read("firewall-rule", r2["uuid"])
    assert read_r2["endpoint_1"]["address_group"] == "default-policy-management:10.1.0.0/16"
    service = read_r2["service"]
    assert (service["protocol"], service["protocol_id"], service["dst_ports"]) == (
        "tcp", 6, {"start_port": 443, "end_port": 443})

    # A pod: its virtual network, VM (named by the pod uid) and VMI, then tags through set-tag.
    client.create("virtual-network", {"fq_name": PROJECT + ["scen-net"], "parent_type": "project"})
    vm_uuid = client.create("virtual-machine", {"fq_name": ["scen-pod-uid"]})["uuid"]
    vmi_uuid = client.create("virtual-machine-interface", {
        "fq_name": PROJECT + ["scen-vmi"], "parent_type": "project",
        "virtual_network_refs": [{"to": PROJECT + ["scen-net"], "attr": None}],
        "virtual_machine_refs": [{"to": ["scen-pod-uid"], "attr": None, "uuid": vm_uuid}]})["uuid"]
    assert client.list("virtual-machine-interface", back_ref_id=vm_uuid) == [
        {"uuid": vmi_uuid, "fq_name": PROJECT + ["scen-vmi"], "href": f"{client.current_endpoint}"
         f"/virtual-machine-interface/{vmi_uuid}"}]
    client.set_tags("virtual-machine-interface", vmi_uuid, {
        "application": {"is_global": True, "value": "scen"}, "app": {"is_global": True, "value": "web"}})
    client.set_labels("virtual-machine-interface", vmi_uuid, add=["scen-sel-1", "scen-sel-2"])
    vmi = client.read("virtual-machine-interface", vmi_uuid, fields=["tag_refs"])
    assert ref_names(vmi["tag_refs"]) == ["app=web", "application=scen", "label=scen-sel-1", "label=scen-sel-2"]
    client.set_labels("virtual-machine-interface", vmi_uuid, delete=["scen-sel-1"])
    client.set_tag("virtual-machine-interface", vmi_uuid, "app", None)
    vmi = client.read("virtual-machine-interface", vmi_uuid, fields=["tag_refs"])
    assert ref_names(vmi["tag_refs"]) == ["application=scen", "label=scen-sel-2"]

    # Lookups by fq_name and uuid, lists with filters and back-refs.
    assert client.id_to_fqname(policy_uuid) == {"type": "firewall-policy", "fq_name": PM + ["scen-policy"]}
    # back_ref_id lists the objects that refer to the given ones (here: the policies of a rule).
    referring = client.list("firewall-policy", back_ref_id=[r1["uuid"], r2["uuid"]], detail=True)
    assert [p["uuid"] for p in referring] == [policy_uuid]
    assert ref_names(referring[0]["firewall_rule_refs"]) == ["scen-r1", "scen-r2"]
    assert [r["uuid"] for r in client.list("firewall-rule", parent_id=pm_uuid, filters={"display_name": "scen-r2"})] \
        == [r2["uuid"]]
    assert [r["uuid"] for r in client.list("tag", obj_uuids=[tags["app=web"]])] == [tags["app=web"]]

    # ref-update and a partial update.
    client.ref_update("firewall-policy", policy_uuid, "firewall-rule", r2["uuid"], operation="DELETE")
    client.ref_update("firewall-policy", policy_uuid, "firewall_rule_refs", ref_fq_name=PM + ["scen-r2"],
                      attr={"sequence": "00005.0"})
    refs = client.read("firewall-policy", ["default-policy-management", "scen-policy"])["firewall_rule_refs"]
    assert {r["to"][-1]: r["attr"] for r in refs} == {"scen-r1": {"sequence": "00000.0"},
                                                     "scen-r2": {"sequence": "00005.0"}}
    assert client.update("firewall-rule", r1["uuid"], {"direction": "<>"})["uuid"] == r1["uuid"]
    updated = client.read("firewall-rule", r1["uuid"])
    assert updated["direction"] == "<>" and updated["endpoint_1"]["tags"] == ["application=scen"]

    # The refusals the reconciler relies on, as typed errors.
    with pytest.raises(Conflict):
        client.create("firewall-rule", rule("scen-r1", {"any": True}, 22))
    with pytest.raises(NotFound):
        client.read("firewall-rule", "00000000-0000-0000-0000-000000000000")
    with pytest.raises(NotFound):
        client.read("firewall-rule", PM + ["no-such-rule"])
    with pytest.raises(Conflict):
        client.delete("firewall-rule", r1["uuid"])  # the policy refers to it
    with pytest.raises(Conflict):
        client.delete("address-group", group_uuid)  # rule r2 refers to it
    with pytest.raises(NotFound, match="application=missing"):
        client.create("firewall-rule", rule("scen-bad", {"tags": ["application=missing"]}, 1))
    bad_direction = dict(rule("scen-bad", {"any": True}, 1), direction="sideways")
    with pytest.raises(BadRequest):
        client.create("firewall-rule", bad_direction)

    # Clean-up, referrers first; afterwards nothing of the scenario is left.
    client.delete("application-policy-set", aps_uuid)
    client.delete("firewall-policy", policy_uuid)
    for uuid in (r1["uuid"], r2["uuid"], group_uuid):
        client.delete("firewall-rule" if uuid != group_uuid else "address-group", uuid)
    client.delete("virtual-machine-interface", vmi_uuid)
    client.delete("virtual-machine", vm_uuid)
    client.delete("virtual-network", PROJECT + ["scen-net"])
    for uuid in tags.values():
        client.delete("tag", uuid)
    with pytest.raises(NotFound):
        client.delete("firewall-policy", policy_uuid)
    for obj_type in ("firewall-rule", "firewall-policy", "address-group", "application-policy-set"):
        assert [i for i in client.list(obj_type) if "scen" in i["fq_name"][-1]] == []


def test_long_uuid_lists_are_listed_through_list_bulk_collection(server: BackgroundServer, client: VncClient) -> None:
    uuids = [client.create("tag", tag("bulk", f"v{i}"))["uuid"] for i in range(LIST_BULK_THRESHOLD + 5)]
    server.counters.reset()
    listed = client.list("tag", obj_uuids=uuids, detail=True, fields=["tag_value"])
    assert sorted(t["tag_value"] for t in listed) == sorted(f"v{i}" for i in range(LIST_BULK_THRESHOLD + 5))
    assert server.counters.snapshot() == {("POST", "/list-bulk-collection"): 1}
    for uuid in uuids:
        client.delete("tag", uuid)


def test_injected_503s_and_dropped_connections_are_retried(server: BackgroundServer, client: VncClient) -> None:
    server.counters.reset()
    server.faults.fail_next(2)
    server.faults.drop_next(1)
    assert client.fqname_to_id("policy-management", PM)
    assert server.counters.statuses() == {503: 2, 0: 1, 200: 1}  # status 0: the dropped connection


def test_fault_storm_exhausts_the_attempts(server: BackgroundServer) -> None:
    server.faults.fail_next(3)
    with VncClient(server.url, retry=RetryPolicy(attempts=3), sleep=lambda s: None) as c:
        with pytest.raises(ServerError) as info:
            c.home()
    assert info.value.status == 503


def test_fail_over_from_a_dead_endpoint_to_the_live_one(server: BackgroundServer) -> None:
    dead = f"127.0.0.1:{free_port()}"
    delays: List[float] = []
    with VncClient([dead, server.url], sleep=delays.append) as c:
        assert c.fqname_to_id("policy-management", PM)
        assert c.current_endpoint == server.url
    assert delays == []


def test_only_dead_endpoints_raise_a_connection_error() -> None:
    with VncClient(f"127.0.0.1:{free_port()}", retry=RetryPolicy(attempts=2), sleep=lambda s: None,
                   connect_timeout=1.0) as c:
        with pytest.raises(VncConnectionError, match="after 2 attempts"):
            c.home()


def test_list_pages_walks_a_collection_in_bounded_pages(client):
    made = [client.create("address-group", {"fq_name": PM + [f"paged-{i:02d}"], **PM_PARENT})["uuid"]
            for i in range(7)]
    pages = list(client.list_pages("address-group", 3, fields=["annotations"], exclude_hrefs=True))
    assert all(len(page) <= 3 for page in pages)
    listed = [item["uuid"] for page in pages for item in page]
    assert len(listed) == len(set(listed)) and set(made) <= set(listed)
    assert sorted(listed) == sorted(item["uuid"] for item in client.list("address-group"))
    for uuid in made:
        client.delete("address-group", uuid)
