"""What-if (`contrail-kube-manager what-if`): an added, a replaced and a deleted NetworkPolicy,
each checked against a brute-force recomputation of every pair of ends on every port that can
matter, under both Contrail and Kubernetes; and the command line around it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

import pytest
import yaml

from tests.support.builders import namespace, pod, policy
from tests.conformance.cluster import ManifestSet
from kube_manager.translator import translate
from kube_manager.explain.explainer import Explainer
from kube_manager.explain.whatif import (DELETE_ANNOTATION, DELETE_VALUE, WhatIfError,
                                            apply_change, what_if)

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop

PODS = {"x/a": "10.0.1.1", "x/b": "10.0.1.2", "y/a": "10.0.2.1", "y/c": "10.0.2.3",
        "z/d": "10.0.3.4"}
# Outside addresses: in the ipBlock, in its except, outside it.
OUTSIDE = ["10.0.5.5", "10.0.1.200", "192.168.1.1"]
PORTS = [1, 52, 53, 54, 79, 80, 81, 82, 8079, 8080, 8081, 65535]
PROTOCOLS = ["tcp", "udp", "sctp"]

ALLOW_FROM_Y = policy("x", "allow-from-y", {
    "podSelector": {"matchLabels": {"app": "a"}},
    "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "y"}}}],
                 "ports": [{"port": "http"}]}]})
Y_EGRESS = policy("y", "egress", {
    "podSelector": {"matchLabels": {"app": "c"}}, "policyTypes": ["Egress"],
    "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.1.0/24"]}}],
                "ports": [{"port": 81}]},
               {"to": [{"namespaceSelector": {"matchLabels": {"team": "x"}}}],
                "ports": [{"port": 80}]}]})


def cluster() -> ManifestSet:
    return ManifestSet({"Namespace": [namespace("x", team="x"), namespace("y", team="y"), namespace("z")],
                        "Pod": [pod("x", "a", PODS["x/a"], {"app": "a"}, [("http", 80, "TCP")]),
              pod("x", "b", PODS["x/b"], {"app": "b"}, [("http", 8080, "TCP")]),
              pod("y", "a", PODS["y/a"], {"app": "a"}, [("http", 80, "TCP")]),
              pod("y", "c", PODS["y/c"], {"app": "c"}, [("http", 81, "TCP")]),
              pod("z", "d", PODS["z/d"], {"app": "d"})], "NetworkPolicy": [policy("x", "deny-all", {"podSelector": {}}), ALLOW_FROM_Y, Y_EGRESS]})


ADDED = policy("z", "isolate-d", {
    "podSelector": {"matchLabels": {"app": "d"}},
    "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "x"}},
                           "podSelector": {"matchLabels": {"app": "b"}}}],
                 "ports": [{"port": 8080}, {"protocol": "UDP", "port": 53}]}]})
REPLACED = policy("x", "allow-from-y", {
    "podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
    "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "y"}}}],
                 "ports": [{"port": 8080}]}]})
DELETED = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
           "metadata": {"namespace": "y", "name": "egress",
                        "annotations": {DELETE_ANNOTATION: DELETE_VALUE}}}


def change(*policies: Dict[str, Any]) -> ManifestSet:
    return ManifestSet({"Namespace": [], "Pod": [], "NetworkPolicy": list(policies)})


def verdicts(manifests: Any) -> Dict[Tuple[str, str, str, int], Tuple[bool, bool]]:
    """Every pair of ends (pods and outside addresses, not two outside ones), every protocol and
    sampled port: (Contrail allows, Kubernetes allows), one explain each."""
    translation = translate(manifests.objects)
    explainer = Explainer(translation.to_dict(), manifests)
    ends = list(PODS) + OUTSIDE
    found = {}
    for src in ends:
        for dst in ends:
            if src == dst or (src in OUTSIDE and dst in OUTSIDE):
                continue
            for protocol in PROTOCOLS:
                for port in PORTS:
                    answer = explainer.explain(src, dst, port, protocol)
                    found[(src, dst, protocol, port)] = (answer["allowed"],
                                                         answer["kubernetes_allowed"])
    return found


def brute_force(change_set: ManifestSet) -> Dict[Tuple[str, str, str, int], Tuple[Any, Any]]:
    after, _touched = apply_change(cluster(), change_set)
    before_v, after_v = verdicts(cluster()), verdicts(after)
    return {flow: ((before_v[flow][0], after_v[flow][0]), (before_v[flow][1], after_v[flow][1]))
            for flow in before_v if before_v[flow] != after_v[flow]}


def reported(change_set: ManifestSet) -> Dict[Tuple[str, str, str, int], Tuple[Any, Any]]:
    """The what-if's rows expanded on the sampled ports."""
    found = {}
    for row in what_if(cluster(), change_set).changes:
        for port in PORTS:
            if row.ports[0] <= port <= row.ports[1]:
                found[(row.source, row.destination, row.protocol, port)] = (row.contrail,
                                                                            row.kubernetes)
    return found


