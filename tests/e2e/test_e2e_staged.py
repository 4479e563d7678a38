"""Staged policies end to end (SPEC 17): `contrail-kube-manager run` (a real process) against the
emulated API server and the embedded config API. A deny-all staged on a namespace with traffic to
it writes nothing, and its Event and page show the flows it would close; promoted, it is written
as `translate` gives it, make before break; staged again, it is removed, make before break; a
misspelt value keeps it enforced and is reported. The write order is read from the daemon's log
(each config API write is logged once, in order, with its fq_name)."""
from __future__ import annotations

import copy
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from kube_manager.offline.manifests import Manifests
from tests.support.builders import (HTTP_8080, allow_from, cluster_policy, cnp_rule, namespace, namespace_named, pod,
                                    policy)
from tests.support.e2e_support import DaemonProcess, Environment
from tests.support.status_support import conditions, events_about
from tests.support.waiting import wait_until

ANNOTATION = "contrail-kube-manager/staged"
BASE = Manifests({"Namespace": [namespace("shop", team="shop"), namespace("ops", team="ops")],
                  "Pod": [pod("shop", "web", "10.1.0.1", app="web", ports=HTTP_8080),
                          pod("shop", "api", "10.1.0.2", app="api", ports=HTTP_8080),
                          pod("ops", "probe", "10.2.0.1", app="probe")],
                  "NetworkPolicy": [policy("shop", "api-from-web", allow_from("web", "api", 8080))]})
DENY_ALL = policy("ops", "deny-all", {"podSelector": {}, "policyTypes": ["Ingress"]})
FIREWALL_POLICY = "k8s-ops-deny-all"
DENY_RULE = "k8s-ops-ingress-deny-all-denyall"
ADMIN_TIER = "k8s--admin"  # the Admin tier's firewall policy (and its rules' prefix)


def annotated(value: str) -> Dict[str, Any]:
    manifest = copy.deepcopy(DENY_ALL)
    manifest["metadata"]["annotations"] = {ANNOTATION: value}
    return manifest


@pytest.fixture
def env() -> Iterator[Environment]:
    environment = Environment(BASE)
    yield environment
    environment.close()


def writes(daemon: DaemonProcess, start: int) -> List[Tuple[str, str]]:
    """The config API writes logged since line `start`: (created | updated | deleted, name)."""
    found = []
    for line in daemon.log()[start:]:
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        if fields.get("msg") in ("created", "updated", "deleted") and "fq_name" in fields:
            found.append((fields["msg"], fields["fq_name"].split(":")[-1]))
    return found


def writes_until(daemon: DaemonProcess, start: int, last: Tuple[str, str]) -> List[Tuple[str, str]]:
    return wait_until(lambda: (lambda found: found if last in found else None)(writes(daemon, start)),
                      f"the write {last}")


def position(found: List[Tuple[str, str]], write: Tuple[str, str]) -> int:
    assert found.count(write) == 1, (write, found)
    return found.index(write)


def staged_row(daemon: DaemonProcess) -> Dict[str, Any]:
    rows = daemon.get("/Snh_StagedPolicyList?format=json")["staged_policies"]
    return rows[0] if rows and rows[0]["flows"] and not rows[0]["computing"] else {}


