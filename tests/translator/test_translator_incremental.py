"""The incremental ClusterTranslator: any sequence of events ends where a fresh translation of the
final state starts, flush() reports exactly the differences, and reads answer for the last flush."""
from __future__ import annotations

import copy
import json
from typing import Any, Dict, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube_manager.translator import ClusterTranslator, translate
from tests.support.translator_reads import policy_errors, policy_objects
from tests.support.builders import namespace, pod, policy
from tests.support.schema_oracle import assert_schema_valid

PM = "default-policy-management"


class Mirror:
    """What a reconciler would know if it only ever read flush()."""

    def __init__(self) -> None:
        self.objects: Dict[Tuple[str, Tuple[str, ...]], Any] = {}
        self.pod_tags: Dict[Tuple[str, str], Any] = {}

    def apply(self, translator: ClusterTranslator):
        changes = translator.flush()
        desired = translator.desired()
        for key in changes.added + changes.changed:
            assert key not in self.objects or key in changes.changed, key
            body = desired[key[0]][key[1]]
            assert_schema_valid(key[0], body)
            self.objects[key] = copy.deepcopy(body)
        for key in changes.removed:
            assert key in self.objects, key
            del self.objects[key]
        for key in changes.pods:
            tags = translator.pod_tags(*key)
            if tags is None:
                self.pod_tags.pop(key, None)
            else:
                self.pod_tags[key] = tags
        return changes

    def check(self, translator: ClusterTranslator) -> None:
        desired = translator.desired()
        assert self.objects == {(t, fq): body for t, store in desired.items() for fq, body in store.items()}
        workloads = translator.translation().workloads
        assert self.pod_tags == {(w["namespace"], w["name"]): tuple(w["tags"]) for w in workloads}


# --- the random universe ---------------------------------------------------------------------------

NAMESPACES = ["a", "b", "a-b"]
POLICY_NAMES = ["c", "b-c"]  # a-b/c and a/b-c collide
NAMED_PORTS = [("http", 80, "TCP"), ("http", 8080, "TCP"), ("dns", 53, "UDP")]
SPECS = [
    {"podSelector": {}},
    {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "db"}}}],
                                                                    "ports": [{"port": 80}, {"port": "http"}]}]},
    {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
     "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "x"}}}]}]},
    {"podSelector": {}, "policyTypes": ["Egress"],
     "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.1.0/24"]}}], "ports": [{"port": "http"}]},
                {"ports": [{"port": "dns", "protocol": "UDP"}]}]},
    {"podSelector": {"matchLabels": {"tier": ""}},
     "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]},
                            "podSelector": {"matchLabels": {"app": "web"}}}]}],
     "egress": [{"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": "db"}}}],
                 "ports": [{"port": "http"}]}]},
    {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "bad"}}, {"podSelector": {}}]}]},
    {"podSelector": {"matchLabels": {"a": 1}}},
    {"podSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]},
     "ingress": [{"ports": [{"port": "http"}]}]},
    {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "fd00::/8"}}, {"ipBlock": {"cidr": "10.0.0.0/16"}}]}]},
]

namespace_manifests = st.builds(
    lambda name, labels: namespace(name, **labels), st.sampled_from(NAMESPACES),
    st.dictionaries(st.sampled_from(["team", "env"]), st.sampled_from(["x", "y", "prod"]), max_size=2))
pod_manifests = st.builds(  # a uid of its own: the pod re-created under its name (a StatefulSet's)
    lambda ns, name, labels, ip, ports, uid: pod(ns, name, ip, labels, ports, uid=uid),
    st.sampled_from(NAMESPACES), st.sampled_from(["p0", "p1", "p2"]),
    st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["web", "db", ""]), max_size=2),
    st.sampled_from([None, "10.0.0.1", "10.0.1.1", "10.0.2.2", "fd00::1"]),
    st.lists(st.sampled_from(NAMED_PORTS), max_size=2, unique_by=lambda p: (p[0], p[2])),
    st.sampled_from(["", "re-created"]))
