"""The settings tree (kube_manager/settings): the INI keys are derived from its dataclasses, each key
lands in its branch, and no secret shows in a repr."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kube_manager.settings import KEYS, SECTIONS, OperatorSettings, keys, values
from tests.support.config_support import load, write


def test_the_keys_are_the_fields_of_the_tree_in_the_four_sections_of_spec_9() -> None:
    assert SECTIONS == {"DEFAULTS", "KUBERNETES", "VNC", "AUTH"}
    assert KEYS["vnc_endpoint_port"].path == ("vnc", "port")
    assert KEYS["kube_timer_interval"].path == ("reconciler", "resync_interval")
    assert KEYS["watch_silence_timeout"].path == ("watch", "silence_timeout")
    assert all(key.doc and key.path for key in KEYS.values())
    assert {name for name, key in KEYS.items() if key.secret} == {"token", "auth_password"}


def test_every_key_set_on_the_command_line_lands_in_its_branch(tmp_path: Path) -> None:
    """One value per key, each different from its default; it must be read back at the key's path."""
    text = {name: "" for name in KEYS}
    text.update(cluster_name="c1", kubernetes_cluster_owner="o1", policy_semantics="cluster-wide",
                kubernetes_api_server="emulated",
                kubernetes_api_port="0", kubernetes_api_secure_port="6444", kubernetes_ca_cert=str(tmp_path / "k"),
                kubeconfig=str(tmp_path / "k"), token="tok-1234", kubernetes_token_file=str(tmp_path / "k"),
                emulated_manifests=str(tmp_path),
                emulated_cni="false", watch_silence_timeout="61", leader_elect="false",
                leader_elect_namespace="ns1", leader_elect_name="lease1", leader_elect_lease_duration="16",
                leader_elect_renew_deadline="11", leader_elect_retry_period="3",
                vnc_endpoint_ip="embedded", vnc_endpoint_port="0", vnc_use_ssl="true",
                vnc_ca_cert=str(tmp_path / "k"), vnc_max_concurrency="9", vnc_list_page_limit="2500",
                auth_token_url="http://ks:5000/v3", auth_user="u1", auth_password="pw-1234",
                auth_tenant="t1", exact_pair_rules_bound="7", staged_run_debounce="3", staged_run_budget="45",
                kube_timer_interval="121", http_server_ip="127.0.0.2",
                http_server_port="8109", log_file=str(tmp_path / "log"), log_level="DEBUG")
    (tmp_path / "k").write_text("x")
    lines = {key.section: [f"[{key.section}]"] for key in KEYS.values()}
    for name, key in KEYS.items():
        lines[key.section].append(f"{name} = {text[name]}")
    settings = load(["-c", write(tmp_path, "\n".join("\n".join(part) for part in lines.values()) + "\n")])
    defaults = OperatorSettings()
    for name, key in KEYS.items():
        got = keys.get(settings, key)
        assert got == key.parse(text[name]), name
        assert got != keys.get(defaults, key), name


def test_no_secret_in_the_repr_of_the_settings(tmp_path: Path) -> None:
    settings = load(["-c", write(tmp_path, "[DEFAULTS]\ntoken = tok-abcdef-123\n"
                                           "[AUTH]\nauth_password = pw-98765\n")])
    assert (settings.kubernetes.token, settings.auth.password) == ("tok-abcdef-123", "pw-98765")
    for text in (repr(settings), str(settings), repr(settings.auth), repr(settings.kubernetes)):
        assert "tok-abcdef-123" not in text and "pw-98765" not in text
    assert "cluster=ClusterSettings(name='k8s'" in repr(settings)


@dataclass
class _Part:
    port: int = keys.setting("a_port", "A", values.port(True), "a port", 1)
    tunable: float = 0.5   # not a key: no file sets it


@dataclass
class _Tree:
    part: _Part = field(default_factory=_Part)
    other: _Part = field(default_factory=_Part)   # the same key twice


@dataclass
class _Single:
    part: _Part = field(default_factory=_Part)


def test_derive_finds_nested_keys_and_refuses_a_key_declared_twice() -> None:
    derived = keys.derive(_Single)
    assert list(derived) == ["a_port"] and derived["a_port"].path == ("part", "port")
    tree = _Single()
    keys.assign(tree, derived["a_port"], 7)
    assert tree.part.port == 7 and keys.get(tree, derived["a_port"]) == 7
    with pytest.raises(TypeError, match="a_port declared twice"):
        keys.derive(_Tree)