def test_stage_promote_stage_again_and_a_misspelt_value(env: Environment) -> None:
    daemon = env.start_daemon()
    env.wait_converged()

    # Staged: nothing written; the page and the Event say what it would close.
    start = len(daemon.log())
    env.apply(annotated("true"))
    # After a quiet interval (2 s) and the run: more than the usual deadline on a busy machine.
    row = wait_until(lambda: staged_row(daemon), "the staged run's report", timeout=30)
    # Into ops/probe from the two shop pods, on TCP, UDP and SCTP.
    assert (row["flows"]["closed"], row["flows"]["opened"]) == (6, 0)
    assert {(f["from"], f["to"]) for f in row["flows"]["closed_flows"]} == {("shop/web", "ops/probe"),
                                                                            ("shop/api", "ops/probe")}
    event = wait_until(lambda: events_about(env, "NetworkPolicy", "deny-all", "Staged"), "the Staged Event",
                       timeout=30)[0]
    assert event["type"] == "Normal" and event["note"] == "would open 0 and close 6 flows among current pods"
    assert daemon.get("/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"][0]["state"] == "staged"
    env.wait_converged()  # translate() leaves the staged policy out: the config API holds the same
    assert not [w for w in writes(daemon, start) if "deny-all" in w[1]]
    assert daemon.metric("kube_manager_staged_policies") == 1
    assert daemon.metric("kube_manager_staged_run_seconds_count") >= 1

    # Promoted: written as translate gives it, make before break.
    start = len(daemon.log())
    env.apply(copy.deepcopy(DENY_ALL))
    env.wait_converged()
    found = writes_until(daemon, start, ("updated", "k8s-denyall"))
    deny = position(found, ("created", DENY_RULE))
    fwp = position(found, ("created", FIREWALL_POLICY))
    aps = position(found, ("updated", "k8s"))
    denyall = position(found, ("updated", "k8s-denyall"))
    assert fwp < aps < denyall and deny < denyall  # the deny rule joins k8s-denyall once its policy is in the APS
    wait_until(lambda: daemon.get("/Snh_StagedPolicyList?format=json")["staged_policies"] == [], "no staged policy",
               timeout=30)

    # Staged again: removed as a delete is, in reverse.
    start = len(daemon.log())
    env.apply(annotated("true"))
    env.wait_converged()
    found = writes_until(daemon, start, ("deleted", DENY_RULE))
    denyall = position(found, ("updated", "k8s-denyall"))
    aps = position(found, ("updated", "k8s"))
    fwp = position(found, ("deleted", FIREWALL_POLICY))
    deny = position(found, ("deleted", DENY_RULE))
    assert denyall < aps < fwp and denyall < deny  # the deny rule leaves k8s-denyall first

    # A misspelt value: enforced, and reported.
    env.apply(annotated("ture"))
    env.wait_converged()  # translate() enforces it too
    warning = wait_until(lambda: [e for e in events_about(env, "NetworkPolicy", "deny-all", "InvalidPolicy")
                                  if "'ture'" in e["note"]], "the InvalidPolicy Event")[0]
    assert warning["type"] == "Warning" and "enforced" in warning["note"]
    record = daemon.get("/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"]
    deny_all = next(r for r in record if r["name"] == "deny-all")
    assert deny_all["firewall_policy"][-1] == FIREWALL_POLICY and any("'ture'" in e for e in deny_all["errors"])


def test_a_staged_cluster_network_policy_is_accepted_and_not_programmed(env: Environment) -> None:
    """Its conditions say so (`Programmed` False, reason `Staged`; `Accepted` True), nothing of it
    is written, and its run counts the flows it would close; promoted, it is programmed."""
    guard = cluster_policy("guard-ops", "Admin", 10, namespace_named("ops"),
                           ingress=[cnp_rule("Deny", namespace_named("shop"))])
    staged_guard = copy.deepcopy(guard)
    staged_guard["metadata"]["annotations"] = {ANNOTATION: "true"}
    daemon = env.start_daemon()
    env.wait_converged()
    start = len(daemon.log())
    env.apply(staged_guard)
    held = wait_until(lambda: (lambda c: c if c.get("Programmed", {}).get("reason") == "Staged" else None)(
        conditions(env, "guard-ops")), "Programmed False, reason Staged", timeout=30)
    assert held["Programmed"]["status"] == "False"
    assert held["Accepted"]["status"] == "True"
    row = wait_until(lambda: staged_row(daemon), "the staged run's report", timeout=30)
    # Into ops/probe from the two shop pods, on TCP, UDP and SCTP.
    assert (row["kind"], row["flows"]["closed"], row["flows"]["opened"]) == ("ClusterNetworkPolicy", 6, 0)
    env.wait_converged()
    assert not [w for w in writes(daemon, start) if w[1].startswith(ADMIN_TIER)]

    env.apply(copy.deepcopy(guard))
    env.wait_converged()
    wait_until(lambda: conditions(env, "guard-ops").get("Programmed", {}).get("status") == "True", "Programmed True",
               timeout=30)
    assert ("created", ADMIN_TIER) in writes(daemon, start)
