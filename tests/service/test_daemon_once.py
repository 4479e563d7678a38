"""`run --once --once-timeout N` is bounded as a whole (SPEC section 8, docs/operations.md): with
either API unreachable or hanging, it exits 1 with one line naming what did not converge."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, Tuple

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


class OnceRun:
    """`run -c FILE --once ...` started now; `result()` waits for its exit. The runs of this module
    each wait out their bound, so they are all started at once (`runs`) and their waits overlap."""

    def __init__(self, folder: Path, kube_server: str, kube_port: int, vnc: str, vnc_port: int,
                 once=ONCE) -> None:
        folder.mkdir()
        config = write_config(str(folder / "kube-manager.conf"), kube_server, kube_port, vnc, vnc_port)
        self.args = RUN + ["-c", config] + once
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(self) -> subprocess.CompletedProcess:
        try:
            stdout, stderr = self.proc.communicate(timeout=EXIT_LIMIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        return subprocess.CompletedProcess(self.args, self.proc.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def hanging_port() -> Iterator[int]:
    """A port whose server accepts connections (the kernel's backlog does) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield sock.getsockname()[1]


@pytest.fixture(scope="module")
def kube() -> Iterator[EmulatorRunner]:
    """Only read by the daemons (one namespace, nothing to write back)."""
    with EmulatorRunner() as runner:
        runner.store.create({"kind": "Namespace", "metadata": {"name": "dev"}})
        yield runner


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, kube: EmulatorRunner,
         hanging_port: int) -> Iterator[Dict[str, Tuple[OnceRun, int]]]:
    """Each test's run, by test, with the port it is refused or ignored on."""
    folder = tmp_path_factory.mktemp("once")
    kube_port = int(kube.url.rsplit(":", 1)[1])
    closed_kube, closed_vnc = closed_port(), closed_port()
    started = {
        # the line names the failed connection only once one was tried: the longer bound leaves a
        # loaded machine room to start the interpreter and make the first attempt
        "kubernetes unreachable": (OnceRun(folder / "a", "127.0.0.1", closed_kube, "embedded", 0,
                                           ONCE_PAST_THE_LISTS), closed_kube),
        "config API unreachable": (OnceRun(folder / "b", "127.0.0.1", kube_port, "127.0.0.1", closed_vnc,
                                           ONCE_PAST_THE_LISTS), closed_vnc),
        "config API never answers": (OnceRun(folder / "c", "127.0.0.1", kube_port, "127.0.0.1",
                                             hanging_port, ONCE_PAST_THE_LISTS), hanging_port),
    }
    yield started
    for run, _port in started.values():
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.communicate()


def not_converged_line(result: subprocess.CompletedProcess) -> str:
    lines = [line for line in result.stderr.splitlines() if "msg=\"not converged\"" in line
             or "msg=not converged" in line]
    assert len(lines) == 1, result.stderr[-3000:]
    return lines[0]


def test_kubernetes_api_unreachable(runs):
    run, port = runs["kubernetes unreachable"]
    result = run.result()
    assert result.returncode == 1, result.stderr[-3000:]
    line = not_converged_line(result)
    assert "initial list of clusternetworkpolicies, namespaces, networkpolicies, pods not done" in line, line
    assert f"127.0.0.1:{port}" in line and "unreachable" in line, line


def test_config_api_unreachable(runs):
    run, port = runs["config API unreachable"]
    result = run.result()
    assert result.returncode == 1, result.stderr[-3000:]
    line = not_converged_line(result)
    assert "first resync not done: config API at" in line and f"127.0.0.1:{port}" in line, line
    assert "initial list" not in line


def test_config_api_that_never_answers(runs):
    run, hanging_port = runs["config API never answers"]
    result = run.result()
    assert result.returncode == 1, result.stderr[-3000:]
    line = not_converged_line(result)
    assert f"first resync not done: config API at http://127.0.0.1:{hanging_port} did not answer" in line, line
