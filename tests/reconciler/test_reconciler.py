"""The reconciler against the embedded config API (in-process): minimal writes, make before break,
failures that delay but lose nothing, ownership, drift repair, pod tagging."""
from __future__ import annotations

import copy
from typing import List, Tuple

from kube_manager.records.db import PENDING, SYNCED
from kube_manager.service.pipeline import build_pipeline
from kube_manager.reconciler.pods import NO_VM
from tests.support.builders import HTTP_8080, allow_from, pod, policy
from tests.support.reconciler_support import (ALLOW_CLIENT, BASE, CLIENT, EGRESS, FAST, PODS, WEB, Cluster, InProcessApi,
                                      RESOURCE_OF, Setup, connection_error, differences, expected_objects, server_error)
from tests.support.waiting import wait_green


def object_count(translation) -> int:
    return sum(len(v) for v in expected_objects(translation).values())


def test_cold_start_writes_each_object_once_and_matches_translate(setup):
    s = setup().start()
    s.converge()
    translation = s.cluster.translation()
    assert len(s.api.writes_of("create")) == object_count(translation)
    assert s.api.writes_of("update") == [] and s.api.writes_of("delete") == []
    assert len(s.api.writes_of("set-tag")) == len(PODS)
    assert s.rec.counters.writes == len(s.api.writes)
    assert all(r.state == SYNCED for r in s.cluster.db.network_policies.values())
    assert s.api.max_inflight <= FAST.concurrency


def test_restart_with_nothing_changed_writes_nothing(setup):
    first = setup().start()
    first.converge()
    first.stop()
    second = setup(api=first.api).start()
    first.api.writes.clear()
    second.converge()
    assert first.api.writes == []


def test_a_restart_sends_its_first_listings_before_it_translates_the_initial_lists(setup):
    """Restart time (issue 12): once every first Kubernetes list is in, the first page of every
    listing (the VMIs and each type) goes out before those lists are translated (the config API
    renders them meanwhile); the first resync reads those answers and writes nothing."""
    first = setup().start()
    first.converge()
    first.stop()
    pipeline = build_pipeline("k8s", "k8s")
    rec = pipeline.connect(first.api, FAST)
    untranslated = sum(map(len, pipeline.db.desired.values()))  # the cluster's own objects only
    translated_when_listed = []
    plain_call = first.api._call

    def spy(op, obj_type, fq, fn):
        if op == "list":
            translated = sum(map(len, pipeline.db.desired.values())) - untranslated
            translated_when_listed.append((obj_type, len(pipeline.db.network_policies), translated))
        return plain_call(op, obj_type, fq, fn)
    first.api._call = spy
    for manifest in BASE:
        pipeline.cache.on_event(RESOURCE_OF[manifest["kind"]], "ADDED", copy.deepcopy(manifest))
    for resource in RESOURCE_OF.values():
        pipeline.cache.on_event(resource, "LISTED", {"resourceVersion": "1"})
    assert translated_when_listed == [(obj_type, 0, 0) for obj_type in (
        "virtual-machine-interface", "firewall-rule", "firewall-policy", "tag", "address-group", "application-policy-set")]
    assert pipeline.db.network_policies and sum(map(len, pipeline.db.desired.values())) > untranslated
    first.api.writes.clear()
    rec.start()
    rec.resync()
    wait_green(rec.converged, "convergence")
    assert first.api.writes == []
    assert len(translated_when_listed) == 6  # one page each: nothing listed twice
    rec.stop()


