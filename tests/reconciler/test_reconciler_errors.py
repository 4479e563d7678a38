"""Error classes of the reconciler (SPEC section 7) against the embedded config API, in-process:
temporary failures are retried with backoff, permanent ones park the object with the server's
message until its desired state changes or the next resync, and a 404 about a reference never
creates a parent."""
from __future__ import annotations

import logging
from typing import List, Tuple

from kube_manager.records.db import PARKED, RETRYING
from tests.support.builders import allow_from, policy
from tests.support.reconciler_support import ALLOW_CLIENT, server_error
from tests.support.waiting import wait_green
from vnc_client.errors import BadRequest

PM = "default-policy-management"
RULE = (PM, "k8s-a-ingress-allow-client-0-podSelector-0-0")
RULE_KEY = ("firewall-rule", RULE)
POLICY_KEY = ("firewall-policy", (PM, "k8s-a-allow-client"))
NP = ("a", "allow-client")


def attempts_on(calls: List[Tuple[str, Tuple[str, ...]]], fq: Tuple[str, ...]) -> int:
    return sum(1 for op, name in calls if op == "create" and name == fq)


def np_entry(s):
    return s.cluster.db.network_policies[NP]


def settle(s) -> None:
    """Wait until the work queue has nothing left: not queued, not running, not scheduled."""
    wait_green(s.rec.queue.is_idle, "an idle work queue")


def test_a_400_parks_the_object_with_the_server_message_until_its_desired_state_changes(setup):
    s = setup()
    calls: List[Tuple[str, Tuple[str, ...]]] = []

    def refuse(op, obj_type, fq):
        calls.append((op, fq))
        if op == "create" and fq == RULE:
            return BadRequest("POST", "/firewall-rules", 400, "Bad Request: the rule says no")
        return None
    s.api.fault = refuse
    s.start()
    wait_green(lambda: s.rec.state_of(RULE_KEY) == PARKED, "the refused rule parked")
    settle(s)
    # Parked, not retried: nothing is scheduled, one attempt only, everything else converged.
    assert attempts_on(calls, RULE) == 1
    assert s.rec.queue.scheduled == 0
    assert not s.rec.converged()
    entry = np_entry(s)
    assert entry.state == PARKED
    assert any("400" in e and "the rule says no" in e and RULE[-1] in e for e in entry.write_errors), entry
    assert s.cluster.db.parked[RULE_KEY].startswith("BadRequest: POST /firewall-rules -> 400")
    # What `run --once` names when it gives up: the parked rule with the server's message.
    assert any(RULE[-1] in line and "parked (BadRequest" in line for line in s.rec.unsettled(5)), s.rec.unsettled(5)
    other = s.cluster.db.network_policies[("b", "from-team")]
    assert other.state == "synced" and not other.write_errors

    # An unrelated change does not wake it up.
    s.cluster.apply(policy("b", "late", allow_from("client", "db")))
    settle(s)
    assert attempts_on(calls, RULE) == 1

    # Its own desired state changes: tried again, and this time the server accepts it.
    s.api.fault = lambda op, obj_type, fq: calls.append((op, fq))
    s.cluster.apply(policy("a", "allow-client", allow_from("client", "web", port=81)))
    s.converge()
    assert attempts_on(calls, RULE) == 2
    assert RULE_KEY not in s.cluster.db.parked
    assert np_entry(s).state == "synced" and np_entry(s).write_errors == []


def test_a_parked_object_is_tried_again_at_the_next_resync(setup):
    s = setup()
    refusing = [True]
    s.api.fault = lambda op, obj_type, fq: BadRequest("POST", "/firewall-rules", 400, "no") if (
        refusing[0] and op == "create" and fq == RULE) else None
    s.start()
    wait_green(lambda: s.rec.state_of(RULE_KEY) == PARKED, "the refused rule parked")
    settle(s)
    refusing[0] = False
    s.rec.resync()
    s.converge()
    assert s.cluster.db.parked == {}


def test_a_5xx_is_retried_with_backoff_and_recovers(setup):
    s = setup()
    calls: List[Tuple[str, Tuple[str, ...]]] = []
    failing = [True]

    def flaky(op, obj_type, fq):
        calls.append((op, fq))
        return server_error() if failing[0] and op == "create" and fq == RULE else None
    s.api.fault = flaky
    s.start()
    wait_green(lambda: attempts_on(calls, RULE) >= 3, "retries of the rule")
    assert s.rec.state_of(RULE_KEY) == RETRYING
    assert RULE_KEY not in s.cluster.db.parked
    failing[0] = False
    s.converge()


def test_a_404_about_a_missing_reference_never_creates_a_parent(setup):
    """The rule a firewall policy refers to vanishes just before the policy's create: the real
    server answers 404 naming the rule. That is no reason to POST a policy-management."""
    s = setup()
    store = s.api.api
    vanished: List[str] = []
    requested: List[Tuple[str, str]] = []

    def delete_rule_first(op, obj_type, fq):
        requested.append((op, obj_type))
        if op == "create" and obj_type == "firewall-policy" and fq == POLICY_KEY[1] and not vanished:
            rule = store.lookup("firewall-rule", list(RULE))
            store.delete("firewall-rule", rule.uuid)
            vanished.append(rule.uuid)
        return None
    s.api.fault = delete_rule_first
    s.start()
    wait_green(lambda: s.rec.state_of(POLICY_KEY) == PARKED, "the policy parked")
    settle(s)
    assert ("create", "policy-management") not in requested  # not even an attempt
    reason = s.cluster.db.parked[POLICY_KEY]
    assert "404" in reason and RULE[-1] in reason, reason
    assert any(RULE[-1] in e for e in np_entry(s).write_errors)
    # The next resync sees the rule gone: it creates that rule (only it), then the policy.
    s.api.writes.clear()
    s.rec.resync()
    s.converge()
    created = [(w.obj_type, w.fq_name[-1]) for w in s.api.writes if w.op == "create"]
    assert created == [("firewall-rule", RULE[-1]), ("firewall-policy", POLICY_KEY[1][-1])]


