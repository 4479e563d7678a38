"""The introspect server as operators and probes meet it: read-only, health, metrics, no secret,
and the real gevent server over a socket."""
from __future__ import annotations

import gevent
import pytest
import requests

from introspect.app import create_app
from introspect.contrail import PACE
from introspect.lists import LIST_PAGES
from introspect.server import IntrospectServer
from kube_manager.records.db import ConnectionStatus
from kube_manager.settings import AuthSettings, HealthSettings, KubernetesSettings, OperatorSettings, WatchSettings
from kube_manager.observability.metrics import Metrics

from tests.support.introspect_support import ANY, NOW, SHOP, build_db, call, rule, service

ALL_URLS = ["/", "/config", "/livez", "/readyz", "/metrics", "/explain",
            "/Snh_NetworkPolicyDetail?namespace=shop&name=db-allow-web",
            "/livez?verbose=1&format=json", "/readyz?format=json"] + [p.path for p in LIST_PAGES]


@pytest.fixture
def db():
    return build_db()


def make_app(db, **kwargs):
    metrics = Metrics()
    metrics.bind_database(db)
    kwargs.setdefault("registry", metrics.registry)
    return create_app(db, clock=lambda: NOW, **kwargs)


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
@pytest.mark.parametrize("url", ["/", "/Snh_NetworkPolicyDatabaseList", "/explain", "/metrics", "/nope"])
def test_anything_but_get_and_head_is_405(db, method, url):
    reply = call(make_app(db), url, method)
    assert reply.status == 405
    assert reply.headers["Allow"] == "GET, HEAD"
    assert "read-only" in reply.text


def test_head_answers_the_headers_of_get_without_a_body(db):
    app = make_app(db)
    get, head = call(app, "/Snh_PodDatabaseList"), call(app, "/Snh_PodDatabaseList", "HEAD")
    assert head.status == 200 and head.body == b""
    assert head.headers["Content-Length"] == get.headers["Content-Length"] != "0"


def test_livez_is_ok_while_the_loop_beats_and_watches_talk(db):
    reply = call(make_app(db), "/livez")
    assert reply.status == 200
    assert reply.text.splitlines()[0].startswith("[+]loop ok: last heartbeat 1.0 s ago")
    assert reply.text.endswith("livez check passed\n")


def test_livez_fails_when_the_loop_stops_beating_for_2_minutes(db):
    db.loop_heartbeat_at = NOW - 119
    assert call(make_app(db), "/livez").status == 200
    db.loop_heartbeat_at = NOW - 121
    reply = call(make_app(db), "/livez?format=json")
    assert reply.status == 503
    data = reply.json()
    assert data["status"] == "failed"
    assert data["checks"][0] == {"name": "loop", "ok": False,
                                 "detail": "last heartbeat 121.0 s ago (limit 120 s)"}


def test_livez_fails_on_a_watch_without_progress_for_2_minutes_connected_or_not(db):
    app = make_app(db)
    pods = db.kube_connections["pods"]
    pods.last_progress_at = NOW - 119
    assert call(app, "/livez").status == 200
    pods.last_progress_at = NOW - 121
    reply = call(app, "/livez")
    assert reply.status == 503
    assert "[-]watch:pods failed: last event, bookmark, list or watch restart 121.0 s ago (limit 120 s)" in reply.text
    # Reconnecting for 2 minutes without a list or an event is no progress either.
    pods.connected = False
    assert call(app, "/livez").status == 503
    pods.last_progress_at = NOW - 1  # a bookmark, an event or a re-list
    assert call(app, "/livez").status == 200


def test_an_absent_crd_is_no_stalled_watch_and_does_not_hold_readiness(db):
    db.kube_connections["clusternetworkpolicies"] = ConnectionStatus(
        "clusternetworkpolicies", last_progress_at=NOW - 600, initial_list_done=True, absent=True)
    app = make_app(db, config_api_probe=lambda: True)
    reply = call(app, "/livez?verbose=1")
    assert reply.status == 200
    assert "[+]watch:clusternetworkpolicies ok: not served (CRD not installed)" in reply.text
    assert call(app, "/readyz").status == 200
    db.kube_connections["clusternetworkpolicies"].absent = False  # served, yet no progress: stalled
    assert call(app, "/livez").status == 503


