"""Every flow of a small cluster decided twice: by SPEC 6's evaluation of the emitted objects
(ContrailEvaluator, one first-match pass over the APS) and by the Kubernetes reference model
(kube_manager.explain.k8s_semantics, which shares no code with the translator).

Flows: every ordered pair of distinct pods, and each pod to and from outside addresses, on the
given (protocol, port) probes. A cell is reported with both verdicts and, for the `cluster-wide`
check, whether it is a cluster-wide cell: Kubernetes drops it because one end's NetworkPolicy chain
(isolated, nothing allows) denies it while the other end's NetworkPolicy chain allows it.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from kube_manager.explain.flow import ContrailEvaluator, Workload
from kube_manager.explain.k8s_semantics import (NETWORK_POLICY_TIER, Endpoint, KubernetesModel, PeerBlocks,
                                                SideVerdict, Verdict)
from kube_manager.offline.manifests import Manifests
from kube_manager.translator import translate

OUTSIDE = ("192.0.2.10", "10.244.9.9")  # outside the cluster, and in the pod range but no pod's


@dataclass(frozen=True)
class Cell:
    src: str
    dst: str
    protocol: str
    port: int
    contrail: bool
    kubernetes: bool
    rule: Optional[str]
    cluster_wide: bool  # a NetworkPolicy chain at one end allows what the other end's denies
    verdict: Optional[Verdict] = field(default=None, compare=False)  # the reference model's, per side

    def __str__(self) -> str:
        return (f"{self.src} -> {self.dst} {self.port}/{self.protocol}: contrail {self.contrail} "
                f"({self.rule}), kubernetes {self.kubernetes}")


def verdict_at(pair: Tuple[PeerBlocks, PeerBlocks], dst: Endpoint, port: int, protocol: str) -> Verdict:
    """`KubernetesModel.verdict` at one port of a pod pair, from the pair's `model.pair(src, dst)`:
    a check of many ports matches the selectors once per pair, not once per port."""
    egress, ingress = pair
    return Verdict(egress=egress.side(dst, port, protocol), ingress=ingress.side(dst, port, protocol))


def _decided_by_network_policies(side: SideVerdict, allowed: bool) -> bool:
    return side.tier == NETWORK_POLICY_TIER and side.allowed == allowed


def cells(manifests: Manifests, semantics: str, probes: Sequence[Tuple[str, int]]) -> List[Cell]:
    translation = translate(manifests.objects, semantics=semantics).to_dict()
    evaluator = ContrailEvaluator(translation)
    model = KubernetesModel.of(manifests.objects)
    ends: List[Tuple[str, Workload, Endpoint]] = []
    for raw in translation["workloads"]:
        pod = model.pod(raw["namespace"], raw["name"])
        assert pod is not None and pod.ip is not None
        workload = evaluator.workload(raw["namespace"], raw["name"])
        assert workload is not None
        ends.append((f"{raw['namespace']}/{raw['name']}", workload, Endpoint(pod, pod.ip)))
    outside = [(ip, Workload(ipaddress.ip_address(ip), frozenset()), Endpoint(None, ipaddress.ip_address(ip)))
               for ip in OUTSIDE]
    found = []
    for src in ends + outside:
        for dst in ends + outside:
            if src[0] == dst[0] or (src[2].pod is None and dst[2].pod is None):
                continue
            pair = model.pair(src[2], dst[2])
            for protocol, port in probes:
                decision = evaluator.evaluate(src[1], dst[1], port, protocol.lower())
                verdict = verdict_at(pair, dst[2], port, protocol.upper())
                if (protocol, port) == probes[0]:  # once a pair: still the model's own verdict
                    assert verdict == model.verdict(src[2], dst[2], port, protocol.upper()), (src[0], dst[0])
                cluster_wide = any(_decided_by_network_policies(a, True) and _decided_by_network_policies(b, False)
                                   for a, b in ((verdict.egress, verdict.ingress), (verdict.ingress, verdict.egress)))
                found.append(Cell(src[0], dst[0], protocol, port, decision.allowed, verdict.allowed,
                                  decision.rule, cluster_wide, verdict))
    return found


def wrong(manifests: Manifests, semantics: str, probes: Sequence[Tuple[str, int]]) -> List[Cell]:
    """The cells the semantics gets wrong: any disagreement under `kubernetes`; under
    `cluster-wide`, a disagreement that is not a cluster-wide cell allowed."""
    return [cell for cell in cells(manifests, semantics, probes)
            if cell.contrail != cell.kubernetes
            and not (semantics == "cluster-wide" and cell.contrail and cell.cluster_wide)]
