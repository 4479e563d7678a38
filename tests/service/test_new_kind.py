"""A kind the product does not know, defined in the tests alone (`tests/support/toy_kind.py`), and
one that emits Contrail objects, reaches every layer through the registry of kinds: the watchers'
and dispatcher's handler, the translator's source and the change report, the status book, the
config API through the reconciler, the offline loader and `translate()`, `what-if`, and the
introspect pages. No product file names it."""
from __future__ import annotations

from pathlib import Path

import yaml

from introspect.app import create_app
from kube_manager.explain.whatif import what_if
from kube_manager.offline.manifests import Manifests, load_manifests
from kube_manager.records.db import PENDING, REJECTED, SYNCED
from kube_manager.service.pipeline import build_pipeline
from kube_manager.translator import translate
from kube_manager.translator.bodies import APPLICATION_POLICY_SET, FIREWALL_POLICY, FIREWALL_RULE, POLICY_MANAGEMENT
from tests.support.builders import namespace, pod
from tests.support.introspect_support import call
from tests.support.reconciler_support import FAST, InProcessApi
from tests.support.toy_kind import TOO_BIG, TOY, TOY_PAGE_PATH, TOYS, kinds_with_toys, toy
from tests.support.waiting import wait_green

PM = POLICY_MANAGEMENT
HELD_POLICY, HELD_RULE = (PM, "k8s-toy-held"), (PM, "k8s-toy-held-deny")


def aps_policies(refs_holder: dict) -> list:
    return [tuple(ref["to"]) for ref in refs_holder.get("firewall_policy_refs") or ()]


def test_a_new_kind_goes_from_its_events_to_its_records_its_status_and_the_config_api() -> None:
    kinds, records = kinds_with_toys()
    pipeline = build_pipeline("k8s", "k8s", kinds=kinds)
    api = InProcessApi()
    reconciler = pipeline.connect(api, FAST)
    dispatcher = pipeline.cache
    dispatcher.on_event(TOYS.name, "ADDED", toy("held", 7))  # held until every list is in
    assert records == {} and pipeline.kinds.names()[-1] == TOYS.name
    for resource in pipeline.kinds.names():
        dispatcher.on_event(resource, "LISTED", {"resourceVersion": "1"})
    # The handler wrote its record; the source emitted its objects; the status book followed.
    desired = pipeline.translator.desired()
    assert HELD_POLICY in desired[FIREWALL_POLICY] and HELD_RULE in desired[FIREWALL_RULE]
    (aps,) = desired[APPLICATION_POLICY_SET].values()
    assert HELD_POLICY in aps_policies(aps)
    record = records["held"]
    assert (record.firewall_policy, record.rules, record.state) == (list(HELD_POLICY), [HELD_RULE[-1]], PENDING)

    reconciler.start()
    reconciler.resync()
    wait_green(lambda: record.state == SYNCED, "the toy synced")
    owned = api.owned()
    assert HELD_POLICY in owned["firewall-policy"] and HELD_RULE in owned["firewall-rule"]
    assert HELD_POLICY in aps_policies(next(iter(owned["application-policy-set"].values())))

    dispatcher.on_event(TOYS.name, "ADDED", toy("big", 12))
    dispatcher.on_event(TOYS.name, "ADDED", toy("bad", None))
    assert [(e["kind"], e["name"], e["reason"]) for e in pipeline.db.errors] == [
        (TOY, "bad", "spec.size: None is not an integer"), (TOY, "big", TOO_BIG)]
    assert records["bad"].state == REJECTED and records["bad"].firewall_policy == []
    wait_green(lambda: records["big"].state == REJECTED and records["big"].errors == [TOO_BIG], "big settled")

    for name, size in (("bad", None), ("big", 12), ("held", 7)):
        dispatcher.on_event(TOYS.name, "DELETED", toy(name, size))
    assert records == {} and pipeline.db.errors == []
    wait_green(lambda: HELD_POLICY not in api.owned()["firewall-policy"], "the toy's objects deleted")
    reconciler.stop()


def test_a_new_kind_is_read_from_files_and_translated_offline(tmp_path: Path) -> None:
    kinds, _ = kinds_with_toys()
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([namespace("a"), toy("held", 7)]))
    notes: list = []
    manifests = load_manifests([str(path)], notes.append, kinds=kinds)
    assert manifests.objects[TOY] == [toy("held", 7)] and notes == []
    translation = translate(manifests.objects, kinds=kinds).to_dict()
    assert list(HELD_POLICY) in [p["fq_name"] for p in translation["firewall_policies"]]
    # The product's registry does not read it, and says so.
    assert load_manifests([str(path)], notes.append).objects.get(TOY) is None
    assert notes == [f"{path}: document 2: kind 'Toy' is not read here: only Namespace, Pod, NetworkPolicy, "
                     "ClusterNetworkPolicy are; skipped"]


def test_what_if_evaluates_a_change_of_a_new_kind_over_its_reach() -> None:
    kinds, _ = kinds_with_toys()
    cluster = Manifests({"Namespace": [namespace("a"), namespace("b")],
                         "Pod": [pod("a", "web", "10.0.0.1", app="web"), pod("b", "db", "10.0.1.1", app="db")]},
                        kinds=kinds)
    result = what_if(cluster, Manifests({TOY: [toy("block", 80)]}, kinds=kinds))
    assert result.affected_pods == 2  # a toy reaches the whole cluster
    between_pods = {(c.source, c.destination, c.protocol, c.ports, c.contrail, c.kubernetes) for c in result.changes
                    if c.source in ("a/web", "b/db") and c.destination in ("a/web", "b/db")}
    assert between_pods == {(src, dst, "tcp", (80, 80), (True, False), (True, True))
                            for src, dst in (("a/web", "b/db"), ("b/db", "a/web"))}


def test_a_new_kind_has_its_page_on_the_introspect_server() -> None:
    kinds, records = kinds_with_toys()
    pipeline = build_pipeline("k8s", "k8s", kinds=kinds)
    for resource in pipeline.kinds.names():
        pipeline.cache.on_event(resource, "LISTED", {"resourceVersion": "1"})
    pipeline.cache.on_event(TOYS.name, "ADDED", toy("held", 7))
    app = create_app(pipeline.db, kinds=kinds)
    rows = call(app, TOY_PAGE_PATH + "?format=json").json()["toys"]
    assert rows == [{"name": "held", "firewall_policy": list(HELD_POLICY), "rules": [HELD_RULE[-1]],
                     "state": PENDING, "errors": []}]
    assert f'<a href="{TOY_PAGE_PATH}">Toys</a> <span class="count">1</span>' in call(app, "/").text
    assert records["held"].state == PENDING
    assert call(create_app(pipeline.db), TOY_PAGE_PATH).status == 404  # the product's server has no such page
