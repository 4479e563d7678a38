"""policy_semantics as operators meet it (SPEC 8, 14): `--semantics` on the offline commands, what
`explain` says of the rules `kubernetes` adds, `what-if --switch-semantics` for the migration, and
the mode on the introspect index.

The migration check is held against the Kubernetes model alone: the flows the switch closes must be
exactly the cells where one end's NetworkPolicies allow a flow that the other end's isolate and do
not allow (the seed's cluster-wide cells), found here by asking the reference model, never the
translator.
"""
from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from typing import Any, Dict, List, Set, Tuple

import pytest

from introspect.app import create_app
from kube_manager.cli.options import SEMANTICS_CHOICES
from kube_manager.explain.k8s_semantics import NETWORK_POLICY_TIER, Endpoint, KubernetesModel, SideVerdict
from kube_manager.explain.whatif import semantics_switch
from kube_manager.offline.manifests import load_manifests
from kube_manager.translator import translate
from tests.conformance.cluster import ManifestSet
from tests.support.builders import namespace, pod, policy
from tests.support.introspect_support import build_db, call
from tests.support.paths import EXAMPLES

TENANTS = str(EXAMPLES / "tenants")
TENANT_FLOW = ["--from", "tenant-a/client", "--to", "tenant-b/db", "--port", "5432", "--protocol", "TCP"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kube_manager", *args], capture_output=True, text=True,
                          timeout=120)


def test_the_cli_spells_the_translators_semantics() -> None:
    from kube_manager.translator.semantics import SEMANTICS
    assert SEMANTICS_CHOICES == SEMANTICS


@pytest.mark.parametrize("semantics, status, deviation", [
    ("kubernetes", 1, None),
    ("cluster-wide", 0, "cluster-wide"),
])
def test_explain_answers_the_tenant_case_in_each_mode(semantics: str, status: int,
                                                       deviation: Any) -> None:
    proc = cli("explain", "-f", TENANTS, *TENANT_FLOW, "--semantics", semantics, "-o", "json")
    assert proc.returncode == status, proc.stderr
    result = json.loads(proc.stdout)
    assert result["kubernetes_allowed"] is False and result["deviation"] == deviation
    assert result["semantics"] == semantics
    if semantics == "kubernetes":
        assert result["rule"] == "k8s--isolated-egress-to-isolated-ingress"
        assert result["stands_for"].startswith("the isolation deny")
        assert "tenant-b/default-deny-ingress" in result["stands_for"]
        assert set(result["selectors"]) == {"label=k8s-isolated-egress", "label=k8s-isolated-ingress"}
    else:
        assert result["rule"].startswith("k8s-tenant-a-egress-egress-anywhere-")
        assert result["stands_for"] is None  # a NetworkPolicy's own rule: its name says it


def test_explain_is_kubernetes_by_default_and_decodes_a_pair_rule() -> None:
    allow = policy("tenant-b", "allow-client", {
        "podSelector": {}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name":
                                                                       "tenant-a"}}}]}]})
    manifests = load_manifests([TENANTS])
    translation = translate({"Namespace": manifests.objects["Namespace"],
                             "Pod": manifests.objects["Pod"],
                             "NetworkPolicy": manifests.objects["NetworkPolicy"] + [allow]}, semantics="kubernetes")
    from kube_manager.explain.explainer import Explainer
    both = ManifestSet({"Namespace": manifests.objects["Namespace"],
                        "Pod": manifests.objects["Pod"],
                        "NetworkPolicy": manifests.objects["NetworkPolicy"] + [allow]})
    result = Explainer(translation.to_dict(), both, "k8s", translation.selectors).explain(
        "tenant-a/client", "tenant-b/db", 5432, "TCP")
    assert result["allowed"] is True and result["kubernetes_allowed"] is True
    assert result["rule"].startswith("k8s--pair-") and result["policy"] == "k8s--isolation"
    assert result["stands_for"].startswith("a pair rule")
    assert "tenant-a/egress-anywhere" in result["stands_for"]
    assert "tenant-b/allow-client" in result["stands_for"]


def test_translate_takes_the_semantics_and_keeps_every_network_policy_object() -> None:
    outputs = {}
    for semantics in SEMANTICS_CHOICES:
        proc = cli("translate", "-f", TENANTS, "-o", "json", "--semantics", semantics)
        assert proc.returncode == 0, proc.stderr
        outputs[semantics] = json.loads(proc.stdout)
    default = cli("translate", "-f", TENANTS, "-o", "json")
    assert json.loads(default.stdout) == outputs["kubernetes"]

    def added(objects: List[Dict[str, Any]]) -> List[str]:
        return [o["fq_name"][-1] for o in objects if o["fq_name"][-1].startswith("k8s--")]

    for kind in ("firewall_rules", "firewall_policies"):
        assert added(outputs["cluster-wide"][kind]) == []
        assert added(outputs["kubernetes"][kind]) != []
        kept = [o for o in outputs["kubernetes"][kind] if not o["fq_name"][-1].startswith("k8s--")]
        assert kept == outputs["cluster-wide"][kind]
    tags = {w["name"]: w["tags"] for w in outputs["kubernetes"]["workloads"]}
    assert "label=k8s-isolated-egress" in tags["client"] and "label=k8s-isolated-ingress" in tags["db"]


