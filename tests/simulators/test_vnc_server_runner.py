"""Running the embedded config API: background runner, latency and faults, counters, restarts, and the
`contrail-kube-manager vnc-server` command."""
from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from typing import List

import pytest
import requests

from tests.support.vnc_server_support import PM, expect_error, group_body, rule_body
from simulators.vnc_api.cmd import parse_listen
from simulators.vnc_api.faults import DROP, FAIL, FaultInjector, ServerOptions
from simulators.vnc_api.runner import run_in_background
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop

REPO = str(REPO)


# --- runner ---------------------------------------------------------------------------------------

def test_background_server_serves_until_stopped(server):
    assert server.url == f"http://127.0.0.1:{server.port}" and server.port > 0
    assert requests.get(server.url + "/projects", timeout=5).status_code == 200
    server.stop()
    server.stop()  # idempotent
    assert not server.running
    with pytest.raises(requests.ConnectionError):
        requests.get(server.url + "/projects", timeout=5)


def test_a_taken_port_is_reported_to_the_caller(server):
    with pytest.raises(OSError):
        run_in_background(port=server.port)


def test_restart_on_the_same_port_with_the_same_store_keeps_the_objects(server, http):
    group = http.create("address-group", group_body("g", "10.0.0.0/8"))
    http.session.close()
    server.stop()
    with run_in_background(port=server.port, store=server.store) as again:
        assert requests.get(f"{again.url}/address-group/{group['uuid']}", timeout=5).status_code == 200
        assert len(requests.get(again.url + "/domains", timeout=5).json()["domains"]) == 1


def test_the_api_is_usable_directly_from_the_test_thread(server, http):
    created = server.api.create("address-group", group_body("g", "10.0.0.0/8"))
    assert http.read("address-group", created["uuid"])["fq_name"] == PM + ["g"]
    assert [g["uuid"] for g in server.api.dump("address-group")] == [created["uuid"]]


def test_server_options_are_validated():
    for bad in ({"latency": -1}, {"fail_rate": 1.5}, {"drop_rate": -0.1}, {"fail_rate": 0.6, "drop_rate": 0.6}):
        with pytest.raises(ValueError):
            ServerOptions(**bad)
    with pytest.raises(TypeError):
        run_in_background(no_such_option=1)


