"""Make before break for the ordered policy blocks (SPEC 7, 13 and 14), against the embedded config
API: while a change rewrites the blocks, or a NetworkPolicy isolates pods under `kubernetes`
semantics, no flow allowed both before and after the change is dropped at any moment in between,
and none dropped both before and after passes.

The reconciler runs with one worker, so that the order of its writes is the work queue's order
(deterministic, no timing); before every request the test evaluates what the config API enforces
for every pair of pods, as SPEC 6 says (ContrailEvaluator over our objects and the VMIs' tags).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

import pytest

from tests.support.builders import HTTP_8080, namespace, pod, policy
from kube_manager.explain.flow import ContrailEvaluator
from kube_manager.settings import ReconcilerSettings
from tests.support.cnp_support import cnp
from tests.support.reconciler_support import Setup

ONE_WORKER = ReconcilerSettings(concurrency=1, retry_base=0.01, retry_cap=0.05)
PODS = [pod("a", name, f"10.0.0.{n}", app=name, ports=HTTP_8080) for n, name in enumerate(("web", "client", "other"), 1)]
Flow = Tuple[str, str, str, int]  # source pod, destination pod, protocol, port
PROBES = (("tcp", 8080), ("tcp", 80), ("udp", 53))


def passing(app: str, port: Optional[int] = None) -> Dict[str, Any]:
    """Admin priority 10: ingress from pods `app=<app>` (to TCP `port`) passes to the NetworkPolicy tier."""
    rule: Dict[str, Any] = {"action": "Pass", "from": [
        {"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": app}}}}]}
    if port is not None:
        rule["protocols"] = [{"tcp": {"destinationPort": {"number": port}}}]
    return cnp("pass-first", "Admin", 10, {"namespaces": {}}, ingress=[rule])


# Admin priority 20: deny all ingress to web.
DENY_WEB = cnp("deny-web", "Admin", 20, {"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "web"}}}},
               ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}])


def allowed(s: Setup) -> Set[Flow]:
    """The pod-to-pod flows (of `PROBES`) the config API lets through right now."""
    owned = s.api.owned()
    (aps,) = owned["application-policy-set"].values()
    translation = {"cluster_name": "k8s", "application_policy_set": aps,
                   "firewall_policies": list(owned["firewall-policy"].values()),
                   "firewall_rules": list(owned["firewall-rule"].values()),
                   "address_groups": list(owned["address-group"].values()),
                   "workloads": [{"namespace": p["metadata"]["namespace"], "name": p["metadata"]["name"],
                                  "ip": p["status"]["podIP"], "tags": s.api.vmi_tags(p["metadata"]["uid"])}
                                 for p in PODS]}
    evaluator = ContrailEvaluator(translation)
    flows = set()
    for src in PODS:
        for dst in PODS:
            a, b = (evaluator.workload("a", p["metadata"]["name"]) for p in (src, dst))
            flows.update((src["metadata"]["name"], dst["metadata"]["name"], protocol, port) for protocol, port in PROBES
                         if evaluator.evaluate(a, b, port, protocol).allowed)
    return flows


def watch(s: Setup) -> List[Set[Flow]]:
    """What the config API lets through, seen before every request the reconciler makes from now on."""
    seen: List[Set[Flow]] = []

    def look(op: str, obj_type: str, fq: Tuple[str, ...]) -> None:
        seen.append(allowed(s))
        return None
    s.api.fault = look
    return seen


def change_and_watch(s: Setup, *manifests: Dict[str, Any]) -> Tuple[Set[Flow], Set[Flow], List[Set[Flow]]]:
    """Apply `manifests` to a converged cluster: what passes before, after, and at every request
    in between."""
    s.converge()
    before = allowed(s)
    seen = watch(s)
    s.api.writes.clear()
    s.cluster.apply(*manifests)
    s.cluster.cache.flush()
    # Every request evaluates the whole flow table (watch): slow under load, so a wide bound.
    s.converge(timeout=60.0)
    s.api.fault = None
    return before, allowed(s), seen


def assert_between(before: Set[Flow], after: Set[Flow], seen: List[Set[Flow]]) -> None:
    """At no moment is a flow allowed before and after dropped, nor one dropped before and after allowed."""
    assert len(seen) >= 3
    for moment, flows in enumerate(seen):
        assert before & after <= flows, (moment, sorted(before & after - flows))
        assert flows <= before | after, (moment, sorted(flows - before - after))


def test_a_cnp_change_that_rewrites_the_admin_block_is_make_before_break(setup):
    s = setup(settings=ONE_WORKER, manifests=(namespace("a"), *PODS, passing("client"), DENY_WEB)).start()
    before, after, seen = change_and_watch(s, passing("other"))
    assert ("client", "web", "tcp", 80) in before and ("other", "web", "tcp", 80) not in before
    assert ("client", "web", "tcp", 80) not in after and ("other", "web", "tcp", 80) in after
    assert_between(before, after, seen)


@pytest.mark.parametrize("first, then", [(None, 8080), (8080, None)], ids=["narrow", "widen"])
def test_a_pass_narrowed_or_widened_by_ports_is_make_before_break(setup, first, then):
    s = setup(settings=ONE_WORKER, manifests=(namespace("a"), *PODS, passing("client", first), DENY_WEB)).start()
    before, after, seen = change_and_watch(s, passing("client", then))
    assert ("client", "web", "tcp", 80) in before ^ after and ("web", "web", "tcp", 80) not in before | after
    assert_between(before, after, seen)


def test_a_network_policy_isolating_pods_under_kubernetes_semantics_is_make_before_break(setup):
    """Egress-isolated `client` may reach `web` on TCP 8080; a new policy isolates `web` for ingress
    and admits `client` there: `web` gains the isolation tag only once the pair rule is written."""
    egress = policy("a", "client-out", {"podSelector": {"matchLabels": {"app": "client"}}, "policyTypes": ["Egress"],
                                        "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                                                    "ports": [{"port": 8080}]}]})
    ingress = policy("a", "web-in", {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [
        {"from": [{"podSelector": {"matchLabels": {"app": "client"}}}], "ports": [{"port": 8080}]}]})
    s = setup(settings=ONE_WORKER, manifests=(namespace("a"), *PODS, egress)).start()
    before, after, seen = change_and_watch(s, ingress)
    assert ("client", "web", "tcp", 8080) in before & after and ("other", "web", "tcp", 8080) in before - after
    assert_between(before, after, seen)


def test_a_cold_start_with_blocks_writes_each_object_once(setup):
    s = setup(settings=ONE_WORKER, manifests=(namespace("a"), *PODS, passing("client"), DENY_WEB))
    s.start()
    s.converge()
    translation = s.cluster.translation()
    assert any(p["fq_name"][-1] == "k8s--admin" and p.get("firewall_rule_refs") for p in translation["firewall_policies"])
    created = s.api.writes_of("create")
    assert len(created) == sum(len(translation[n]) for n in ("tags", "address_groups", "firewall_rules",
                                                             "firewall_policies")) + 1  # + the APS
    assert s.api.writes_of("update") == [] and len(s.api.writes_of("set-tag")) == len(PODS)
