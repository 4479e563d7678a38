"""`explain`: one flow's verdict as Contrail enforces it and as Kubernetes defines it, side by side.

Contrail's verdict comes from evaluating the translator's objects (flow.py); the Kubernetes verdict
from the manifests themselves (k8s_semantics.py), tiers included, so the two are independent. They
agree on every flow under `policy_semantics = kubernetes` (SPEC 14). Under `cluster-wide` they may
differ in exactly one way by design, the seed's *cluster-wide action enforcement* (SPEC 6): a
NetworkPolicy allowing a flow at one end admits it although the other end's NetworkPolicies
isolate that end and allow nothing. That is reported as `"deviation": "cluster-wide"` with the
policies involved. Any other difference is a translator bug and is reported as
`"deviation": "mismatch"`, so tests and operators see it at once.

Every answer also carries the `trace` (trace.py): per side, every policy selecting the pod, in the
APS evaluation order, block by block, with what did not match; `stands_for`, what the deciding rule
stands for when the tiers or `kubernetes` semantics wrote it (stands_for.py); and `selectors`, what
each selector or isolation tag of the two ends stands for (decode.py).

`Explainer` indexes both sides once; the introspect page and the conformance test keep one and ask
it many flows. `explain()` is the one-shot form used by the CLI.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple

from kube_manager.translator.decode import decode_tags
from kube_manager.translator.semantics import CLUSTER_WIDE, KUBERNETES
from kube_manager.explain.flow import FLOW_PROTOCOLS, ContrailEvaluator, Decision, Workload
from kube_manager.explain.k8s_cnp import ADMIN, BASELINE
from kube_manager.explain.k8s_semantics import (NETWORK_POLICY_TIER, Endpoint, KubernetesModel,
                                                SideVerdict, Verdict)
from kube_manager.explain.stands_for import allows_words, drops_words, isolation_tags, stands_for
from kube_manager.explain.trace import trace

MISMATCH = "mismatch"


class ExplainError(ValueError):
    """Bad flow input (unknown pod, malformed address, protocol or port); the message says which."""


class ManifestSet(Protocol):
    """What explain needs of the manifests (kube_manager.offline.manifests.Manifests fits)."""

    # A read-only property, so a class holding lists of dicts by kind (as Manifests does) fits.
    @property
    def objects(self) -> Mapping[str, Sequence[Mapping[str, Any]]]: ...


@dataclass(frozen=True)
class FlowEnd:
    """One end of the flow as both evaluators see it."""

    endpoint: Endpoint
    workload: Workload
    in_translation: bool  # False for outside addresses and pods the translation has no workload of

    def to_dict(self) -> Dict[str, Any]:
        pod = self.endpoint.pod
        return {
            "pod": pod.key if pod else None,
            "ip": str(self.endpoint.ip) if self.endpoint.ip is not None else None,
            "tags": sorted(self.workload.tags),
        }


def parse_protocol(protocol: Any) -> str:
    text = str(protocol or "").strip().lower()
    if text not in FLOW_PROTOCOLS:
        raise ExplainError(f"unknown protocol {protocol!r}: expected one of "
                           f"{', '.join(p.upper() for p in FLOW_PROTOCOLS)}")
    return text


def parse_port(port: Any) -> int:
    try:
        number = int(str(port).strip()) if not isinstance(port, bool) else -1
    except ValueError:
        number = -1
    if not 1 <= number <= 65535:
        raise ExplainError(f"invalid port {port!r}: expected a number from 1 to 65535")
    return number


def deciders(side: SideVerdict) -> List[str]:
    """The policies deciding one side: the ClusterNetworkPolicy of the deciding rule, or the
    NetworkPolicies allowing the flow, or else isolating the pod; none for the default."""
    decision = side.decision
    if decision is not None:
        return [decision.policy]
    if side.tier == NETWORK_POLICY_TIER:
        return list(side.allowing or side.isolating)
    return []


def _decided_by_network_policies(side: SideVerdict, allowed: bool) -> bool:
    return side.tier == NETWORK_POLICY_TIER and side.allowed == allowed


def _cluster_wide_sides(verdict: Verdict) -> Optional[Tuple[str, SideVerdict, str, SideVerdict]]:
    """The SPEC 6 condition: one end's NetworkPolicies allow the flow, the other end's isolate it
    and allow nothing. Returns (allowing side, its verdict, dropping side, its verdict), or None
    when the condition does not hold (the tiers are exact in both semantics)."""
    egress, ingress = verdict.egress, verdict.ingress
    for allowing_name, allowing, dropping_name, dropping in (
            ("the source's egress", egress, "the destination's ingress", ingress),
            ("the destination's ingress", ingress, "the source's egress", egress)):
        if _decided_by_network_policies(allowing, True) and _decided_by_network_policies(dropping, False):
            return allowing_name, allowing, dropping_name, dropping
    return None


def cluster_wide_policies(verdict: Verdict) -> Optional[List[str]]:
    """The policies involved in a cluster-wide flow: the allowing ones, then the dropping ones of
    the other end; None when the flow is not one."""
    sides = _cluster_wide_sides(verdict)
    if sides is None:
        return None
    return deciders(sides[1]) + deciders(sides[3])


class Explainer:
    """Both evaluators over one translation and the manifests it was made from."""

    def __init__(self, translation: Mapping[str, Any], manifests: ManifestSet,
                 cluster_name: Optional[str] = None,
                 selectors: Optional[Mapping[str, Any]] = None, semantics: str = KUBERNETES) -> None:
        """`selectors`: selector tag -> the object it was hashed from (`Translation.selectors`,
        or the daemon's live view), to decode the tags an answer shows; `semantics`: the
        `policy_semantics` the translation was made with."""
        self._use(ContrailEvaluator(translation, cluster_name), KubernetesModel.of(manifests.objects),
                  selectors, semantics)

    @classmethod
    def of(cls, contrail: ContrailEvaluator, kubernetes: KubernetesModel,
           selectors: Optional[Mapping[str, Any]] = None, semantics: str = KUBERNETES) -> "Explainer":
        """Both sides as their owner keeps them (introspect's, over the live DB)."""
        explainer = cls.__new__(cls)
        explainer._use(contrail, kubernetes, selectors, semantics)
        return explainer

    def _use(self, contrail: ContrailEvaluator, kubernetes: KubernetesModel,
             selectors: Optional[Mapping[str, Any]], semantics: str) -> None:
        self.semantics = semantics
        self.contrail = contrail
        self.cluster = self.contrail.application_tag.partition("=")[2]
        self.kubernetes = kubernetes
        self.selectors: Mapping[str, Any] = selectors or {}

    def resolve(self, text: Any, role: str) -> FlowEnd:
        """`NS/POD` or an IP address; an IP that is a pod's IP is that pod."""
        text = str(text or "").strip()
        if "/" in text:
            namespace, _, name = text.partition("/")
            # A namespace is a DNS label: no dots or colons, so this is cheap and unambiguous.
            if ("." in namespace or ":" in namespace) and _is_network(text):
                raise ExplainError(f"{role} {text!r}: give one address, not a network")
            if not namespace or not name or "/" in name:
                raise ExplainError(f"{role} {text!r}: expected NS/POD or an IP address")
            pod = self.kubernetes.pod(namespace, name)
            if pod is None:
                raise ExplainError(f"{role} {text!r}: no such pod")
        else:
            try:
                ip = ipaddress.ip_address(text)
            except ValueError:
                raise ExplainError(f"{role} {text!r}: expected NS/POD or an IP address") from None
            owners = self.kubernetes.pods_with_ip(ip)
            if len(owners) > 1:
                raise ExplainError(f"{role} {text}: the IP of several pods "
                                   f"({', '.join(sorted(p.key for p in owners))}); name the pod")
            if not owners:
                return FlowEnd(Endpoint(None, ip), Workload(ip, frozenset()), False)
            pod = owners[0]
        workload = self.contrail.workload(pod.namespace, pod.name)
        if workload is None:
            return FlowEnd(Endpoint(pod, pod.ip), Workload(pod.ip, frozenset()), False)
        return FlowEnd(Endpoint(pod, pod.ip), workload, True)

    def explain(self, src: Any, dst: Any, port: Any, protocol: Any) -> Dict[str, Any]:
        """Explain the flow src -> dst (`NS/POD` or IP) to `protocol` `port`; raises ExplainError."""
        protocol_name = parse_protocol(protocol)
        number = parse_port(port)
        source, destination = self.resolve(src, "from"), self.resolve(dst, "to")
        decision = self.contrail.evaluate(source.workload, destination.workload, number,
                                          protocol_name)
        verdict = self.kubernetes.verdict(source.endpoint, destination.endpoint, number,
                                          protocol_name.upper())
        deviation, policies = _deviation(decision, verdict, self.semantics)
        steps = trace(self.kubernetes, source.endpoint, destination.endpoint, number,
                      protocol_name.upper(), self.order_key)
        return {
            "from": source.to_dict(),
            "to": destination.to_dict(),
            "port": number,
            "protocol": protocol_name,
            "allowed": decision.allowed,
            "kubernetes_allowed": verdict.allowed,
            "under_aps": decision.under_aps,
            "rule": decision.rule,
            "rule_fq_name": list(decision.rule_fq_name) if decision.rule_fq_name else None,
            "policy": decision.policy,
            "action": decision.action,
            "logged": decision.logged,
            "stands_for": stands_for(decision.rule, decision.policy, verdict, self.cluster),
            "semantics": self.semantics,
            "deviation": deviation,
            "policies": policies,
            "kubernetes": {"egress": verdict.egress.to_dict(),
                           "ingress": verdict.ingress.to_dict()},
            "reason": _reason(decision, verdict, deviation, self.contrail.application_tag),
            "trace": [step.to_dict() for step in steps],
            # Policies of either end's namespace, and ClusterNetworkPolicies, that select nothing
            # because they are invalid.
            "rejected_policies": sorted({name for end in (source, destination) if end.endpoint.pod
                                         for name in self.kubernetes.rejected_whole(
                                             end.endpoint.pod.namespace)}
                                        | set(self.kubernetes.cluster_rejected_whole())),
            "selectors": self._decoded(source.workload.tags | destination.workload.tags),
        }

    def _decoded(self, tags: Any) -> Dict[str, Dict[str, Any]]:
        """What the selector and isolation tags among `tags` stand for."""
        found = decode_tags(sorted(tags), self.selectors)
        for tag, text in isolation_tags(self.cluster).items():
            if tag in tags:
                found[tag] = {"selector": None, "text": text}
        return dict(sorted(found.items()))

    def order_key(self, policy: str) -> Tuple[Any, str]:
        """Sort key of a NetworkPolicy ("ns/name") in the APS evaluation order."""
        return (self.contrail.network_policy_order(policy), policy)


def _is_network(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


def _deviation(decision: Decision, verdict: Verdict,
               semantics: str) -> Tuple[Optional[str], List[str]]:
    if decision.allowed == verdict.allowed:
        return None, []
    involved = cluster_wide_policies(verdict) if semantics == CLUSTER_WIDE else None
    if decision.allowed and involved is not None:
        return CLUSTER_WIDE, involved
    return MISMATCH, sorted({name for side in (verdict.egress, verdict.ingress)
                             for name in list(side.isolating) + deciders(side)})


def _reason(decision: Decision, verdict: Verdict, deviation: Optional[str],
            application_tag: str) -> str:
    if not decision.under_aps:
        contrail = f"neither end carries {application_tag}, so the flow is not under the APS"
    elif decision.rule is None:
        contrail = "no rule of the APS matched, so the flow is dropped"
    else:
        contrail = (f"the first matching rule is {decision.rule} in policy {decision.policy} "
                    f"({decision.action})")
    sides = _cluster_wide_sides(verdict)
    if deviation == CLUSTER_WIDE and sides is not None:
        allowing_side, allowing, dropping_side, dropping = sides
        return (f"{contrail}; Kubernetes would drop it: {allows_words(allowing)} at "
                f"{allowing_side}, but {dropping_side} {drops_words(dropping)}; under "
                f"policy_semantics cluster-wide Contrail honours an allowing NetworkPolicy "
                f"cluster-wide (kubernetes semantics would drop it)")
    if deviation == MISMATCH:
        return (f"{contrail}; Kubernetes would {'allow' if verdict.allowed else 'drop'} it: "
                f"the translation disagrees with the NetworkPolicies and ClusterNetworkPolicies "
                f"(a bug)")
    blocked = [f"{name} {drops_words(side)}"
               for name, side in (("the source's egress", verdict.egress),
                                  ("the destination's ingress", verdict.ingress))
               if not side.allowed]
    if blocked and not decision.allowed:
        return f"{contrail}; {'; '.join(blocked)} (the trace says why, block by block)"
    return contrail


def explain(translation: Mapping[str, Any], manifests: ManifestSet, src: Any, dst: Any,
            port: Any, protocol: Any, cluster_name: Optional[str] = None,
            selectors: Optional[Mapping[str, Any]] = None,
            semantics: str = KUBERNETES) -> Dict[str, Any]:
    """One-shot explain; builds the indexes each call (keep an `Explainer` for repeated flows)."""
    return Explainer(translation, manifests, cluster_name, selectors, semantics).explain(
        src, dst, port, protocol)


__all__ = ["CLUSTER_WIDE", "KUBERNETES", "MISMATCH", "ExplainError", "Explainer",
           "cluster_wide_policies", "deciders", "explain", "parse_port", "parse_protocol"]
