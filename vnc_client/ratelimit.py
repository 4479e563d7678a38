"""The one retry backoff of the project: a per-item, capped exponential delay with jitter.

It has client-go's rate-limiter interface (`workqueue.ItemExponentialFailureRateLimiter`):
`when(item)` records one more failure of `item` and answers how long to wait before retrying it,
`forget(item)` starts the item over after a success, `num_requeues(item)` counts its failures so far.
The delay before retry n (0-based) is `min(cap, base * 2**n)`, then passed through a jitter.

Users: the config API client (one item per request: its attempts), the reconciler's work queue (one
item per key, and one for pods waiting for their VMI), the Kubernetes watchers (errors and repeated
expiries) and the daemon's start-up resync.

Why it lives in `vnc_client`: the client needs it and may import nothing from the application
(`kube_manager`, `introspect`), while the application already builds on `vnc_client`. The module is
generic (standard library only, nothing about the config API) so the watcher and the reconciler use
it as they would a third-party utility; a top-level package of its own for one class was judged
not worth a fourth root in setup.py.

Jitter spreads the retries of many keys, greenlets or replicas that failed together. `full_jitter`
(a uniform draw in [0, d], AWS's "full jitter") suits the client, which retries few times; the
reconciler uses `half_jitter` ([d/2, d]) so a key's delay never collapses to near zero; the watchers
and the start-up resync use none, as before. `base` must be positive: a zero delay would retry a
failing server in a hot loop.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Dict, Hashable

# Jitter: maps the capped delay to the delay actually waited. Injectable so tests can pin it.
Jitter = Callable[[float], float]


def no_jitter(delay: float) -> float:
    """The capped delay itself."""
    return delay


def full_jitter(delay: float) -> float:
    """A uniform delay in [0, delay] (AWS "full jitter")."""
    return random.uniform(0.0, delay)


def half_jitter(delay: float) -> float:
    """A uniform delay in [delay/2, delay]: spread out, but never close to zero."""
    return random.uniform(delay / 2, delay)


@dataclass
class ExponentialRateLimiter:
    """Per-item failure counts and the delay they earn: `base`, 2x, 4x ... at most `cap`, jittered."""

    base: float
    cap: float
    jitter: Jitter = no_jitter
    _failures: Dict[Hashable, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.base <= self.cap:
            raise ValueError(f"backoff needs 0 < base <= cap, got base={self.base} cap={self.cap}")

    def when(self, item: Hashable) -> float:
        """Record one more failure of `item`; the delay before retrying it."""
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        # min() before the power: no overflow however often an item fails.
        return self.jitter(min(self.cap, self.base * (2 ** min(failures, 64))))

    def forget(self, item: Hashable) -> None:
        """`item` succeeded: its next failure waits `base` again."""
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        """How often `item` failed since it was last forgotten."""
        return self._failures.get(item, 0)
