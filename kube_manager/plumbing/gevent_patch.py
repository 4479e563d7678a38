"""gevent's `monkey.patch_all`, its plugins' entry points read once rather than at every step.

At each of its steps (about 25: the whole, then each module before and after) `patch_all` asks
`importlib.metadata.entry_points(group=...)` for the plugins of that step's event, and each such
question reads the entry points of every installed distribution from disk: most of the time
`patch_all` takes, on the daemon's start path before anything else can run (docs/operations.md,
"A start that costs what it must"). Here the questions are answered from one reading of them all,
made just before; plugins are found and called as before.
"""
from __future__ import annotations

from importlib import metadata
from typing import Any


def patch_all() -> None:
    """`gevent.monkey.patch_all()`, with one reading of the installed entry points."""
    from gevent import monkey
    everything = metadata.entry_points()
    original = metadata.entry_points

    def entry_points(**params: Any) -> Any:
        return everything.select(**params) if params else everything
    metadata.entry_points = entry_points  # the same answers, read once
    try:
        monkey.patch_all()
    finally:
        metadata.entry_points = original