policy_manifests = st.builds(
    lambda ns, name, spec: policy(ns, name, copy.deepcopy(spec), uid=f"{ns}/{name}"),
    st.sampled_from(NAMESPACES), st.sampled_from(POLICY_NAMES), st.sampled_from(SPECS))
# Each event is followed, or not, by a flush(), so both batched and one-by-one processing are
# exercised.
operations = st.lists(st.tuples(st.one_of(
    st.tuples(st.just("namespace"), namespace_manifests),
    st.tuples(st.just("pod"), pod_manifests),
    st.tuples(st.just("policy"), policy_manifests),
    st.tuples(st.just("delete-namespace"), st.sampled_from(NAMESPACES)),
    st.tuples(st.just("delete-pod"), st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(["p0", "p1", "p2"]))),
    st.tuples(st.just("delete-policy"), st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(POLICY_NAMES))),
), st.booleans()), max_size=40)


KINDS = {"namespace": "Namespace", "pod": "Pod", "policy": "NetworkPolicy"}  # the operations' names


def key_of(manifest):
    metadata = manifest["metadata"]
    return (metadata.get("namespace", ""), metadata["name"])


@settings(max_examples=300, deadline=None)
@given(operations, st.sampled_from(["kubernetes", "cluster-wide"]))
def test_any_event_sequence_ends_equal_to_a_fresh_translation(ops, semantics):
    translator = ClusterTranslator(semantics=semantics)
    mirror = Mirror()
    state: Dict[str, Dict[Any, Any]] = {"namespace": {}, "pod": {}, "policy": {}}
    for (op, arg), then_pop in ops:
        if op.startswith("delete-"):
            kind = op[len("delete-"):]
            key = ("", arg) if kind == "namespace" else arg
            state[kind].pop(key, None)
            translator.delete(KINDS[kind], *key)
        else:
            state[op][key_of(arg)] = arg
            translator.upsert(KINDS[op], copy.deepcopy(arg))
        if then_pop:
            mirror.apply(translator)
    mirror.apply(translator)
    fresh = translate({"Namespace": state["namespace"].values(),
                       "Pod": state["pod"].values(),
                       "NetworkPolicy": state["policy"].values()}, semantics=semantics)
    assert json.dumps(translator.translation().to_dict()) == json.dumps(fresh.to_dict())
    mirror.check(translator)
    bulk = ClusterTranslator(track_changes=False, semantics=semantics)  # publishes only once asked (translate() never asks)
    for kind in ("namespace", "pod", "policy"):
        for manifest in state[kind].values():
            bulk.upsert(KINDS[kind], manifest)
    bulk.flush()
    assert published_facts(bulk) == published_facts(translator)


def published_facts(translator: ClusterTranslator):
    """What the reconciler reads of the published state besides the bodies: each deny rule's
    policy, each policy's tags."""
    desired = translator.published()
    return ({fq: desired.deny_owner(fq) for fq in desired.objects["firewall-rule"]},
            {fq: desired.policy_tags(fq) for fq in desired.objects["firewall-policy"]})


def test_a_bulk_translator_publishes_once_asked_and_keeps_it_up_to_date():
    t = ClusterTranslator(track_changes=False)
    t.upsert("NetworkPolicy", policy("a", "np", {"podSelector": {"matchLabels": {"app": "web"}}}))
    t.flush()
    desired = t.published()
    assert desired.deny_owner((PM, "k8s-a-ingress-np-denyall")) == (PM, "k8s-a-np")
    assert desired.policy_tags((PM, "k8s-a-np")) == ("app=web",)
    t.delete("NetworkPolicy", "a", "np")
    t.flush()
    assert desired.deny_owner((PM, "k8s-a-ingress-np-denyall")) is None
    assert desired.policy_tags((PM, "k8s-a-np")) == ()


# --- change reporting ------------------------------------------------------------------------------

