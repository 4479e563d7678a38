"""The one backoff (vnc_client.ratelimit): client-go's when / forget / num_requeues, capped, jittered."""
from __future__ import annotations

import pytest

from vnc_client.ratelimit import ExponentialRateLimiter, full_jitter, half_jitter, no_jitter


def test_delays_double_up_to_the_cap_per_item_and_forget_restarts() -> None:
    limiter = ExponentialRateLimiter(0.5, 4.0)
    assert [limiter.when("k") for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert limiter.when("other") == 0.5  # per item
    assert (limiter.num_requeues("k"), limiter.num_requeues("other"), limiter.num_requeues("new")) == (6, 1, 0)
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0
    assert limiter.when("k") == 0.5


def test_a_huge_failure_count_stays_at_the_cap() -> None:
    limiter = ExponentialRateLimiter(0.1, 30.0)
    delays = [limiter.when("k") for _ in range(2000)]
    assert delays[-1] == 30.0 and max(delays) == 30.0


def test_the_jitter_sees_the_capped_delay() -> None:
    seen = []
    limiter = ExponentialRateLimiter(1.0, 3.0, jitter=lambda d: seen.append(d) or d / 10)
    assert [limiter.when("k") for _ in range(3)] == [0.1, 0.2, 0.3]
    assert seen == [1.0, 2.0, 3.0]


def test_half_jitter_stays_within_half_to_full_delay() -> None:
    limiter = ExponentialRateLimiter(1.0, 8.0, half_jitter)
    delays = [limiter.when("k") for _ in range(10)]
    caps = [1, 2, 4, 8, 8, 8, 8, 8, 8, 8]
    assert all(cap / 2 <= d <= cap for d, cap in zip(delays, caps, strict=True))


def test_full_jitter_stays_between_zero_and_the_delay_and_none_keeps_it() -> None:
    draws = [full_jitter(2.0) for _ in range(200)]
    assert all(0.0 <= d <= 2.0 for d in draws) and len(set(draws)) > 1
    assert no_jitter(2.5) == 2.5


@pytest.mark.parametrize("base, cap", [(0, 1), (-1, 1), (2, 1)])
def test_nonsense_is_refused(base: float, cap: float) -> None:
    with pytest.raises(ValueError, match="0 < base <= cap"):
        ExponentialRateLimiter(base, cap)
