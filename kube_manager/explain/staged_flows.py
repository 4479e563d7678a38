"""What each staged policy would change among the current pods (SPEC 17), as `what-if` computes it.

For one staged policy, the cluster *before* is the cluster as enforced (every staged policy left
out: the translator and the Kubernetes model both skip them) and *after* is the same cluster with
that one policy's annotation removed. Both sides are translated under the configured semantics
(one translator, the policy promoted in it and staged again) and evaluated by what-if's own
evaluator (whatif.py) for the pairs of current pods whose verdict the policy can change, one pair
per pair of pod classes (staged_classes.py: pods no policy tells apart); a flow (pair, protocol,
port range) is *opened* when Contrail drops it before and allows it after, *closed* the other way
round. The counts are exact (each class pair's flows counted once per pod pair it stands for); the
listings stop at `limit` per direction, the class pairs expanded into pod pairs only that far.

A run has a deadline: past it, it stops between two pairs of classes and says it is incomplete,
with the counts of the pod pairs it checked. The Contrail objects the policy would add, change or remove are
the difference of the two translations, with what their selector tags stand for.

Pure: manifests in, a report out; the daemon runs it off its event loop (service/staged_runner.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import orjson

from kube_manager.plumbing.gcpolicy import collector_paused
from kube_manager.translator.cluster import ClusterTranslator
from kube_manager.translator.decode import decode_tags
from kube_manager.translator.staged_policies import (STAGED_VALUE, StagedKey, enforced, promoted, staged_key,
                                                     staged_value)

# what-if's evaluator itself, one pair at a time (whatif.py documents why the pairs and port
# classes it checks are enough).
from .flow import ContrailEvaluator, OrientedRules
from .k8s_semantics import KubernetesModel
from .staged_classes import ClassPair, class_pairs, pod_classes
from .whatif import Flow, FlowChange, PairEnd, WhatIfSide, common_pods, pair_changes

LISTED = 100  # flows listed per direction
_SECTIONS = ("tags", "address_groups", "firewall_rules", "firewall_policies")
Clock = Callable[[], float]


@dataclass
class StagedFlows:
    """What one staged policy would do: its flows (counts exact over the pairs checked; listings
    capped) and its objects. `complete` False: the run's deadline passed first ("too large to
    compute"), and the counts are those of the `pairs_checked` of `pairs` pairs."""

    key: StagedKey
    opened: int = 0
    closed: int = 0
    opened_listed: List[Flow] = field(default_factory=list)
    closed_listed: List[Flow] = field(default_factory=list)
    pairs: int = 0
    pairs_checked: int = 0
    complete: bool = True
    objects: Dict[str, List[Any]] = field(default_factory=dict)  # added, changed, removed
    selectors: Dict[str, Any] = field(default_factory=dict)  # selector tag -> what it stands for

    def note(self) -> str:
        """The Event's note (SPEC 17)."""
        if not self.complete and not self.pairs_checked:
            return "too large to compute: no pod pair checked within the time bound"
        text = f"would open {self.opened} and close {self.closed} flows among current pods"
        if not self.complete:
            text += f" (too large to compute: {self.pairs_checked} of {self.pairs} pod pairs checked)"
        return text

    def to_dict(self) -> Dict[str, Any]:
        kind, namespace, name = self.key
        return {"kind": kind, "namespace": namespace, "name": name, "complete": self.complete,
                "pairs": self.pairs, "pairs_checked": self.pairs_checked,
                "opened": self.opened, "closed": self.closed,
                "opened_flows": [f.to_dict() for f in self.opened_listed],
                "closed_flows": [f.to_dict() for f in self.closed_listed],
                "objects": self.objects, "selectors": self.selectors, "note": self.note()}


