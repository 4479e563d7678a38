"""The Kubernetes reference verdict for one flow, computed straight from the manifests.

This is the oracle `explain` and the conformance tests compare the Contrail evaluation against, so it
deliberately shares no code with the translator: it reads Namespace, Pod, NetworkPolicy and
ClusterNetworkPolicy dicts (as the API server returns them) and applies the APIs' semantics directly.
Per direction (egress at the source, ingress at the destination), SPEC 13:

1. the Admin tier: the ClusterNetworkPolicies of tier Admin whose subject selects the pod, by
   priority (lower first; equal priorities by name), rules in order; the first rule matching the
   peer and the port decides with Accept or Deny, or Passes to the next tier;
2. the NetworkPolicy tier: when NetworkPolicies isolate the pod for that direction, the flow is
   allowed exactly when one of them allows it (k8s_netpol);
3. the Baseline tier, as the Admin tier (a Pass goes on to the default);
4. default allow.

A flow is allowed when both directions allow it. A policy annotated `contrail-kube-manager/staged:
"true"` is not enforced (SPEC 17) and so is not part of the model; give it without the annotation to
see the verdict with it enforced. The parsers live beside this module, one concern
each: label selectors (k8s_selectors), pods (k8s_pods), NetworkPolicies (k8s_netpol) and
ClusterNetworkPolicies (k8s_cnp); the names other modules use are re-exported here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from .k8s_cnp import (ACCEPT, ADMIN, BASELINE, PASS, ClusterPolicy, TierCandidates, TierDecision,
                      compile_cluster_policy, tier_candidates)
from .k8s_netpol import (EGRESS, INGRESS, PROTOCOLS, Peer, Policy, PortRule, Rejection, RuleBlock,
                         compile_policy)
from .k8s_pods import Endpoint, Pod, parse_ip, parse_pod
from .k8s_selectors import (NAMESPACE_NAME_LABEL, IPAddress, Invalid, LabelRequirement, Selector,
                            compile_selector, labels_of, object_or_empty)

NETWORK_POLICY_TIER = "NetworkPolicy"
DEFAULT_TIER = "default"


STAGED_ANNOTATION = "contrail-kube-manager/staged"


def is_staged(manifest: Mapping[str, Any]) -> bool:
    """Staged, not enforced: exactly the value "true" (any other value is enforced, SPEC 17)."""
    annotations = object_or_empty(object_or_empty(manifest.get("metadata")).get("annotations"))
    return annotations.get(STAGED_ANNOTATION) == "true"


@dataclass(frozen=True)
class SideVerdict:
    """One direction at one end: the Admin tier's decision (None when no rule matched), which
    NetworkPolicies isolate it and which of them allow the flow, and the Baseline tier's decision.
    `tier` says which of them decides, `allowed` what it decides."""

    isolated: bool
    isolating: Tuple[str, ...] = ()
    allowing: Tuple[str, ...] = ()
    admin: Optional[TierDecision] = None
    baseline: Optional[TierDecision] = None

    @property
    def tier(self) -> str:
        """The deciding tier: Admin, NetworkPolicy, Baseline or default."""
        if self.admin is not None and self.admin.action != PASS:
            return ADMIN
        if self.isolated:
            return NETWORK_POLICY_TIER
        if self.baseline is not None and self.baseline.action != PASS:
            return BASELINE
        return DEFAULT_TIER

    @property
    def decision(self) -> Optional[TierDecision]:
        """The deciding ClusterNetworkPolicy rule, when a tier of them decides."""
        tier = self.tier
        return self.admin if tier == ADMIN else self.baseline if tier == BASELINE else None

    @property
    def allowed(self) -> bool:
        tier = self.tier
        if tier == NETWORK_POLICY_TIER:
            return bool(self.allowing)
        decision = self.decision
        return decision is None or decision.action == ACCEPT

    def to_dict(self) -> Dict[str, Any]:
        """`tier` decides, with `rule` (the deciding ClusterNetworkPolicy rule, or None); the
        NetworkPolicy tier's view (`isolated`, `policies`, `allowed_by`) is there even when a
        ClusterNetworkPolicy tier decides first."""
        decision = self.decision
        return {"isolated": self.isolated, "allowed": self.allowed,
                "policies": list(self.isolating), "allowed_by": list(self.allowing),
                "tier": self.tier, "rule": decision.to_dict() if decision is not None else None}


@dataclass(frozen=True)
class PeerBlocks:
    """One side of a pod pair with the ports left open: each NetworkPolicy isolating that direction
    of the pod (by key) and its blocks whose peers match the other end, and the Admin and Baseline
    tier rules whose peers match it. A verdict for any port is then a check of their ports
    (`side`), so a caller asking many ports of one pair (the what-if) matches selectors once."""

    policies: Tuple[Tuple[str, Tuple[RuleBlock, ...]], ...] = ()
    admin: TierCandidates = TierCandidates()
    baseline: TierCandidates = TierCandidates()

    def side(self, destination: Endpoint, port: int, protocol: str) -> SideVerdict:
        allowing = [key for key, blocks in self.policies
                    if any(b.port_matches(destination, port, protocol) for b in blocks)]
        return SideVerdict(bool(self.policies), tuple(sorted(key for key, _ in self.policies)),
                           tuple(sorted(allowing)), self.admin.decide(destination, port, protocol),
                           self.baseline.decide(destination, port, protocol))


@dataclass(frozen=True)
class Verdict:
    egress: SideVerdict   # at the source
    ingress: SideVerdict  # at the destination

    @property
    def allowed(self) -> bool:
        return self.egress.allowed and self.ingress.allowed


def compile_namespace(namespace: str, manifests: Iterable[Mapping[str, Any]]) -> Tuple[List[Policy], List[Rejection]]:
    """The valid NetworkPolicies of a namespace (those rejected whole left out), and every
    rejected part of them."""
    compiled: List[Policy] = []
    rejected: List[Rejection] = []
    shared: Dict[Any, Any] = {}
    for manifest in manifests:
        policy, reasons = compile_policy(manifest, shared)
        name = str((manifest.get("metadata") or {}).get("name") or "")
        rejected.extend(Rejection(namespace, name, reason) for reason in reasons)
        if policy is not None:
            compiled.append(policy)
    return compiled, rejected


class KubernetesModel:
    """Namespaces, pods and policies, for repeated verdicts.

    Building only groups the manifests: a verdict needs the policies of two namespaces and the two
    pods involved, so pods and policies are compiled when first asked for (and kept), and the
    index of pods by IP is made at the first lookup by address. On a large live cluster an
    explain then costs little more than the two namespaces it touches.
    """

    def __init__(self) -> None:
        self.namespace_labels: Dict[str, Dict[str, str]] = {}
        self._pod_manifests: Dict[Tuple[str, str], Mapping[str, Any]] = {}
        self._pods: Dict[Tuple[str, str], Optional[Pod]] = {}
        self._pods_by_ip: Optional[Dict[IPAddress, List[Tuple[str, str]]]] = None
        self._policy_manifests: Dict[str, List[Mapping[str, Any]]] = {}
        self._policies: Dict[str, List[Policy]] = {}
        self._rejections: Dict[str, List[Rejection]] = {}
        self._cluster_manifests: List[Mapping[str, Any]] = []
        self._tiers: Optional[Dict[str, List[ClusterPolicy]]] = None
        self._cluster_rejections: List[Rejection] = []
        self._cluster_rejected_whole: List[str] = []

    @classmethod
    def of(cls, objects: Mapping[str, Iterable[Mapping[str, Any]]]) -> "KubernetesModel":
        """The model of manifests by kind (as `translate()` takes them)."""
        return cls.build(objects.get("Namespace", ()), objects.get("Pod", ()), objects.get("NetworkPolicy", ()),
                         objects.get("ClusterNetworkPolicy", ()))

    @classmethod
    def build(cls, namespaces: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
              network_policies: Iterable[Mapping[str, Any]],
              cluster_network_policies: Iterable[Mapping[str, Any]] = ()) -> "KubernetesModel":
        model = cls()
        model._cluster_manifests = [m for m in cluster_network_policies if isinstance(m, dict) and not is_staged(m)]
        for manifest in namespaces:
            metadata = object_or_empty(object_or_empty(manifest).get("metadata"))
            name = metadata.get("name")
            if isinstance(name, str) and name:
                model.namespace_labels[name] = {**labels_of(metadata), NAMESPACE_NAME_LABEL: name}
        for manifest in pods:
            metadata = object_or_empty(object_or_empty(manifest).get("metadata"))
            name, namespace = metadata.get("name"), metadata.get("namespace") or "default"
            if isinstance(name, str) and name and isinstance(namespace, str):
                model._pod_manifests[(namespace, name)] = manifest
                model._known_namespace(namespace)
        for manifest in network_policies:
            namespace = object_or_empty(object_or_empty(manifest).get("metadata")).get("namespace") or "default"
            if not isinstance(namespace, str) or not isinstance(manifest, dict):
                continue  # the API server would refuse it; the translator rejects it whole
            if is_staged(manifest):
                continue
            model._policy_manifests.setdefault(namespace, []).append(manifest)
            model._known_namespace(namespace)
        return model

    @property
    def compiled(self) -> int:
        """How much has been compiled lazily so far (grows, never shrinks): a caller keeping the
        model sees from it that a question added to what lives as long as the model."""
        return (len(self._policies) + len(self._pods) + (self._pods_by_ip is not None)
                + (self._tiers is not None))

    def _known_namespace(self, name: str) -> None:
        self.namespace_labels.setdefault(name, {NAMESPACE_NAME_LABEL: name})

    # ---- the manifests: what a model kept over live records (introspect's) reads instead ----

    def _pod_manifest(self, key: Tuple[str, str]) -> Optional[Mapping[str, Any]]:
        return self._pod_manifests.get(key)

    def _pod_addresses(self) -> Iterable[Tuple[Tuple[str, str], Optional[IPAddress]]]:
        """Every pod's key and IP (None when it has none, or an unreadable one)."""
        return ((key, parse_ip(object_or_empty(manifest.get("status")).get("podIP")))
                for key, manifest in self._pod_manifests.items())

    def _namespace_policies(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        """The enforced (not staged) NetworkPolicies of a namespace."""
        return self._policy_manifests.get(namespace, ())

    def _policy_namespaces(self) -> Iterable[str]:
        return self._policy_manifests

    def _cluster_policy_manifests(self) -> Iterable[Mapping[str, Any]]:
        """The enforced (not staged) ClusterNetworkPolicies."""
        return self._cluster_manifests

    def pod(self, namespace: str, name: str) -> Optional[Pod]:
        key = (namespace, name)
        if key not in self._pods:
            manifest = self._pod_manifest(key)
            self._pods[key] = parse_pod(manifest) if manifest is not None else None
        return self._pods[key]

    def reuse(self, other: "KubernetesModel", changed_namespace: Optional[str]) -> "KubernetesModel":
        """Take over what `other`, a model of the same namespace and pod manifests, has compiled,
        but for the policies that differ: those of `changed_namespace`, or when it is None the
        ClusterNetworkPolicies (a model with one policy more, compiling only its own kind and
        place). Returns this model."""
        self._pods.update(other._pods)
        self._pods_by_ip = other._pods_by_ip
        for namespace, compiled in other._policies.items():
            if namespace != changed_namespace:
                self._policies[namespace], self._rejections[namespace] = compiled, other._rejections[namespace]
        if changed_namespace is not None and other._tiers is not None:
            self._tiers = other._tiers
            self._cluster_rejections = other._cluster_rejections
            self._cluster_rejected_whole = other._cluster_rejected_whole
        return self

    def pods_with_ip(self, ip: IPAddress) -> List[Pod]:
        if self._pods_by_ip is None:
            self._pods_by_ip = {}
            for key, address in self._pod_addresses():
                if address is not None:
                    self._pods_by_ip.setdefault(address, []).append(key)
        return [p for p in (self.pod(*key) for key in self._pods_by_ip.get(ip, ())) if p]

    def policies(self, namespace: str) -> List[Policy]:
        """The valid policies of a namespace (those rejected whole are left out)."""
        if namespace not in self._policies:
            self._policies[namespace], self._rejections[namespace] = compile_namespace(
                namespace, self._namespace_policies(namespace))
        return self._policies[namespace]

    def rejected_whole(self, namespace: str) -> List[str]:
        """"ns/name" of the namespace's policies rejected whole (an invalid own podSelector or
        policyTypes): they select nothing, though their author meant them to."""
        valid = {p.name for p in self.policies(namespace)}
        return sorted({f"{namespace}/{r.name}" for r in self._rejections[namespace]
                       if r.name not in valid})

    def tier(self, tier: str) -> List[ClusterPolicy]:
        """The valid ClusterNetworkPolicies of a tier (Admin or Baseline) in evaluation order:
        priority, then name."""
        if self._tiers is None:
            self._tiers = {ADMIN: [], BASELINE: []}
            for manifest in self._cluster_policy_manifests():
                policy, reasons = compile_cluster_policy(manifest)
                name = str(object_or_empty(manifest.get("metadata")).get("name") or "")
                self._cluster_rejections.extend(Rejection("", name, r) for r in reasons)
                if policy is not None:
                    self._tiers[policy.tier].append(policy)
                else:
                    self._cluster_rejected_whole.append(name)
            for policies in self._tiers.values():
                policies.sort(key=lambda p: p.order)
        return self._tiers[tier]

    def cluster_rejected_whole(self) -> List[str]:
        """Names of the ClusterNetworkPolicies rejected whole (an invalid tier, priority or
        subject): they select nothing, though their author meant them to select some pod."""
        self.tier(ADMIN)
        return sorted(self._cluster_rejected_whole)

    def rejections(self) -> List[Rejection]:
        """Every rejected (or, for a ClusterNetworkPolicy, fail-closed) part of every policy
        (compiles them all); ClusterNetworkPolicies first, with namespace ""."""
        for namespace in sorted(self._policy_namespaces()):
            self.policies(namespace)
        self.tier(ADMIN)
        return self._cluster_rejections + [r for namespace in sorted(self._rejections)
                                           for r in self._rejections[namespace]]

    def peer_blocks(self, pod: Optional[Pod], direction: str, peer: Endpoint) -> PeerBlocks:
        """`direction` of `pod` against the other end `peer`, ports aside."""
        if pod is None:
            return PeerBlocks()  # outside addresses have no policies
        found = []
        for policy in self.policies(pod.namespace):
            if direction not in policy.directions or not policy.selector.matches(pod.labels):
                continue
            found.append((policy.key, tuple(b for b in policy.directions[direction]
                                            if b.peer_matches(peer, self.namespace_labels))))
        labels = self.namespace_labels
        return PeerBlocks(tuple(found),
                          tier_candidates(self.tier(ADMIN), pod, direction, peer, labels),
                          tier_candidates(self.tier(BASELINE), pod, direction, peer, labels))

    def pair(self, src: Endpoint, dst: Endpoint) -> Tuple[PeerBlocks, PeerBlocks]:
        """(egress at the source, ingress at the destination) of src -> dst, ports aside."""
        return self.peer_blocks(src.pod, EGRESS, dst), self.peer_blocks(dst.pod, INGRESS, src)

    def verdict(self, src: Endpoint, dst: Endpoint, port: int, protocol: str) -> Verdict:
        """The Kubernetes verdict, tiers included, for a new flow src -> dst on `protocol` (TCP/UDP/SCTP) `port`."""
        egress, ingress = self.pair(src, dst)
        return Verdict(egress=egress.side(dst, port, protocol),
                       ingress=ingress.side(dst, port, protocol))


__all__ = ["DEFAULT_TIER", "EGRESS", "INGRESS", "is_staged", "NAMESPACE_NAME_LABEL", "NETWORK_POLICY_TIER",
           "PROTOCOLS", "Endpoint", "Invalid", "KubernetesModel", "Peer", "PeerBlocks", "Pod",
           "Policy", "PortRule", "Rejection", "LabelRequirement", "RuleBlock", "Selector", "SideVerdict",
           "Verdict", "compile_policy", "compile_selector"]