# ---- what-if --switch-semantics -----------------------------------------------------------

PROBES = [("tcp", 80), ("tcp", 5432), ("udp", 53), ("sctp", 80)]


def shared_cluster() -> ManifestSet:
    """Three teams: one isolates both ways and allows a little, one only isolates ingress, one
    opens its egress to everything; every cross-team flow tests the cluster-wide hole."""
    return ManifestSet({"Namespace": [namespace("a", team="a"), namespace("b", team="b"), namespace("c", team="c")],
                        "Pod": [pod("a", "web", "10.0.1.1", {"app": "web"}, [("http", 80, "TCP")]),
              pod("a", "db", "10.0.1.2", {"app": "db"}),
              pod("b", "api", "10.0.2.1", {"app": "api"}, [("http", 80, "TCP")]),
              pod("c", "tool", "10.0.3.1", {"app": "tool"})], "NetworkPolicy": [
            policy("a", "lock", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                                 "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                                              "ports": [{"port": 5432}]}],
                                 "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"team": "b"}}}],
                                             "ports": [{"port": "http"}]}]}),
            policy("b", "ingress-only-from-a", {
                "podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}],
                                                 "ports": [{"port": 5432}]}]}),
            policy("c", "egress-anywhere", {"podSelector": {}, "policyTypes": ["Egress"],
                                            "egress": [{"to": [{"namespaceSelector": {}}]}]}),
        ]})


def _decided_by_network_policies(side: SideVerdict, allowed: bool) -> bool:
    return side.tier == NETWORK_POLICY_TIER and side.allowed == allowed


def cluster_wide_cells(cluster: ManifestSet) -> Set[Tuple[str, str, str, int]]:
    """From the Kubernetes model alone: the flows one end's NetworkPolicies allow while the other
    end's isolate it and allow nothing."""
    model = KubernetesModel.build(cluster.objects["Namespace"], cluster.objects["Pod"], cluster.objects["NetworkPolicy"])
    ends = [(f"{p['metadata']['namespace']}/{p['metadata']['name']}",
             model.pod(p["metadata"]["namespace"], p["metadata"]["name"])) for p in cluster.objects["Pod"]]
    found = set()
    for src, src_pod in ends:
        for dst, dst_pod in ends:
            if src == dst:
                continue
            for protocol, port in PROBES:
                verdict = model.verdict(Endpoint(src_pod, src_pod.ip), Endpoint(dst_pod, dst_pod.ip),
                                        port, protocol.upper())
                if any(_decided_by_network_policies(a, True) and _decided_by_network_policies(b, False)
                       for a, b in ((verdict.egress, verdict.ingress), (verdict.ingress, verdict.egress))):
                    found.add((src, dst, protocol, port))
    return found


def test_switching_to_kubernetes_closes_exactly_the_cluster_wide_flows() -> None:
    cluster = shared_cluster()
    expected = cluster_wide_cells(cluster)
    assert len(expected) >= 4  # the cluster is built to have such flows
    result = semantics_switch(cluster)
    assert result.changes, "nothing changes"
    for change in result.changes:
        assert change.contrail == (True, False) and change.kubernetes == (False, False), change
    closed = {(c.source, c.destination, c.protocol, port) for c in result.changes
              for protocol, port in PROBES
              if c.protocol == protocol and c.ports[0] <= port <= c.ports[1]}
    pods_only = {cell for cell in closed if not _is_ip(cell[0]) and not _is_ip(cell[1])}
    assert pods_only == expected


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def test_what_if_switch_semantics_on_the_command_line() -> None:
    proc = cli("what-if", "-f", TENANTS, "--switch-semantics")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("switching policy_semantics from cluster-wide to kubernetes: 3 flow(s)")
    assert sorted(lines[2:]) == [
        f"tenant-a/client | tenant-b/db | {p} 1-65535 | allowed -> DROPPED | dropped"
        for p in ("SCTP", "TCP", "UDP")]
    both = cli("what-if", "-f", TENANTS, "--switch-semantics", "--change", TENANTS)
    assert both.returncode == 2 and "not allowed with" in both.stderr


# ---- introspect -----------------------------------------------------------------------------

@pytest.mark.parametrize("semantics", SEMANTICS_CHOICES)
def test_the_introspect_index_shows_the_mode(semantics: str) -> None:
    app = create_app(build_db(), semantics=semantics)
    reply = call(app, "/?format=json")
    assert reply.status == 200 and reply.json()["policy_semantics"] == semantics
    page = call(app, "/")
    assert f"Enforcement: <strong>{semantics}</strong>" in page.text
    assert ("what-if --switch-semantics" in page.text) == (semantics == "cluster-wide")