def test_what_is_kept_of_each_object_is_its_uuid_and_the_desired_fields_shared_with_desired(setup):
    """Memory (issue 12): db.actual keeps no copy of what the server added or echoed back, after a
    cold start (created) as after a restart (listed); the objects still diff and converge."""
    first = setup().start()
    first.converge()
    first.stop()
    second = setup(api=first.api).start()
    second.converge()
    for s in (first, second):
        indexed = {s.rec.aps_key: "firewall_policy_refs", s.rec.denyall_key: "firewall_rule_refs",
                   s.rec.gates.tiers.isolation: "firewall_rule_refs"}
        for obj_type, objects in s.cluster.db.actual.items():
            for fq_name, kept in objects.items():
                desired = s.cluster.db.desired[obj_type][fq_name]
                assert kept["uuid"] and not {"href", "name", "parent_uuid", "parent_href"} & kept.keys()
                copied = [name for name, value in desired.items() if name in kept and kept[name] is not value]
                assert copied in ([], [indexed.get((obj_type, fq_name))]), (obj_type, fq_name, copied)
    for obj_type, objects in second.cluster.db.actual.items():  # listed: keyed by the desired key objects
        desired_keys = {fq_name: fq_name for fq_name in second.cluster.db.desired[obj_type]}
        assert all(fq_name is desired_keys[fq_name] for fq_name in objects), obj_type


def test_a_resync_reads_only_the_compared_fields_and_still_repairs_a_field_edited_by_hand(setup):
    """Restart cost (issue 12): one plain listing per type asking for the fields we write (not
    every field of every object, nor hrefs); what drifted in those fields is still found and repaired."""
    s = setup().start()
    s.converge()
    listings = []
    plain_list = s.api.list_pages

    def spy(obj_type, page_limit, *, detail=False, fields=None, exclude_hrefs=False):
        listings.append((obj_type, detail, tuple(fields or ()), exclude_hrefs))
        return plain_list(obj_type, page_limit, detail=detail, fields=fields, exclude_hrefs=exclude_hrefs)
    s.api.list_pages = spy
    pm = "default-policy-management"
    rule_fq = next(fq for fq in s.cluster.db.desired["firewall-rule"] if fq[-1].startswith("k8s-a-ingress"))
    stored = s.api.api.lookup("firewall-rule", list(rule_fq))
    s.api.api.update("firewall-rule", stored.uuid, {"direction": "<>", "id_perms": {"description": "by hand"}})
    s.api.writes.clear()
    s.rec.resync()
    s.converge()
    assert [(w.op, w.fq_name, set(w.body)) for w in s.api.writes] == [("update", rule_fq, {"direction"})]
    assert all(not detail and no_hrefs for _, detail, _, no_hrefs in listings)
    fields = {obj_type: set(asked) for obj_type, _, asked, _ in listings}
    assert {"annotations", "direction", "endpoint_1", "service"} <= fields["firewall-rule"]
    assert "id_perms" not in fields["firewall-rule"] and pm not in fields["firewall-rule"]
    assert fields["virtual-machine-interface"] == {"virtual_machine_refs", "tag_refs"}


def test_new_policy_is_made_before_break(setup):
    s = setup().start()
    s.converge()
    s.api.writes.clear()
    s.cluster.apply(policy("b", "db-from-web", allow_from("web", "db", 5432)))
    s.converge()
    idx = s.api.index_of
    rule = idx("create", "firewall-rule", "k8s-b-ingress-db-from-web-0-podSelector-0-0")
    deny = idx("create", "firewall-rule", "k8s-b-ingress-db-from-web-denyall")
    fwp = idx("create", "firewall-policy", "k8s-b-db-from-web")
    aps = idx("update", "application-policy-set", "k8s")
    denyall = idx("update", "firewall-policy", "k8s-denyall")
    assert rule < fwp < aps < denyall and deny < denyall
    # the only updates are the two ref lists; each list changed by exactly this policy
    assert sorted(w.fq_name[-1] for w in s.api.writes_of("update")) == ["k8s", "k8s-denyall"]


