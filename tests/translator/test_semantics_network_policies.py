"""SPEC 14 on NetworkPolicies alone: under `kubernetes` the emitted objects decide every flow as
Kubernetes does; under `cluster-wide` they differ only where one end's NetworkPolicy allows what
the other end's NetworkPolicies deny, and the output is the one of sections 2-5."""
from __future__ import annotations

import hashlib
import json

from hypothesis import HealthCheck, given, settings

from tests.support.builders import namespace, pod, policy
from kube_manager.offline.manifests import Manifests, load_manifests
from kube_manager.translator import ClusterTranslator, translate
from tests.support.schema_oracle import assert_translation_valid
from tests.support.paths import REPO
from tests.support.semantics_support import cells, wrong
from tests.explain.test_explain_random import cluster, policy_sets

PROBES = [("TCP", 80), ("TCP", 81), ("UDP", 81), ("SCTP", 80)]


def tenants() -> Manifests:
    """tenant-b isolates its pods for ingress; tenant-a lets its pods send anywhere in the cluster."""
    return Manifests({"Namespace": [namespace("tenant-a"), namespace("tenant-b")],
                      "Pod": [pod("tenant-a", "client", "10.244.1.10", {"app": "client"}),
              pod("tenant-b", "db", "10.244.2.10", {"app": "db"})], "NetworkPolicy": [
            policy("tenant-b", "default-deny-ingress", {"podSelector": {}, "policyTypes": ["Ingress"]}),
            policy("tenant-a", "egress-anywhere", {"podSelector": {}, "policyTypes": ["Egress"],
                                                   "egress": [{"to": [{"namespaceSelector": {}}]}]})]})


def test_a_namespace_cannot_open_another_namespaces_isolated_pods():
    found = wrong(tenants(), "kubernetes", [("TCP", 5432)])
    assert not found, [str(c) for c in found]
    (to_db,) = [c for c in cells(tenants(), "kubernetes", [("TCP", 5432)])
                if (c.src, c.dst) == ("tenant-a/client", "tenant-b/db")]
    assert not to_db.contrail and to_db.rule == "k8s--isolated-egress-to-isolated-ingress"


def test_under_cluster_wide_the_tenant_hole_is_the_documented_deviation():
    (to_db,) = [c for c in cells(tenants(), "cluster-wide", [("TCP", 5432)])
                if (c.src, c.dst) == ("tenant-a/client", "tenant-b/db")]
    assert to_db.contrail and not to_db.kubernetes and to_db.cluster_wide


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy_sets)
def test_random_network_policies_are_decided_as_kubernetes_decides(policies):
    manifests = cluster(policies)
    found = wrong(manifests, "kubernetes", PROBES)
    assert not found, [str(c) for c in found[:5]]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy_sets)
def test_random_network_policies_under_cluster_wide_differ_only_in_cluster_wide_cells(policies):
    manifests = cluster(policies)
    found = wrong(manifests, "cluster-wide", PROBES)
    assert not found, [str(c) for c in found[:5]]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy_sets)
def test_kubernetes_objects_pass_the_schema(policies):
    manifests = cluster(policies)
    assert_translation_valid(translate(manifests.objects, semantics="kubernetes").to_dict())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy_sets, policy_sets)
def test_incremental_kubernetes_translation_equals_the_batch_one(first, second):
    """Policies added one at a time, then replaced: the pair block ends as a batch translation
    of the final state makes it."""
    renamed = [policy(p["metadata"]["namespace"], f"q{i}", p["spec"]) for i, p in enumerate(second)]
    final = cluster(renamed[: len(renamed) // 2] + first[1:])
    translator = ClusterTranslator(semantics="kubernetes")
    start = cluster(first)
    for manifest in start.objects["Namespace"]:
        translator.upsert("Namespace", manifest)
    for manifest in start.objects["Pod"]:
        translator.upsert("Pod", manifest)
    for manifest in first + renamed:
        translator.upsert("NetworkPolicy", manifest)
        translator.flush()
    translator.delete("NetworkPolicy", first[0]["metadata"]["namespace"], first[0]["metadata"]["name"])
    for manifest in renamed[len(renamed) // 2:]:
        translator.delete("NetworkPolicy", manifest["metadata"]["namespace"], manifest["metadata"]["name"])
    translator.flush()
    batch = translate(final.objects, semantics="kubernetes")
    assert translator.translation().to_dict() == batch.to_dict()
    assert not translator.flush()  # nothing pending: an unchanged state changes nothing


CLUSTER_WIDE_OUTPUT = {  # sha256 of `translate -f examples/<name> -o json` before SPEC 14
    "demo": "c7e720504917dad48333e93a74e1983f69ab88451c6ee69127475ee823ca7cf4",
    "wiki": "1cd6e5b148c761a05434640f10c6948a08cf76ec16c4e776c6cffea02ea5c2de",
}


def test_cluster_wide_output_is_byte_identical_to_the_output_before_the_semantics_existed():
    from kube_manager.cli.cmd_translate import render
    for name, digest in CLUSTER_WIDE_OUTPUT.items():
        manifests = load_manifests([str(REPO / "examples" / name)])
        translation = translate(manifests.objects, semantics="cluster-wide")
        assert hashlib.sha256(render(translation, "json")).hexdigest() == digest, name
        json.loads(render(translation, "json"))
