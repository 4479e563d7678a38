"""Input hygiene (SPEC 8): a document that is not a Namespace, Pod, NetworkPolicy or
ClusterNetworkPolicy object is skipped with one line, and an object given again is reported, the
last copy being used."""
from __future__ import annotations

import subprocess
import sys
from typing import List

import pytest

from kube_manager.offline.manifests import load_manifests
from tests.support.paths import REPO

NETPOL = "kind: NetworkPolicy\nmetadata: {name: web, namespace: shop}\nspec: {podSelector: {}}\n"

CASES = [  # (file text, the line reported, or None)
    ("kind: Networkpolicy\nmetadata: {name: web}\n",
     "m.yaml: document 1: kind 'Networkpolicy' is not read here (did you mean NetworkPolicy?): only "
     "Namespace, Pod, NetworkPolicy, ClusterNetworkPolicy are; skipped"),
    ("kind: NetworkPolicies\nmetadata: {name: web}\n",
     "m.yaml: document 1: kind 'NetworkPolicies' is not read here (did you mean NetworkPolicy?): only "
     "Namespace, Pod, NetworkPolicy, ClusterNetworkPolicy are; skipped"),
    ("kind: Service\nmetadata: {name: web}\n",
     "m.yaml: document 1: kind 'Service' is not read here: only "
     "Namespace, Pod, NetworkPolicy, ClusterNetworkPolicy are; skipped"),
    ("metadata: {name: web}\n", "m.yaml: document 1: no kind; skipped"),
    ("kind: [Pod]\n", "m.yaml: document 1: kind is not a string (a list); skipped"),
    ("42\n", "m.yaml: document 1: not an object but the value 42; skipped"),
    ("just text\n", "m.yaml: document 1: not an object but the text 'just text'; skipped"),
    ("---\n- kind: Pod\n", "m.yaml: document 1: not an object but a list; skipped"),
    ("kind: List\nitems: [{kind: Namespace, metadata: {name: a}}, 7]\n",
     "m.yaml: document 1, item 2: not an object but the value 7; skipped"),
    ("---\n---\nkind: Namespace\nmetadata: {name: a}\n", None),  # an empty document means nothing
    (NETPOL + "---\n" + NETPOL.replace("{}}", "{matchLabels: {app: web}}}"),
     "m.yaml: document 2: NetworkPolicy shop/web given again (also at m.yaml: document 1); "
     "the last copy is used"),
    ("kind: Namespace\nmetadata: {name: a}\n---\nkind: Namespace\nmetadata: {name: a, labels: {x: y}}\n",
     "m.yaml: document 2: Namespace a given again (also at m.yaml: document 1); the last copy is used"),
    # the same name in two namespaces, or as two kinds, is two objects
    (NETPOL + "---\n" + NETPOL.replace("shop", "ops") + "---\nkind: Namespace\nmetadata: {name: web}\n", None),
]


@pytest.mark.parametrize("text, line", CASES)
def test_each_skipped_or_repeated_document_is_one_line(tmp_path, monkeypatch, text, line):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.yaml").write_text(text)
    lines: List[str] = []
    load_manifests(["m.yaml"], warn=lines.append)
    assert lines == ([] if line is None else [line])


def test_the_last_copy_is_used_in_the_place_of_the_first(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(NETPOL + "---\nkind: NetworkPolicy\nmetadata: {name: other, namespace: shop}\n---\n"
                    + NETPOL.replace("{}}", "{matchLabels: {app: web}}}"))
    policies = load_manifests([str(path)], warn=lambda line: None).objects["NetworkPolicy"]
    assert [(p["metadata"]["name"], p.get("spec", {}).get("podSelector")) for p in policies] == [
        ("web", {"matchLabels": {"app": "web"}}), ("other", None)]


def test_translate_reports_on_stderr_and_translates_the_rest(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("kind: Networkpolicy\nmetadata: {name: x}\n---\n7\n---\n" + NETPOL + "---\n" + NETPOL)
    result = subprocess.run([sys.executable, "-m", "kube_manager", "translate", "-f", str(path), "-o", "json"],
                            capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0
    assert [line.split(": ", 3)[2] for line in result.stderr.splitlines()] == [
        "document 1", "document 2", "document 4"], result.stderr
    assert all(line.startswith(f"warning: {path}: ") for line in result.stderr.splitlines())
    assert '"k8s-shop-web"' in result.stdout
