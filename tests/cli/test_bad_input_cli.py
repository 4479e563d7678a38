"""The offline commands on a poisoned cluster (SPEC 8, 11): `translate` lists the poisoned objects in
`errors` and exits 0 with everything else translated; `explain` answers (0 allowed, 1 dropped)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop

CLUSTER = {"kind": "List", "items": [
    {"kind": "Namespace", "metadata": {"name": "n"}},
    {"kind": "Pod", "metadata": {"name": "a", "namespace": "n", "labels": {"app": "a"}}, "status": {"podIP": "10.0.0.1"}},
    {"kind": "Pod", "metadata": {"name": "b", "namespace": "n", "labels": ["app=b"]}, "status": {"podIP": "10.0.0.2"}},
    {"kind": "Pod", "metadata": {"name": "c", "namespace": "n", "labels": {"app": "c"}}, "status": {"podIP": "10.0.0.3"}},
    {"kind": "NetworkPolicy", "metadata": {"name": "bad", "namespace": "n"},
     "spec": {"podSelector": {}, "policyTypes": [["Ingress"]]}},
    {"kind": "NetworkPolicy", "metadata": {"name": "ok", "namespace": "n"},
     "spec": {"podSelector": {"matchLabels": {"app": "c"}},
              "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a"}}}], "ports": [{"port": 80}]}]}},
]}


@pytest.fixture
def run(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(CLUSTER))

    def command(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kube_manager", *args, "-f", str(path)],
                              capture_output=True, text=True, timeout=60)
    return command


def test_translate_json_lists_the_poisoned_objects_and_exits_0(run):
    proc = run("translate", "-o", "json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    result = json.loads(proc.stdout)
    assert result["errors"] == [
        {"kind": "NetworkPolicy", "namespace": "n", "name": "bad",
         "reason": "spec.policyTypes[0]: expected a string, got list; the policy is rejected whole"},
        {"kind": "Pod", "namespace": "n", "name": "b", "reason": "metadata.labels: expected an object, got list"}]
    assert [p["fq_name"][-1] for p in result["firewall_policies"]] == ["k8s--isolation", "k8s--isolation-deny", "k8s-allowall", "k8s-denyall", "k8s-n-ok"]
    assert [w["name"] for w in result["workloads"]] == ["a", "c"]


@pytest.mark.parametrize("port, status", [("80", 0), ("81", 1)])
def test_explain_answers_beside_poisoned_objects(run, port, status):
    proc = run("explain", "--from", "n/a", "--to", "n/c", "--port", port, "--protocol", "TCP", "-o", "json")
    assert proc.returncode == status and "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["allowed"] is (status == 0)
