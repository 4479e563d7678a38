"""What each staged policy would change among the current pods (SPEC 17), as `what-if` computes it.

For one staged policy, the cluster *before* is the cluster as enforced (every staged policy left
out: the translator and the Kubernetes model both skip them) and *after* is the same cluster with
that one policy's annotation removed. Both sides are translated in full under the configured
semantics and evaluated by what-if's own evaluator (whatif.py), pair by pair, for the pairs of
current pods whose verdict the policy can change (`_pairs`); a flow (pair, protocol, port range) is *opened*
when Contrail drops it before and allows it after, *closed* the other way round. The counts are
exact; the listings stop at `limit` per direction.

A run has a deadline: past it, it stops between two pairs and says it is incomplete, with the
counts of the pairs it checked. The Contrail objects the policy would add, change or remove are
the difference of the two translations, with what their selector tags stand for.

Pure: manifests in, a report out; the daemon runs it off its event loop (kube_manager/staged/).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import chain as _chain
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple

from kube_manager.registry import KINDS
from kube_manager.translator.decode import decode_tags
from kube_manager.translator.staged_policies import StagedKey, promoted

# what-if's evaluator itself, one pair at a time (whatif.py documents why the pairs and port
# classes it checks are enough).
from .k8s_netpol import EGRESS, INGRESS
from .whatif import FlowChange, affected_pods, common_pods, PairEnd, pair_changes, WhatIfSide

LISTED = 100  # flows listed per direction
_SECTIONS = ("tags", "address_groups", "firewall_rules", "firewall_policies")
Clock = Callable[[], float]


@dataclass(frozen=True)
class Flow:
    """One flow the policy opens or closes: pods `ns/name`, a protocol and a port range."""

    source: str
    destination: str
    protocol: str
    ports: Tuple[int, int]

    def to_dict(self) -> Dict[str, Any]:
        return {"from": self.source, "to": self.destination, "protocol": self.protocol, "ports": list(self.ports)}


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
    """One computation over a snapshot of the cluster: the state as enforced is translated once
    and shared by every staged policy's comparison."""

    def __init__(self, objects: Mapping[str, Any], cluster_name: str, semantics: str, *,
                 deadline: Optional[float] = None, clock: Clock = time.monotonic, limit: int = LISTED) -> None:
        self._objects = objects
        self._cluster_name = cluster_name
        self._semantics = semantics
        self._deadline = deadline
        self._clock = clock
        self._limit = limit
        self._before: Optional[WhatIfSide] = None

    def _late(self, deadline: Optional[float]) -> bool:
        return deadline is not None and self._clock() > deadline

    def flows(self, key: StagedKey, deadline: Optional[float] = None) -> StagedFlows:
        """What the staged policy `key` would open and close, and its objects; `deadline` (the
        run's when not given) bounds this policy's part."""
        deadline = deadline if deadline is not None else self._deadline
        report = StagedFlows(key)
        if self._late(deadline):
            report.complete = False
            return report
        if self._before is None:
            self._before = WhatIfSide(_Manifests(self._objects), self._cluster_name, self._semantics)
        before = self._before
        after = WhatIfSide(_Manifests(promoted(self._objects, {key})), self._cluster_name, self._semantics)
        report.objects, report.selectors = _object_changes(before.translation, after.translation, after.selectors)
        pods = common_pods(before, after)
        ends = [PairEnd(pod, ip) for pod, ip in sorted(pods.items())]
        report.pairs, pairs = _pairs(key, after, ends, affected_pods(KINDS, {key}, pods))
        for src, dst in pairs:
            if self._late(deadline):
                report.complete = False
                break
            report.pairs_checked += 1
            for change in pair_changes(before, after, src, dst):
                self._count(report, change)
        return report

    def _count(self, report: StagedFlows, change: FlowChange) -> None:
        before, after = change.contrail
        if before == after:
            return  # only the Kubernetes verdict moves (cluster-wide semantics): nothing enforced changes
        flow = Flow(change.source, change.destination, change.protocol, change.ports)
        if after:
            report.opened += 1
            if len(report.opened_listed) < self._limit:
                report.opened_listed.append(flow)
        else:
            report.closed += 1
            if len(report.closed_listed) < self._limit:
                report.closed_listed.append(flow)


