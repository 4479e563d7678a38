"""SPEC 14's isolation tags on the event path: a NetworkPolicy event after the initial lists costs
in proportion to the pods it selects, the first one included (the bulk load indexed the pods'
labels, which every later lookup of a policy's own pods goes through)."""
from __future__ import annotations

from typing import Any, Dict, List

import pytest

from kube_manager.translator import ClusterTranslator, translate
from kube_manager.translator.index import _LabelIndex
from tests.support.builders import namespace, pod, policy

INGRESS_TAG = "label=k8s-isolated-ingress"


def selecting(app: str) -> Dict[str, Any]:
    return {"podSelector": {"matchLabels": {"app": app}}, "policyTypes": ["Ingress"]}


@pytest.fixture
def indexed(monkeypatch: pytest.MonkeyPatch) -> List[object]:
    """Every item the label indexes take in, as they take it."""
    seen: List[object] = []
    insert = _LabelIndex._insert

    def counting(self: _LabelIndex, item: object, labels: Any) -> None:
        seen.append(item)
        insert(self, item, labels)
    monkeypatch.setattr(_LabelIndex, "_insert", counting)
    return seen


def loaded(pods: int) -> ClusterTranslator:
    """A started translator: namespaces `a` and `b` of `pods` pods each, one policy isolating `a`'s
    `web` pods, flushed as one bulk load."""
    t = ClusterTranslator(semantics="kubernetes")
    for ns in ("a", "b"):
        t.upsert("Namespace", namespace(ns))
        for i in range(pods):
            t.upsert("Pod", pod(ns, f"p{i}", f"10.0.{ord(ns)}.{i}", {"app": "web" if i % 2 else "db"}))
    t.upsert("NetworkPolicy", policy("a", "web", selecting("web")))
    t.flush()
    return t


def test_the_first_network_policy_event_indexes_no_pod(indexed: List[object]) -> None:
    t = loaded(50)
    before = len(indexed)
    t.upsert("NetworkPolicy", policy("b", "db", selecting("db")))
    changed = t.flush().pods
    assert len(indexed) == before  # no pod of the cluster indexed by the event
    assert sorted(changed) == sorted(("b", f"p{i}") for i in range(0, 50, 2))
    assert all(INGRESS_TAG in t.pod_tags("b", f"p{i}") for i in range(0, 50, 2))
    assert not any(INGRESS_TAG in t.pod_tags("b", f"p{i}") for i in range(1, 50, 2))


def test_pods_that_come_after_the_bulk_load_are_found_by_later_policies() -> None:
    t = loaded(4)
    t.upsert("Pod", pod("b", "late", "10.0.98.99", {"app": "cache"}))
    t.flush()
    assert INGRESS_TAG not in t.pod_tags("b", "late")
    t.upsert("NetworkPolicy", policy("b", "cache", selecting("cache")))
    assert t.flush().pods == (("b", "late"),)
    assert INGRESS_TAG in t.pod_tags("b", "late")
    t.delete("Pod", "b", "late")
    t.flush()
    t.delete("NetworkPolicy", "b", "cache")
    assert t.flush().pods == ()


def test_an_offline_translation_indexes_no_pod(indexed: List[object]) -> None:
    """`translate()` makes no lookup after its one flush: it pays for no label index of pods."""
    pods = [pod("a", f"p{i}", f"10.0.0.{i}", {"app": "web"}) for i in range(20)]
    translation = translate({"Namespace": [namespace("a")], "Pod": pods,
                             "NetworkPolicy": [policy("a", "web", selecting("web"))]})
    assert all(INGRESS_TAG in w["tags"] for w in translation.to_dict()["workloads"])
    assert not [item for item in indexed if isinstance(item, tuple) and item in {("a", f"p{i}") for i in range(20)}]
