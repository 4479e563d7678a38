"""ClusterNetworkPolicies in the incremental translator: any sequence of policy, pod and namespace
events ends equal to a batch `translate()` of the final state, flush() reports exactly what
changed, and one policy change re-renders its own tier only."""
from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.builders import namespace, pod, policy
from tests.support.cnp_support import SUBJECTS, cnp, rules
from kube_manager.translator import ClusterTranslator, translate

NAMESPACES = ["ns-a", "ns-b"]
PODS = ["p0", "p1"]
CNP_NAMES = ["c0", "c1", "c2"]

cnp_manifests = st.builds(
    lambda name, tier, priority, subject, ingress, egress: cnp(name, tier, priority, subject, ingress, egress),
    st.sampled_from(CNP_NAMES), st.sampled_from(["Admin", "Baseline", "Nope"]), st.integers(0, 2), SUBJECTS,
    st.none() | st.lists(rules("ingress"), max_size=2), st.none() | st.lists(rules("egress"), max_size=2))
namespace_manifests = st.builds(lambda name, house: namespace(name, house=house),
                                st.sampled_from(NAMESPACES), st.sampled_from(["a", "b", "c"]))
pod_manifests = st.builds(
    lambda ns, name, app, ip, port: pod(ns, name, ip, {"app": app}, [("web", port, "TCP")]),
    st.sampled_from(NAMESPACES), st.sampled_from(PODS), st.sampled_from(["web", "db"]),
    st.sampled_from([None, "10.0.1.10", "10.0.2.10", "10.9.0.1"]), st.sampled_from([80, 8080]))
operations = st.lists(st.tuples(st.one_of(
    st.tuples(st.just("cnp"), cnp_manifests),
    st.tuples(st.just("namespace"), namespace_manifests),
    st.tuples(st.just("pod"), pod_manifests),
    st.tuples(st.just("delete-cnp"), st.sampled_from(CNP_NAMES)),
    st.tuples(st.just("delete-pod"), st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(PODS))),
), st.booleans()), max_size=25)


def _snapshot(translator):
    return {(t, fq): copy.deepcopy(body) for t, store in translator.desired().items() for fq, body in store.items()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_any_event_sequence_ends_equal_to_a_batch_translation_with_exact_change_reports(ops):
    translator = ClusterTranslator()
    state = {"cnp": {}, "namespace": {}, "pod": {}}
    before = _snapshot(translator)
    translator.flush()
    for (op, arg), then_flush in ops:
        if op == "cnp":
            state["cnp"][arg["metadata"]["name"]] = arg
            translator.upsert("ClusterNetworkPolicy", copy.deepcopy(arg))
        elif op == "namespace":
            state["namespace"][arg["metadata"]["name"]] = arg
            translator.upsert("Namespace", copy.deepcopy(arg))
        elif op == "pod":
            state["pod"][(arg["metadata"]["namespace"], arg["metadata"]["name"])] = arg
            translator.upsert("Pod", copy.deepcopy(arg))
        elif op == "delete-cnp":
            state["cnp"].pop(arg, None)
            translator.delete("ClusterNetworkPolicy", "", arg)
        else:
            state["pod"].pop(arg, None)
            translator.delete("Pod", *arg)
        if then_flush:
            changes = translator.flush()
            after = _snapshot(translator)
            assert set(changes.added) == after.keys() - before.keys()
            assert set(changes.removed) == before.keys() - after.keys()
            assert {k for k in after.keys() & before.keys() if after[k] != before[k]} <= set(changes.changed)
            before = after
    translator.flush()
    fresh = translate({"Namespace": state["namespace"].values(),
                       "Pod": state["pod"].values(),
                       "ClusterNetworkPolicy": state["cnp"].values()})
    assert json.dumps(translator.translation().to_dict()) == json.dumps(fresh.to_dict())


def test_a_change_that_moves_no_rule_writes_nothing():
    """Rules are named by their contents and ordered by position: a priority change that keeps
    the order, or the same policy again, changes no object."""
    translator = ClusterTranslator()
    translator.upsert("Namespace", namespace("ns-a", house="a"))
    translator.upsert("Pod", pod("ns-a", "p0", "10.0.1.10", {"app": "web"}))
    translator.upsert("NetworkPolicy", policy("ns-a", "np"))
    deny = [{"action": "Deny", "from": [{"namespaces": {}}]}]
    translator.upsert("ClusterNetworkPolicy", cnp("admin", "Admin", 1, {"namespaces": {}}, ingress=deny))
    translator.upsert("ClusterNetworkPolicy", cnp("base", "Baseline", 1, {"namespaces": {}}, ingress=deny))
    translator.flush()
    translator.upsert("ClusterNetworkPolicy", cnp("admin", "Admin", 2, {"namespaces": {}}, ingress=deny))
    changes = translator.flush()
    assert not changes.added + changes.changed + changes.removed and not changes.ref_changes
    translator.upsert("ClusterNetworkPolicy", cnp("admin", "Admin", 2, {"namespaces": {}}, ingress=deny))
    assert not translator.flush()
