"""The client's HTTP path over real sockets: TLS verification, the environment's proxy and CA
bundle read once at start, the bounded keep-alive pool, timeouts."""
from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import threading
from pathlib import Path
from typing import Iterator, List

import pytest

from tests.support.scripted_http import (CUT, ScriptedServer, Slow, clear_proxy_environment, scripted_proxy,
                                         serve)
from tests.support.waiting import wait_until
from vnc_client.client import VncClient
from vnc_client.errors import VncConnectionError
from vnc_client.retry import RetryPolicy

ONCE = RetryPolicy(attempts=1)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A self-signed certificate for 127.0.0.1 and localhost (its own CA), with its key."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem"), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    return folder


@pytest.fixture
def tls_server(certificate: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedServer]:
    clear_proxy_environment(monkeypatch)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate / "cert.pem", certificate / "key.pem")
    with serve(ScriptedServer(), tls=context) as script:
        script.get(f"{script.url}/", json={"links": []})
        yield script


def test_tls_is_verified_against_the_configured_ca(tls_server, certificate):
    with VncClient(tls_server.url, ca_file=str(certificate / "cert.pem"), retry=ONCE) as c:
        assert c.home() == {"links": []}


def test_tls_verification_is_on_by_default(tls_server):
    with VncClient(tls_server.url, retry=ONCE) as c, pytest.raises(VncConnectionError, match="CERTIFICATE_VERIFY"):
        c.home()
    assert tls_server.calls == []  # nothing was sent to a server that could not prove who it is


def test_tls_verification_can_be_switched_off(tls_server):
    with VncClient(tls_server.url, verify=False, retry=ONCE) as c:
        assert c.home() == {"links": []}


def test_the_ca_bundle_from_the_environment_replaces_the_default_one(tls_server, certificate, monkeypatch):
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(certificate / "cert.pem"))
    with VncClient(tls_server.url, retry=ONCE) as c:
        assert c.home() == {"links": []}


def test_a_ca_file_that_holds_no_certificate_is_refused_at_start(tmp_path):
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(ValueError, match="cannot be loaded"):
        VncClient("127.0.0.1", use_ssl=True, ca_file=str(bad))


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedServer]:
    yield from scripted_proxy(monkeypatch, assert_all_fired=False)


def test_the_proxy_and_no_proxy_are_read_once_when_the_client_is_made(proxy, monkeypatch):
    proxy.get("http://vnc-a.test:8082/", json={})
    proxy.get(f"{proxy.url}/", json={})
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with VncClient("vnc-a.test", retry=ONCE) as through, VncClient(proxy.url, retry=ONCE) as direct:
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # too late: nothing listens there
        monkeypatch.delenv("NO_PROXY")
        through.home()
        direct.home()
    assert [(c.request.url, c.request.proxied) for c in proxy.calls] == [
        ("http://vnc-a.test:8082/", True), (f"{proxy.url}/", False)]


def test_proxy_credentials_go_in_the_proxy_authorization_header(proxy, monkeypatch):
    proxy.get("http://vnc-a.test:8082/", json={})
    monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", "http://kube:p%40ss@"))
    with VncClient("vnc-a.test", retry=ONCE) as c:
        c.home()
    sent = proxy.calls[0].request.headers["Proxy-Authorization"]
    assert sent == "Basic " + base64.b64encode(b"kube:p@ss").decode()


def test_a_proxy_spoken_to_in_tls_is_refused_at_start(monkeypatch):
    clear_proxy_environment(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", "https://proxy.test:3129")
    with pytest.raises(ValueError, match="only an http:// proxy"):
        VncClient("vnc-a.test")


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedServer]:
    clear_proxy_environment(monkeypatch)
    with serve(ScriptedServer()) as script:
        yield script


def test_connections_are_kept_alive_and_never_more_than_the_concurrency(direct):
    direct.get(f"{direct.url}/", body=Slow(0.02))  # slow enough that six callers overlap
    errors: List[BaseException] = []
    with VncClient(direct.url, concurrency=2, retry=ONCE) as c:
        def caller() -> None:
            try:
                for _ in range(4):
                    c.home()
            except BaseException as exc:  # handed to the test's thread
                errors.append(exc)
        threads = [threading.Thread(target=caller) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert len(direct.calls) == 24
    assert direct.connections == 2


def test_a_connection_the_server_closed_while_idle_is_not_reused(direct):
    direct.get(f"{direct.url}/", json={"links": []})
    with VncClient(direct.url, retry=ONCE) as c:
        c.home()
        direct.close_idle()
        wait_until(lambda: direct.closed == 1, "the server to close its idle connection")
        assert c.home() == {"links": []}  # one attempt only: a stale connection would have failed it
    assert direct.connections == 2


def test_an_answer_slower_than_the_read_timeout_is_a_connection_error(direct):
    direct.get(f"{direct.url}/", body=Slow(1.0))
    with VncClient(direct.url, read_timeout=0.2, retry=ONCE) as c, pytest.raises(VncConnectionError, match="timed out"):
        c.home()


def test_an_answer_cut_short_is_a_connection_error(direct):
    direct.get(f"{direct.url}/", body=CUT)
    with VncClient(direct.url, retry=ONCE) as c, pytest.raises(VncConnectionError, match="IncompleteRead"):
        c.home()
