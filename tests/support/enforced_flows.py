"""What the config API enforces right now, as SPEC 6 says: ContrailEvaluator over our objects in
the config API and the tags its VMIs carry (not the translator's view of them)."""
from __future__ import annotations

from typing import Any, Dict, Iterable, Sequence, Set, Tuple

from kube_manager.explain.flow import ContrailEvaluator
from tests.support.reconciler_support import InProcessApi

Flow = Tuple[str, str, str, int]  # source pod, destination pod, protocol, port (pods by name)


def enforced_flows(api: InProcessApi, pods: Iterable[Dict[str, Any]], probes: Sequence[Tuple[str, int]]) -> Set[Flow]:
    """The pod-to-pod flows (of `probes`, protocols in lower case) between `pods` the config API
    lets through; pods are told apart by name."""
    pods = list(pods)
    owned = api.owned()
    (aps,) = owned["application-policy-set"].values()
    translation = {"cluster_name": "k8s", "application_policy_set": aps,
                   "firewall_policies": list(owned["firewall-policy"].values()),
                   "firewall_rules": list(owned["firewall-rule"].values()),
                   "address_groups": list(owned["address-group"].values()),
                   "workloads": [{"namespace": p["metadata"]["namespace"], "name": p["metadata"]["name"],
                                  "ip": p["status"]["podIP"], "tags": api.vmi_tags(p["metadata"]["uid"])}
                                 for p in pods]}
    evaluator = ContrailEvaluator(translation)
    flows: Set[Flow] = set()
    for src in pods:
        for dst in pods:
            a, b = (evaluator.workload(p["metadata"]["namespace"], p["metadata"]["name"]) for p in (src, dst))
            assert a is not None and b is not None
            flows.update((src["metadata"]["name"], dst["metadata"]["name"], protocol, port) for protocol, port in probes
                         if evaluator.evaluate(a, b, port, protocol).allowed)
    return flows
