"""SPEC 13's subtraction is exact: on random Admin and Baseline ClusterNetworkPolicies, the emitted
objects, evaluated as SPEC 6 says, decide every flow of a small cluster (pod to pod, pod to and from
outside addresses, TCP, UDP and SCTP ports, named ports) exactly as Kubernetes does.

All the policies of one example have rules of one direction only, so the other end never decides
and Contrail's single evaluation (SPEC 6, `cluster-wide`) cannot differ from Kubernetes' two: any
disagreement is a wrong rule. The reference is tests/support/cnp_support.py, written from the API's text.
"""
from __future__ import annotations

import ipaddress

import pytest
from hypothesis import HealthCheck, given, settings

from tests.support.cnp_support import PROBES, cluster, ends, kubernetes_allows, one_direction_policies
from kube_manager.explain.flow import ContrailEvaluator, Workload
from kube_manager.translator import translate
from tests.support.schema_oracle import assert_translation_valid


def _workload(evaluator: ContrailEvaluator, end) -> Workload:
    key, ip = end
    if key is None:
        return Workload(ipaddress.ip_address(ip), frozenset())
    found = evaluator.workload(*key)
    assert found is not None
    return found


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one_direction_policies())
def test_every_flow_is_decided_as_kubernetes_decides_it(case):
    direction, policies = case
    namespaces, pods = cluster()
    result = translate({"Namespace": namespaces, "Pod": pods, "ClusterNetworkPolicy": policies}).to_dict()
    assert all("resolves on no destination pod" in e["reason"] for e in result["errors"]), result["errors"]
    evaluator = ContrailEvaluator(result)
    wrong = []
    for source in ends():
        for destination in ends():
            if source == destination or (source[0] is None and destination[0] is None):
                continue
            src, dst = _workload(evaluator, source), _workload(evaluator, destination)
            for protocol, port in PROBES:
                expected = kubernetes_allows(policies, direction, source, destination, protocol, port)
                decision = evaluator.evaluate(src, dst, port, protocol)
                if decision.allowed != expected:
                    wrong.append((source, destination, protocol, port, expected, decision.rule))
    assert not wrong, wrong[:5]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one_direction_policies())
def test_every_emitted_object_is_accepted_by_the_official_schema(case):
    _, policies = case
    namespaces, pods = cluster()
    assert_translation_valid(translate({"Namespace": namespaces,
                                        "Pod": pods,
                                        "ClusterNetworkPolicy": policies}).to_dict())
