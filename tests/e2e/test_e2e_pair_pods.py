"""SPEC 14 end to end: a real `contrail-kube-manager run` (the default `kubernetes` mode) against
the emulated API server and the embedded config API. A pair rule is written only while current
pods realise its ends: a pod arriving after the policies that let it be reached gets its flows,
and they go when it does. The flows are what the config API enforces (its objects and the VMIs'
tags, `enforced_flows`), compared with the independent Kubernetes model."""
from __future__ import annotations

from typing import Any, Dict, List, Set

from kube_manager.explain.k8s_semantics import Endpoint, KubernetesModel
from kube_manager.offline.manifests import Manifests
from tests.support.builders import namespace, pod, policy
from tests.support.e2e_support import Environment
from tests.support.enforced_flows import Flow, enforced_flows

PROBES = [("tcp", 80), ("tcp", 81)]
CLIENT = pod("a", "client", "10.1.0.1", app="client")
SERVER = pod("b", "server", "10.1.0.2", app="server")
ISOLATED = ["Ingress", "Egress"]
POLICIES = [
    policy("a", "out", {"podSelector": {"matchLabels": {"app": "client"}}, "policyTypes": ISOLATED, "egress": [{
        "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "b"}},
                "podSelector": {"matchLabels": {"app": "server"}}}], "ports": [{"port": 80}]}]}),
    policy("b", "in", {"podSelector": {"matchLabels": {"app": "server"}}, "policyTypes": ISOLATED, "ingress": [{
        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "a"}}}],
        "ports": [{"port": 80}]}]})]


def pair_rules(env: Environment) -> List[str]:
    return [fq[-1] for fq in env.contrail.owned()["firewall-rule"] if "--pair-" in fq[-1]]


def kubernetes_flows(env: Environment) -> Set[Flow]:
    """What the independent model allows between the pods of the emulated API server."""
    pods = env.objects("pods")
    model = KubernetesModel.of({"Namespace": env.objects("namespaces"), "Pod": pods,
                                "NetworkPolicy": env.objects("networkpolicies")})
    ends: Dict[str, Any] = {}
    for manifest in pods:
        found = model.pod(manifest["metadata"]["namespace"], manifest["metadata"]["name"])
        assert found is not None and found.ip is not None
        ends[manifest["metadata"]["name"]] = Endpoint(found, found.ip)
    return {(src, dst, protocol, port) for src in ends for dst in ends for protocol, port in PROBES
            if model.verdict(ends[src], ends[dst], port, protocol.upper()).allowed}


def test_a_pod_arriving_after_its_policies_gets_its_flows_and_they_go_with_it():
    env = Environment(Manifests({"Namespace": [namespace("a"), namespace("b")], "Pod": [CLIENT],
                                 "NetworkPolicy": POLICIES}))
    try:
        daemon = env.start_daemon()
        env.wait_converged()
        assert pair_rules(env) == []  # no server yet: the pair is not written
        env.apply(SERVER)
        env.wait_converged()
        (written,) = pair_rules(env)
        flows = enforced_flows(env.contrail, env.objects("pods"), PROBES)
        assert ("client", "server", "tcp", 80) in flows and ("client", "server", "tcp", 81) not in flows
        assert flows == kubernetes_flows(env)
        env.delete("Pod", "b", "server")
        env.wait_converged()
        assert pair_rules(env) == [] and env.contrail.api.lookup("firewall-rule", ["default-policy-management",
                                                                                   written]) is None
        assert daemon.stop() == 0
    finally:
        env.close()
