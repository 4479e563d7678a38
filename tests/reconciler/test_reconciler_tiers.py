"""Make before break for the ClusterNetworkPolicy tier deny rules (SPEC 7 and 13), against the
embedded config API: while a change re-pieces an Admin Deny, no flow the Deny denies both before
and after the change passes at any moment in between.

The reconciler runs with one worker, so that the order of its writes is the work queue's order
(deterministic, no timing); before every request the test reads what the config API enforces for
every pair of pods: denied when a rule of `<cluster>--admin-deny` matches the tags of both VMIs.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

import pytest

from tests.support.builders import HTTP_8080, namespace, pod
from kube_manager.settings import ReconcilerSettings
from tests.support.cnp_support import cnp
from tests.support.reconciler_support import Setup

ONE_WORKER = ReconcilerSettings(concurrency=1, retry_base=0.01, retry_cap=0.05)
PODS = [pod("a", name, f"10.0.0.{n}", app=name, ports=HTTP_8080) for n, name in enumerate(("web", "client", "other"), 1)]
ADMIN_DENY = ("default-policy-management", "k8s--admin-deny")
Flow = Tuple[str, str, str, int]  # source pod, destination pod, protocol, port
PROBES = (("tcp", 8080), ("tcp", 80), ("udp", 53), ("icmp", 0))
PROTOCOL_NUMBERS = {"icmp": 1, "tcp": 6, "udp": 17}


def passing(app: str, port: Optional[int] = None) -> Dict[str, Any]:
    """Admin priority 10: ingress from pods `app=<app>` (to TCP `port`) passes to the NetworkPolicy tier."""
    rule: Dict[str, Any] = {"action": "Pass", "from": [
        {"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": app}}}}]}
    if port is not None:
        rule["protocols"] = [{"tcp": {"destinationPort": {"number": port}}}]
    return cnp("pass-first", "Admin", 10, {"namespaces": {}}, ingress=[rule])


# Admin priority 20: deny all ingress to web; emitted minus the Pass above (a piece selector tag).
DENY_WEB = cnp("deny-web", "Admin", 20, {"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "web"}}}},
               ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}])


def _serves(rule: Mapping[str, Any], protocol: str, port: int) -> bool:
    service = rule.get("service") or {}
    if service.get("protocol") not in ("any", protocol, str(PROTOCOL_NUMBERS[protocol])):
        return False
    ports = service.get("dst_ports") or {"start_port": 0, "end_port": 65535}
    return protocol not in ("tcp", "udp") or ports["start_port"] <= port <= ports["end_port"]


def _matches(endpoint: Mapping[str, Any], tags: Set[str]) -> bool:
    return bool(endpoint.get("any")) or set(endpoint.get("tags") or ()) <= tags


def denied(s: Setup) -> Set[Flow]:
    """The pod-to-pod flows (of `PROBES`) a rule of `<cluster>--admin-deny` denies in the config
    API right now."""
    owned = s.api.owned()
    policy = owned["firewall-policy"].get(ADMIN_DENY) or {}
    rules = [owned["firewall-rule"][tuple(ref["to"])] for ref in policy.get("firewall_rule_refs") or []]
    tags = {p["metadata"]["name"]: set(s.api.vmi_tags(p["metadata"]["uid"])) for p in PODS}
    flows = set()
    for rule in rules:
        for src in tags:
            for dst in tags:
                forward = _matches(rule["endpoint_1"], tags[src]) and _matches(rule["endpoint_2"], tags[dst])
                backward = _matches(rule["endpoint_2"], tags[src]) and _matches(rule["endpoint_1"], tags[dst])
                if forward or (rule.get("direction") == "<>" and backward):
                    flows.update((src, dst, proto, port) for proto, port in PROBES if _serves(rule, proto, port))
    return flows


def apply_cnps(s: Setup, *manifests: Dict[str, Any]) -> None:
    translator = s.cluster.pipeline.translator
    for manifest in manifests:
        translator.set_cluster_network_policy(manifest)
    s.cluster.cache.flush()


def watch_denied(s: Setup) -> List[Set[Flow]]:
    """What the Admin Deny enforces, seen before every request the reconciler makes from now on."""
    seen: List[Set[Flow]] = []

    def look(op: str, obj_type: str, fq: Tuple[str, ...]) -> None:
        seen.append(denied(s))
        return None
    s.api.fault = look
    return seen


def change_and_watch(s: Setup, *manifests: Dict[str, Any]) -> Tuple[Set[Flow], Set[Flow], List[Set[Flow]]]:
    """Apply `manifests` to a converged cluster: what the Admin Deny denies before, after, and at
    every request in between."""
    s.converge()
    before = denied(s)
    seen = watch_denied(s)
    s.api.writes.clear()
    apply_cnps(s, *manifests)
    # Every request evaluates the whole flow table (watch_denied): slow under load, so a wide bound.
    s.converge(timeout=60.0)
    s.api.fault = None
    return before, denied(s), seen


def assert_between(before: Set[Flow], after: Set[Flow], seen: List[Set[Flow]]) -> None:
    """At no moment is a flow denied before and after allowed, nor one allowed before and after denied."""
    assert len(seen) >= 3
    for moment, flows in enumerate(seen):
        assert before & after <= flows, (moment, sorted(before & after - flows))
        assert flows <= before | after, (moment, sorted(flows - before - after))


def test_a_cnp_change_that_re_pieces_an_admin_deny_never_lets_denied_traffic_pass(setup):
    s = setup(settings=ONE_WORKER, manifests=(namespace("a"), *PODS)).start()
    apply_cnps(s, passing("client"), DENY_WEB)
    # the Deny's piece is now "every pod but app=other": a new piece selector tag
    before, after, seen = change_and_watch(s, passing("other"))
    assert ("web", "web", "tcp", 80) in before and ("other", "web", "tcp", 80) in before
    assert ("client", "web", "tcp", 80) not in before
    assert ("client", "web", "tcp", 80) in after and ("other", "web", "tcp", 80) not in after
    # the rule was rewritten in place and the pods re-tagged: the window this test is about
    assert [w.op for w in s.api.writes if w.obj_type == "firewall-rule"] == ["update"]
    assert_between(before, after, seen)


@pytest.mark.slow
@pytest.mark.parametrize("first, then", [(None, 8080), (8080, None)], ids=["split", "merge"])
def test_pieces_split_or_merged_by_ports_never_let_denied_traffic_pass(setup, first, then):
    s = setup(settings=ONE_WORKER, manifests=(namespace("a"), *PODS)).start()
    apply_cnps(s, passing("client", first), DENY_WEB)
    # a Pass of TCP 8080 only splits the Deny by service: rules added, one updated in place, dropped
    before, after, seen = change_and_watch(s, passing("client", then))
    assert ("client", "web", "tcp", 80) in before ^ after and ("web", "web", "tcp", 80) in before & after
    assert {w.op for w in s.api.writes if w.obj_type == "firewall-rule"} >= {"update", "create" if then else "delete"}
    assert_between(before, after, seen)


def test_a_cold_start_with_tier_deny_rules_writes_each_object_once(setup):
    s = setup(settings=ONE_WORKER, manifests=(namespace("a"), *PODS))
    apply_cnps(s, passing("client"), DENY_WEB)
    s.start()
    s.converge()
    translation = s.cluster.translation()
    assert any(p["fq_name"][-1] == "k8s--admin-deny" and p.get("firewall_rule_refs")
               for p in translation["firewall_policies"])
    created = s.api.writes_of("create")
    assert len(created) == sum(len(translation[n]) for n in ("tags", "address_groups", "firewall_rules",
                                                             "firewall_policies")) + 1  # + the APS
    assert s.api.writes_of("update") == [] and len(s.api.writes_of("set-tag")) == len(PODS)
    # the Deny is in force only once the pods carry the piece tag it uses
    ops = [(w.op, w.fq_name[-1]) for w in s.api.writes]
    admin_deny = ops.index(("create", "k8s--admin-deny"))
    assert all(ops.index(("set-tag", p["metadata"]["name"])) < admin_deny for p in PODS if p is not PODS[1])
