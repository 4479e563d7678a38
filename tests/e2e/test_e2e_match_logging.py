"""Logging of rule matches end to end (SPEC 15): the annotation `contrail-kube-manager/policy-logging`
on a namespace or a ClusterNetworkPolicy, through `contrail-kube-manager run` (a real process), the
emulated API server and the embedded config API. A change of it writes exactly the rules it
concerns; the config API then logs what `translate` of the same manifests (which reads it too) logs."""
from __future__ import annotations

import copy
from typing import Any, Dict, Iterator, Set, Tuple

import pytest

from kube_manager.offline.manifests import Manifests
from kube_manager.translator.match_logging import ANNOTATION
from kube_manager.translator import translate
from tests.support.builders import HTTP_8080, allow_from, cluster_policy, cnp_rule, namespace, namespace_named, pod, policy
from tests.support.e2e_support import Environment
from tests.support.status_support import conditions, events_about
from tests.support.waiting import wait_until

SHOP = namespace("shop", team="shop")
BASE = Manifests({"Namespace": [SHOP, namespace("ops", team="ops")],
                  "Pod": [pod("shop", "web", "10.1.0.1", app="web", ports=HTTP_8080),
                       pod("shop", "api", "10.1.0.2", app="api", ports=HTTP_8080),
                       pod("ops", "monitor", "10.2.0.1", app="monitor", ports=HTTP_8080)], "NetworkPolicy": [policy("shop", "api-from-web", allow_from("web", "api", 8080)),
                                   policy("shop", "web-from-api", allow_from("api", "web", 8080)),
                                   policy("ops", "monitor-from-web", allow_from("web", "monitor", 8080))]})
FqName = Tuple[str, ...]


@pytest.fixture
def env() -> Iterator[Environment]:
    environment = Environment(BASE)
    yield environment
    environment.close()


def annotated(manifest: Dict[str, Any], value: str) -> Dict[str, Any]:
    manifest = copy.deepcopy(manifest)
    manifest["metadata"]["annotations"] = {ANNOTATION: value, "unrelated": "x"}
    return manifest


def rules(env: Environment) -> Dict[FqName, Dict[str, Any]]:
    return env.contrail.owned()["firewall-rule"]


def logged(env: Environment) -> Set[str]:
    return {fq[-1] for fq, body in rules(env).items() if body["action_list"].get("log")}


def shop_rules(env: Environment, action: str) -> Set[str]:
    return {fq[-1] for fq, body in rules(env).items()
            if fq[-1].startswith("k8s-shop-") and body["action_list"]["simple_action"] == action}


def change(env: Environment, manifest: Dict[str, Any], expected: Set[str]) -> Set[str]:
    """Apply `manifest`, wait until the logged rules are `expected`: the rules written meanwhile."""
    before, writes = rules(env), env.vnc.counters.writes()
    env.apply(manifest)
    wait_until(lambda: logged(env) == expected, f"logged rules {sorted(expected)}")
    env.wait_converged()
    after = rules(env)
    written = {fq[-1] for fq in after if after[fq] != before.get(fq)}
    assert env.vnc.counters.writes() - writes == len(written)  # no other write
    return written


def test_a_namespace_s_annotation_logs_its_policies_rules_and_changes_only_those_it_concerns(env: Environment) -> None:
    daemon = env.start_daemon()
    env.wait_converged()
    deny, passing = shop_rules(env, "deny"), shop_rules(env, "pass")
    assert len(deny) == 2 and len(passing) == 2 and logged(env) == set()
    assert change(env, annotated(SHOP, "deny"), deny) == deny
    assert change(env, annotated(SHOP, "all"), deny | passing) == passing
    assert change(env, annotated(SHOP, "allow"), passing) == deny
    # A bad value: ignored (nothing logs), reported in the policies' errors and as an Event.
    assert change(env, annotated(SHOP, "sometimes"), set()) == passing
    rows = daemon.get("/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"]
    reported = {row["name"] for row in rows if any(ANNOTATION in error for error in row["errors"])}
    assert reported == {"api-from-web", "web-from-api"}
    wait_until(lambda: any("'sometimes'" in e["note"] for e in events_about(env, "NetworkPolicy", "api-from-web",
                                                                          "InvalidPolicy")), "the Event")


GUARD = cluster_policy("guard-shop", "Admin", 20, namespace_named("shop"),
                       ingress=[cnp_rule("Deny", namespace_named("ops"), name="no-ops"),
                                cnp_rule("Accept", namespace_named("shop"), name="own")])
FLOOR = cluster_policy("floor-ops", "Baseline", 10, namespace_named("ops"),
                       ingress=[cnp_rule("Accept", namespace_named("shop")), cnp_rule("Deny", {"namespaces": {}})])


def block_rules(env: Environment, action: str) -> Set[str]:
    return {fq[-1] for fq, body in rules(env).items()
            if fq[-1].startswith("k8s--") and body["action_list"]["simple_action"] == action}


def decided(value: str) -> Set[str]:
    """The rules `translate` logs with GUARD annotated `value` (the same objects as the daemon's)."""
    result = translate({"Namespace": BASE.objects["Namespace"],
                        "Pod": BASE.objects["Pod"],
                        "NetworkPolicy": BASE.objects["NetworkPolicy"],
                        "ClusterNetworkPolicy": [annotated(GUARD, value), FLOOR]}).to_dict()
    return {rule["fq_name"][-1] for rule in result["firewall_rules"] if rule["action_list"].get("log")}


def test_a_cluster_network_policy_s_annotation_logs_the_rules_it_decides_and_changes_only_those(env: Environment) -> None:
    env.apply(GUARD, FLOOR)
    daemon = env.start_daemon()
    env.wait_converged()
    deny, passing = decided("deny"), decided("allow")
    assert deny and passing and deny | passing == decided("all") and logged(env) == set()
    assert deny < block_rules(env, "deny") and passing < block_rules(env, "pass")  # not every block rule is guard's
    assert change(env, annotated(GUARD, "deny"), deny) == deny
    assert change(env, annotated(GUARD, "all"), deny | passing) == passing
    assert change(env, annotated(GUARD, "allow"), passing) == deny
    # A bad value: ignored (nothing logs), reported in the policy's errors, Event and Accepted condition.
    assert change(env, annotated(GUARD, "sometimes"), set()) == passing
    rows = daemon.get("/Snh_ClusterNetworkPolicyDatabaseList?format=json")["cluster_network_policies"]
    errors = {row["name"]: row["errors"] for row in rows}
    assert any(ANNOTATION in error and "'sometimes'" in error for error in errors["guard-shop"])
    assert errors["floor-ops"] == []
    wait_until(lambda: any("'sometimes'" in e["note"] for e in events_about(env, "ClusterNetworkPolicy", "guard-shop",
                                                                          "InvalidPolicy")), "the Event")
    wait_until(lambda: "'sometimes'" in conditions(env, "guard-shop").get("Accepted", {}).get("message", ""),
               "the Accepted condition naming the bad value")
    assert conditions(env, "guard-shop")["Accepted"]["status"] == "False"
    # Removed: the bodies are the ones of before, only the rules it concerned written.
    assert change(env, GUARD, set()) == set()
