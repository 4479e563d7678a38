"""The write gate: fencing of config API writes by leadership (SPEC section 12).

The config API client calls `check(epoch)` right before it sends any write. A write passes only when
this instance leads in the term `epoch` and the term is still fresh: `valid_until` is the moment the
last successful renewal *started* plus the renew deadline, so the gate closes by itself when renewals
stop succeeding, even if no greenlet gets to run at that instant. Other candidates wait a full lease
duration (longer than the renew deadline) from when they saw the last renewal before they take over,
so a fenced leader's writes stop before anyone else's can start.

Each term has its own epoch and the daemon gives each term's client a check bound to it: work left
over from an earlier term can never write again, even if it survived being abandoned.
"""
from __future__ import annotations

import math
import time
from typing import Callable

from vnc_client.errors import WriteRefused


class WriteGate:
    """Open for one epoch at a time, until a deadline; closed otherwise."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._epoch = 0          # 0 is never opened: a client bound to it can only read
        self._valid_until = 0.0

    @property
    def epoch(self) -> int:
        return self._epoch

    def is_open(self, epoch: int) -> bool:
        return epoch == self._epoch and self._clock() < self._valid_until

    def check(self, epoch: int) -> None:
        """Raise WriteRefused unless a write of term `epoch` may go out now."""
        if epoch != self._epoch or not self._valid_until:
            raise WriteRefused(f"not the leader (write of term {epoch}, current term {self._epoch})")
        if self._clock() >= self._valid_until:
            raise WriteRefused(f"leadership not renewed within the renew deadline (term {epoch})")

    def open(self, valid_until: float = math.inf) -> int:
        """A new term starts (open forever without leader election); returns its epoch."""
        self._epoch += 1
        self._valid_until = valid_until
        return self._epoch

    def extend(self, valid_until: float) -> None:
        """The current term was renewed."""
        if self._valid_until:
            self._valid_until = max(self._valid_until, valid_until)

    def close(self) -> None:
        """The current term is over: no write of it passes any more."""
        self._valid_until = 0.0
