"""`contrail-kube-manager explain` end to end: manifests on disk, text or JSON out, exit statuses
(0 allowed, 1 dropped, 2 bad usage or input)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conformance.cluster import wiki_example_policies, xyz_cluster
from kube_manager.cli.main import main
from tests.support.paths import EXAMPLES

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop


@pytest.fixture
def manifest_dir(tmp_path: Path) -> Path:
    cluster = xyz_cluster(wiki_example_policies())
    (tmp_path / "cluster.yaml").write_text(
        yaml.safe_dump_all(cluster.objects["Namespace"] + cluster.objects["Pod"]), encoding="utf-8")
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "list.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v1", "kind": "List", "items": cluster.objects["NetworkPolicy"]}), encoding="utf-8")
    return tmp_path


def run(capsys, *argv: str):
    status = main(["explain", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_under_kubernetes_semantics_the_same_flow_is_dropped_and_both_verdicts_agree(manifest_dir, capsys):
    status, out, err = run(capsys, "-f", str(manifest_dir), "--from", "y/a", "--to", "x/a",
                           "--port", "80", "--protocol", "TCP", "-o", "json")
    assert status == 1, err
    result = json.loads(out)
    assert result["allowed"] is False and result["kubernetes_allowed"] is False and result["deviation"] is None
    assert result["rule"] == "k8s--isolated-egress-to-isolated-ingress"


def test_cluster_wide_flow(manifest_dir, capsys):
    status, out, err = run(capsys, "-f", str(manifest_dir), "--from", "y/a", "--to", "x/a",
                           "--port", "80", "--protocol", "TCP", "-o", "json", "--semantics", "cluster-wide")
    assert status == 0, err
    result = json.loads(out)
    assert out == json.dumps(result, sort_keys=True, indent=2) + "\n"
    assert result["allowed"] is True and result["kubernetes_allowed"] is False
    assert result["deviation"] == "cluster-wide"
    assert result["policies"] == ["y/p1", "x/p2"]
    assert result["policy"] == "k8s-y-p1" and result["rule"].startswith("k8s-y-egress-p1-0-")


def test_files_and_cluster_name(manifest_dir, capsys):
    status, out, err = run(capsys, "-f", str(manifest_dir / "cluster.yaml"),
                           str(manifest_dir / "policies"), "--from", "10.244.1.11", "--to", "x/a",
                           "--port", "81", "--protocol", "udp", "--cluster-name", "blue", "-o",
                           "json")
    assert status == 0, err
    result = json.loads(out)
    assert result["from"]["pod"] == "x/b"
    assert "application=blue" in result["from"]["tags"]
    assert result["policy"] == "blue-x-p2"
    assert (result["allowed"], result["kubernetes_allowed"], result["deviation"]) == (True, True, None)


@pytest.mark.parametrize("argv,message", [
    (["--from", "x/zz", "--to", "x/a", "--port", "80"], "no such pod"),
    (["--from", "x/a", "--to", "300.1.1.1", "--port", "80"], "expected NS/POD or an IP"),
    (["--from", "x/a", "--to", "x/b", "--port", "eighty"], "invalid port"),
    (["--from", "x/a", "--to", "x/b", "--port", "80", "--protocol", "icmp"], "unknown protocol"),
])
def test_bad_flow_input_exits_2_with_a_message(manifest_dir, capsys, argv, message):
    status, out, err = run(capsys, "-f", str(manifest_dir), *argv)
    assert status == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_unreadable_manifests_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed", encoding="utf-8")
    for path in (bad, tmp_path / "missing.yaml"):
        status, out, err = run(capsys, "-f", str(path), "--from", "x/a", "--to", "x/b",
                               "--port", "80")
        assert status == 2 and out == ""
        assert str(path) in err


def test_console_command(manifest_dir):
    done = subprocess.run([sys.executable, "-m", "kube_manager", "explain", "-f", str(manifest_dir),
                           "--from", "x/b", "--to", "y/a", "--port", "80", "-o", "json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rule"] == "k8s-allowall-ingress"
    missing_flag = subprocess.run([sys.executable, "-m", "kube_manager", "explain", "-f",
                                   str(manifest_dir), "--from", "x/b"],
                                  capture_output=True, text=True, timeout=60)
    assert missing_flag.returncode == 2 and "--to" in missing_flag.stderr


def explain_demo(*argv: str) -> subprocess.CompletedProcess:
    """The demo relies on the cluster-wide deviation (its web pods' egress is isolated)."""
    return subprocess.run([sys.executable, "-m", "kube_manager", "explain", "-f", str(DEMO), "--semantics",
                           "cluster-wide", *argv],
                          capture_output=True, text=True, timeout=60)


DEMO = EXAMPLES / "demo"


def test_exit_status_answers_the_question():
    """0 allowed, 1 dropped (as `kubectl auth can-i`), 2 bad usage or input; a real process."""
    allowed = explain_demo("--from", "shop/web-1", "--to", "shop/api-1", "--port", "9090")
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout.startswith("shop/web-1 -> shop/api-1 TCP 9090: allowed by Contrail")
    dropped = explain_demo("--from", "shop/web-1", "--to", "shop/api-2", "--port", "9090")
    assert dropped.returncode == 1, dropped.stderr
    assert dropped.stdout.startswith("shop/web-1 -> shop/api-2 TCP 9090: DROPPED by Contrail")
    for argv in (["--from", "shop/web-1", "--to", "shop/nope", "--port", "9090"],
                 ["--from", "shop/web-1", "--to", "shop/api-2", "--port", "0"],
                 ["--from", "shop/web-1", "--to", "shop/api-2", "--port", "1", "-o", "yaml"],
                 ["--from", "shop/web-1"]):
        bad = explain_demo(*argv)
        assert bad.returncode == 2 and bad.stdout == "", (argv, bad.stdout)
        assert "Traceback" not in bad.stderr and bad.stderr.strip()


def test_text_output_is_verdict_rule_and_trace_in_a_few_lines(capsys):
    status, out, err = run(capsys, "-f", str(DEMO), "--from", "shop/web-1", "--to", "shop/api-2",
                           "--port", "9090", "--semantics", "cluster-wide")
    assert status == 1
    lines = out.splitlines()
    assert lines[0] == ("shop/web-1 -> shop/api-2 TCP 9090: DROPPED by Contrail; Kubernetes would "
                        "drop it")
    assert lines[1] == ("deciding rule: k8s-shop-ingress-api-from-web-denyall in k8s-denyall "
                        "(deny)")
    assert "  shop/api-from-web: does not allow" in lines
    assert '    block 0: port "http" is 9091 on shop/api-2, not 9090' in lines
    assert any(line.startswith("label=k8s-sel-") and '"http" (TCP) is 9091' in line
               for line in lines)
    assert len(lines) < 25
    # shop/batch-egress is broken, but it is in neither end's trace: its warnings are not shown.
    assert err == ""


def test_warnings_only_when_they_concern_the_flow(capsys):
    status, out, err = run(capsys, "-f", str(DEMO), "--from", "shop/batch-1", "--to", "10.0.0.5",
                           "--port", "443", "-o", "json")
    assert status == 1 and json.loads(out)["allowed"] is False
    warnings = err.splitlines()
    assert warnings and all(w.startswith("warning: NetworkPolicy shop/batch-egress: ")
                            for w in warnings)


def test_json_has_the_spec_keys_and_the_trace(capsys):
    status, out, _err = run(capsys, "-f", str(DEMO), "--from", "shop/web-1", "--to",
                            "shop/api-2", "--port", "9090", "-o", "json")
    result = json.loads(out)
    assert status == 1
    assert {"allowed", "kubernetes_allowed", "rule", "policy", "deviation", "trace"} <= set(result)
    assert {s["side"] for s in result["trace"]} == {"egress", "ingress"}
    for step in result["trace"]:
        assert set(step) == {"side", "policy", "kind", "allows", "blocks"}
        for block in step["blocks"]:
            assert set(block) == {"index", "peer", "port", "reason"}
