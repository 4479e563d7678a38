"""What the handlers of the work-queue keys share with the reconciler: the bookkeeping."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .actual import ActualState
from .progress import ProgressBook
from .workqueue import WorkQueue


@dataclass
class Counters:
    """Writes by operation, and listing requests; what the benchmark and the logs report."""

    create: int = 0
    update: int = 0
    delete: int = 0
    set_tag: int = 0
    reads: int = 0
    conflicts: int = 0
    failures: int = 0
    last_write_at: float = 0.0  # time.monotonic() of the latest successful write

    def wrote(self, op: str, n: int = 1) -> None:
        setattr(self, op, getattr(self, op) + n)
        self.last_write_at = time.monotonic()

    @property
    def writes(self) -> int:
        return self.create + self.update + self.delete + self.set_tag


@dataclass(eq=False)
class Bookkeeping:
    """One reconciler's: what the config API holds, where each key stands, the queue, the counts."""

    actual: ActualState
    progress: ProgressBook
    queue: "WorkQueue[Any]"
    counters: Counters