def outside_as_region(flows: Dict[tuple, Any]) -> Set[tuple]:
    """Flows with an outside end, the address replaced by which ipBlock region it is in (the
    what-if picks its own address per region)."""
    def region(end: str) -> str:
        if end in PODS:
            return end
        if end.startswith("10.0.1."):
            return "except"
        return "cidr" if end.startswith("10.0.") else "outside"

    return {(region(src), region(dst), protocol, port, verdict)
            for (src, dst, protocol, port), verdict in flows.items()
            if src not in PODS or dst not in PODS}


RELABELLED = ManifestSet({"Namespace": [],
                          "NetworkPolicy": [],
                          "Pod": [pod("x", "b", PODS["x/b"], {"app": "a"}, [("http", 8080, "TCP")])]})
NAMESPACE_RELABELLED = ManifestSet({"Namespace": [namespace("z", team="y")], "Pod": [], "NetworkPolicy": []})


@pytest.mark.parametrize("name, change_set", [
    ("added", change(ADDED)), ("replaced", change(REPLACED)), ("deleted", change(DELETED)),
    ("all three", change(ADDED, REPLACED, DELETED)), ("pod relabelled", RELABELLED),
    ("namespace relabelled", NAMESPACE_RELABELLED)])
def test_what_if_equals_brute_force(name, change_set):
    expected, got = brute_force(change_set), reported(change_set)
    assert expected, f"{name}: the change must change something for the test to mean anything"
    pods_only = {f: v for f, v in expected.items() if f[0] in PODS and f[1] in PODS}
    assert {f: v for f, v in got.items() if f[0] in PODS and f[1] in PODS} == pods_only
    assert outside_as_region(got) == outside_as_region(expected)


def test_the_cases_change_what_they_should():
    added = brute_force(change(ADDED))
    # z/d was open to all; now only x/b on TCP 8080 and UDP 53 (Contrail and Kubernetes agree).
    assert added[("x/a", "z/d", "tcp", 8080)] == ((True, False), (True, False))
    assert ("x/b", "z/d", "tcp", 8080) not in added and ("x/b", "z/d", "udp", 53) not in added
    replaced = brute_force(change(REPLACED))
    assert replaced[("y/a", "x/a", "tcp", 80)] == ((True, False), (True, False))
    assert replaced[("y/a", "x/b", "tcp", 8080)] == ((False, True), (False, True))
    deleted = brute_force(change(DELETED))
    assert deleted[("y/c", "10.0.5.5", "tcp", 1)] == ((False, True), (False, True))


def test_a_deletion_of_an_unknown_object_is_refused():
    with pytest.raises(WhatIfError, match="does not have"):
        what_if(cluster(), change({**DELETED, "metadata": {**DELETED["metadata"], "name": "nope"}}))


def test_command_line(tmp_path: Path):
    manifests = cluster()
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(
        manifests.objects["Namespace"] + manifests.objects["Pod"] + manifests.objects["NetworkPolicy"]), encoding="utf-8")
    (tmp_path / "change.yaml").write_text(yaml.safe_dump_all([ADDED, DELETED]), encoding="utf-8")

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kube_manager", "what-if", "-f",
                               str(tmp_path / "cluster.yaml"), *argv],
                              capture_output=True, text=True, timeout=120)

    text = run("--change", str(tmp_path / "change.yaml"), "--max-rows", "3", "--max-names", "2")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].endswith("affected pods)") and "change verdict" in lines[0]
    assert lines[1] == "from | to | protocol ports | Contrail | Kubernetes"
    assert len(lines) == 6 and lines[-1].startswith("... ")  # header, 3 rows, the rest counted
    assert "allowed -> DROPPED" in text.stdout
    as_json = run("--change", str(tmp_path / "change.yaml"), "-o", "json")
    data = json.loads(as_json.stdout)
    expected = brute_force(change(ADDED, DELETED))
    flows = {(c["from"], c["to"], c["protocol"], p) for c in data["changes"] for p in PORTS
             if c["ports"][0] <= p <= c["ports"][1] and c["from"] in PODS and c["to"] in PODS}
    assert flows == {f for f in expected if f[0] in PODS and f[1] in PODS}
    missing = run("--change", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "nope.yaml" in missing.stderr
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(
        {**DELETED, "metadata": {**DELETED["metadata"], "name": "nope"}}), encoding="utf-8")
    unknown = run("--change", str(tmp_path / "bad.yaml"))
    assert unknown.returncode == 2 and "does not have" in unknown.stderr
