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

from typing import Any, Dict, List, Optional, Sequence

import pytest

from tests.conformance.cases import ALL_PROBES, CASES, Case, Probe
from tests.conformance.checks import (ENDS, LEGEND, PairRun, PerPolicy, endpoint, model_of, run_pairs,
                                truth_table)
from tests.conformance.cluster import ManifestSet, xyz_cluster
from kube_manager.explain.explainer import CLUSTER_WIDE


def manifests(case: Case, policies: Optional[Sequence[Dict[str, Any]]] = None) -> ManifestSet:
    cluster = xyz_cluster(case.policies if policies is None else policies)
    for ns in cluster.objects["Namespace"]:
        name = ns["metadata"]["name"]
        if name in case.namespace_labels:
            ns["metadata"]["labels"] = dict(case.namespace_labels[name])
    for pod in cluster.objects["Pod"]:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        if key in case.pod_labels:
            pod["metadata"]["labels"] = dict(case.pod_labels[key])
    return cluster


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

@pytest.fixture(scope="module")
def translate():
    from kube_manager.translator import translate as translate_function
    return translate_function


def run_case(case: Case, translate, probes: Sequence[Probe] = ALL_PROBES, semantics: str = "cluster-wide") -> PairRun:
    per_policy = PerPolicy.build(case.policies, lambda policies: manifests(case, policies))
    return run_pairs(manifests(case), per_policy, translate, probes, semantics)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_explain_agrees_with_kubernetes_except_cluster_wide(case: Case, translate):
    run = run_case(case, translate)
    assert run.translation["errors"] == [], run.translation["errors"]
    for src, dst, probe in case.cluster_wide:
        if run.results[(src, dst, probe)]["deviation"] != CLUSTER_WIDE:
            run.failures.append(f"{src} -> {dst} {probe}: expected a cluster-wide deviation")
    directions = {d for p in case.policies for d in p["spec"].get("policyTypes") or ["Ingress"]}
    deviations = [k for k, r in run.results.items() if r["deviation"] == CLUSTER_WIDE]
    if len(directions) < 2 and deviations:
        run.failures.append(f"only {directions} isolation, yet deviations at {deviations[:3]}")
    if run.failures:
        pytest.fail(run.report(case.name), pytrace=False)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_under_kubernetes_semantics_explain_agrees_with_kubernetes_everywhere(case: Case, translate):
    run = run_case(case, translate, semantics="kubernetes")
    assert run.translation["errors"] == [], run.translation["errors"]
    assert not [k for k, r in run.results.items() if r["deviation"] is not None]
    if run.failures:
        pytest.fail(run.report(case.name), pytrace=False)


def test_the_suite_is_large_and_expects_deviations():
    """Guards the suite itself: enough cases, several of which must show cluster-wide marks."""
    assert len(CASES) >= 25
    assert sum(1 for case in CASES if case.cluster_wide) >= 3