def test_a_missing_parent_is_created_once(setup):
    s = setup()
    store = s.api.api
    store.delete_internal("policy-management", store.lookup("policy-management", [PM]).uuid)
    s.start()
    s.converge()
    assert [w.op for w in s.api.writes if w.obj_type == "policy-management"] == ["create"]


def test_an_unexpected_exception_is_confined_to_its_object(setup):
    s = setup()
    s.api.fault = lambda op, obj_type, fq: TypeError("a bug") if op == "create" and fq == RULE else None
    s.start()
    wait_green(lambda: s.rec.state_of(RULE_KEY) == PARKED, "the rule parked")
    settle(s)
    assert s.cluster.db.parked[RULE_KEY] == "TypeError: a bug"
    assert np_entry(s).state == PARKED
    assert s.cluster.db.network_policies[("b", "from-team")].state == "synced"


def test_the_introspect_pages_show_the_parked_object_and_the_server_message(setup):
    from introspect.app import create_app
    from tests.support.introspect_support import call
    s = setup()
    s.api.fault = lambda op, obj_type, fq: BadRequest("POST", "/firewall-rules", 400, "the rule says no") if (
        op == "create" and fq == RULE) else None
    s.start()
    wait_green(lambda: s.rec.state_of(RULE_KEY) == PARKED, "the refused rule parked")
    app = create_app(s.cluster.db)
    entry = next(p for p in call(app, "/Snh_NetworkPolicyDatabaseList?format=json").json()["network_policies"]
                 if (p["namespace"], p["name"]) == NP)
    assert entry["state"] == PARKED
    assert any(RULE[-1] in e and "400: the rule says no" in e for e in entry["errors"]), entry["errors"]
    rules = call(app, "/Snh_FirewallRuleDatabaseList?format=json").json()["firewall_rules"]
    assert {r["name"]: r["state"] for r in rules}[RULE[-1]] == PARKED
    html = call(app, "/Snh_NetworkPolicyDatabaseList").text
    assert "the rule says no" in html and "state-parked" in html


def test_a_write_refused_by_the_leader_gate_is_retried_not_parked(setup):
    """WriteRefused (this instance is not the leader) says nothing about the object: no parking."""
    from vnc_client.errors import WriteRefused
    s = setup()
    refusing = [True]
    s.api.fault = lambda op, obj_type, fq: WriteRefused("not the leader") if (
        refusing[0] and op == "create" and fq == RULE) else None
    s.start()
    wait_green(lambda: s.rec.counters.failures >= 2, "retries of the refused write")
    assert s.cluster.db.parked == {} and s.rec.state_of(RULE_KEY) == RETRYING
    refusing[0] = False
    s.converge()


def test_a_vmi_the_cni_removed_before_its_tags_is_no_error(setup, caplog):
    """Under steady changes the CNI may remove a pod's VMI (the pod deleted, or its interface
    replaced) between the reconciler deciding its tags and `POST /set-tag` (404). A VMI that is
    gone needs no tag: no refused write, no ERROR, the pod looked at again, nothing parked."""
    from tests.support.builders import HTTP_8080, pod
    from tests.support.reconciler_support import CLIENT

    caplog.set_level(logging.INFO, logger="kube_manager")
    s = setup().start()
    s.converge()
    uid = CLIENT["metadata"]["uid"]
    vanished: List[str] = []

    def cni_removes_it_first(op: str, obj_type: str, fq: Tuple[str, ...]):
        if op == "set-tag" and not vanished:
            vmi = s.api.api.lookup("virtual-machine-interface", list(fq))
            vanished.append(vmi.uuid)
            s.api.api.delete("virtual-machine-interface", vmi.uuid)
        return None
    s.api.fault = cni_removes_it_first
    failures = s.rec.counters.failures
    s.cluster.apply(pod("a", "client", "10.0.0.2", app="web", ports=HTTP_8080))  # a new label: retag
    record = s.cluster.db.pods[("a", "client")]
    wait_green(lambda: vanished and record.vmi_state == "no-vm", "the pod looked at again, without its VMI")
    assert s.rec.counters.failures == failures
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert "pod VMI gone before it was tagged" in caplog.text
    s.api.fault = None
    vm = s.api.api.read("virtual-machine", uid, hrefs=False)
    s.api.api.create("virtual-machine-interface", {  # the CNI's new interface for the pod's VM
        "fq_name": ["default-domain", "default-project", "client-eth1"], "parent_type": "project",
        "virtual_machine_refs": [{"to": vm["fq_name"], "uuid": uid}],
        "virtual_network_refs": [{"to": ["default-domain", "default-project", "k8s-default-pod-network"]}]})
    wait_green(lambda: record.vmi_state == "synced", "the replacement interface tagged")
    assert "app=web" in s.api.vmi_tags(uid)
