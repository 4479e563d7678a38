"""The embedded config API's store and the cyclic collector: a write made after a full collection
leaves the store's indexes out of the young generations, so that the next young collection walks
what the write made, not the store (whose size would otherwise show in an answer's latency).

The server freezes what survives each full collection (`freeze_after_full_collections`); a full
collection also untracks every exact dict holding only atoms, and an untracked dict is not frozen:
the first new tuple key or map put into it tracks it again, whole, in the youngest generation."""
from __future__ import annotations

import gc
from typing import Callable, Dict, Iterator

import pytest

from simulators.vnc_api.api import ConfigApi

PM = ["default-policy-management"]
POLICIES = 3000
LARGE = 1000  # entries: what no container a single write makes comes near


def cluster() -> "tuple[ConfigApi, Dict[str, str]]":
    api = ConfigApi()
    ids = {"aps": api.create("application-policy-set", {"fq_name": PM + ["k8s"], "parent_type": "policy-management"})["uuid"]}
    policies = [api.create("firewall-policy", {"fq_name": PM + [f"fp-{i}"], "parent_type": "policy-management"})["uuid"]
                for i in range(POLICIES)]
    api.update("application-policy-set", ids["aps"], {"firewall_policy_refs": [
        {"uuid": u, "to": PM + [f"fp-{i}"], "attr": {"sequence": f"1.{i:012d}"}} for i, u in enumerate(policies)]})
    ids["tag"] = api.create("tag", {"fq_name": ["app=web"], "tag_type_name": "app", "tag_value": "web"})["uuid"]
    return api, ids


def new_policy_in_the_aps(api: ConfigApi, ids: Dict[str, str]) -> None:
    new = api.create("firewall-policy", {"fq_name": PM + ["new"], "parent_type": "policy-management"})["uuid"]
    api.ref_update({"type": "application-policy-set", "uuid": ids["aps"], "ref-type": "firewall-policy",
                    "operation": "ADD", "ref-uuid": new, "attr": {"sequence": "2.0"}})


def new_rule_naming_a_tag(api: ConfigApi, ids: Dict[str, str]) -> None:
    api.create("firewall-rule", {
        "fq_name": PM + ["rule"], "parent_type": "policy-management", "action_list": {"simple_action": "pass"},
        "service": {"protocol": "tcp", "dst_ports": {"start_port": 80, "end_port": 80}}, "direction": ">",
        "endpoint_1": {"any": True}, "endpoint_2": {"tags": ["global:app=web"]}})


def new_tag(api: ConfigApi, ids: Dict[str, str]) -> None:
    api.create("tag", {"fq_name": ["app=db"], "tag_type_name": "app", "tag_value": "db"})


@pytest.fixture
def frozen_after_a_full_collection() -> Iterator[None]:
    yield
    gc.unfreeze()


@pytest.mark.parametrize("write", [new_policy_in_the_aps, new_rule_naming_a_tag, new_tag])
def test_a_write_after_a_full_collection_puts_no_index_of_the_store_back_in_view(
        write: Callable[[ConfigApi, Dict[str, str]], None], frozen_after_a_full_collection: None) -> None:
    api, ids = cluster()
    gc.collect()
    gc.collect()  # a tuple of tuples is untracked once its inner tuples are
    gc.freeze()  # what the server does with the survivors of a full collection

    write(api, ids)

    large = [(type(o).__name__, len(o)) for generation in range(3) for o in gc.get_objects(generation)
             if isinstance(o, dict) and len(o) >= LARGE]
    assert large == []