def test_flush_reports_a_policy_lifecycle():
    t = ClusterTranslator()
    initial = t.flush()
    assert ("application-policy-set", (PM, "k8s")) in initial.added
    assert not t.flush()

    spec = {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}
    t.upsert("NetworkPolicy", policy("n", "np", spec))
    added = t.flush()
    assert set(added.added) == {
        ("tag", ("namespace=n",)), ("tag", ("app=db",)), ("address-group", (PM, "10.0.0.0/8")),
        ("firewall-rule", (PM, "k8s-n-ingress-np-0-ipBlock-0-cidr-10.0.0.0/8-0")),
        ("firewall-rule", (PM, "k8s-n-ingress-np-denyall")), ("firewall-policy", (PM, "k8s-n-np"))}
    assert set(added.changed) == {("firewall-policy", (PM, "k8s-denyall")), ("application-policy-set", (PM, "k8s"))}
    assert added.policies.get("NetworkPolicy", ()) == (("n", "np"),)
    assert {(c.resource_type, c.operation, c.ref_fq_name[-1]) for c in added.ref_changes} == {
        ("firewall-policy", "ADD", "k8s-n-ingress-np-denyall"), ("application-policy-set", "ADD", "k8s-n-np")}

    t.upsert("NetworkPolicy", policy("n", "np", spec))  # unchanged: nothing to do
    assert not t.flush()

    spec["ingress"][0]["from"][0]["ipBlock"]["cidr"] = "10.0.0.0/16"
    t.upsert("NetworkPolicy", policy("n", "np", spec))
    moved = t.flush()
    assert ("address-group", (PM, "10.0.0.0/8")) in moved.removed
    assert ("address-group", (PM, "10.0.0.0/16")) in moved.added
    assert ("firewall-policy", (PM, "k8s-n-np")) in moved.changed
    assert moved.ref_changes == ()  # the APS and denyall refs did not move

    t.delete("NetworkPolicy", "n", "np")
    gone = t.flush()
    assert set(gone.removed) >= {("tag", ("app=db",)), ("tag", ("namespace=n",)), ("firewall-policy", (PM, "k8s-n-np"))}
    assert {(c.operation, c.ref_fq_name[-1]) for c in gone.ref_changes} == {
        ("DELETE", "k8s-n-ingress-np-denyall"), ("DELETE", "k8s-n-np")}
    assert policy_objects(t, "n", "np") is None