def test_deleted_policy_is_broken_in_reverse(setup):
    s = setup().start()
    s.converge()
    s.api.writes.clear()
    # the first attempt at the denyall policy fails: everything that must follow it has to wait
    once = []
    s.api.fault = lambda op, t, fq: (once.append(1) or server_error()) if (
        op == "update" and fq[-1:] == ("k8s-denyall",) and not once) else None
    s.cluster.remove(ALLOW_CLIENT)
    s.converge()
    assert once
    idx = s.api.index_of
    denyall = idx("update", "firewall-policy", "k8s-denyall")
    aps = idx("update", "application-policy-set", "k8s")
    fwp = idx("delete", "firewall-policy", "k8s-a-allow-client")
    rule = idx("delete", "firewall-rule", "k8s-a-ingress-allow-client-0-podSelector-0-0")
    deny = idx("delete", "firewall-rule", "k8s-a-ingress-allow-client-denyall")
    assert denyall < aps < fwp < rule and denyall < deny
    # app=client is no longer referenced: its pod is untagged before the tag goes
    untag = max(i for i, w in enumerate(s.api.writes) if w.op == "set-tag")
    assert untag < idx("delete", "tag", "app=client")


def test_changed_policy_only_touches_what_changed(setup):
    s = setup().start()
    s.converge()
    s.api.writes.clear()
    s.cluster.apply(policy("a", "allow-client", allow_from("client", "web", port=8443)))
    s.converge()
    assert [(w.op, w.fq_name[-1]) for w in s.api.writes] == [
        ("update", "k8s-a-ingress-allow-client-0-podSelector-0-0"), ("update", "k8s-a-allow-client")]


def test_server_errors_and_dropped_connections_delay_but_lose_nothing(setup):
    api = InProcessApi()
    failed = set()

    def flaky(op: str, obj_type: str, fq: Tuple[str, ...]):
        if op in ("create", "set-tag", "update") and (op, fq) not in failed:
            failed.add((op, fq))
            return server_error(op) if len(failed) % 2 else connection_error()
        return None
    api.fault = flaky
    s = setup(api=api).start()
    s.converge()
    assert s.rec.counters.failures >= len(failed) > 10


def test_a_failing_object_does_not_hold_back_the_others(setup):
    api = InProcessApi()
    broken = "k8s-a-ingress-allow-client-0-podSelector-0-0"
    api.fault = lambda op, t, fq: server_error() if op == "create" and fq[-1:] == (broken,) else None
    s = setup(api=api).start()
    aps = ("default-policy-management", "k8s")

    def others_in_force() -> bool:
        body = s.api.owned()["application-policy-set"].get(aps)
        refs = {r["to"][-1] for r in (body or {}).get("firewall_policy_refs", [])}
        return {"k8s-b-from-team", "k8s-a-egress", "k8s-denyall", "k8s-allowall"} <= refs
    wait_green(others_in_force, "the other policies in the APS")
    wait_green(lambda: s.rec.counters.failures >= 3, "retries of the broken rule")
    # fail closed: without its pass rule, the policy's deny rule is not in force either
    denyall = s.api.owned()["firewall-policy"][("default-policy-management", "k8s-denyall")]
    assert "k8s-a-ingress-allow-client-denyall" not in {r["to"][-1] for r in denyall["firewall_rule_refs"]}
    assert not s.rec.converged()
    api.fault = None
    s.converge()


def test_rule_deleted_by_hand_comes_back_at_resync(setup):
    s = setup().start()
    s.converge()
    store = s.api.api
    name = ("default-policy-management", "k8s-a-ingress-allow-client-0-podSelector-0-0")
    fwp = store.lookup("firewall-policy", ["default-policy-management", "k8s-a-allow-client"])
    store.update("firewall-policy", fwp.uuid, {"firewall_rule_refs": []})
    store.delete("firewall-rule", store.lookup("firewall-rule", list(name)).uuid)
    assert differences(expected_objects(s.cluster.translation()), s.api.owned()) != []
    s.api.writes.clear()
    assert s.rec.resync() == 2
    s.converge()
    assert [(w.op, w.fq_name[-1]) for w in s.api.writes] == [("create", name[-1]), ("update", "k8s-a-allow-client")]


