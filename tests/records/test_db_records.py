"""The DB records keep the Kubernetes objects they show packed (issue 12: memory at XLarge)."""
from __future__ import annotations

import sys
import tracemalloc

from kube_manager.records.db import ClusterPolicyRecord, PodRecord, PolicyRecord
from kube_manager.plumbing.packed import pack, unpack


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


def test_a_packed_value_takes_about_its_own_size():
    """orjson's answer keeps its 1 KB write buffer; what is kept is an exact copy."""
    manifest = {"kind": "Pod", "metadata": {"namespace": "ns", "name": "web", "labels": {"app": "web"}}}
    held = pack(manifest)
    assert unpack(held) == manifest and sys.getsizeof(held) < len(held) + 64
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [pack(manifest) for _ in range(200)]
        per_value = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    assert per_value < 2 * sys.getsizeof(held), per_value
