"""VncSession: requests' environment rules (proxies, NO_PROXY, CA bundle), looked up once per origin."""
from __future__ import annotations

from typing import Any, Dict

import pytest
import responses

from vnc_client.client import VncClient
from vnc_client.session import VncSession

PROXY = "http://proxy.test:3128"


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.get("http://vnc-a.test:8082/", json={})
        mock.get("http://vnc-b.test:8082/", json={})
        yield mock


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def sent(rsps: responses.RequestsMock, index: int) -> Dict[str, Any]:
    return rsps.calls[index].request.req_kwargs


def test_the_client_honours_proxy_and_no_proxy_from_the_environment(rsps, environment):
    environment.setenv("HTTP_PROXY", PROXY)
    environment.setenv("NO_PROXY", "vnc-b.test")
    for endpoint in ("vnc-a.test", "vnc-b.test"):
        with VncClient(endpoint) as c:
            c.home()
    assert sent(rsps, 0)["proxies"].get("http") == PROXY
    assert "http" not in sent(rsps, 1)["proxies"]


def test_the_ca_bundle_from_the_environment_replaces_default_verification(rsps, environment):
    environment.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/bundle.pem")
    with VncClient("vnc-a.test") as c:
        c.home()
    assert sent(rsps, 0)["verify"] == "/etc/ssl/bundle.pem"


def test_the_environment_is_read_once_per_origin(rsps, environment):
    session = VncSession()
    environment.setenv("HTTP_PROXY", PROXY)
    session.get("http://vnc-a.test:8082/")
    environment.setenv("HTTP_PROXY", "http://other-proxy.test:3128")
    session.get("http://vnc-a.test:8082/")
    session.get("http://vnc-b.test:8082/")
    assert [sent(rsps, i)["proxies"].get("http") for i in range(3)] == [PROXY, PROXY, "http://other-proxy.test:3128"]


def test_explicit_proxies_and_a_distrusted_environment_bypass_the_cache(rsps, environment):
    session = VncSession()
    environment.setenv("HTTP_PROXY", PROXY)
    session.get("http://vnc-a.test:8082/")
    session.get("http://vnc-a.test:8082/", proxies={"http": "http://explicit.test:8080"})
    session.trust_env = False
    session.get("http://vnc-a.test:8082/")
    assert [sent(rsps, i)["proxies"].get("http") for i in range(3)] == [PROXY, "http://explicit.test:8080", None]


def test_a_request_never_changes_the_cached_settings(environment):
    session = VncSession()
    environment.setenv("HTTP_PROXY", PROXY)
    first = session.merge_environment_settings("http://vnc-a.test:8082/x", {}, None, True, None)
    first["proxies"]["http"] = "http://tampered.test:1"
    again = session.merge_environment_settings("http://vnc-a.test:8082/y", {}, None, True, None)
    assert again["proxies"]["http"] == PROXY
