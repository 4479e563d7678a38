"""Pair-by-pair checks of `explain` against Kubernetes, shared by the conformance and the random
policy tests. Nothing here trusts explain's own deviation logic: who isolates and who allows is found
by asking each NetworkPolicy alone (policies are additive), and the deciding Contrail rule is traced
back to its NetworkPolicy through the firewall policy's ownership annotations."""
from __future__ import annotations

import copy
import ipaddress
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from tests.conformance.cases import Probe
from tests.conformance.cluster import OUTSIDE_IP, ManifestSet, all_pods
from kube_manager.explain.explainer import CLUSTER_WIDE, Explainer
from kube_manager.explain.k8s_semantics import Endpoint, KubernetesModel

CLUSTER = "k8s"
ENDS = all_pods() + ["out"]


def address(end: str) -> str:
    return OUTSIDE_IP if end == "out" else end


def model_of(cluster: ManifestSet) -> KubernetesModel:
    return KubernetesModel.build(cluster.objects["Namespace"], cluster.objects["Pod"], cluster.objects["NetworkPolicy"])


def endpoint(model: KubernetesModel, end: str) -> Endpoint:
    if end == "out":
        return Endpoint(None, ipaddress.ip_address(OUTSIDE_IP))
    pod = model.pod(*end.split("/"))
    return Endpoint(pod, pod.ip)


def truth_table(title: str, cells: Dict[Tuple[str, str], str]) -> str:
    width = max(len(e) for e in ENDS)
    lines = [title, " " * width + " " + " ".join(e.rjust(width) for e in ENDS)]
    for src in ENDS:
        lines.append(src.rjust(width) + " " + " ".join(cells.get((src, dst), "").rjust(width)
                                                       for dst in ENDS))
    return "\n".join(lines)


LEGEND = ("legend: '.' both allow, 'x' both drop, 'C' cluster-wide, "
          "'!' wrong (see the list), blank: not probed")


@dataclass
class PerPolicy:
    """One single-policy model per NetworkPolicy of a case: who isolates and who allows, found by
    asking each policy alone (NetworkPolicies are additive), independently of explain."""

    models: Dict[str, KubernetesModel]

    @classmethod
    def build(cls, policies: Sequence[Dict[str, Any]],
              cluster_with: Callable[[List[Dict[str, Any]]], ManifestSet]) -> "PerPolicy":
        """`cluster_with([p])` is the case's cluster holding only policy p."""
        return cls({f"{p['metadata']['namespace']}/{p['metadata']['name']}": model_of(cluster_with([p]))
                    for p in policies})

    def sides(self, src: str, dst: str, port: int, protocol: str):
        """(egress isolating, egress allowing, ingress isolating, ingress allowing) as sets."""
        out_iso, out_ok, in_iso, in_ok = set(), set(), set(), set()
        for key, model in self.models.items():
            verdict = model.verdict(endpoint(model, src), endpoint(model, dst), port, protocol)
            if verdict.egress.isolated:
                out_iso.add(key)
                if verdict.egress.allowed:
                    out_ok.add(key)
            if verdict.ingress.isolated:
                in_iso.add(key)
                if verdict.ingress.allowed:
                    in_ok.add(key)
        return out_iso, out_ok, in_iso, in_ok


def policy_owners(translation: Dict[str, Any]) -> Dict[str, str]:
    """Firewall policy name -> "ns/name" of its NetworkPolicy, from the ownership annotations."""
    owners = {}
    for fp in translation["firewall_policies"]:
        pairs = {kv["key"]: kv["value"]
                 for kv in (fp.get("annotations") or {}).get("key_value_pair") or []}
        if pairs.get("namespace") and pairs.get("name"):
            owners[fp["fq_name"][-1]] = f"{pairs['namespace']}/{pairs['name']}"
    return owners


ISOLATION_POLICIES = {"pass": f"{CLUSTER}--isolation", "deny": f"{CLUSTER}--isolation-deny"}  # SPEC 14's


