"""A reader that leaves early (`| head`, SPEC 8): the offline commands end silently, without a
traceback, and their exit status keeps its meaning (explain: 0 allowed, 1 dropped)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kube_manager.offline.serialize import CHUNK
from tests.support.builders import namespace, pod
from tests.support.paths import EXAMPLES, REPO

pytestmark = pytest.mark.slow  # a process per case: out of the inner loop

DEMO = str(EXAMPLES / "demo")
OPEN_SHOP = """kind: NetworkPolicy
apiVersion: networking.k8s.io/v1
metadata: {name: allow-all, namespace: shop}
spec: {podSelector: {}, policyTypes: [Ingress], ingress: [{}]}
"""
FLOW = ["--from", "monitoring/prometheus-0", "--to", "shop/api-1"]

CASES = [  # (arguments after -f DEMO, exit status)
    (["explain", *FLOW, "--port", "9100", "-o", "json"], 0),
    (["explain", *FLOW, "--port", "9100"], 0),
    (["explain", *FLOW, "--port", "9090", "-o", "json"], 1),
    (["translate", "-o", "json"], 0),
    (["translate", "-o", "table"], 0),
    (["what-if", "--change", "{change}"], 0),
    (["what-if", "--change", "{change}", "-o", "json"], 0),
]


def run_with_reader_gone(args):
    """The command with its standard output a pipe whose reader closed before anything came."""
    proc = subprocess.Popen([sys.executable, "-m", "kube_manager", args[0], "-f", DEMO, *args[1:]],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves at once: every write the command makes meets EPIPE
    stderr = proc.stderr.read().decode()
    return proc.wait(60), stderr


@pytest.mark.parametrize("args, status", CASES, ids=lambda c: " ".join(c) if isinstance(c, list) else str(c))
def test_a_reader_that_leaves_early_ends_the_command_silently(tmp_path, args, status):
    change = tmp_path / "change.yaml"
    change.write_text(OPEN_SHOP)
    code, stderr = run_with_reader_gone([arg.format(change=change) for arg in args])
    assert "Traceback" not in stderr and "Broken" not in stderr, stderr
    assert code == status, stderr


def test_head_reads_the_first_bytes_of_the_answer():
    """The same through a shell pipeline, as an operator types it."""
    result = subprocess.run(f"{sys.executable} -m kube_manager explain -f {DEMO} --from shop/web-1 "
                            "--to shop/api-2 --port 9090 -o json | head -c 10; exit ${PIPESTATUS[0]}",
                            shell=True, executable="/bin/bash", capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert (result.returncode, result.stdout, result.stderr) == (1, '{\n  "actio', "")


def test_a_reader_that_leaves_in_the_middle_of_a_long_answer_ends_translate_silently(tmp_path):
    """`translate -o json` writes a long list in parts, each made once the one before is written:
    a reader gone after the first bytes stops it between two parts, silently."""
    dump = tmp_path / "cluster.json"
    pods = [pod("big", f"p-{i}", f"10.1.{i // 250}.{i % 250 + 1}", {"app": f"a{i % 7}"}) for i in range(CHUNK + 500)]
    dump.write_text(json.dumps({"kind": "List", "items": [namespace("big"), *pods]}))
    proc = subprocess.Popen([sys.executable, "-m", "kube_manager", "translate", "-f", str(dump), "-o", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10) == b'{\n  "clust'  # the answer has begun: the pipe's buffer is full
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert (proc.wait(60), stderr) == (0, "")
