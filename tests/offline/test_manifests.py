"""Manifest loading (SPEC 8): JSON read as JSON, YAML as YAML, `-f -`, unreadable input = one line, exit 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kube_manager.offline import manifests as manifests_module
from kube_manager.offline.manifests import ManifestError, load_manifests, parse_documents
from vnc_client import jsoncodec
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop

ROOT = str(REPO)
EXAMPLES = os.path.join(ROOT, "examples")
DEMO = os.path.join(EXAMPLES, "demo")


def cli(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kube_manager", *argv], input=stdin, capture_output=True,
                          cwd=ROOT, timeout=120)


def as_json_list(paths) -> bytes:
    """The manifests under `paths` as one `kubectl get -o json` style List."""
    loaded = load_manifests(paths)
    items = ([dict(o, kind="Namespace") for o in loaded.objects["Namespace"]] + [dict(o, kind="Pod") for o in loaded.objects["Pod"]]
             + [dict(o, kind="NetworkPolicy") for o in loaded.objects["NetworkPolicy"]])
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=4).encode()


def test_json_and_yaml_files_load_the_same_objects(tmp_path):
    from_yaml = load_manifests([EXAMPLES])
    for index, path in enumerate(sorted(Path(EXAMPLES).rglob("*.yaml"))):
        documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
        for number, document in enumerate(documents):
            (tmp_path / f"{index:02d}-{number:03d}.json").write_text(json.dumps(document), encoding="utf-8")
    assert load_manifests([str(tmp_path)]) == from_yaml
    assert from_yaml.objects["NetworkPolicy"], "the examples hold policies"



def test_a_kind_that_is_not_a_string_is_skipped_like_any_unknown_kind(tmp_path):
    # `kind: [Pod]` is valid YAML; it used to reach a dict lookup and crash with "unhashable type".
    (tmp_path / "odd.yaml").write_text(
        "kind: [Pod]\nmetadata: {name: a}\n---\nkind: {Pod: 1}\n---\n"
        "kind: Pod\nmetadata: {name: b, namespace: n}\n", encoding="utf-8")
    loaded = load_manifests([str(tmp_path)])
    assert [p["metadata"]["name"] for p in loaded.objects["Pod"]] == ["b"]
    assert not loaded.objects["Namespace"] and not loaded.objects["NetworkPolicy"]

def test_json_is_read_by_a_json_parser_not_yaml():
    # YAML 1.1 reads the number 1e3 (no dot) as a string, and a JSON parser as 1000.0.
    assert parse_documents(b'{"kind": "Pod", "port": 1e3}', "x.json") == [{"kind": "Pod", "port": 1000.0}]
    assert parse_documents(b"kind: Pod\nport: 1e3\n", "x.yaml") == [{"kind": "Pod", "port": "1e3"}]


def test_flow_style_yaml_that_looks_like_json_is_still_yaml():
    assert parse_documents(b"{kind: Namespace, metadata: {name: a}}", "a.yaml") == [
        {"kind": "Namespace", "metadata": {"name": "a"}}]


def test_yaml_goes_through_libyaml_when_pyyaml_has_it():
    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML built without libyaml")
    assert manifests_module.safe_loader() is yaml.CSafeLoader


def test_the_stdlib_json_parser_is_the_fallback(monkeypatch):
    monkeypatch.setattr(jsoncodec, "orjson", None)
    assert parse_documents(b'[{"kind": "Pod"}]', "x.json") == [[{"kind": "Pod"}]]
    with pytest.raises(ManifestError, match=r"^x\.json: not valid JSON: Expecting"):
        parse_documents(b'{"kind": ', "x.json")


@pytest.mark.parametrize("output", ["json", "yaml", "table"])
def test_translate_reads_standard_input(tmp_path, output):
    dump = as_json_list([DEMO])
    (tmp_path / "dump.json").write_bytes(dump)
    from_stdin = cli("translate", "-f", "-", "-o", output, stdin=dump)
    from_file = cli("translate", "-f", str(tmp_path / "dump.json"), "-o", output)
    from_yaml = cli("translate", "-f", DEMO, "-o", output)
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout == from_yaml.stdout
    assert b"k8s-denyall" in from_stdin.stdout


def test_standard_input_mixes_with_files():
    namespaces = os.path.join(DEMO, "namespaces.yaml")
    with open(os.path.join(DEMO, "pods.yaml"), "rb") as pods, open(os.path.join(DEMO, "policies.yaml"), "rb") as np:
        stdin = pods.read() + b"\n---\n" + np.read()
    mixed = cli("translate", "-f", namespaces, "-", "-o", "json", stdin=stdin)
    assert mixed.returncode == 0, mixed.stderr
    assert mixed.stdout == cli("translate", "-f", DEMO, "-o", "json").stdout


def test_explain_reads_standard_input():
    done = cli("explain", "-f", "-", "--from", "shop/web-1", "--to", "shop/api-1", "--port", "9090", "-o", "json",
               "--semantics", "cluster-wide", stdin=as_json_list([DEMO]))  # the demo's web egress is isolated
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["allowed"] is True


UNREADABLE = [
    # file name, content (None: no file), what the one line says
    ("binary.yaml", b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary data, not YAML or JSON"),
    ("latin1.yaml", b"kind: Namespace\nmetadata: {name: caf\xe9}\n", "not UTF-8 text (byte 0xe9 at offset 36)"),
    ("broken.json", b'{"kind": "List", "items": [}', "not valid JSON: "),
    ("broken-list.yaml", b'{"kind": "List", "items": [\n', "not valid JSON: "),
    ("broken.yaml", b"kind: Pod\nmetadata: [\n", "not valid YAML: "),
    ("control.yaml", b"kind: Pod\n\x01\n", "not valid YAML: unacceptable character #x0001"),
    ("missing.yaml", None, "No such file or directory"),
]


def assert_one_line_exit_2(done: subprocess.CompletedProcess, command: str, name: str, fragment: str) -> None:
    err = done.stderr.decode()
    assert done.returncode == 2 and done.stdout == b""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith(f"contrail-kube-manager {command}: {name}: ") and fragment in err, err


@pytest.mark.parametrize("name, content, fragment", UNREADABLE, ids=[u[0] for u in UNREADABLE])
def test_unreadable_input_is_one_line_and_exit_2(tmp_path, name, content, fragment):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    assert_one_line_exit_2(cli("translate", "-f", str(path), "-o", "json"), "translate", str(path), fragment)
    if content is not None:
        done = cli("explain", "-f", "-", "--from", "a/b", "--to", "a/c", "--port", "80", stdin=content)
        assert_one_line_exit_2(done, "explain", "<stdin>", fragment.replace("JSON: ", ""))


def test_an_unreadable_file_in_a_directory_is_named(tmp_path):
    (tmp_path / "good.yaml").write_text("kind: Namespace\nmetadata: {name: a}\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.json").write_bytes(b"\xff\xfe{}")
    done = cli("translate", "-f", str(tmp_path))
    assert_one_line_exit_2(done, "translate", str(tmp_path / "sub" / "bad.json"), "not UTF-8 text")


def test_run_demo_reads_standard_input():
    stdin = b"\n---\n".join(path.read_bytes() for path in sorted(Path(DEMO).glob("*.yaml")))
    done = subprocess.run([sys.executable, "-m", "kube_manager", "run", "--demo", "-", "--once",
                           "--http-server-port", "0"], input=stdin, capture_output=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    demo = load_manifests([DEMO])
    assert (f'msg="emulated API server loaded" namespaces={len(demo.objects["Namespace"])} pods={len(demo.objects["Pod"])} '
            f'network_policies={len(demo.objects["NetworkPolicy"])}').encode() in done.stderr


def test_run_demo_with_an_unreadable_file_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\x00\x01")
    done = subprocess.run([sys.executable, "-m", "kube_manager", "run", "--demo", str(bad), "--once",
                           "--http-server-port", "0"], capture_output=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert f"contrail-kube-manager: {bad}: binary data, not YAML or JSON\n".encode() in done.stderr
    assert b"Traceback" not in done.stderr