@pytest.mark.parametrize("silence, limit", [(90, 120), (150, 200), (1.5, 2)])
def test_the_stall_limit_follows_the_silence_timeout(db, silence, limit):
    """SPEC 7: 2 minutes at the default silence of 90 s, in proportion otherwise (a test's short
    silence gets a short limit)."""
    assert HealthSettings().for_silence_timeout(WatchSettings().silence_timeout).watch_stall_timeout == 120
    app = make_app(db, health_policy=HealthSettings().for_silence_timeout(silence))
    db.kube_connections["pods"].last_progress_at = NOW - limit + 0.1
    assert "[+]watch:pods ok" in call(app, "/livez?verbose=1").text
    db.kube_connections["pods"].last_progress_at = NOW - limit - 0.1
    assert "[-]watch:pods failed" in call(app, "/livez?verbose=1").text


def test_readyz_needs_the_initial_lists_and_the_config_api(db):
    reachable = [True]
    app = make_app(db, config_api_probe=lambda: reachable[0])
    assert call(app, "/readyz").status == 200
    db.kube_connections["networkpolicies"].initial_list_done = False
    reply = call(app, "/readyz")
    assert reply.status == 503
    assert "[-]initial-list:networkpolicies failed: initial list not done yet" in reply.text
    db.kube_connections["networkpolicies"].initial_list_done = True
    reachable[0] = False
    reply = call(app, "/readyz?format=json")
    assert reply.status == 503
    assert {"name": "config-api", "ok": False, "detail": "probe reports unreachable"} in reply.json()["checks"]


def test_readyz_turns_unready_when_the_config_api_probe_fails(db):
    def probe():
        raise requests.ConnectionError("connection refused by 10.0.0.5:8082")

    reply = call(make_app(db, config_api_probe=probe), "/readyz")
    assert reply.status == 503
    assert "[-]config-api failed: unreachable: connection refused by 10.0.0.5:8082" in reply.text
    assert reply.text.endswith("readyz check failed\n")


def test_readyz_without_probe_follows_the_config_api_connection_and_needs_a_watch(db):
    app = make_app(db)
    assert call(app, "/readyz").status == 200
    db.vnc_connection.connected = False
    db.vnc_connection.last_error = "503 Service Unavailable"
    reply = call(app, "/readyz")
    assert reply.status == 503 and "not connected: 503 Service Unavailable" in reply.text
    db.vnc_connection.connected = True
    db.kube_connections.clear()
    reply = call(app, "/readyz")
    assert reply.status == 503 and "no Kubernetes watch has started" in reply.text


def test_metrics_serves_the_registry_in_prometheus_format(db):
    metrics = Metrics()
    metrics.bind_database(db)
    metrics.kube_events.labels(resource="pods", type="ADDED").inc()
    reply = call(create_app(db, registry=metrics.registry), "/metrics")
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/plain; version=")
    assert 'kube_manager_kube_events_total{resource="pods",type="ADDED"} 1.0' in reply.text
    assert 'kube_manager_owned_objects{type="firewall-rule"} 6.0' in reply.text
    assert "# TYPE kube_manager_config_api_request_duration_seconds histogram" in reply.text
    assert call(create_app(db), "/metrics").status == 404


SECRETS = ["tok-6f1c2a9b", "pw-Zx81!q", "keystone-admin", "hunter2-inline"]