def test_pod_tags_follow_labels_namespace_labels_and_selectors():
    t = ClusterTranslator()
    t.upsert("Namespace", namespace("n", team="x"))
    t.upsert("Pod", pod("n", "a", labels={"app": "web"}))
    t.upsert("NetworkPolicy", policy("m", "np", {"podSelector": {}, "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"team": "x"}}, "podSelector": {"matchLabels": {"app": "web"}}}]}]}))
    t.flush()
    assert t.pod_tags("n", "a") == ("app=web", "application=k8s", "namespace.team=x", "namespace=n")
    t.upsert("Pod", pod("n", "a", labels={"app": "db"}))
    assert t.flush().pods == (("n", "a"),)
    assert t.pod_tags("n", "a") == ("application=k8s", "namespace.team=x", "namespace=n")
    t.upsert("Namespace", namespace("n", team="y"))
    assert t.flush().pods == (("n", "a"),)
    assert t.pod_tags("n", "a") == ("application=k8s", "namespace=n")
    t.delete("Pod", "n", "a")
    assert t.flush().pods == (("n", "a"),)
    assert t.pod_tags("n", "a") is None


def test_a_policy_naming_a_label_re_tags_only_the_pods_it_can_select():
    """SPEC 2: one policy change costs pod changes in proportion to what it selects, not to how many
    pods of the cluster carry the label (isolation tags apart: cluster-wide semantics)."""
    t = ClusterTranslator(semantics="cluster-wide")
    for ns in ("a", "b", "c"):
        t.upsert("Namespace", namespace(ns, team="x" if ns == "c" else "y"))
        t.upsert("Pod", pod(ns, "cache", labels={"app": "cache"}))
    t.flush()
    t.upsert("NetworkPolicy", policy("a", "np", {"podSelector": {"matchLabels": {"app": "cache"}}}))
    assert t.flush().pods == (("a", "cache"),)
    t.upsert("NetworkPolicy", policy("a", "peer", {"podSelector": {}, "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"team": "x"}}, "podSelector": {"matchLabels": {"app": "cache"}}}]}]}))
    assert t.flush().pods == (("c", "cache"),)
    assert "app=cache" not in t.pod_tags("b", "cache")
    t.upsert("Namespace", namespace("b", team="x"))  # b moves into the peer's scope
    assert t.flush().pods == (("b", "cache"),)
    assert "app=cache" in t.pod_tags("b", "cache")
    t.delete("NetworkPolicy", "a", "np")  # the peer still names app=cache in b and c
    assert t.flush().pods == (("a", "cache"),)
    assert [ns for ns in "abc" if "app=cache" in t.pod_tags(ns, "cache")] == ["b", "c"]
    t.delete("NetworkPolicy", "a", "peer")
    assert sorted(t.flush().pods) == [("b", "cache"), ("c", "cache")]
    assert not any("app=cache" in t.pod_tags(ns, "cache") for ns in "abc")


def test_namespace_label_changes_move_pods_in_and_out_of_selector_tags():
    t = ClusterTranslator()
    t.upsert("Namespace", namespace("n", env="prod"))
    t.upsert("Pod", pod("n", "a"))
    selector = {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}
    t.upsert("NetworkPolicy", policy("m", "np", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": selector}]}]}))
    t.flush()
    (tag,) = policy_objects(t, "m", "np").tags
    assert tag in t.pod_tags("n", "a")
    t.upsert("Namespace", namespace("n", env="dev"))
    assert t.flush().pods == (("n", "a"),)
    assert tag not in t.pod_tags("n", "a")
    t.delete("Namespace", "", "n")  # the pods keep it known, with only kubernetes.io/metadata.name
    t.flush()
    assert tag in t.pod_tags("n", "a")


def test_a_new_pod_re_resolves_named_ports():
    t = ClusterTranslator()
    t.upsert("Pod", pod("n", "a", ports=[("http", 80, "TCP")]))
    t.upsert("NetworkPolicy", policy("n", "np", {"podSelector": {}, "ingress": [{"ports": [{"port": "http"}]}]}))
    t.flush()
    rule = (PM, "k8s-n-ingress-np-0-allow-all-0")
    assert t.desired()["firewall-rule"][rule]["endpoint_2"] == {"tags": ["application=k8s", "namespace=n"]}
    t.upsert("Pod", pod("n", "b", ports=[("http", 81, "TCP")]))
    changes = t.flush()
    assert ("firewall-rule", rule) in changes.changed
    assert ("firewall-rule", (PM, "k8s-n-ingress-np-0-allow-all-1")) in changes.added
    assert len(t.desired()["firewall-rule"][rule]["endpoint_2"]["tags"]) == 1
    assert policy_errors(t, "n", "np") == ()
    t.delete("Pod", "n", "a")
    t.delete("Pod", "n", "b")
    t.flush()
    assert "resolves on no selected pod" in policy_errors(t, "n", "np")[0]
    assert policy_objects(t, "n", "np").rules == ()


def test_a_collision_appears_and_disappears():
    t = ClusterTranslator()
    spec = {"podSelector": {}}
    t.upsert("NetworkPolicy", policy("a-b", "c", spec))
    t.flush()
    assert policy_objects(t, "a-b", "c").firewall_policy == (PM, "k8s-a-b-c")
    t.upsert("NetworkPolicy", policy("a", "b-c", spec))
    t.flush()
    assert policy_objects(t, "a-b", "c").firewall_policy[1].startswith("k8s-a-b-c-")
    assert policy_objects(t, "a", "b-c").firewall_policy[1].startswith("k8s-a-b-c-")
    t.delete("NetworkPolicy", "a", "b-c")
    t.flush()
    assert policy_objects(t, "a-b", "c").firewall_policy == (PM, "k8s-a-b-c")
    assert policy_objects(t, "a-b", "c").deny_rules == ((PM, "k8s-a-b-ingress-c-denyall"),)


def test_a_name_handed_over_in_one_flush_stays_with_its_new_owner():
    """a/b-c leaves (deleted, or rejected whole) in the flush that brings a-b/c: both want
    `k8s-a-b-c`, and retracting the leaver's objects must not take the newcomer's with them."""
    spec = {"podSelector": {}}
    for leave in ("delete", "reject"):
        t = ClusterTranslator()
        t.upsert("NetworkPolicy", policy("a", "b-c", spec, uid="a/b-c"))
        t.flush()
        t.upsert("NetworkPolicy", policy("a-b", "c", spec, uid="a-b/c"))
        if leave == "delete":
            t.delete("NetworkPolicy", "a", "b-c")
            remaining = [policy("a-b", "c", spec, uid="a-b/c")]
        else:
            bad = policy("a", "b-c", {"podSelector": {"matchLabels": ["not", "a", "map"]}}, uid="a/b-c")
            t.upsert("NetworkPolicy", copy.deepcopy(bad))
            remaining = [policy("a-b", "c", spec, uid="a-b/c"), bad]
        t.flush()
        assert policy_objects(t, "a-b", "c").firewall_policy == (PM, "k8s-a-b-c"), leave
        assert json.dumps(t.translation().to_dict()) == json.dumps(translate({"NetworkPolicy": remaining}).to_dict()), leave


def test_errors_of_rejected_objects_clear_when_fixed_or_deleted():
    t = ClusterTranslator()
    t.upsert("NetworkPolicy", policy("n", "p", {"podSelector": {"matchLabels": {"a": 1}}}))
    t.flush()
    assert policy_errors(t, "n", "p")[0].endswith("rejected whole")
    assert policy_objects(t, "n", "p") is None
    t.upsert("NetworkPolicy", policy("n", "p", {"podSelector": {}}))
    t.flush()
    assert policy_errors(t, "n", "p") == ()
    t.upsert("Pod", {"metadata": {"name": "q", "namespace": "n", "labels": {"a": ["b"]}}})
    t.flush()
    assert [e["kind"] for e in t.errors()] == ["Pod"]
    t.delete("Pod", "n", "q")
    t.flush()
    assert t.errors() == []


def test_reads_answer_for_the_last_flush_and_never_flush_themselves():
    """Only flush() redoes what events marked: a read between an event and the flush sees the
    state of the last flush, and leaves the change report whole for the flush."""
    t = ClusterTranslator()
    t.upsert("Pod", pod("n", "a", labels={"app": "web"}))
    t.flush()
    t.upsert("NetworkPolicy", policy("n", "np", {"podSelector": {"matchLabels": {"app": "web"}}}))
    t.upsert("Pod", pod("n", "b", labels={"app": "web"}))
    assert policy_objects(t, "n", "np") is None and t.pod_tags("n", "b") is None
    assert (PM, "k8s-n-np") not in t.desired()["firewall-policy"]
    assert policy_errors(t, "n", "np") == () and t.errors() == []
    with pytest.raises(RuntimeError, match="flush"):  # pods and tags of two moments never mix
        t.translation()
    changes = t.flush()
    assert ("firewall-policy", (PM, "k8s-n-np")) in changes.added
    assert changes.pods == (("n", "a"), ("n", "b")) and changes.policies.get("NetworkPolicy", ()) == (("n", "np"),)
    assert policy_objects(t, "n", "np").firewall_policy == (PM, "k8s-n-np")
    assert "app=web" in t.pod_tags("n", "b")
