"""One decoder (SPEC 8: the daemon and `translate` agree on every input): a NetworkPolicy carrying
an integer beyond 64 bits in a field the translator does not read gets the same `spec_sha256`
annotation from the running daemon (watch, records, translator) as from `translate` of the same
JSON file (orjson alone would read 100000000000000000001 as the float 1e20)."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.support.builders import allow_from, policy
from tests.support.e2e_support import BASE, Environment
from tests.support.paths import REPO
from tests.support.waiting import wait_until

BIG = 10 ** 20 + 1


def spec_sha256(firewall_policy: dict) -> str:
    pairs = firewall_policy["annotations"]["key_value_pair"]
    return next(pair["value"] for pair in pairs if pair["key"] == "spec_sha256")


def test_the_daemon_and_translate_hash_a_huge_integer_alike(tmp_path):
    manifest = policy("shop", "huge", allow_from("web", "api", 8080))
    manifest["spec"]["x-vendor-extension"] = {"budget": BIG, "floor": -BIG}
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"kind": "List", "items": [manifest]}))
    offline = subprocess.run([sys.executable, "-m", "kube_manager", "translate", "-f", str(path), "-o", "json"],
                             capture_output=True, text=True, timeout=60, cwd=REPO)
    assert offline.returncode == 0, offline.stderr
    translated = next(p for p in json.loads(offline.stdout)["firewall_policies"] if p["fq_name"][-1] == "k8s-shop-huge")

    env = Environment(BASE)
    try:
        daemon = env.start_daemon()
        env.wait_converged()
        env.apply(json.loads(json.dumps(manifest)))  # what the API server holds: the exact integers
        written = wait_until(lambda: env.contrail.owned()["firewall-policy"].get(tuple(translated["fq_name"])),
                             "the policy written")
        assert spec_sha256(written) == spec_sha256(translated)
        assert daemon.stop() == 0
    finally:
        env.close()