def check_pair(result: Dict[str, Any], sides, owners: Dict[str, str], semantics: str = "cluster-wide") -> Optional[str]:
    """Why this explain result is wrong, or None. Under `kubernetes` semantics there is no
    cluster-wide cell; a flow between two isolated ends is decided by the isolation block."""
    out_iso, out_ok, in_iso, in_ok = sides
    cluster_wide = semantics == "cluster-wide" and bool((out_ok and in_iso and not in_ok)
                                                        or (in_ok and out_iso and not out_ok))
    kubernetes = (not out_iso or bool(out_ok)) and (not in_iso or bool(in_ok))
    if result["kubernetes_allowed"] != kubernetes:
        return f"kubernetes_allowed {result['kubernetes_allowed']}, policy by policy {kubernetes}"
    if (result["deviation"] == CLUSTER_WIDE) != cluster_wide:
        return f"deviation {result['deviation']!r}, SPEC 6 condition holds: {cluster_wide}"
    if cluster_wide:
        allowing, isolating = (out_ok, in_iso) if out_ok and not in_ok else (in_ok, out_iso)
        if set(result["policies"]) != allowing | isolating:
            return f"policies {result['policies']}, expected {sorted(allowing | isolating)}"
    elif result["allowed"] != result["kubernetes_allowed"] or result["deviation"] is not None:
        return f"allowed {result['allowed']} but Kubernetes {result['kubernetes_allowed']}"
    decider = result["policy"]
    both_isolated = semantics == "kubernetes" and bool(out_iso and in_iso)
    if both_isolated:
        if decider != ISOLATION_POLICIES["pass" if result["allowed"] else "deny"]:
            return f"both ends isolated but decided by {result['rule']} of {decider}"
    elif result["allowed"]:
        if out_ok or in_ok:
            if owners.get(decider) not in out_ok | in_ok:
                return f"allowed by {result['rule']} of {decider}, not of {sorted(out_ok | in_ok)}"
        elif decider != f"{CLUSTER}-allowall":
            return f"neither end isolated but decided by {result['rule']} of {decider}"
    elif decider != f"{CLUSTER}-denyall" or result["action"] != "deny":
        return f"dropped by {result['rule']} of {decider}, not by a {CLUSTER}-denyall rule"
    return None


@dataclass
class PairRun:
    """Every explain result of one cluster, what was wrong with them, and the truth tables."""

    translation: Dict[str, Any]
    results: Dict[Tuple[str, str, Probe], Dict[str, Any]] = field(default_factory=dict)
    failures: List[str] = field(default_factory=list)
    tables: Dict[Probe, Dict[Tuple[str, str], str]] = field(default_factory=dict)

    def report(self, title: str, most: int = 40) -> str:
        broken = [truth_table(f"{port}/{protocol}", cells)
                  for (port, protocol), cells in self.tables.items() if "!" in cells.values()]
        return "\n".join([title, LEGEND] + self.failures[:most] + broken)


def run_pairs(cluster: ManifestSet, per_policy: PerPolicy, translate: Callable[..., Any],
              probes: Sequence[Probe], semantics: str = "cluster-wide") -> PairRun:
    """Translate `cluster`, explain every ordered pair of ENDS for every probe, check each."""
    translation = translate({"Namespace": copy.deepcopy(cluster.objects["Namespace"]),
                             "Pod": copy.deepcopy(cluster.objects["Pod"]),
                             "NetworkPolicy": copy.deepcopy(cluster.objects["NetworkPolicy"])}, cluster_name=CLUSTER, semantics=semantics).to_dict()
    explainer = Explainer(translation, cluster, semantics=semantics)
    owners = policy_owners(translation)
    run = PairRun(translation)
    for probe in probes:
        port, protocol = probe
        cells = run.tables.setdefault(probe, {})
        for src in ENDS:
            for dst in ENDS:
                if src == dst == "out":
                    continue
                result = explainer.explain(address(src), address(dst), port, protocol)
                run.results[(src, dst, probe)] = result
                problem = check_pair(result, per_policy.sides(src, dst, port, protocol), owners, semantics)
                if problem:
                    run.failures.append(f"{src} -> {dst} {port}/{protocol}: {problem}")
                    cells[(src, dst)] = "!"
                else:
                    cells[(src, dst)] = ("C" if result["deviation"] == CLUSTER_WIDE
                                         else "." if result["allowed"] else "x")
    return run
