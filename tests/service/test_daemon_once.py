"""`run --once --once-timeout N` is bounded as a whole (SPEC section 8, docs/operations.md): with
either API unreachable or hanging, it exits 1 with one line naming what did not converge."""
from __future__ import annotations

import socket
import subprocess
import sys
from typing import Iterator

import pytest

from simulators.kube_api.runner import EmulatorRunner
from tests.support.e2e_support import closed_port, write_config

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop

RUN = [sys.executable, "-m", "kube_manager", "run"]
ONCE = ["--once", "--once-timeout", "3"]
# When the Kubernetes side must get past its initial lists within the bound (the config API being
# what fails), the bound leaves room for a slow start: on a loaded 2-core machine, starting the
# interpreter and listing took more than 3 s, and the line then rightly named the initial list.
ONCE_PAST_THE_LISTS = ["--once", "--once-timeout", "8"]
# Far above the bound: the daemon on main never exited at all in these cases.
EXIT_LIMIT = 60


@pytest.fixture
def hanging_port() -> Iterator[int]:
    """A port whose server accepts connections (the kernel's backlog does) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield sock.getsockname()[1]


@pytest.fixture
def kube() -> Iterator[EmulatorRunner]:
    with EmulatorRunner() as runner:
        runner.store.create({"kind": "Namespace", "metadata": {"name": "dev"}})
        yield runner


def run_once(tmp_path, kube_server: str, kube_port: int, vnc: str, vnc_port: int,
             once=ONCE) -> subprocess.CompletedProcess:
    config = write_config(str(tmp_path / "kube-manager.conf"), kube_server, kube_port, vnc, vnc_port)
    return subprocess.run(RUN + ["-c", config] + once, capture_output=True, text=True, timeout=EXIT_LIMIT)


def not_converged_line(result: subprocess.CompletedProcess) -> str:
    lines = [line for line in result.stderr.splitlines() if "msg=\"not converged\"" in line
             or "msg=not converged" in line]
    assert len(lines) == 1, result.stderr[-3000:]
    return lines[0]


def test_kubernetes_api_unreachable(tmp_path):
    port = closed_port()
    # the line names the failed connection only once one was tried: the longer bound leaves a
    # loaded machine room to start the interpreter and make the first attempt
    result = run_once(tmp_path, "127.0.0.1", port, "embedded", 0, ONCE_PAST_THE_LISTS)
    assert result.returncode == 1, result.stderr[-3000:]
    line = not_converged_line(result)
    assert "initial list of clusternetworkpolicies, namespaces, networkpolicies, pods not done" in line, line
    assert f"127.0.0.1:{port}" in line and "unreachable" in line, line


def test_config_api_unreachable(tmp_path, kube):
    port = closed_port()
    result = run_once(tmp_path, "127.0.0.1", int(kube.url.rsplit(":", 1)[1]), "127.0.0.1", port,
                      ONCE_PAST_THE_LISTS)
    assert result.returncode == 1, result.stderr[-3000:]
    line = not_converged_line(result)
    assert "first resync not done: config API at" in line and f"127.0.0.1:{port}" in line, line
    assert "initial list" not in line


def test_config_api_that_never_answers(tmp_path, kube, hanging_port):
    result = run_once(tmp_path, "127.0.0.1", int(kube.url.rsplit(":", 1)[1]), "127.0.0.1", hanging_port,
                      ONCE_PAST_THE_LISTS)
    assert result.returncode == 1, result.stderr[-3000:]
    line = not_converged_line(result)
    assert f"first resync not done: config API at http://127.0.0.1:{hanging_port} did not answer" in line, line
