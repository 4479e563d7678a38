"""The cyclic collector stays out of a bulk flush (the daemon's first flush after its initial lists
renders every policy with the collector on) and is left as it was found."""
from __future__ import annotations

import gc

from kube_manager.translator import ClusterTranslator
from tests.support.builders import namespace, pod, policy


def _loaded() -> ClusterTranslator:
    translator = ClusterTranslator()
    for n in range(40):
        translator.upsert("Namespace", namespace(f"ns{n}", team="x"))
        for p in range(5):
            translator.upsert("Pod", pod(f"ns{n}", f"p{p}", ip=f"10.1.{n}.{p + 1}", labels={"app": f"a{p}"}))
        for p in range(5):
            translator.upsert("NetworkPolicy", policy(f"ns{n}", f"np{p}", {
                "podSelector": {"matchLabels": {"app": f"a{p}"}},
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a0"}}}], "ports": [{"port": 80}]}]}))
    return translator


def test_a_bulk_flush_runs_no_collection_and_leaves_the_collector_on():
    translator = _loaded()
    passes = []
    callback = lambda phase, info: passes.append(info["generation"]) if phase == "start" else None  # noqa: E731
    gc.enable()
    gc.collect()  # nothing pending from the loading (or from a test that left the collector off)
    gc.callbacks.append(callback)
    try:
        translator.flush()
    finally:
        gc.callbacks.remove(callback)
    assert len(translator.desired()["firewall-policy"]) >= 200  # enough allocation for many passes had the collector been on
    assert passes == []
    assert gc.isenabled()


def test_a_collector_found_off_stays_off():
    translator = _loaded()
    gc.disable()
    try:
        translator.flush()
        assert not gc.isenabled()
    finally:
        gc.enable()