def test_leftovers_are_collected_and_unowned_objects_left_alone(setup):
    api = InProcessApi()
    pm = ["default-policy-management"]
    marks = {"key_value_pair": [{"key": "owner", "value": "k8s"}, {"key": "cluster", "value": "k8s"},
                                {"key": "kind", "value": "firewall-rule"}]}
    rule = {"parent_type": "policy-management", "action_list": {"simple_action": "pass"}, "direction": ">",
            "endpoint_1": {"any": True}, "endpoint_2": {"any": True},
            "service": {"protocol": "any", "dst_ports": {"start_port": 0, "end_port": 65535}}}
    api.api.create("firewall-rule", {**rule, "fq_name": pm + ["k8s-old-leftover"], "annotations": marks})
    api.api.create("firewall-rule", {**rule, "fq_name": pm + ["k8s-operator-made"]})
    s = setup(api=api).start()
    s.converge()
    names = {o.fq_name[-1] for o in api.api.store.objects_of_type("firewall-rule")}
    assert "k8s-old-leftover" not in names and "k8s-operator-made" in names


def test_name_taken_by_an_unowned_object_is_reported_not_overwritten(setup):
    api = InProcessApi()
    taken = ["default-policy-management", "k8s-a-egress"]
    api.api.create("firewall-policy", {"fq_name": taken, "parent_type": "policy-management"})
    s = setup(api=api).start()
    wait_green(lambda: ("firewall-policy", tuple(taken)) in s.rec.conflicts, "the conflict")
    wait_green(lambda: s.api.owned()["firewall-policy"].get(
        ("default-policy-management", "k8s-b-from-team")) is not None, "the other policies")
    assert api.api.lookup("firewall-policy", taken).props.get("annotations") is None
    assert s.cluster.db.network_policies[("a", "egress")].state == "retrying"
    assert s.cluster.db.network_policies[("b", "from-team")].state == SYNCED
    assert not s.rec.converged()


def test_shared_tag_of_another_cluster_is_used_as_it_is(setup):
    api = InProcessApi()
    theirs = {"key_value_pair": [{"key": "owner", "value": "k8s"}, {"key": "cluster", "value": "other"}]}
    api.api.create("tag", {"fq_name": ["app=web"], "tag_type_name": "app", "tag_value": "web", "annotations": theirs})
    s = setup(api=api).start()
    wait_green(s.rec.converged, "convergence")
    tag = api.api.lookup("tag", ["app=web"])
    assert tag.props["annotations"] == theirs  # not adopted, not rewritten
    s.cluster.remove(ALLOW_CLIENT, EGRESS)
    wait_green(s.rec.converged, "convergence after removal")
    assert api.api.lookup("tag", ["app=web"]) is not None  # not ours to delete


def test_create_conflict_with_our_own_object_reads_compares_updates(setup):
    api = InProcessApi()
    name = "k8s-b-from-team"
    raced = []

    def race(op: str, obj_type: str, fq: Tuple[str, ...]):
        if op == "create" and fq[-1:] == (name,) and not raced:
            raced.append(fq)  # someone (a previous run) created it meanwhile, with stale content
            body = dict(s.cluster.cache.translator.desired()["firewall-policy"][fq])
            api.api.create("firewall-policy", {**body, "firewall_rule_refs": []})
        return None
    api.fault = race
    s = setup(api=api).start()
    s.converge()
    assert raced and s.rec.counters.conflicts == 1
    assert ("update", name) in [(w.op, w.fq_name[-1]) for w in api.writes]


def test_pod_whose_vmi_appears_late_is_pending_then_tagged(setup):
    s = setup(vmis=False).start()
    record = s.cluster.db.pods[("a", "web")]
    wait_green(lambda: record.vmi_state == NO_VM, "the pod shown without VM")
    assert not s.rec.converged()
    for manifest in PODS:
        s.api.add_pod_vmi(manifest["metadata"]["uid"], manifest["metadata"]["name"])
    s.converge()
    assert record.vmi_state == SYNCED


