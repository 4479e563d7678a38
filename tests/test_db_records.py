"""The DB records keep the Kubernetes objects they show packed (issue 12: memory at XLarge)."""
from __future__ import annotations

from kube_manager.db import ClusterPolicyRecord, PodRecord, PolicyRecord


def test_a_record_holds_its_manifest_and_spec_as_compact_json_and_reads_them_back_equal():
    manifest = {"kind": "NetworkPolicy", "metadata": {"namespace": "ns", "name": "np", "labels": {"a": "b"}},
                "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}]}}
    record = PolicyRecord("u", "ns", "np", manifest["spec"], manifest)
    assert record.manifest == manifest and record.spec == manifest["spec"]
    assert isinstance(vars(record)["_packed_manifest"], bytes) and isinstance(vars(record)["_packed_spec"], bytes)
    assert list(record.manifest) == list(manifest)  # key order kept, as the pages show it
    read = record.manifest
    read["spec"] = {}
    assert record.manifest == manifest  # a copy: the record changes only by assignment


def test_record_defaults_are_empty_and_a_value_json_cannot_hold_is_kept_as_it_is():
    assert PodRecord("u", "ns", "p").manifest == {} and ClusterPolicyRecord("u", "", "c").spec == {}
    pod = PodRecord("u", "ns", "p", manifest=None)
    assert pod.manifest == {}
    odd = {1: "an int key"}
    pod.manifest = odd
    assert pod.manifest is odd
