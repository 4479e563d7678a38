"""Logging of rule matches end to end (SPEC 15): the annotation `contrail-kube-manager/policy-logging`
on a namespace, through `contrail-kube-manager run` (a real process), the
emulated API server and the embedded config API. A change of it writes exactly the rules it
concerns; the config API then equals `translate` of the same manifests (which reads it too)."""
from __future__ import annotations

import copy
from typing import Any, Dict, Iterator, Set, Tuple

import pytest

from kube_manager.offline.manifests import Manifests
from kube_manager.translator.match_logging import ANNOTATION
from tests.support.builders import HTTP_8080, allow_from, namespace, pod, policy
from tests.support.e2e_support import Environment
from tests.support.status_support import events_about
from tests.support.waiting import wait_until

SHOP = namespace("shop", team="shop")
BASE = Manifests(namespaces=[SHOP, namespace("ops", team="ops")],
                 pods=[pod("shop", "web", "10.1.0.1", app="web", ports=HTTP_8080),
                       pod("shop", "api", "10.1.0.2", app="api", ports=HTTP_8080),
                       pod("ops", "monitor", "10.2.0.1", app="monitor", ports=HTTP_8080)],
                 network_policies=[policy("shop", "api-from-web", allow_from("web", "api", 8080)),
                                   policy("shop", "web-from-api", allow_from("api", "web", 8080)),
                                   policy("ops", "monitor-from-web", allow_from("web", "monitor", 8080))])
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
