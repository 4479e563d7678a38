"""Keystone v3 auth of VncClient: token use, the single re-authentication on 401, no secret leaks."""
from __future__ import annotations

import logging

import pytest

from vnc_client.auth import KeystoneAuth, KeystoneCredentials
from vnc_client.client import VncClient
from vnc_client.errors import InvalidResponse, Unauthorized, VncConnectionError
from tests.support.scripted_http import DROP, ScriptedServer, header_matcher, json_params_matcher, scripted_proxy

API = "http://vnc.test:8082"
KEYSTONE = "http://keystone.test:5000/v3/auth/tokens"
PASSWORD = "s3cret-pa55"
TOKENS = ["gAAAAA-token-one", "gAAAAA-token-two"]
CREDS = KeystoneCredentials(KEYSTONE, "admin", PASSWORD, "k8s-tenant", domain="Default")

EXPECTED_AUTH_BODY = {
    "auth": {
        "identity": {
            "methods": ["password"],
            "password": {"user": {"name": "admin", "domain": {"name": "Default"}, "password": PASSWORD}},
        },
        "scope": {"project": {"name": "k8s-tenant", "domain": {"name": "Default"}}},
    }
}


@pytest.fixture
def rsps(monkeypatch):
    yield from scripted_proxy(monkeypatch, ordered=True)


def keystone_ok(rsps: ScriptedServer, token: str) -> None:
    rsps.post(KEYSTONE, status=201, headers={"X-Subject-Token": token}, json={"token": {"methods": ["password"]}},
              match=[json_params_matcher(EXPECTED_AUTH_BODY)])


def api(rsps: ScriptedServer, token: str, **answer) -> None:
    rsps.get(f"{API}/tag/t-1", match=[header_matcher({"X-Auth-Token": token})], **answer)


def test_authenticates_once_and_sends_the_token_on_every_request(rsps):
    keystone_ok(rsps, TOKENS[0])
    api(rsps, TOKENS[0], json={"tag": {"uuid": "t-1"}})
    api(rsps, TOKENS[0], json={"tag": {"uuid": "t-1"}})
    with VncClient("vnc.test", credentials=CREDS) as c:
        c.read("tag", "t-1")
        c.read("tag", "t-1")
    assert [call.request.url for call in rsps.calls] == [KEYSTONE, f"{API}/tag/t-1", f"{API}/tag/t-1"]


def test_a_401_re_authenticates_once_and_retries_with_the_new_token(rsps):
    keystone_ok(rsps, TOKENS[0])
    api(rsps, TOKENS[0], status=401, body="token expired")
    keystone_ok(rsps, TOKENS[1])
    api(rsps, TOKENS[1], json={"tag": {"uuid": "t-1"}})
    with VncClient("vnc.test", credentials=CREDS) as c:
        assert c.read("tag", "t-1") == {"uuid": "t-1"}
    assert len(rsps.calls) == 4


def test_a_second_401_raises_unauthorized(rsps):
    keystone_ok(rsps, TOKENS[0])
    api(rsps, TOKENS[0], status=401, body="token expired")
    keystone_ok(rsps, TOKENS[1])
    api(rsps, TOKENS[1], status=401, body="still no")
    with VncClient("vnc.test", credentials=CREDS) as c, pytest.raises(Unauthorized, match="GET /tag/t-1 -> 401"):
        c.read("tag", "t-1")
    assert len(rsps.calls) == 4


def test_without_auth_a_401_is_raised_at_once(rsps):
    rsps.get(f"{API}/tag/t-1", status=401, body="auth required")
    with VncClient("vnc.test") as c, pytest.raises(Unauthorized):
        c.read("tag", "t-1")
    assert len(rsps.calls) == 1
    assert "X-Auth-Token" not in rsps.calls[0].request.headers


def test_keystone_refusal_is_unauthorized_and_hides_an_echoed_password(rsps):
    rsps.post(KEYSTONE, status=401, body=f"The request you have made requires authentication ({PASSWORD})")
    with VncClient("vnc.test", credentials=CREDS) as c, pytest.raises(Unauthorized) as info:
        c.read("tag", "t-1")
    assert "POST /v3/auth/tokens -> 401" in str(info.value)
    assert PASSWORD not in str(info.value) and PASSWORD not in info.value.body


def test_keystone_unreachable_is_a_connection_error(rsps):
    rsps.post(KEYSTONE, body=DROP)
    with VncClient("vnc.test", credentials=CREDS) as c, pytest.raises(VncConnectionError, match="cannot reach Keystone"):
        c.home()


def test_keystone_success_without_a_token_header_is_an_invalid_response(rsps):
    rsps.post(KEYSTONE, status=201, json={})
    with VncClient("vnc.test", credentials=CREDS) as c, pytest.raises(InvalidResponse, match="X-Subject-Token"):
        c.home()


def test_refresh_skips_keystone_when_another_caller_already_refreshed(rsps):
    keystone_ok(rsps, TOKENS[0])
    keystone_ok(rsps, TOKENS[1])
    auth = KeystoneAuth(CREDS, (1.0, 1.0))
    assert auth.token() == TOKENS[0]
    assert auth.refresh(TOKENS[0]) == TOKENS[1]
    assert auth.refresh(TOKENS[0]) == TOKENS[1]  # stale token already replaced: no third call
    assert len(rsps.calls) == 2


@pytest.mark.parametrize("url, expected", [
    ("http://ks:35357/v3/auth/tokens", "http://ks:35357/v3/auth/tokens"),
    ("http://ks:5000/v3/", "http://ks:5000/v3/auth/tokens"),
])
def test_tokens_url_accepts_the_full_url_or_the_v3_base(url, expected):
    assert KeystoneCredentials(url, "u", "p", "t").tokens_url == expected


@pytest.mark.parametrize("url, user, message", [("keystone:5000", "u", "http"), ("http://ks/v3", "", "auth_user")])
def test_bad_credentials_settings_are_refused(url, user, message):
    with pytest.raises(ValueError, match=message):
        KeystoneCredentials(url, user, "p", "t")


def test_no_password_or_token_in_logs_errors_or_reprs(rsps, caplog):
    keystone_ok(rsps, TOKENS[0])
    api(rsps, TOKENS[0], status=401, body="token expired")
    keystone_ok(rsps, TOKENS[1])
    api(rsps, TOKENS[1], status=503, body="busy")
    api(rsps, TOKENS[1], status=401, body=f"token {TOKENS[1]} refused")  # a server echoing the token
    with caplog.at_level(logging.DEBUG):
        with VncClient("vnc.test", credentials=CREDS, sleep=lambda s: None) as c:
            with pytest.raises(Unauthorized) as info:
                c.read("tag", "t-1")
            client_repr = repr(c) + repr(CREDS) + repr(c.__dict__)
    assert "re-authenticating" in caplog.text and "will retry" in caplog.text  # the paths ran and logged
    for secret in [PASSWORD, *TOKENS]:
        assert secret not in caplog.text
        assert secret not in str(info.value)
    assert PASSWORD not in client_repr