def test_pod_label_change_retags_its_vmi(setup):
    s = setup().start()
    s.converge()
    s.api.writes.clear()
    s.cluster.apply(pod("a", "client", "10.0.0.2", app="web", ports=HTTP_8080))
    s.converge()
    assert [w.op for w in s.api.writes if w.obj_type == "virtual-machine-interface"] == ["set-tag"]
    assert "app=web" in s.api.vmi_tags(CLIENT["metadata"]["uid"])


def client_tagged_vmi(s: Setup, uid: str, name: str) -> str:
    """A VMI that is not a pod of ours, carrying app=client; its uuid."""
    vmi = s.api.add_pod_vmi(uid, name)
    s.api.api.set_tag({"obj_type": "virtual-machine-interface", "obj_uuid": vmi,
                       "app": {"is_global": True, "value": "client"}})
    return vmi


def test_a_tag_still_used_by_someone_else_is_left_for_the_next_resync(setup):
    s = setup().start()
    s.converge()
    # a VMI that is not a pod of ours carries app=client
    client_tagged_vmi(s, "0a0a0a0a-0000-0000-0000-000000000001", "foreign")
    s.cluster.remove(ALLOW_CLIENT)
    wait_green(s.rec.converged, "convergence with the tag in use")
    assert s.api.api.lookup("tag", ["app=client"]) is not None
    assert s.rec.summary()["deferred"] == 1


def test_a_tag_delete_refused_while_a_departing_vmi_still_carries_it_is_retried_not_left(setup):
    """The race of a policy and a pod deleted together: the pod's VMI, which its CNI removes a
    moment later, still carries the label tag when the tag's delete goes out (409). The delete is
    retried with backoff, so the tag goes without waiting for the next resync."""
    s = setup().start()
    s.converge()
    departing = client_tagged_vmi(s, "0a0a0a0a-0000-0000-0000-000000000002", "departing")
    s.cluster.remove(ALLOW_CLIENT)
    wait_green(lambda: s.rec.counters.failures >= 1, "the tag's delete refused while the VMI carries it")
    s.api.api.delete("virtual-machine-interface", departing)  # what the CNI does for a deleted pod
    wait_green(lambda: s.api.api.lookup("tag", ["app=client"]) is None, "the tag deleted on a retry")
    wait_green(s.rec.converged, "convergence")
    assert s.rec.summary()["deferred"] == 0


def converged_with_many(setup, count: int) -> Tuple[Setup, List[dict]]:
    """A converged cluster with `count` more NetworkPolicies (long APS and denyall ref lists),
    its write log cleared."""
    many = [policy("a", f"np-{i}", allow_from("client", "web", 1000 + i)) for i in range(count)]
    s = setup(manifests=BASE + tuple(many)).start()
    s.converge()
    s.api.writes.clear()
    return s, many


def test_long_ref_lists_change_one_ref_at_a_time(setup):
    s, many = converged_with_many(setup, 20)
    s.cluster.apply(policy("b", "one-more", allow_from("web", "db", 5432)))
    s.converge()
    by_target = {(w.op, w.fq_name[-1]) for w in s.api.writes if w.fq_name[-1] in ("k8s", "k8s-denyall")}
    assert by_target == {("ref-update", "k8s"), ("ref-update", "k8s-denyall")}
    s.api.writes.clear()
    s.cluster.remove(many[3])
    s.converge()
    ops = [(w.op, w.fq_name[-1], w.body.get("operation")) for w in s.api.writes]
    assert ops.index(("ref-update", "k8s-denyall", "DELETE")) < ops.index(("ref-update", "k8s", "DELETE"))


