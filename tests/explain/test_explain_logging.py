"""`explain` says whether the deciding rule logs its matches (SPEC 15's policy-logging annotation),
from the rule's body in the translation: in JSON (`logged`), in text, and on the /explain page."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from introspect.app import create_app
from kube_manager.cli.main import main
from tests.support.introspect_support import build_db, call, offline_explainer

CLUSTER = """
apiVersion: v1
kind: Namespace
metadata: {name: shop, annotations: {contrail-kube-manager/policy-logging: %s}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
status: {podIP: 10.1.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: shop, labels: {app: db}}
status: {podIP: 10.1.0.2}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: db}}
  policyTypes: [Ingress]
  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}], ports: [{protocol: TCP, port: 5432}]}]
"""


@pytest.mark.parametrize("mode, port, logged", [
    ("deny", 5432, False),   # allowed by the policy's pass rule: deny mode does not log it
    ("deny", 80, True),      # dropped by its deny rule
    ("allow", 5432, True),
    ("allow", 80, False),
    ("all", 80, True),
    ("none-of-them", 80, False),  # a bad value logs nothing (and is reported)
])
def test_explain_says_whether_the_deciding_rule_logs(tmp_path: Path, capsys, mode, port, logged):
    (tmp_path / "cluster.yaml").write_text(CLUSTER % mode, encoding="utf-8")
    argv = ["explain", "-f", str(tmp_path), "--from", "shop/web", "--to", "shop/db", "--port", str(port)]
    main(argv + ["-o", "json"])
    result = json.loads(capsys.readouterr().out)
    assert result["rule"] and result["logged"] is logged
    main(argv)
    deciding = [line for line in capsys.readouterr().out.splitlines() if line.startswith("deciding rule:")]
    assert deciding == [f"deciding rule: {result['rule']} in {result['policy']} ({result['action']}"
                        f"{', logs its matches' if logged else ''})"]

    page = call(create_app(build_db(), explain=offline_explainer([str(tmp_path)]).explain),
                f"/explain?from=shop/web&to=shop/db&port={port}&protocol=TCP").text
    assert ('id="deciding-rule-logged"' in page) is logged
