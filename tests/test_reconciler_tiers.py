"""Make before break for the ClusterNetworkPolicy tier deny rules (SPEC 7 and 13), against the
embedded config API: while a change re-pieces an Admin Deny, no flow the Deny denies both before
and after the change passes at any moment in between.

The reconciler runs with one worker, so that the order of its writes is the work queue's order
(deterministic, no timing); before every request the test reads what the config API enforces for
every pair of pods: denied when a rule of `<cluster>--admin-deny` matches the tags of both VMIs.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Set, Tuple

from builders import HTTP_8080, namespace, pod
from kube_manager.settings import ReconcilerSettings
from tests.cnp_support import cnp
from tests.reconciler_support import Setup

ONE_WORKER = ReconcilerSettings(concurrency=1, retry_base=0.01, retry_cap=0.05)
PODS = [pod("a", name, f"10.0.0.{n}", app=name, ports=HTTP_8080) for n, name in enumerate(("web", "client", "other"), 1)]
ADMIN_DENY = ("default-policy-management", "k8s--admin-deny")
Flow = Tuple[str, str]


def passing(app: str) -> Dict[str, Any]:
    """Admin priority 10: ingress from pods `app=<app>` passes to the NetworkPolicy tier."""
    return cnp("pass-first", "Admin", 10, {"namespaces": {}}, ingress=[
        {"action": "Pass", "from": [{"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": app}}}}]}])


# Admin priority 20: deny all ingress to web; emitted minus the Pass above (a piece selector tag).
DENY_WEB = cnp("deny-web", "Admin", 20, {"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "web"}}}},
               ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}])


def _matches(endpoint: Mapping[str, Any], tags: Set[str]) -> bool:
    return bool(endpoint.get("any")) or set(endpoint.get("tags") or ()) <= tags


def denied(s: Setup) -> Set[Flow]:
    """The pod-to-pod flows a rule of `<cluster>--admin-deny` denies in the config API right now."""
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
                    flows.add((src, dst))
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


def test_a_cnp_change_that_re_pieces_an_admin_deny_never_lets_denied_traffic_pass(setup):
    s = setup(settings=ONE_WORKER, manifests=(namespace("a"), *PODS)).start()
    apply_cnps(s, passing("client"), DENY_WEB)
    s.converge()
    before = denied(s)
    assert ("web", "web") in before and ("other", "web") in before and ("client", "web") not in before
    seen = watch_denied(s)
    s.api.writes.clear()
    apply_cnps(s, passing("other"))  # the Deny's piece is now "every pod but app=other": a new tag
    s.converge()
    s.api.fault = None
    after = denied(s)
    assert ("client", "web") in after and ("other", "web") not in after
    # the rule was rewritten in place and the pods re-tagged: the window this test is about
    assert [w.op for w in s.api.writes if w.obj_type == "firewall-rule"] == ["update"]
    assert len(seen) >= 3
    for moment, flows in enumerate(seen):
        assert before & after <= flows, (moment, sorted(before & after - flows))
        assert flows <= before | after, (moment, sorted(flows - before - after))


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
