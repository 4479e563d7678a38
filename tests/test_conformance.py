"""Conformance on the model of the Kubernetes e2e network-policy suite (test/e2e/network/netpol).

For each case of tests/conformance/cases.py, on namespaces x, y, z with pods a, b, c (plus one
outside address):
1. the Kubernetes reference model reproduces upstream's expected truth table;
2. the manifests are translated, and for EVERY ordered pair and every probe (ports 80, 81, 82 over
   TCP, UDP, SCTP) `explain` agrees with Kubernetes, except the pairs it marks `cluster-wide`;
3. a pair is marked `cluster-wide` exactly when, checked here policy by policy, a policy of one end
   allows the flow while the other end is isolated and no policy of it allows the flow (SPEC 6),
   and the deciding Contrail rule then belongs to an allowing policy;
4. every other decision comes from the right place: a pass rule of an allowing policy, the
   `<cluster>-allowall` policy when neither end is isolated, or a deny of `<cluster>-denyall`.
A failure prints the truth table of each probe that went wrong.
"""
from __future__ import annotations

import copy
import ipaddress
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import pytest

from conformance.cases import ALL_PROBES, CASES, Case, Probe
from conformance.cluster import OUTSIDE_IP, ManifestSet, all_pods, xyz_cluster
from kube_manager.translator.explain import CLUSTER_WIDE, Explainer
from kube_manager.translator.k8s_semantics import Endpoint, KubernetesModel

CLUSTER = "k8s"
ENDS = all_pods() + ["out"]


def address(end: str) -> str:
    return OUTSIDE_IP if end == "out" else end


def manifests(case: Case, policies: Optional[Sequence[Dict[str, Any]]] = None) -> ManifestSet:
    cluster = xyz_cluster(case.policies if policies is None else policies)
    for ns in cluster.namespaces:
        name = ns["metadata"]["name"]
        if name in case.namespace_labels:
            ns["metadata"]["labels"] = dict(case.namespace_labels[name])
    for pod in cluster.pods:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        if key in case.pod_labels:
            pod["metadata"]["labels"] = dict(case.pod_labels[key])
    return cluster


def model_of(cluster: ManifestSet) -> KubernetesModel:
    return KubernetesModel.build(cluster.namespaces, cluster.pods, cluster.network_policies)


def endpoint(model: KubernetesModel, end: str) -> Endpoint:
    if end == "out":
        return Endpoint(None, ipaddress.ip_address(OUTSIDE_IP))
    pod = model.pods[tuple(end.split("/"))]
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


def case_id(case: Case) -> str:
    return case.name[:70]


# ---- 1. the reference model reproduces upstream's truth tables ------------------------------

@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_reference_model_reproduces_upstream_truth_table(case: Case):
    model = model_of(manifests(case))
    failures: List[str] = []
    for expectation in case.expectations:
        for port, protocol in expectation.probes:
            cells = {}
            for src in ENDS:
                for dst in ENDS:
                    if src == dst == "out":
                        continue
                    got = model.verdict(endpoint(model, src), endpoint(model, dst), port,
                                        protocol).allowed
                    want = expectation.expected(src, dst)
                    cells[(src, dst)] = ("." if got else "x") if got == want else "!"
                    if got != want:
                        failures.append(f"{src} -> {dst} {port}/{protocol}: model says {got}, "
                                        f"upstream expects {want}")
            if "!" in cells.values():
                failures.append(truth_table(f"{port}/{protocol}", cells))
    assert not failures, "\n".join([case.name, LEGEND] + failures)


# ---- 2-4. explain against Kubernetes, pair by pair ------------------------------------------

@dataclass
class PerPolicy:
    """One single-policy model per NetworkPolicy of a case: who isolates and who allows, found by
    asking each policy alone (NetworkPolicies are additive), independently of explain."""

    models: Dict[str, KubernetesModel]

    @classmethod
    def build(cls, case: Case) -> "PerPolicy":
        return cls({f"{p['metadata']['namespace']}/{p['metadata']['name']}": model_of(manifests(case, [p]))
                    for p in case.policies})

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


