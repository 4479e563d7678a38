"""`contrail-kube-manager explain` end to end: manifests on disk, JSON out, exit statuses."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conformance.cluster import wiki_example_policies, xyz_cluster
from kube_manager.cli import main


@pytest.fixture
def manifest_dir(tmp_path: Path) -> Path:
    cluster = xyz_cluster(wiki_example_policies())
    (tmp_path / "cluster.yaml").write_text(
        yaml.safe_dump_all(cluster.namespaces + cluster.pods), encoding="utf-8")
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "list.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v1", "kind": "List", "items": cluster.network_policies}), encoding="utf-8")
    return tmp_path


def run(capsys, *argv: str):
    status = main(["explain", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_cluster_wide_flow(manifest_dir, capsys):
    status, out, err = run(capsys, "-f", str(manifest_dir), "--from", "y/a", "--to", "x/a",
                           "--port", "80", "--protocol", "TCP")
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
                           "--port", "81", "--protocol", "udp", "--cluster-name", "blue")
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
                           "--from", "x/b", "--to", "y/a", "--port", "80"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rule"] == "k8s-allowall-ingress"
    missing_flag = subprocess.run([sys.executable, "-m", "kube_manager", "explain", "-f",
                                   str(manifest_dir), "--from", "x/b"],
                                  capture_output=True, text=True, timeout=60)
    assert missing_flag.returncode == 2 and "--to" in missing_flag.stderr