def test_it_also_works_after_gevent_monkey_patching():
    script = (
        "from gevent import monkey; monkey.patch_all()\n"
        "import gevent, requests\n"
        "from simulators.vnc_api.runner import run_in_background\n"
        "with run_in_background() as s:\n"
        "    jobs = [gevent.spawn(requests.get, s.url + '/projects', timeout=5) for _ in range(5)]\n"
        "    gevent.joinall(jobs, raise_error=True)\n"
        "    assert [j.value.status_code for j in jobs] == [200] * 5\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# --- latency and faults ---------------------------------------------------------------------------

def test_latency_delays_every_answer(server):
    server.faults.configure(latency=0.05)
    started = time.monotonic()
    assert requests.get(server.url + "/", timeout=5).status_code == 200
    assert time.monotonic() - started >= 0.05


def test_queued_failures_are_answered_first_then_service_resumes(server, http):
    server.faults.fail_next(2, status=502)
    expect_error(http.get("/projects"), 502, "injected fault")
    expect_error(http.post("/address-groups", {"address-group": group_body("g", "10.0.0.0/8")}), 502)
    assert http.get("/projects").status_code == 200
    assert http.get("/address-groups").json() == {"address-groups": []}  # the failed create never ran
    assert server.counters.statuses()[502] == 2


def test_dropped_connections_get_no_answer(server, http):
    server.faults.drop_next()
    with pytest.raises(requests.ConnectionError):
        http.get("/projects")
    assert http.get("/projects").status_code == 200
    assert server.counters.statuses()[0] == 1


def test_fault_rates_apply_until_cleared():
    with run_in_background(fail_rate=1.0) as srv:
        expect_error(requests.get(srv.url + "/projects", timeout=5), 503, "Service Unavailable")
        srv.faults.clear()
        assert requests.get(srv.url + "/projects", timeout=5).status_code == 200


def test_seeded_fault_decisions_are_reproducible():
    def decisions(seed: int) -> List[object]:
        injector = FaultInjector(ServerOptions(fail_rate=0.3, drop_rate=0.2, seed=seed))
        return [injector.decide()[0] for _ in range(200)]

    first = decisions(7)
    assert first == decisions(7)
    assert {FAIL, DROP, None} <= set(first)
    with pytest.raises(ValueError):
        FaultInjector().fail_next(1, status=404)


# --- counters and revision ------------------------------------------------------------------------

def test_counters_count_by_method_and_route_and_know_writes(server, http):
    rule = http.create("firewall-rule", rule_body("r"))
    policy = http.create("firewall-policy", {"fq_name": PM + ["p"], "parent_type": "policy-management"})
    http.get(f"/firewall-rule/{rule['uuid']}")
    http.put(f"/firewall-rule/{rule['uuid']}", {"firewall-rule": {"direction": "<"}})
    http.post("/ref-update", {"type": "firewall-policy", "uuid": policy["uuid"], "ref-type": "firewall-rule",
                              "ref-uuid": rule["uuid"], "operation": "ADD", "attr": {"sequence": "1"}})
    http.post("/fqname-to-id", {"type": "firewall-rule", "fq_name": rule["fq_name"]})
    http.get("/firewall-rules")
    snapshot = server.counters.snapshot()
    assert snapshot[("POST", "/firewall-rules")] == 1
    assert snapshot[("GET", "/firewall-rule/{uuid}")] == 1
    assert snapshot[("PUT", "/firewall-rule/{uuid}")] == 1
    assert server.counters.count(method="POST") == 4
    assert server.counters.writes() == 4  # 2 creates, the PUT and the ref-update
    server.counters.reset()
    assert server.counters.snapshot() == {} and server.counters.writes() == 0


def test_the_store_revision_moves_only_when_the_store_changes(server, http):
    before = server.store.revision
    http.get("/projects")
    expect_error(http.post("/address-groups", {"address-group": {"fq_name": PM + ["g"]}}), 400)
    assert server.store.revision == before
    http.create("address-group", group_body("g", "10.0.0.0/8"))
    assert server.store.revision == before + 1


# --- the vnc-server command -----------------------------------------------------------------------

def _start_cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kube_manager", "vnc-server", *args], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _listening_url(proc: subprocess.Popen, timeout: float = 20.0) -> str:
    """The URL from the "listening on" log line, waiting for it with a deadline."""
    deadline = time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    selector.register(proc.stderr, selectors.EVENT_READ)
    seen = []
    while time.monotonic() < deadline:
        if not selector.select(timeout=deadline - time.monotonic()):
            break
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if "listening on http://" in line:
            return line.split("listening on ")[1].split()[0]
    proc.kill()
    raise AssertionError(f"no listening line; stderr: {''.join(seen)}")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_vnc_server_command_serves_until_a_signal_then_exits_0(signum):
    proc = _start_cli("--listen", "127.0.0.1:0", "--fail-rate", "1")
    try:
        url = _listening_url(proc)
        expect_error(requests.get(url + "/projects", timeout=5), 503)
        proc.send_signal(signum)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("args, message", [
    (["--listen", "nohost"], "expected HOST:PORT"),
    (["--listen", "127.0.0.1:http"], "is not a number"),
    (["--fail-rate", "1.5"], "fail_rate must be between 0 and 1"),
])
def test_vnc_server_command_refuses_bad_options_with_status_2(args, message):
    done = subprocess.run([sys.executable, "-m", "kube_manager", "vnc-server", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and message in done.stderr


def test_vnc_server_command_reports_a_taken_port_with_status_1(server):
    done = subprocess.run([sys.executable, "-m", "kube_manager", "vnc-server", "--listen", f"127.0.0.1:{server.port}"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "cannot listen" in done.stderr


def test_parse_listen():
    assert parse_listen("0.0.0.0:8082") == ("0.0.0.0", 8082)
    assert parse_listen("[::1]:9000") == ("::1", 9000)
    for bad in ("::1:8082", ":8082", "host:70000"):
        with pytest.raises(ValueError):
            parse_listen(bad)
