"""A start's order against an API server in a process of its own, as a cluster's is: the watchers'
lists go out before the rest of the start-up (the introspect server and its imports), which the
daemon does while the API server renders them, and the term's reconciler is still connected
before those lists are applied, so that its first listings go out while they are translated."""
from __future__ import annotations

import subprocess
import sys

from tests.support.e2e_support import BASE, Environment

RUN_TIMEOUT = 120


def test_the_lists_go_out_first_and_the_term_begins_before_they_are_applied():
    env = Environment(BASE)
    try:
        result = subprocess.run([sys.executable, "-m", "kube_manager", "run", "-c", env.config_file(), "--once",
                                 "--leader-elect", "false"], capture_output=True, text=True, timeout=RUN_TIMEOUT)
    finally:
        env.close()
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stderr.splitlines()

    def first(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)
    assert (first("initial lists asked") < first("introspect server listening") < first("leading: start-up resync")
            < first("initial lists done") < first("resync done") < first("converged"))
