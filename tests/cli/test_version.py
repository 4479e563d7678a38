"""The version (SPEC 8): `--version` on the command and on every subcommand, one source that
setup.py reads, and the `kube_manager_build_info` gauge and introspect index that show it."""
from __future__ import annotations

import platform
import subprocess
import sys

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from introspect.app import create_app
from kube_manager.observability.metrics import Metrics
from kube_manager.version import VERSION
from tests.support.introspect_support import NOW, build_db, call
from tests.support.paths import REPO

EXPECTED = f"contrail-kube-manager {VERSION} (Python {platform.python_version()})"


@pytest.mark.parametrize("args", [[], ["run"], ["translate"], ["explain"], ["what-if"], ["vnc-server"]],
                         ids=lambda args: " ".join(args) or "top")
def test_version_prints_the_version_and_exits_0(args):
    result = subprocess.run([sys.executable, "-m", "kube_manager", *args, "--version"],
                            capture_output=True, text=True, timeout=60, cwd=REPO)
    assert (result.returncode, result.stdout.strip(), result.stderr) == (0, EXPECTED, "")


def test_setup_py_reads_the_one_version():
    pytest.importorskip("setuptools", reason="a venv of Python 3.12 or newer has no setuptools")
    result = subprocess.run([sys.executable, "setup.py", "--version"], capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert result.stdout.strip().splitlines()[-1] == VERSION


def test_metrics_export_build_info():
    text = generate_latest(Metrics().registry).decode()
    samples = [(s.labels, s.value) for family in text_string_to_metric_families(text)
               for s in family.samples if s.name == "kube_manager_build_info"]
    assert samples == [({"version": VERSION, "python": platform.python_version()}, 1.0)]


def test_introspect_index_shows_the_version():
    app = create_app(build_db(), clock=lambda: NOW)
    assert f"Version {VERSION} (Python {platform.python_version()})" in call(app, "/").text
    index = call(app, "/?format=json").json()
    assert (index["version"], index["python"]) == (VERSION, platform.python_version())