Pairs = Tuple[int, Iterator[Tuple[PairEnd, PairEnd]]]  # how many, and each, made as they are checked


def _pairs(key: StagedKey, after: WhatIfSide, ends: List[PairEnd], affected: Set[Tuple[str, str]]) -> Pairs:
    """The pairs whose verdict the policy can change, counted and made lazily (every pair of a
    large cluster would not fit in memory). A flow's verdict depends only on the policies
    selecting its source (egress) and its destination (ingress), in both semantics (the
    cluster-wide deviation too: it lets the destination's ingress policies decide for the source);
    so a NetworkPolicy can only change the flows into the pods it selects, if it isolates ingress,
    and out of them, if egress. A ClusterNetworkPolicy's (every pod may be its subject or peer),
    or a NetworkPolicy the model cannot read, keeps what-if's pairs: those with an affected end."""
    kind, namespace, name = key
    policy = next((p for p in after.kubernetes.policies(namespace) if p.name == name), None) \
        if kind == "NetworkPolicy" else None
    if policy is None:
        near = [end for end in ends if end.pod in affected]
        return (len(near) * (len(ends) - 1) + len(near) * (len(ends) - len(near)),
                _chain(((a, b) for a in near for b in ends if a != b),
                       ((b, a) for a in near for b in ends if a != b and b.pod not in affected)))
    selected = []
    for end in ends:
        pod = after.kubernetes.pod(*end.pod) if end.pod and end.pod[0] == namespace else None
        if pod is not None and policy.selector.matches(pod.labels):
            selected.append(end)
    ingress, egress = INGRESS in policy.directions, EGRESS in policy.directions
    chosen = {end.pod for end in selected} if ingress else set()  # a pair of two is an ingress pair already
    count = (len(selected) * (len(ends) - 1) if ingress else 0) + \
        (len(selected) * (len(ends) - 1 - (len(selected) - 1 if ingress else 0)) if egress else 0)
    return count, _chain(((b, a) for a in selected for b in ends if a != b) if ingress else iter(()),
                         ((a, b) for a in selected for b in ends if a != b and b.pod not in chosen)
                         if egress else iter(()))


@dataclass(frozen=True)
class _Manifests:
    """Manifests by kind, as what-if's `WhatIfSide` reads them."""

    objects: Mapping[str, Any]


def _by_fq_name(translation: Mapping[str, Any]) -> Dict[Tuple[str, Tuple[str, ...]], Mapping[str, Any]]:
    found = {(section, tuple(body["fq_name"])): body for section in _SECTIONS for body in translation.get(section) or ()}
    aps = translation.get("application_policy_set")
    if aps:
        found[("application_policy_set", tuple(aps["fq_name"]))] = aps
    return found


def _object_changes(before: Mapping[str, Any], after: Mapping[str, Any],
                    selectors: Mapping[str, Any]) -> Tuple[Dict[str, List[Any]], Dict[str, Any]]:
    """The objects `after` adds, changes and removes, and what the selector tags they use stand
    for (`selectors`: after's)."""
    old, new = _by_fq_name(before), _by_fq_name(after)
    added = [{"type": key[0], "body": body} for key, body in sorted(new.items()) if key not in old]
    changed = [{"type": key[0], "body": body} for key, body in sorted(new.items()) if key in old and old[key] != body]
    removed = [{"type": key[0], "fq_name": list(key[1])} for key in sorted(old) if key not in new]
    tags = sorted({tag for key, body in new.items() if old.get(key) != body for tag in _tags_of(body)})
    return {"added": added, "changed": changed, "removed": removed}, decode_tags(tags, selectors)


def _tags_of(body: Mapping[str, Any]) -> Iterable[str]:
    for side in ("endpoint_1", "endpoint_2"):
        yield from (body.get(side) or {}).get("tags") or ()
    yield from (body.get("match_tags") or {}).get("tag_list") or ()