def test_an_object_deleted_by_hand_while_being_updated_is_created_again(setup):
    s = setup().start()
    s.converge()
    store = s.api.api
    name = ["default-policy-management", "k8s-a-ingress-allow-client-0-podSelector-0-0"]
    fwp = store.lookup("firewall-policy", ["default-policy-management", "k8s-a-allow-client"])
    store.update("firewall-policy", fwp.uuid, {"firewall_rule_refs": []})
    store.delete("firewall-rule", store.lookup("firewall-rule", name).uuid)
    s.api.writes.clear()
    s.cluster.apply(policy("a", "allow-client", allow_from("client", "web", port=8443)))  # updates the rule
    wait_green(lambda: s.rec.queue.is_idle(), "the update handled")
    rule_writes = [w.op for w in s.api.writes if w.fq_name[-1] == name[-1]]
    assert rule_writes == ["create"]  # its PUT got 404 (not logged as a write): created again
    s.rec.resync()  # the policy edited by hand is drift: repaired by the resync
    s.converge()


def test_deny_rules_wait_for_the_pods_being_given_the_tags_their_policy_uses(setup):
    import gevent
    s = setup().start()
    s.converge()
    s.api.writes.clear()
    client_vmi = s.api.api.lookup("virtual-machine-interface", ["default-domain", "default-project", "client"])
    # tagging the client pod is slow: its new tag must be on it before the new deny rule applies
    s.api.fault = lambda op, t, fq: gevent.sleep(0.2) if op == "set-tag" and fq == tuple(client_vmi.fq_name) else None
    s.cluster.apply(pod("a", "client", "10.0.0.2", app="client", role="reader", ports=HTTP_8080),
                    policy("a", "web-from-readers", {
                        "podSelector": {"matchLabels": {"app": "web"}},
                        "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "reader"}}}]}]}))
    s.converge()
    ops = [(w.op, w.fq_name[-1]) for w in s.api.writes]
    assert ops.index(("set-tag", "client")) < ops.index(("update", "k8s-denyall"))


def test_an_event_never_reads_the_long_ref_lists_whole(setup, monkeypatch):
    import kube_manager.reconciler.diff as diff_module
    s, many = converged_with_many(setup, 30)
    whole_reads: List[str] = []
    real_refs = diff_module.refs

    def spy(obj_type, body, ref_field):
        name = (body.get("fq_name") or [""])[-1]
        if (name, ref_field) in (("k8s", "firewall_policy_refs"), ("k8s-denyall", "firewall_rule_refs")):
            whole_reads.append(name)
        return real_refs(obj_type, body, ref_field)
    monkeypatch.setattr(diff_module, "refs", spy)
    s.cluster.apply(policy("b", "one-more", {**allow_from("web", "db", 5432), "policyTypes": ["Ingress", "Egress"],
                                             "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]}))
    s.cluster.remove(many[7])
    wait_green(s.rec.converged, "convergence")
    assert whole_reads == []
    monkeypatch.undo()
    s.converge()
    holders = [(w.op, w.fq_name[-1], w.body.get("operation")) for w in s.api.writes
               if w.fq_name[-1] in ("k8s", "k8s-denyall")]
    assert sorted(holders) == [("ref-update", "k8s", "ADD"), ("ref-update", "k8s", "DELETE"),
                               ("ref-update", "k8s-denyall", "ADD"), ("ref-update", "k8s-denyall", "ADD"),
                               ("ref-update", "k8s-denyall", "DELETE")]


def test_the_aps_is_planned_once_its_policies_are_written_not_once_per_policy(setup, monkeypatch):
    import kube_manager.reconciler.diff as diff_module
    many = [policy("a", f"np-{i}", allow_from("client", "web", 1000 + i)) for i in range(30)]
    s = setup(manifests=BASE + tuple(many))
    plans: List[str] = []
    real_plan = diff_module.plan

    def spy(key, *args, **kwargs):
        step = real_plan(key, *args, **kwargs)
        if key == s.rec.aps_key:
            plans.append(step.action)
        return step
    monkeypatch.setattr(diff_module, "plan", spy)
    s.start()
    s.converge()
    assert plans == ["wait", "create", "none"]  # woken when its last pending policy was written


def test_renames_in_long_ref_lists_converge_one_ref_at_a_time(setup):
    s, _many = converged_with_many(setup, 20)
    # "b/web-db" and "b-web/db" both want the name k8s-b-web-db: both get a suffixed name (SPEC 4)
    s.cluster.apply(policy("b", "web-db", allow_from("web", "db", 5432)))
    s.converge()
    s.cluster.apply(policy("b-web", "db", allow_from("web", "db", 5433)))
    s.converge()
    aps = [w for w in s.api.writes if w.fq_name[-1] == "k8s"]
    assert aps and all(w.op == "ref-update" for w in aps)
    s.cluster.remove(policy("b-web", "db", {}))
    s.converge()


def test_a_name_taken_in_the_listing_costs_no_request_at_each_resync(setup):
    api = InProcessApi()
    taken = ("default-policy-management", "k8s-a-egress")
    api.api.create("firewall-policy", {"fq_name": list(taken), "parent_type": "policy-management"})
    calls: List[Tuple[str, Tuple[str, ...]]] = []
    api.fault = lambda op, obj_type, fq: calls.append((op, fq))
    s = setup(api=api).start()
    wait_green(lambda: ("firewall-policy", taken) in s.rec.conflicts, "the conflict")
    wait_green(lambda: s.rec.queue.is_idle(), "the rest written")
    s.rec.resync()
    wait_green(lambda: s.rec.queue.is_idle(), "the resync's work")
    assert ("create", taken) not in calls and [op for op, _fq in calls if op == "read"] == []
    assert s.rec.state_of(("firewall-policy", taken)) == "retrying"
    # deleted by its owner: the next resync creates ours
    api.api.delete("firewall-policy", api.api.lookup("firewall-policy", list(taken)).uuid)
    s.rec.resync()
    s.converge()
    assert ("firewall-policy", taken) not in s.rec.conflicts


def test_a_host_network_pod_is_left_alone_and_does_not_hold_convergence(setup):
    from kube_manager.reconciler.pods import HOST_NETWORK
    agent = pod("a", "node-agent", "192.168.0.10", app="web", ports=HTTP_8080)
    agent["spec"]["hostNetwork"] = True
    s = setup(vmis=False)
    for manifest in PODS:
        s.api.add_pod_vmi(manifest["metadata"]["uid"], manifest["metadata"]["name"])
    reads: List[str] = []
    s.api.fault = lambda op, obj_type, fq: reads.append(obj_type) if op == "read" else None
    s.cluster.apply(agent)
    s.start()
    wait_green(s.rec.converged, "convergence without the host-network pod's VM")
    record = s.cluster.db.pods[("a", "node-agent")]
    assert record.vmi_state == HOST_NETWORK and record.tags == [] and reads == []
    s.cluster.apply(pod("a", "node-agent", "192.168.0.10", app="client", ports=HTTP_8080) | {"spec": agent["spec"]})
    s.rec.resync()
    wait_green(s.rec.converged, "convergence after a relabel and a resync")
    assert record.vmi_state == HOST_NETWORK and reads == []


def test_host_network_is_kept_by_the_watcher_and_marks_the_pod():
    from kube_manager.handlers.pod import trim_pod
    from kube_manager.reconciler.pods import HOST_NETWORK
    manifest = pod("a", "agent", "192.168.0.10", app="web", ports=HTTP_8080)
    manifest["spec"]["hostNetwork"] = True
    assert trim_pod(manifest)["spec"]["hostNetwork"] is True
    assert "hostNetwork" not in trim_pod(WEB)["spec"]
    cluster = Cluster()
    cluster.apply(trim_pod(manifest), trim_pod(WEB))
    assert cluster.db.pods[("a", "agent")].vmi_state == HOST_NETWORK
    assert cluster.db.pods[("a", "web")].vmi_state != HOST_NETWORK


def test_policy_states_are_pushed_by_the_reconciler_for_the_objects_whose_state_changed(setup):
    s = setup()
    db = s.cluster.db
    s.start()
    assert {r.state for r in db.network_policies.values()} == {PENDING}  # pushed by the resync
    s.converge()
    assert {r.state for r in db.network_policies.values()} == {SYNCED}  # nobody asked: pushed
    db.network_policies[("b", "from-team")].status.state = "untouched"
    s.cluster.apply(policy("a", "allow-client", allow_from("client", "web", port=8443)))
    assert db.network_policies[("a", "allow-client")].state == PENDING  # at once, with the event
    wait_green(s.rec.converged, "convergence")
    assert db.network_policies[("a", "allow-client")].state == SYNCED
    assert db.network_policies[("b", "from-team")].state == "untouched"  # its objects did not move
    s.rec.resync()  # every state may have changed: every policy is recomputed
    assert db.network_policies[("b", "from-team")].state == SYNCED


def test_the_deny_rules_of_a_new_policy_join_the_denyall_together_after_its_aps_ref(setup):
    import gevent
    s, _many = converged_with_many(setup, 20)
    unanswered: List[int] = []  # per deny ref sent: how many others were then still unanswered
    pending = [0]

    def slow_denyall(op, obj_type, fq):
        if op == "ref-update" and fq[-1:] == ("k8s-denyall",):
            unanswered.append(pending[0])
            pending[0] += 1
            gevent.sleep(0.05)
            pending[0] -= 1
        return None
    s.api.fault = slow_denyall
    s.cluster.apply(policy("b", "both-ways", {**allow_from("web", "db", 5432), "policyTypes": ["Ingress", "Egress"],
                                              "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]}))
    s.converge()
    holders = [(w.op, w.fq_name[-1], w.body.get("operation")) for w in s.api.writes
               if w.fq_name[-1] in ("k8s", "k8s-denyall")]
    assert holders[0] == ("ref-update", "k8s", "ADD")  # the policy is in force before any deny rule
    assert holders[1:] == [("ref-update", "k8s-denyall", "ADD")] * 2
    assert unanswered == [0, 1]  # the second deny ref went out while the first was unanswered


def unprotected_denies(s: Setup) -> List[str]:
    """The deny rules `<cluster>-denyall` applies now whose policy is not yet in force (not in the
    APS, or missing one of its pass rules): what make before break must never let happen."""
    owned = s.api.owned()
    aps = owned["application-policy-set"].get(s.rec.aps_key[1], {})
    in_aps = {tuple(ref["to"]) for ref in aps.get("firewall_policy_refs") or []}
    denyall = owned["firewall-policy"].get(s.rec.denyall_key[1], {})
    found = []
    for ref in denyall.get("firewall_rule_refs") or []:
        policy_fq = s.rec.desired.deny_owner(tuple(ref["to"]))
        if policy_fq is None:
            continue
        wanted = {tuple(r["to"]) for r in s.rec.desired.objects["firewall-policy"][policy_fq]["firewall_rule_refs"]}
        held = {tuple(r["to"]) for r in owned["firewall-policy"].get(policy_fq, {}).get("firewall_rule_refs") or []}
        if policy_fq not in in_aps or not wanted <= held:
            found.append(ref["to"][-1])
    return found


def test_a_new_policy_sends_its_pass_rules_before_its_deny_rules_and_no_deny_ever_applies_unprotected(setup):
    s, _many = converged_with_many(setup, 5)
    unsafe: List[str] = []

    def watch(op, obj_type, fq):  # before every write: the state the previous ones left
        unsafe.extend(unprotected_denies(s))
    s.api.fault = watch
    s.cluster.apply(policy("b", "both-ways", {**allow_from("web", "db", 5432), "policyTypes": ["Ingress", "Egress"],
                                              "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]}))
    s.converge()
    assert unsafe == [] and unprotected_denies(s) == []
    rules = [w.fq_name[-1] for w in s.api.writes if w.op == "create" and w.obj_type == "firewall-rule"]
    denies = [name for name in rules if name.endswith("-denyall")]
    # the deny rules are needed only after the policy is in the APS: the pass rules go first
    assert len(denies) == 2 and rules[-2:] == denies, rules
