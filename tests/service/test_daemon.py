"""The `run` command as operators use it: the demo main job, exit statuses, clean stops, and the
gevent monkey-patching happening before any network library is imported."""
from __future__ import annotations

import platform
import socket
import subprocess
import sys
import textwrap

import pytest

from kube_manager.offline.manifests import load_manifests
from kube_manager.translator import translate
from simulators.kube_api.store import SYSTEM_NAMESPACES
from kube_manager.version import VERSION
from tests.support.e2e_support import DaemonProcess, closed_port, write_config
from tests.support.waiting import wait_until
from tests.support.paths import EXAMPLES

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop

EXAMPLES = str(EXAMPLES / "demo")
RUN = [sys.executable, "-m", "kube_manager", "run"]


def test_demo_once_converges_the_examples_and_exits_0():
    result = subprocess.run(RUN + ["--demo", EXAMPLES, "--once", "--http-server-port", "0"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    manifests = load_manifests([EXAMPLES])
    # The emulated cluster, as a real one, also holds the system namespaces (each with its tag).
    held = dict(manifests.objects, Namespace=list(manifests.objects["Namespace"]) + [
        {"kind": "Namespace", "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}}}
        for name in SYSTEM_NAMESPACES if name not in {n["metadata"]["name"] for n in manifests.objects["Namespace"]}])
    translation = translate(held).to_dict()
    objects = (len(translation["tags"]) + len(translation["address_groups"]) + len(translation["firewall_rules"])
               + len(translation["firewall_policies"]) + 1)
    converged = [line for line in result.stderr.splitlines() if "msg=converged" in line]
    assert converged, result.stderr[-3000:]
    assert f"created={objects} " in converged[0] and "updated=0 " in converged[0]
    assert f"tagged={len(manifests.objects['Pod'])} " in converged[0]
    starting = next(line for line in result.stderr.splitlines() if "kube-manager starting" in line)
    assert f"version={VERSION} python={platform.python_version()} " in starting, starting


def test_a_term_begins_before_the_initial_lists_are_in_and_its_resync_after():
    """Restart time (issue 12): the term's reconciler is connected before the initial lists are
    in (here at once: no election), so that its first listings go out while they are translated;
    its resync waits for them, and the run converges."""
    result = subprocess.run(RUN + ["--demo", EXAMPLES, "--once", "--http-server-port", "0", "--leader-elect", "false"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stderr.splitlines()

    def first(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)
    assert first("leading: start-up resync") < first("initial lists done") < first("resync done") < first("converged")


def test_a_bad_value_stops_start_up_with_status_2_naming_the_key():
    result = subprocess.run(RUN + ["--vnc-endpoint-port", "99999"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "vnc_endpoint_port" in result.stderr and "99999" in result.stderr


def test_a_log_file_that_cannot_be_opened_stops_start_up_with_status_2_naming_the_key(tmp_path):
    log_file = tmp_path / "no-such-dir" / "km.log"
    result = subprocess.run(RUN + ["--log-file", str(log_file)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert f"configuration error: [DEFAULTS] log_file: cannot open '{log_file}'" in result.stderr, result.stderr


def test_sigterm_stops_cleanly_with_status_0_even_while_waiting_for_the_api_server(tmp_path):
    config = write_config(str(tmp_path / "kube-manager.conf"), "127.0.0.1", closed_port(), "embedded", 0)
    daemon = DaemonProcess(config)
    try:
        wait_until(lambda: daemon.metric("kube_manager_watch_restarts_total") >= 1, "a failed watch retried",
                   timeout=60)
        assert daemon.stop() == 0  # within STOP_LIMIT seconds
    finally:
        daemon.kill()


def test_run_patches_gevent_before_any_network_library_is_imported():
    probe = textwrap.dedent("""\
        import sys
        import kube_manager.cli.main as cli
        early = [m for m in ("ssl", "urllib3", "requests", "kubernetes") if m in sys.modules]
        cli.build_parser(["run"])  # imports kube_manager.cli.cmd_run, as `contrail-kube-manager run` does
        from gevent import monkey
        import ssl, requests, kubernetes
        print(early, monkey.is_module_patched("socket"), monkey.is_module_patched("ssl"))
        """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "True", "True"]
    assert "MonkeyPatchWarning" not in result.stderr


# How a start ends -> (its arguments, its status, modules it must not have loaded). A `--once` run,
# which no page or question reaches, converges without the pages (jinja2) or the explainer; a bad
# configuration stops before the translator, the reconciler or the Kubernetes client are loaded.
NOT_LOADED = {
    "a --once run": (["--demo", EXAMPLES, "--once", "--http-server-port", "0"], 0,
                     ("jinja2", "introspect.views", "introspect.explain", "kube_manager.explain.explainer")),
    "a bad configuration": (["--vnc-endpoint-port", "99999"], 2,
                            ("kube_manager.translator", "kube_manager.reconciler", "kubernetes")),
}


@pytest.mark.parametrize("ending", sorted(NOT_LOADED))
def test_a_start_loads_only_what_it_reaches(ending):
    """A start costs what it must (docs/operations.md): what a start ending so never reaches is
    never loaded; the collector paused for the start's imports is running again."""
    args, status, late = NOT_LOADED[ending]
    probe = textwrap.dedent(f"""\
        import atexit, gc, sys
        from kube_manager.cli.main import main
        atexit.register(lambda: print([m for m in {late!r} if m in sys.modules], gc.isenabled()))
        sys.exit(main(["run", *{args!r}]))
        """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == status, result.stderr[-3000:]
    assert result.stdout.split() == ["[]", "True"]


def test_a_taken_introspect_port_is_named_with_its_keys():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(RUN + ["--demo", EXAMPLES, "--once", "--http-server-port", str(port)],
                                capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert (f'msg="start-up failed: introspect server cannot listen on 127.0.0.1:{port} (http_server_ip, '
            f'http_server_port): Address already in use"') in result.stderr, result.stderr[-3000:]
