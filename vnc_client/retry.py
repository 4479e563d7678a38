"""Retry policy of the config API client: capped exponential backoff with full jitter.

Full jitter (a uniform draw between 0 and the capped exponential delay) spreads the retries of many
greenlets, or of several kube-manager replicas, that all saw the same contrail-api restart, so they
do not come back in lock-step. Only transient failures are retried: connection errors and the
statuses a proxy or a restarting API server gives (502, 503, 504); a 4xx is an answer, not an outage.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, FrozenSet

RETRYABLE_STATUSES: FrozenSet[int] = frozenset({502, 503, 504})

# Jitter: maps the capped delay to the delay actually slept. Injectable so tests can pin it.
Jitter = Callable[[float], float]


def full_jitter(cap: float) -> float:
    """A uniform delay in [0, cap] (AWS "full jitter")."""
    return random.uniform(0.0, cap)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently one request is retried.

    `attempts` counts every HTTP attempt of one call, fail-overs to another endpoint included, so
    `attempts=1` means "never retry".
    """

    attempts: int = 6
    base_delay: float = 0.1
    max_delay: float = 5.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"retry attempts must be at least 1, got {self.attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("retry delays must not be negative")

    def cap(self, retry: int) -> float:
        """The upper bound of the delay before retry number `retry` (0-based)."""
        # min() before the power would overflow for huge retry counts; this stays finite.
        return min(self.max_delay, self.base_delay * (2 ** min(retry, 64)))
