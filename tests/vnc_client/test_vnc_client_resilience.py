"""VncClient error mapping, retries with capped backoff, and endpoint fail-over (a scripted HTTP server)."""
from __future__ import annotations

from typing import List

import pytest

from vnc_client.client import VncClient
from vnc_client.errors import (BadRequest, Conflict, Forbidden, NotFound, ServerError, Unauthorized, VncConnectionError,
                               VncError, VncHttpError)
from vnc_client.retry import RetryPolicy
from tests.support.scripted_http import CUT, DROP, Slow, scripted_proxy

A = "http://vnc-a:8082"
B = "http://vnc-b:8082"


class Sleeper:
    """Records the delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: List[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def rsps(monkeypatch):
    # Ordered: each registered answer is used once, in registration order.
    yield from scripted_proxy(monkeypatch, ordered=True)


@pytest.fixture
def sleeper() -> Sleeper:
    return Sleeper()


def make_client(sleeper: Sleeper, endpoints: str = "vnc-a", attempts: int = 6) -> VncClient:
    policy = RetryPolicy(attempts=attempts, base_delay=0.1, max_delay=0.5)
    return VncClient(endpoints, retry=policy, sleep=sleeper, jitter=lambda cap: cap, read_timeout=0.5)


@pytest.mark.parametrize("status, error", [
    (400, BadRequest), (401, Unauthorized), (403, Forbidden), (404, NotFound), (409, Conflict), (500, ServerError),
    (501, ServerError),
])
def test_error_statuses_raise_typed_errors_without_retry(rsps, sleeper, status, error):
    rsps.post(f"{A}/firewall-rules", status=status, body="Bad endpoint_1: tag a=b not found\n")
    with make_client(sleeper) as c, pytest.raises(error) as info:
        c.create("firewall-rule", {"fq_name": ["default-policy-management", "r"]})
    assert str(info.value) == f"POST /firewall-rules -> {status}: Bad endpoint_1: tag a=b not found"
    assert (info.value.method, info.value.path, info.value.status) == ("POST", "/firewall-rules", status)
    assert len(rsps.calls) == 1
    assert sleeper.delays == []


def test_other_client_errors_get_the_generic_http_error(rsps, sleeper):
    rsps.get(f"{A}/tag/t-1", status=412, body="over quota")
    with make_client(sleeper) as c, pytest.raises(VncHttpError) as info:
        c.read("tag", "t-1")
    assert type(info.value) is VncHttpError and info.value.status == 412


def test_a_huge_error_body_is_truncated_in_the_message(rsps, sleeper):
    rsps.get(f"{A}/tag/t-1", status=400, body="x" * 10000)
    with make_client(sleeper) as c, pytest.raises(BadRequest) as info:
        c.read("tag", "t-1")
    assert len(str(info.value)) < 2100 and info.value.body == "x" * 10000


@pytest.mark.parametrize("failure", [
    {"status": 502}, {"status": 503}, {"status": 504},
    {"body": DROP},  # the connection closed without an answer
    {"body": Slow(2.0)},  # no answer within the read timeout
    {"body": CUT},  # the connection dropped in the middle of the answer
])
def test_transient_failures_are_retried_after_a_backoff(rsps, sleeper, failure):
    rsps.get(f"{A}/tag/t-1", **failure)
    rsps.get(f"{A}/tag/t-1", json={"tag": {"uuid": "t-1"}})
    with make_client(sleeper) as c:
        assert c.read("tag", "t-1") == {"uuid": "t-1"}
    assert len(rsps.calls) == 2
    assert sleeper.delays == [0.1]


def test_backoff_doubles_and_is_capped_then_the_last_status_is_raised(rsps, sleeper):
    for _ in range(7):
        rsps.get(f"{A}/tag/t-1", status=503, body="no api server")
    with make_client(sleeper, attempts=7) as c, pytest.raises(ServerError) as info:
        c.read("tag", "t-1")
    assert info.value.status == 503 and "no api server" in str(info.value)
    assert len(rsps.calls) == 7
    assert sleeper.delays == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5, 0.5])


def test_connection_errors_on_every_attempt_raise_a_connection_error(rsps, sleeper):
    for _ in range(3):
        rsps.get(f"{A}/tag/t-1", body=DROP)
    with make_client(sleeper, attempts=3) as c, pytest.raises(VncConnectionError, match="after 3 attempts"):
        c.read("tag", "t-1")
    assert sleeper.delays == pytest.approx([0.1, 0.2])


def test_default_jitter_stays_between_zero_and_the_cap(rsps, sleeper):
    for _ in range(6):
        rsps.get(f"{A}/", status=503)
    policy = RetryPolicy(attempts=6, base_delay=0.1, max_delay=0.3)
    with VncClient("vnc-a", retry=policy, sleep=sleeper) as c, pytest.raises(ServerError):
        c.home()
    caps = [0.1, 0.2, 0.3, 0.3, 0.3]
    assert len(sleeper.delays) == len(caps)
    assert all(0 <= d <= cap for d, cap in zip(sleeper.delays, caps))


def test_a_single_attempt_never_retries(rsps, sleeper):
    rsps.get(f"{A}/", status=503)
    with make_client(sleeper, attempts=1) as c, pytest.raises(ServerError):
        c.home()
    assert len(rsps.calls) == 1 and sleeper.delays == []


def test_fail_over_to_the_next_endpoint_without_waiting_and_stay_there(rsps, sleeper):
    rsps.get(f"{A}/tag/t-1", body=DROP)
    rsps.get(f"{B}/tag/t-1", json={"tag": {"uuid": "t-1"}})
    rsps.get(f"{B}/tag/t-2", json={"tag": {"uuid": "t-2"}})
    with make_client(sleeper, "vnc-a,vnc-b") as c:
        assert c.read("tag", "t-1") == {"uuid": "t-1"}
        assert c.current_endpoint == B
        assert c.read("tag", "t-2") == {"uuid": "t-2"}
    assert [call.request.url for call in rsps.calls] == [f"{A}/tag/t-1", f"{B}/tag/t-1", f"{B}/tag/t-2"]
    assert sleeper.delays == []


def test_backoff_happens_once_per_round_of_endpoints(rsps, sleeper):
    rsps.get(f"{A}/", status=503)
    rsps.get(f"{B}/", body=DROP)
    rsps.get(f"{A}/", status=502)
    rsps.get(f"{B}/", status=504)
    rsps.get(f"{A}/", json={"links": []})
    with make_client(sleeper, "vnc-a,vnc-b") as c:
        assert c.home() == {"links": []}
    assert sleeper.delays == pytest.approx([0.1, 0.2])


def test_a_client_error_from_the_second_endpoint_is_not_retried(rsps, sleeper):
    rsps.get(f"{A}/tag/t-1", status=503)
    rsps.get(f"{B}/tag/t-1", status=404, body="not found")
    with make_client(sleeper, "vnc-a,vnc-b") as c, pytest.raises(NotFound):
        c.read("tag", "t-1")
    assert len(rsps.calls) == 2


def test_a_request_that_can_never_work_is_a_vnc_error_without_retry(rsps, sleeper):
    # A header value that would split the request in two is refused before anything is sent.
    with VncClient("vnc-a", agent="x\r\nInjected: 1", sleep=sleeper) as c, \
            pytest.raises(VncError, match="GET /: ValueError: Invalid header value"):
        c.home()
    assert len(rsps.calls) == 0 and sleeper.delays == []


@pytest.mark.parametrize("kwargs", [{"attempts": 0}, {"base_delay": -1}, {"max_delay": -0.5}, {"base_delay": 0},
                                    {"base_delay": 2.0, "max_delay": 1.0}])
def test_bad_retry_policies_are_refused(kwargs):
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)
