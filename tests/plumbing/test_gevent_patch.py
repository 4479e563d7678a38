"""gevent's patch_all with its plugins' entry points read once (plumbing/gevent_patch.py): the
same questions asked, the same answers, one reading of the installed distributions."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.paths import REPO


def test_patch_all_reads_the_entry_points_once_and_answers_every_question_as_before() -> None:
    probe = textwrap.dedent("""\
        from importlib import metadata
        real = metadata.entry_points
        readings, asked = [], []

        def counting(**params):
            readings.append(params)
            return real(**params)
        metadata.entry_points = counting
        from gevent import events
        real_notify = events.notify_and_call_entry_points

        def noting(event):
            asked.append(event.ENTRY_POINT_NAME)
            return real_notify(event)
        events.notify_and_call_entry_points = noting
        from kube_manager.plumbing import gevent_patch
        gevent_patch.patch_all()
        from gevent import monkey
        same = all(list(real().select(group=g)) == list(real(group=g)) for g in set(asked))
        print(len(readings), len(asked) > 10, metadata.entry_points is counting, same,
              monkey.is_module_patched("socket"), monkey.is_module_patched("ssl"))
        """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "True", "True", "True", "True", "True"]