def test_no_secret_appears_on_any_page(db):
    config = OperatorSettings(kubernetes=KubernetesSettings(token=SECRETS[0]),
                              auth=AuthSettings(password=SECRETS[1], user=SECRETS[2],
                                                token_url="https://keystone:5000/v3"))
    # Secrets that leak into free text the DB holds: an URL with user info, an error quoting a
    # header, a probe error quoting the password.
    db.vnc_connection.url = f"https://{SECRETS[2]}:{SECRETS[1]}@10.0.0.5:8082"
    db.vnc_connection.last_error = f"401 for X-Auth-Token: {SECRETS[0]} (password={SECRETS[3]})"
    db.kube_connections["pods"].last_error = f"Authorization: Bearer {SECRETS[0]}"
    db.pods[("tools", "debug")].status.vmi_error = f"auth failed for {SECRETS[2]}/{SECRETS[1]}"

    def probe():
        raise RuntimeError(f"keystone said no to {SECRETS[2]} with {SECRETS[1]}")

    app = make_app(db, config=config, config_api_probe=probe)
    pages = ALL_URLS + [p.path + "?format=json" for p in LIST_PAGES] + ["/config?format=json"]
    for url in pages:
        text = call(app, url).text
        for secret in SECRETS:
            assert secret not in text, (url, secret)
    config_page = call(app, "/config?format=json").json()["config"]
    assert config_page["cluster_name"] == "k8s" and "token" not in config_page
    connection = call(app, "/Snh_VncApiConnectionStatus?format=json").json()["vnc_api_connections"][0]
    assert connection["url"] == "https://***@10.0.0.5:8082"
    assert connection["last_error"] == "401 for X-Auth-Token: *** (password=***)"


def test_a_plain_config_mapping_is_redacted_by_key_and_section(db):
    config = {"DEFAULTS": {"http_server_port": 8108, "token": SECRETS[0]},
              "VNC": {"vnc_endpoint_ip": "10.0.0.5"},
              "AUTH": {"auth_user": SECRETS[2], "auth_tenant": "admin", "auth_password": SECRETS[1]}}
    data = call(make_app(db, config=config), "/config?format=json").json()["config"]
    assert data == {"DEFAULTS": {"http_server_port": 8108, "token": "***"},
                    "VNC": {"vnc_endpoint_ip": "10.0.0.5"},
                    "AUTH": {"auth_user": "***", "auth_tenant": "***", "auth_password": "***"}}
    assert call(make_app(db), "/config").status == 404


def test_a_failing_page_answers_500_without_a_traceback(db):
    app = make_app(db)

    def broken(request):
        raise KeyError("internal detail")

    app.routes["/"] = broken
    reply = call(app, "/")
    assert reply.status == 500
    assert "internal error" in reply.text
    assert "internal detail" not in reply.text and "Traceback" not in reply.text


def in_thread(function, *args, **kwargs):
    """Run blocking client code in a real thread while this hub keeps serving."""
    return gevent.get_hub().threadpool.apply(function, args, kwargs)


def test_the_gevent_server_serves_over_http_and_stops(db):
    server = IntrospectServer("127.0.0.1", 0, make_app(db))
    server.start()
    try:
        host, port = server.address
        assert host == "127.0.0.1" and port > 0
        index = in_thread(requests.get, server.url + "/", timeout=10)
        assert index.status_code == 200 and "kube-manager introspect" in index.text
        posted = in_thread(requests.post, server.url + "/Snh_PodDatabaseList", timeout=10)
        assert posted.status_code == 405 and posted.headers["Allow"] == "GET, HEAD"
        css = in_thread(requests.get, server.url + "/static/style.css", timeout=10)
        assert css.status_code == 200 and css.headers["Content-Type"].startswith("text/css")
    finally:
        server.stop()
    with pytest.raises(requests.ConnectionError):
        in_thread(requests.get, f"http://127.0.0.1:{port}/", timeout=10)


