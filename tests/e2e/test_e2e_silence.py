"""Silence is a fault (SPEC section 7), end to end with a real daemon process: a watch stalled
without closing is restarted and what changed meanwhile reaches the config API; a config API that
accepts connections and never answers makes /readyz 503 with the reason."""
from __future__ import annotations

import urllib.error
import urllib.request

from tests.support.e2e_support import BASE, Environment
from tests.support.waiting import wait_until
from tests.support.builders import allow_from, policy

SILENCE = "1"  # --watch-silence-timeout for these tests (production: 60 s)


def readyz(daemon) -> tuple:
    try:
        with urllib.request.urlopen(daemon.introspect_url + "/readyz", timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_stalled_watch_is_restarted_and_the_change_made_meanwhile_reaches_the_config_api():
    env = Environment(BASE, bookmark_interval=0.2, progress_interval=0.2)
    try:
        daemon = env.start_daemon("--watch-silence-timeout", SILENCE)
        env.wait_converged()
        assert env.kube.store.freeze_watches() == 4  # namespaces, pods, NetworkPolicies, ClusterNetworkPolicies
        env.apply(policy("shop", "late-from-web", allow_from("web", "api", 9090)))
        env.wait_converged()
        wait_until(lambda: daemon.metric("kube_manager_watch_restarts_total", reason="silent") >= 1,
                   "a watch restarted for silence")

        def talking_again() -> bool:
            """Each watch's page row: restarted for silence, and a bookmark or event since."""
            rows = daemon.get("/Snh_KubeApiConnectionStatus?format=json")["kube_api_connections"]
            assert {row["name"] for row in rows} == {"namespaces", "pods", "networkpolicies", "clusternetworkpolicies"}
            return all(row["connected"] and row["last_error"] == f"neither an event nor a bookmark for {SILENCE} s"
                       and (row["last_event_at"] or 0) > row["last_error_at"] for row in rows)
        wait_until(talking_again, "every watch restarted and talking again")
        metrics = daemon.get("/metrics")
        assert 'reason="silent"' in metrics
        assert daemon.stop() == 0
    finally:
        env.close()


def test_readyz_is_503_while_the_config_api_hangs():
    env = Environment(BASE)
    try:
        daemon = env.start_daemon()
        env.wait_converged()
        assert readyz(daemon)[0] == 200
        env.vnc.faults.configure(latency=3600)  # accepts, never answers
        status, text = wait_until(lambda: (lambda r: r if r[0] == 503 else None)(readyz(daemon)),
                                  "/readyz 503")
        assert f"[-]config-api failed: unreachable: GET {env.vnc.url}/: no answer within 2 s" in text, text
        env.vnc.faults.configure(latency=0)
        wait_until(lambda: readyz(daemon)[0] == 200, "/readyz 200 again")
        assert daemon.stop() == 0
    finally:
        env.close()
