"""SPEC 14 with both tiers: random ClusterNetworkPolicies (both directions, Accept, Deny and Pass,
equal priorities, named ports, networks) and NetworkPolicies (selectors with expressions, ipBlocks
with excepts, named ports and ranges) on one small cluster. Every flow between pods and to and
from outside addresses, on TCP, UDP and SCTP: under `kubernetes` the emitted objects decide it as
the reference model does; under `cluster-wide` they differ only where one end's NetworkPolicy
chain allows what the other end's NetworkPolicy chain denies (the tiers are exact in both)."""
from __future__ import annotations


from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.builders import policy
from tests.support.cnp_support import SUBJECTS, cluster, cnp, rules
from kube_manager.offline.manifests import Manifests
from kube_manager.translator import translate
from kube_manager.translator.match_logging import ANNOTATION
from tests.support.schema_oracle import assert_translation_valid
from tests.support.semantics_support import cells, wrong

PROBES = [("TCP", 80), ("TCP", 8080), ("TCP", 75), ("UDP", 53), ("SCTP", 9003)]
POD_SELECTORS = st.sampled_from([{}, {"matchLabels": {"app": "web"}}, {"matchLabels": {"app": "db"}},
                                 {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
                                 {"matchExpressions": [{"key": "app", "operator": "In", "values": ["api", "db"]}]}])
NAMESPACE_SELECTORS = st.sampled_from([{}, {"matchLabels": {"house": "b"}}, {"matchLabels": {"team": "x"}},
                                       {"matchExpressions": [{"key": "house", "operator": "NotIn", "values": ["a"]}]}])
PEERS = st.one_of(
    st.fixed_dictionaries({"podSelector": POD_SELECTORS}),
    st.fixed_dictionaries({"namespaceSelector": NAMESPACE_SELECTORS}),
    st.fixed_dictionaries({"namespaceSelector": NAMESPACE_SELECTORS, "podSelector": POD_SELECTORS}),
    st.sampled_from([{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.2.0/24"]}},
                     {"ipBlock": {"cidr": "10.0.1.10/32"}}, {"ipBlock": {"cidr": "0.0.0.0/0"}}]))
PORTS = st.sampled_from([{"port": 80}, {"port": 53, "protocol": "UDP"}, {"port": "web"}, {"port": 70, "endPort": 90},
                         {"protocol": "SCTP"}, {"port": "dns", "protocol": "UDP"}])


def _block(peer_field: str) -> st.SearchStrategy:
    return st.builds(lambda peers, ports: {**({} if peers is None else {peer_field: peers}),
                                           **({} if ports is None else {"ports": ports})},
                     st.none() | st.lists(PEERS, min_size=1, max_size=2),
                     st.none() | st.lists(PORTS, min_size=1, max_size=2))


NETWORK_POLICY_SPECS = st.builds(
    lambda selected, types, ingress, egress: {"podSelector": selected, "ingress": ingress, "egress": egress,
                                              **({} if types is None else {"policyTypes": types})},
    POD_SELECTORS, st.sampled_from([None, ["Ingress"], ["Egress"], ["Ingress", "Egress"]]),
    st.lists(_block("from"), max_size=2), st.lists(_block("to"), max_size=2))


@st.composite
def clusters(draw) -> Manifests:  # type: ignore[no-untyped-def]
    cluster_policies = []
    for i in range(draw(st.integers(0, 4))):
        tier = draw(st.sampled_from(["Admin", "Baseline"]))
        ingress = draw(st.lists(rules("ingress"), max_size=2))
        egress = draw(st.lists(rules("egress"), max_size=2))
        cluster_policies.append(cnp(f"c{i}", tier, draw(st.integers(1, 2)), draw(SUBJECTS), ingress=ingress,
                                    egress=egress))
    network_policies = [policy(draw(st.sampled_from(["ns-a", "ns-b", "ns-c"])), f"n{i}", draw(NETWORK_POLICY_SPECS))
                        for i in range(draw(st.integers(0, 4)))]
    namespaces, pods = cluster()
    return Manifests({"Namespace": namespaces,
                      "Pod": pods,
                      "NetworkPolicy": network_policies,
                      "ClusterNetworkPolicy": cluster_policies})


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters())
def test_kubernetes_semantics_decide_every_flow_as_kubernetes_does(manifests):
    found = wrong(manifests, "kubernetes", PROBES)
    assert not found, [str(c) for c in found[:5]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters())
def test_cluster_wide_semantics_differ_only_in_cluster_wide_cells(manifests):
    found = wrong(manifests, "cluster-wide", PROBES)
    assert not found, [str(c) for c in found[:5]]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(), st.sampled_from(["kubernetes", "cluster-wide"]))
def test_every_object_passes_the_schema(manifests, semantics):
    result = translate(manifests.objects, semantics=semantics).to_dict()
    assert_translation_valid(result)
    assert {r["service"]["protocol"] for r in result["firewall_rules"]} <= {"any", "tcp", "udp", "sctp"}


MODES = st.sampled_from([None, "deny", "allow", "all"])
LOGGED_BY = {"deny": {False}, "allow": {True}, "all": {True, False}}  # the verdicts each mode logs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(), st.data())
def test_the_rule_deciding_a_flow_logs_when_a_policy_deciding_it_asks(manifests, data):
    """SPEC 15 on the reference model: a flow's verdict at each end is decided by a
    ClusterNetworkPolicy rule (an Accept or a Deny; a Pass decides nothing) or not. The Contrail
    rule that decides the flow logs exactly when a policy deciding the verdict asks for that
    verdict; when both ends deny, the rule stands for one of them (whichever Contrail meets first)."""
    modes = {c["metadata"]["name"]: data.draw(MODES) for c in manifests.objects["ClusterNetworkPolicy"]}
    annotated = [c if modes[c["metadata"]["name"]] is None else
                 {**c, "metadata": {**c["metadata"], "annotations": {ANNOTATION: modes[c["metadata"]["name"]]}}}
                 for c in manifests.objects["ClusterNetworkPolicy"]]
    manifests = Manifests({**manifests.objects, "ClusterNetworkPolicy": annotated})
    result = translate({"Namespace": manifests.objects["Namespace"],
                        "Pod": manifests.objects["Pod"],
                        "NetworkPolicy": manifests.objects["NetworkPolicy"],
                        "ClusterNetworkPolicy": annotated}).to_dict()
    logs = {rule["fq_name"][-1]: bool(rule["action_list"].get("log")) for rule in result["firewall_rules"]}

    def asks(side, allowed):
        decision = side.decision
        return decision is not None and allowed in LOGGED_BY.get(modes[decision.policy] or "", ())

    for cell in cells(manifests, "kubernetes", PROBES):
        if cell.rule is None:
            continue
        verdict = cell.verdict
        if cell.kubernetes:
            expected = asks(verdict.egress, True) or asks(verdict.ingress, True)
        else:
            denying = [side for side in (verdict.egress, verdict.ingress) if not side.allowed]
            expected = any(asks(side, False) for side in denying)
            if len(denying) == 2 and expected and not all(asks(side, False) for side in denying):
                continue  # the rule may stand for the end that does not ask
        assert logs[cell.rule] == expected, (str(cell), modes)