def check_pair(result: Dict[str, Any], sides, owners: Dict[str, str]) -> Optional[str]:
    """Why this explain result is wrong, or None."""
    out_iso, out_ok, in_iso, in_ok = sides
    cluster_wide = bool((out_ok and in_iso and not in_ok) or (in_ok and out_iso and not out_ok))
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
    if result["allowed"]:
        if out_ok or in_ok:
            if owners.get(decider) not in out_ok | in_ok:
                return f"allowed by {result['rule']} of {decider}, not of {sorted(out_ok | in_ok)}"
        elif decider != f"{CLUSTER}-allowall":
            return f"neither end isolated but decided by {result['rule']} of {decider}"
    elif decider != f"{CLUSTER}-denyall" or result["action"] != "deny":
        return f"dropped by {result['rule']} of {decider}, not by a {CLUSTER}-denyall rule"
    return None


@pytest.fixture(scope="module")
def translate():
    from kube_manager.translator import translate as translate_function
    return translate_function


def run_case(case: Case, translate, probes: Sequence[Probe] = ALL_PROBES):
    cluster = manifests(case)
    translation = translate(copy.deepcopy(cluster.namespaces), copy.deepcopy(cluster.pods),
                            copy.deepcopy(cluster.network_policies), cluster_name=CLUSTER).to_dict()
    explainer = Explainer(translation, cluster)
    per_policy = PerPolicy.build(case)
    owners = policy_owners(translation)
    results: Dict[Tuple[str, str, Probe], Dict[str, Any]] = {}
    failures: List[str] = []
    tables: Dict[Probe, Dict[Tuple[str, str], str]] = {}
    for probe in probes:
        port, protocol = probe
        cells = tables.setdefault(probe, {})
        for src in ENDS:
            for dst in ENDS:
                if src == dst == "out":
                    continue
                result = explainer.explain(address(src), address(dst), port, protocol)
                results[(src, dst, probe)] = result
                problem = check_pair(result, per_policy.sides(src, dst, port, protocol), owners)
                if problem:
                    failures.append(f"{src} -> {dst} {port}/{protocol}: {problem}")
                    cells[(src, dst)] = "!"
                else:
                    cells[(src, dst)] = ("C" if result["deviation"] == CLUSTER_WIDE
                                         else "." if result["allowed"] else "x")
    return translation, results, failures, tables


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_explain_agrees_with_kubernetes_except_cluster_wide(case: Case, translate):
    translation, results, failures, tables = run_case(case, translate)
    assert translation["errors"] == [], translation["errors"]
    for src, dst, probe in case.cluster_wide:
        if results[(src, dst, probe)]["deviation"] != CLUSTER_WIDE:
            failures.append(f"{src} -> {dst} {probe}: expected a cluster-wide deviation")
    directions = {d for p in case.policies for d in p["spec"].get("policyTypes") or ["Ingress"]}
    deviations = [k for k, r in results.items() if r["deviation"] == CLUSTER_WIDE]
    if len(directions) < 2 and deviations:
        failures.append(f"only {directions} isolation, yet deviations at {deviations[:3]}")
    if failures:
        broken = [truth_table(f"{port}/{protocol}", cells) for (port, protocol), cells in tables.items()
                  if "!" in cells.values()]
        pytest.fail("\n".join([case.name, LEGEND] + failures[:40] + broken), pytrace=False)


def test_the_suite_is_large_and_exercises_both_outcomes(translate):
    """Guards the suite itself: enough cases and pairs, and cluster-wide marks really occur."""
    assert len(CASES) >= 25
    marked: Set[str] = set()
    for case in CASES:
        if case.cluster_wide:
            _, results, _, _ = run_case(case, translate, [case.cluster_wide[0][2]])
            if any(r["deviation"] == CLUSTER_WIDE for r in results.values()):
                marked.add(case.name)
    assert len(marked) >= 3, marked