class StagedRun:
    """One computation over a snapshot of the cluster. One translator reads it (the state as
    enforced) and each staged policy is promoted in it, then staged again: a translation after one
    change costs a fraction of a whole one, and the evaluator of the state with the policy reuses
    the compiled rules the change left alone."""

    def __init__(self, objects: Mapping[str, Any], cluster_name: str, semantics: str, *,
                 deadline: Optional[float] = None, clock: Clock = time.monotonic, limit: int = LISTED) -> None:
        self._objects = objects
        self._cluster_name = cluster_name
        self._semantics = semantics
        self._deadline = deadline
        self._clock = clock
        self._limit = limit
        self._translator: Optional[ClusterTranslator] = None
        self._rules = OrientedRules()
        self._before: Optional[WhatIfSide] = None

    def _late(self, deadline: Optional[float]) -> bool:
        return deadline is not None and self._clock() > deadline

    def flows(self, key: StagedKey, deadline: Optional[float] = None) -> StagedFlows:
        """What the staged policy `key` would open and close, and its objects; `deadline` (the
        run's when not given) bounds this policy's part."""
        # A bulk job of a short-lived process: allocations, no reference cycles, and a heap whose
        # every full collection would be walked for nothing (the translator's as much as ours).
        with collector_paused():
            return self._flows(key, deadline if deadline is not None else self._deadline)

    def _flows(self, key: StagedKey, deadline: Optional[float]) -> StagedFlows:
        report = StagedFlows(key)
        if self._late(deadline):
            report.complete = False
            return report
        before = self.prepare()
        translator = self._translator
        assert translator is not None
        kind = key[0]
        staged_manifest = next((m for m in self._objects.get(kind, ())
                                if staged_value(m) == STAGED_VALUE and staged_key(kind, m) == key), None)
        if staged_manifest is None:
            return report  # no such staged policy: nothing it would change
        translator.upsert(kind, enforced(staged_manifest))
        translator.flush()
        after = self._side(translator, KubernetesModel.of(promoted(self._objects, {key})).reuse(
            before.kubernetes, key[1] if kind == "NetworkPolicy" else None))
        # staged again at once: the next policy is compared with the state as enforced
        translator.upsert(kind, staged_manifest)
        translator.flush()
        report.objects, report.selectors = _object_changes(before.translation, after.translation, after.selectors)
        pods = common_pods(before, after)
        classes = pod_classes([PairEnd(pod, ip) for pod, ip in sorted(pods.items())], before, after)
        pairs = class_pairs(key, after.kubernetes, classes)
        report.pairs = sum(pair.count for pair in pairs)
        for pair in pairs:
            if self._late(deadline):
                report.complete = False
                break
            report.pairs_checked += pair.count
            self._count(report, pair, pair_changes(before, after, *pair.representative()))
        return report

    def prepare(self) -> WhatIfSide:
        """The state as enforced (every staged policy left out), translated at the first call and
        shared by every policy's comparison: what a run spends before its first policy."""
        if self._before is None:
            with collector_paused():
                self._translator = ClusterTranslator(self._cluster_name, track_changes=False, semantics=self._semantics)
                for kind in self._translator.kinds():
                    for manifest in self._objects.get(kind, ()):
                        self._translator.upsert(kind, manifest)
                self._translator.flush()
                kubernetes = KubernetesModel.of(self._objects)
                # every policy and pod read once, for each side after it to reuse
                kubernetes.rejections()
                self._before = self._side(self._translator, kubernetes)
                for workload in self._before.translation["workloads"]:
                    kubernetes.pod(workload["namespace"], workload["name"])
        return self._before

    def _side(self, translator: ClusterTranslator, kubernetes: KubernetesModel) -> WhatIfSide:
        """The translator's state as a side of the comparison, detached from the later flushes
        (which update the policies' and the APS's reference lists in place)."""
        translation = translator.translation()
        detached = translation.to_dict()
        for section in ("firewall_policies", "application_policy_set"):
            detached[section] = orjson.loads(orjson.dumps(detached[section]))
        return WhatIfSide.of(detached, translation.selectors, ContrailEvaluator(detached, self._cluster_name, self._rules),
                             kubernetes)

    def _count(self, report: StagedFlows, pair: ClassPair, changes: List[FlowChange]) -> None:
        """The flows of one pair of classes, once for each pod pair it stands for; listed, pod
        pair by pod pair, while the listings have room."""
        moved = [change for change in changes if change.contrail[0] != change.contrail[1]]
        # (a flow whose Kubernetes verdict alone moves, under cluster-wide semantics, changes nothing enforced)
        opening = sum(1 for change in moved if change.contrail[1])
        report.opened += opening * pair.count
        report.closed += (len(moved) - opening) * pair.count
        for src, dst in pair.pod_pairs():
            room = [listed for listed, n in ((report.opened_listed, opening), (report.closed_listed, len(moved) - opening))
                    if n and len(listed) < self._limit]
            if not room:
                return
            for change in moved:
                listed = report.opened_listed if change.contrail[1] else report.closed_listed
                if len(listed) < self._limit:
                    listed.append(Flow(src.describe(), dst.describe(), change.protocol, change.ports))


Keyed = Dict[Tuple[str, Tuple[str, ...]], Mapping[str, Any]]


def _bodies(translation: Mapping[str, Any]) -> Iterator[Tuple[str, Mapping[str, Any]]]:
    for section in _SECTIONS:
        for body in translation.get(section) or ():
            yield section, body
    aps = translation.get("application_policy_set")
    if aps:
        yield "application_policy_set", aps


def _object_changes(before: Mapping[str, Any], after: Mapping[str, Any],
                    selectors: Mapping[str, Any]) -> Tuple[Dict[str, List[Any]], Dict[str, Any]]:
    """The objects `after` adds, changes and removes, and what the selector tags they use stand
    for (`selectors`: after's). A body the translator left alone is the same object on both sides
    (under the same fq_name), so only the others are keyed and compared."""
    old_ids, new_ids = {id(body) for _, body in _bodies(before)}, {id(body) for _, body in _bodies(after)}
    old: Keyed = {(section, tuple(body["fq_name"])): body for section, body in _bodies(before) if id(body) not in new_ids}
    new: Keyed = {(section, tuple(body["fq_name"])): body for section, body in _bodies(after) if id(body) not in old_ids}
    added = [{"type": key[0], "body": body} for key, body in sorted(new.items()) if key not in old]
    changed = [{"type": key[0], "body": body} for key, body in sorted(new.items()) if key in old and old[key] != body]
    removed = [{"type": key[0], "fq_name": list(key[1])} for key in sorted(old) if key not in new]
    tags = sorted({tag for key, body in new.items() if old.get(key) != body for tag in _tags_of(body)})
    return {"added": added, "changed": changed, "removed": removed}, decode_tags(tags, selectors)


def _tags_of(body: Mapping[str, Any]) -> Iterable[str]:
    for side in ("endpoint_1", "endpoint_2"):
        yield from (body.get(side) or {}).get("tags") or ()
    yield from (body.get("match_tags") or {}).get("tag_list") or ()
