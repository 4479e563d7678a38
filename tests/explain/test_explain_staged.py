"""`explain --staged` (SPEC 17): the verdict as enforced now beside the verdict with the staged
policies enforced, each checked against the Kubernetes model of the cluster with the staged
policies absent, and of the cluster with their annotation removed by hand."""
from __future__ import annotations

import copy
import json
import logging
from typing import Any, Dict, List

import pytest
import yaml

from kube_manager.cli.main import main
from kube_manager.explain.k8s_semantics import Endpoint, KubernetesModel
from kube_manager.explain.staged_verdicts import StagedExplainer
from tests.support.builders import cluster_policy, cnp_rule, namespace, namespace_named, pod, policy

ANNOTATION = "contrail-kube-manager/staged"
PODS = {"x/a": "10.0.1.1", "x/b": "10.0.1.2", "y/c": "10.0.2.3"}


def with_annotation(manifest: Dict[str, Any], value: str) -> Dict[str, Any]:
    copied = copy.deepcopy(manifest)
    copied["metadata"]["annotations"] = {ANNOTATION: value}
    return copied


DENY_X = policy("x", "deny-all", {"podSelector": {}, "policyTypes": ["Ingress"]})
ALLOW_A = policy("x", "allow-a", {"podSelector": {"matchLabels": {"app": "b"}},
                                  "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a"}}}]}]})
DENY_Y = cluster_policy("deny-y", "Admin", 3, namespace_named("y"), ingress=[cnp_rule("Deny", namespace_named("x"))])


def objects(policies: List[Dict[str, Any]], cluster_policies: List[Dict[str, Any]]) -> Dict[str, List[Any]]:
    pods = [pod(*key.split("/"), ip, {"app": key[-1]}) for key, ip in PODS.items()]
    return {"Namespace": [namespace("x"), namespace("y")], "Pod": pods, "NetworkPolicy": policies,
            "ClusterNetworkPolicy": cluster_policies}


def model_allows(cluster: Dict[str, List[Any]], src: str, dst: str) -> bool:
    model = KubernetesModel.of(cluster)
    ends = [model.pod(*key.split("/")) for key in (src, dst)]
    return model.verdict(Endpoint(ends[0], ends[0].ip), Endpoint(ends[1], ends[1].ip), 80, "TCP").allowed


STAGED = objects([with_annotation(DENY_X, "true"), ALLOW_A], [with_annotation(DENY_Y, "true")])
WITHOUT = objects([ALLOW_A], [])
PROMOTED = objects([DENY_X, ALLOW_A], [DENY_Y])


@pytest.mark.parametrize("semantics", ["kubernetes", "cluster-wide"])
def test_both_answers_match_the_model_with_and_without_the_staged_policies(semantics):
    explainer = StagedExplainer(STAGED, semantics=semantics)
    assert [(p["kind"], p["name"]) for p in explainer.staged] == [("ClusterNetworkPolicy", "deny-y"),
                                                                  ("NetworkPolicy", "deny-all")]
    changed = 0
    for src in PODS:
        for dst in PODS:
            if src == dst:
                continue
            result = explainer.explain(src, dst, "80", "TCP")
            assert result["enforced"]["allowed"] == model_allows(WITHOUT, src, dst), (src, dst)
            assert result["with_staged"]["allowed"] == model_allows(PROMOTED, src, dst), (src, dst)
            assert result["enforced"]["deviation"] is None and result["with_staged"]["deviation"] is None
            assert result["changes"] == (result["enforced"]["allowed"] != result["with_staged"]["allowed"])
            changed += result["changes"]
    assert changed == 4  # x/b and y/c -> x/a (the deny-all on x), x/a and x/b -> y/c (the Admin deny on y)


def test_the_model_leaves_staged_policies_out_and_enforces_a_misspelt_value():
    assert model_allows(objects([with_annotation(DENY_X, "true")], []), "y/c", "x/a")
    assert not model_allows(objects([with_annotation(DENY_X, "yes")], []), "y/c", "x/a")


def test_the_command_answers_twice_and_exits_for_now(tmp_path, capsys):
    translator_log = logging.getLogger("kube_manager.translator")
    level = translator_log.level
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([m for items in STAGED.values() for m in items]))
    status = main(["explain", "-f", str(path), "--from", "y/c", "--to", "x/a", "--port", "80", "--staged",
                   "-o", "json"])
    result = json.loads(capsys.readouterr().out)
    assert status == 0 and result["enforced"]["allowed"] and not result["with_staged"]["allowed"]
    assert result["changes"]
    status = main(["explain", "-f", str(path), "--from", "y/c", "--to", "x/a", "--port", "80", "--staged"])
    text = capsys.readouterr().out
    assert status == 0
    assert text.startswith("staged: ClusterNetworkPolicy deny-y, NetworkPolicy x/deny-all; enforcing them changes")
    assert "== as enforced now ==" in text and "== with the staged policies enforced ==" in text
    assert translator_log.level == level  # its rejections were silenced for the command only


def test_translate_lists_the_staged_policies_apart(tmp_path, capsys):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([m for items in STAGED.values() for m in items]))
    assert main(["translate", "-f", str(path)]) == 0
    table = capsys.readouterr().out
    assert table.rstrip().endswith("| NetworkPolicy        | x         | deny-all |\n"
                                   "| ClusterNetworkPolicy |           | deny-y   |")
    assert "## Staged policies (translated, nothing written)" in table
    assert main(["translate", "-f", str(path), "-o", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["staged"] == [{"kind": "NetworkPolicy", "namespace": "x", "name": "deny-all"},
                                {"kind": "ClusterNetworkPolicy", "namespace": "", "name": "deny-y"}]
    assert not [p for p in result["firewall_policies"] if "deny-all" in p["fq_name"][-1]]
