"""Retry policy of the config API client: capped exponential backoff (`ratelimit`) with full jitter.

Full jitter (a uniform draw between 0 and the capped exponential delay) spreads the retries of many
greenlets, or of several kube-manager replicas, that all saw the same contrail-api restart, so they
do not come back in lock-step. Only transient failures are retried: connection errors and the
statuses a proxy or a restarting API server gives (502, 503, 504); a 4xx is an answer, not an outage.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet

from .ratelimit import ExponentialRateLimiter, Jitter, full_jitter

RETRYABLE_STATUSES: FrozenSet[int] = frozenset({502, 503, 504})


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
        self.limiter()  # refuses delays that are not 0 < base_delay <= max_delay

    def limiter(self, jitter: Jitter = full_jitter) -> ExponentialRateLimiter:
        """The backoff of one request's retries: `base_delay`, doubled per round, at most `max_delay`."""
        return ExponentialRateLimiter(self.base_delay, self.max_delay, jitter)
