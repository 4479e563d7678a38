"""Make before break for the ordered policy blocks (SPEC 7, 13 and 14), against the embedded config
API: while a change rewrites the blocks, or a NetworkPolicy isolates pods under `kubernetes`
semantics, no flow allowed both before and after the change is dropped at any moment in between,
and none dropped both before and after passes.

The reconciler runs with one worker, so that the order of its writes is the work queue's order
(deterministic, no timing); before every request the test evaluates what the config API enforces
for every pair of pods, as SPEC 6 says (ContrailEvaluator over our objects and the VMIs' tags).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import pytest

from tests.support.builders import HTTP_8080, namespace, pod, policy
from kube_manager.settings import ReconcilerSettings
from tests.support.cnp_support import cnp
from tests.support.enforced_flows import Flow, enforced_flows
from tests.support.reconciler_support import Setup

ONE_WORKER = ReconcilerSettings(concurrency=1, retry_base=0.01, retry_cap=0.05)
PODS = [pod("a", name, f"10.0.0.{n}", app=name, ports=HTTP_8080) for n, name in enumerate(("web", "client", "other"), 1)]
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


def allowed(s: Setup, pods: Sequence[Dict[str, Any]] = PODS) -> Set[Flow]:
    """The flows (of `PROBES`) between `pods` the config API lets through right now."""
    return enforced_flows(s.api, pods, PROBES)


def watch(s: Setup, pods: Sequence[Dict[str, Any]] = PODS) -> List[Set[Flow]]:
    """What the config API lets through, seen before every request the reconciler makes from now on."""
    seen: List[Set[Flow]] = []

    def look(op: str, obj_type: str, fq: Tuple[str, ...]) -> None:
        seen.append(allowed(s, pods))
        return None
    s.api.fault = look
    return seen


def change_and_watch(s: Setup, *manifests: Dict[str, Any], pods: Sequence[Dict[str, Any]] = PODS,
                     removed: Sequence[Dict[str, Any]] = ()) -> Tuple[Set[Flow], Set[Flow], List[Set[Flow]]]:
    """Apply `manifests` to a converged cluster and delete `removed`: what passes between `pods`
    before, after, and at every request in between."""
    s.converge()
    before = allowed(s, pods)
    seen = watch(s, pods)
    s.api.writes.clear()
    s.cluster.apply(*manifests)
    s.cluster.remove(*removed)
    s.cluster.cache.flush()
    # Every request evaluates the whole flow table (watch): slow under load, so a wide bound.
    s.converge(timeout=60.0)
    s.api.fault = None
    return before, allowed(s, pods), seen


def assert_between(before: Set[Flow], after: Set[Flow], seen: List[Set[Flow]], requests: int = 3) -> None:
    """At no moment is a flow allowed before and after dropped, nor one dropped before and after
    allowed; at least `requests` moments were seen."""
    assert len(seen) >= requests
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