def test_answers_go_out_without_waiting_for_the_clients_ack(db, monkeypatch):
    """Nagle's algorithm off on every accepted connection: on a kept-alive one each answer
    otherwise waits for the client's delayed ACK (about 40 ms)."""
    import socket

    from gevent.pywsgi import WSGIHandler

    seen = []
    real = WSGIHandler.handle

    def spy(handler):
        seen.append(handler.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        return real(handler)

    monkeypatch.setattr(WSGIHandler, "handle", spy)
    with IntrospectServer("127.0.0.1", 0, make_app(db)) as server:
        session = requests.Session()
        for _ in range(2):  # one connection, kept alive
            assert in_thread(session.get, server.url + "/", timeout=10).status_code == 200
        session.close()
    assert len(seen) == 1 and seen[0] != 0


def test_a_taken_port_is_an_error_naming_the_address(db):
    with IntrospectServer("127.0.0.1", 0, make_app(db)) as first:
        second = IntrospectServer("127.0.0.1", first.address[1], make_app(db))
        with pytest.raises(OSError):
            second.start()


def test_a_large_page_lets_the_rest_of_the_daemon_run_while_it_is_built(db):
    for index in range(2000):
        body = rule(f"k8s-shop-ingress-bulk-{index}", ANY, SHOP, service("tcp", 80, 80))
        db.desired["firewall-rule"][tuple(body["fq_name"])] = body
    ticks = []

    def other_work():  # stands for the watches, the reconciler and the heartbeat
        while True:
            ticks.append(1)
            gevent.sleep(0)

    worker = gevent.spawn(other_work)
    try:
        reply = call(make_app(db), "/Snh_FirewallRuleDatabaseList?format=json")
        ran_meanwhile = len(ticks)
    finally:
        worker.kill()
    assert reply.status == 200 and len(reply.json()["firewall_rules"]) == 2007
    # Without pacing the worker would not run once before the page is done; with it, it runs at
    # least once per PACE rules of each pass over them.
    assert ran_meanwhile >= max(1, 2000 // PACE)


def test_readyz_says_why_a_list_cannot_be_done(db):
    """A watch's last error (a wrong CA, a refused identity: kube/access.py) is the reason /readyz gives."""
    app = make_app(db, config_api_probe=lambda: True)
    status = db.kube_connections["pods"]
    status.initial_list_done = False
    status.last_error = "kubeconfig /k (user): the API server refused the identity (401 Unauthorized)"
    reply = call(app, "/readyz?verbose=1")
    assert reply.status == 503
    assert ("[-]initial-list:pods failed: initial list not done yet: kubeconfig /k (user): the API server "
            "refused the identity (401 Unauthorized)") in reply.text


def test_the_server_starts_without_looking_its_address_up_in_the_dns(db, monkeypatch):
    """gevent's WSGI server would ask the resolver for its listen address's name as it starts (a
    reverse lookup that yields the daemon's start-up to the hub, and waits out a resolver's timeout
    on a bad DNS): the introspect server gives the name itself."""
    def no_lookup(name: str = "") -> str:
        raise AssertionError(f"DNS lookup of {name!r}")
    monkeypatch.setattr("gevent.pywsgi.socket.getfqdn", no_lookup)
    with IntrospectServer("127.0.0.1", 0, make_app(db)) as server:
        assert in_thread(requests.get, server.url + "/livez", timeout=10).status_code == 200


def test_the_daemon_s_app_is_made_at_the_first_request_and_answers_as_made_at_start(db, monkeypatch):
    """The daemon serves a `DeferredApp` (its pages' modules are loaded at the first request, not
    before its first list): made once, on the first request, and every page the same."""
    import introspect.app
    from introspect.deferred import DeferredApp

    made = []
    monkeypatch.setattr(introspect.app, "create_app", lambda *a, **k: made.append(1) or create_app(*a, **k))
    metrics = Metrics()
    metrics.bind_database(db)
    deferred = DeferredApp(db, registry=metrics.registry, clock=lambda: NOW)
    assert made == []
    early = create_app(db, registry=metrics.registry, clock=lambda: NOW)
    for url in ALL_URLS:
        expected, got = call(early, url), call(deferred, url)
        assert (got.status, got.body) == (expected.status, expected.body), url
    assert made == [1]
