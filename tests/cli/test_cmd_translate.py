"""`contrail-kube-manager translate` (SPEC 8): formats, determinism, bad input, exit statuses."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
import yaml

from kube_manager.cli.main import main
from kube_manager.offline.manifests import load_manifests
from kube_manager.offline.render_table import CELL_WIDTH, endpoint_text
from kube_manager.translator import translate
from tests.support.schema_oracle import assert_translation_valid
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop

ROOT = str(REPO)
EXAMPLES = os.path.join(ROOT, "examples")
ILLUSTRATION_1 = [os.path.join(EXAMPLES, "wiki", "cluster.yaml"), os.path.join(EXAMPLES, "wiki", "illustration-1.yaml")]


def run_cli(capsys, *argv):
    status = main(["translate", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_json_has_exactly_the_spec_keys_and_valid_objects(capsys):
    status, out, _ = run_cli(capsys, "-f", EXAMPLES, "-o", "json")
    assert status == 0
    result = json.loads(out)
    assert list(result) == ["cluster_name", "tags", "address_groups", "firewall_rules", "firewall_policies",
                            "application_policy_set", "workloads", "errors"]
    assert_translation_valid(result)
    for key in ("tags", "address_groups", "firewall_rules", "firewall_policies"):
        assert [o["fq_name"] for o in result[key]] == sorted(o["fq_name"] for o in result[key])
    assert [(w["namespace"], w["name"]) for w in result["workloads"]] == sorted(
        (w["namespace"], w["name"]) for w in result["workloads"])
    assert set(result["workloads"][0]) == {"namespace", "name", "ip", "tags"}
    assert [(e["kind"], e["namespace"], e["name"]) for e in result["errors"]] == sorted(
        (e["kind"], e["namespace"], e["name"]) for e in result["errors"])


def test_yaml_is_the_same_data_without_aliases(capsys):
    _, json_out, _ = run_cli(capsys, "-f", EXAMPLES, "-o", "json")
    status, yaml_out, _ = run_cli(capsys, "-f", EXAMPLES, "-o", "yaml")
    assert status == 0
    assert yaml.safe_load(yaml_out) == json.loads(json_out)
    assert "&id" not in yaml_out and "*id" not in yaml_out


def test_table_reads_like_the_wiki(capsys):
    status, out, _ = run_cli(capsys, "-f", *ILLUSTRATION_1)
    assert status == 0
    for heading in ("## Tags", "## Address Groups", "## Firewall Rules", "## Firewall Policies", "## Workloads",
                    "## Errors"):
        assert heading in out
    assert "| Rule Name " in out and "| Match Tags |" in out
    row = next(line for line in out.splitlines()
               if line.startswith("| k8s-default-ingress-test-network-policy-0-podSelector-2-0 "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells == ["k8s-default-ingress-test-network-policy-0-podSelector-2-0", "pass", "tcp:6379",
                     "application=k8s && namespace=default && role=frontend", ">",
                     "application=k8s && namespace=default && role=db", ""]
    assert "| Address Group: 172.17.0.0/16-except-172.17.1.0/24 " in out.replace("  ", " ")


@pytest.mark.parametrize("output", ["table", "json", "yaml"])
def test_output_is_byte_identical_across_runs_and_hash_seeds(output):
    outputs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-m", "kube_manager.cli.main", "translate", "-f", EXAMPLES, "-o", output],
                              capture_output=True, env=env, cwd=ROOT, check=True)
        outputs.add(proc.stdout)
    assert len(outputs) == 1


def test_input_order_does_not_change_the_translation():
    manifests = load_manifests([EXAMPLES])
    expected = json.dumps(translate(manifests.objects).to_dict())
    shuffle = random.Random(7).shuffle
    for _ in range(3):
        lists = {kind: list(items) for kind, items in manifests.objects.items()}
        for items in lists.values():
            shuffle(items)
        assert json.dumps(translate(lists).to_dict()) == expected


def test_cluster_name_option(capsys):
    status, out, _ = run_cli(capsys, "-f", *ILLUSTRATION_1, "-o", "json", "--cluster-name", "blue")
    assert status == 0
    result = json.loads(out)
    assert result["cluster_name"] == "blue"
    assert result["application_policy_set"]["fq_name"] == ["default-policy-management", "blue"]
    assert "blue-default-test-network-policy" in [p["fq_name"][-1] for p in result["firewall_policies"]]


@pytest.mark.parametrize("content, fragment", [
    ("a: [", "not valid YAML"),
    (None, "No such file"),
])
def test_bad_manifest_files_exit_2_with_a_message(capsys, tmp_path, content, fragment):
    path = tmp_path / "bad.yaml"
    if content is not None:
        path.write_text(content)
    status, out, err = run_cli(capsys, "-f", str(path))
    assert status == 2 and out == ""
    assert fragment in err and "Traceback" not in err


def test_bad_cluster_name_exits_2(capsys):
    status, out, err = run_cli(capsys, "-f", EXAMPLES, "--cluster-name", "a:b")
    assert status == 2 and out == "" and "--cluster-name" in err


def test_invalid_objects_are_reported_not_fatal(capsys, tmp_path):
    (tmp_path / "objects.yaml").write_text(
        "kind: Pod\nmetadata: not-an-object\n---\n- a list\n---\n"
        "kind: NetworkPolicy\nmetadata: {name: p}\nspec: {podSelector: {matchLabels: {a: 1}}}\n")
    status, out, err = run_cli(capsys, "-f", str(tmp_path), "-o", "json")
    assert status == 0 and "Traceback" not in err
    errors = json.loads(out)["errors"]
    assert [(e["kind"], e["name"]) for e in errors] == [("NetworkPolicy", "p"), ("Pod", "")]


def test_a_spec_nested_in_itself_is_bad_input_confined_to_its_policy(capsys, tmp_path):
    """A YAML anchor used inside itself (only a file can hold one) reads as a value nested in
    itself: that policy is rejected as bad input, with a reason an operator can act on, and the
    policy beside it is translated."""
    (tmp_path / "loop.yaml").write_text(
        "kind: NetworkPolicy\nmetadata: {name: loop, namespace: dev}\nspec: &s {podSelector: {}, extra: *s}\n"
        "---\nkind: NetworkPolicy\nmetadata: {name: fine, namespace: dev}\nspec: {podSelector: {}}\n")
    status, out, err = run_cli(capsys, "-f", str(tmp_path), "-o", "json")
    assert status == 0 and "Traceback" not in err and "internal error" not in err
    result = json.loads(out)
    assert [(e["name"], e["reason"]) for e in result["errors"]] == [
        ("loop", "nested in itself (a YAML alias inside its own anchor) or too deeply to be read")]
    assert sorted(p["fq_name"][-1] for p in result["firewall_policies"]) == [
        "k8s--isolation", "k8s--isolation-deny", "k8s-allowall", "k8s-denyall", "k8s-dev-fine"]


def test_the_console_command_runs():
    proc = subprocess.run([sys.executable, "-m", "kube_manager.cli.main", "translate", "-f", *ILLUSTRATION_1, "-o", "json"],
                          capture_output=True, cwd=ROOT, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cluster_name"] == "k8s"


def test_table_cells_stay_bounded_on_a_large_cluster(capsys, tmp_path):
    """The deny-all policy, a wide ipBlock and a much-labelled pod must not make cells of thousands of names."""
    documents = []
    for i in range(60):
        documents.append({"kind": "Namespace", "metadata": {"name": f"ns-{i:02d}"}})
        documents.append({"kind": "NetworkPolicy", "metadata": {"name": "deny", "namespace": f"ns-{i:02d}"},
                          "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}})
    labels = {f"l{k:02d}": "v" for k in range(40)}
    documents.append({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns-00", "labels": labels},
                      "status": {"podIP": "10.0.0.1"}})
    documents.append({"kind": "NetworkPolicy", "metadata": {"name": "wide", "namespace": "ns-00"}, "spec": {
        "podSelector": {}, "ingress": [{"from": [{"ipBlock": {
            "cidr": "10.0.0.0/8", "except": [f"10.{k}.0.1/32" for k in range(20)]}}]
            + [{"podSelector": {"matchLabels": {key: "v"}}} for key in labels]}]}})
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    result = json.loads(run_cli(capsys, "-f", str(tmp_path), "-o", "json")[1])
    status, out, _ = run_cli(capsys, "-f", str(tmp_path))
    assert status == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) < 1000  # names are never cut: an address group's is 255 here

    def cells(first: str):
        row = next(line for line in lines if line.startswith(f"| {first} "))
        return [c.strip() for c in row.strip("|").split(" | ")]

    denyall = next(p for p in result["firewall_policies"] if p["fq_name"][-1] == "k8s-denyall")
    names = [ref["to"][-1] for ref in denyall["firewall_rule_refs"]]
    assert len(names) > 100
    assert cells("2.0")[2] == f"{len(names)} rules: {names[0]} ... {names[-1]}"
    assert all(any(line.startswith(f"| {name} ") for line in lines) for name in names)

    group = next(g for g in result["address_groups"] if g["fq_name"][-1].startswith("10.0.0.0/8-except-"))
    subnets = [f"{s['ip_prefix']}/{s['ip_prefix_len']}" for s in group["address_group_prefix"]["subnet"]]
    assert len(subnets) > 32
    assert_a_bounded_list(cells(group["fq_name"][-1])[1], subnets, ", ")

    tags = next(w for w in result["workloads"] if w["name"] == "p")["tags"]
    assert len(tags) > 32
    assert cells("ns-00")[1:3] == ["p", "10.0.0.1"]
    assert_a_bounded_list(cells("ns-00")[3], tags, ", ")


def assert_a_bounded_list(cell: str, items, separator: str) -> None:
    """The cell shows the first items, in order, within CELL_WIDTH, then how many it left out."""
    shown, _, tail = cell.rpartition(f"{separator}... (")
    count = len(shown.split(separator))
    assert shown.split(separator) == list(items[:count])
    assert tail == f"{len(items) - count} more)"
    assert len(cell) <= CELL_WIDTH and len(cell) + len(separator) + len(items[count]) > CELL_WIDTH - len(tail)


@pytest.mark.parametrize("example", ["demo", "cnp", "wiki", "tenants", ""])
def test_table_lines_of_the_examples_stay_within_a_terminal_or_two(capsys, example):
    """A Markdown row cannot wrap, so the widest cell pads the whole table: cells of names are cut
    at CELL_WIDTH, and the widest table (Firewall Rules, seven columns) stays within 370 (README.md says so)."""
    status, out, _ = run_cli(capsys, "-f", os.path.join(EXAMPLES, example), "-o", "table")
    assert status == 0
    assert max(len(line) for line in out.splitlines()) <= 370
    listed = out.split("## Errors")[0]  # (a reason is always shown whole)
    cells = [cell.strip() for line in listed.splitlines() if line.startswith("| ")
             for cell in line.strip("|").split(" | ")]
    assert max(len(cell) for cell in cells) <= CELL_WIDTH


def test_an_endpoint_of_many_tags_is_cut_between_tags():
    endpoint = {"tags": [f"label=k8s-sel-{n:012x}" for n in range(12)]}
    text = endpoint_text(endpoint)
    assert_a_bounded_list(text, endpoint["tags"], " && ")
    assert endpoint_text({"tags": ["application=k8s", "app=web"]}) == "application=k8s && app=web"
