"""Configuration: INI file + command line (SPEC section 9), and the logging it drives."""
from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path
from typing import List

import pytest

from kube_manager.observability.logging_setup import KeyValueFormatter, kv, setup_from_settings, setup_logging
from kube_manager.settings import KEYS, ConfigError, LogSettings, OperatorSettings, keys, values
from kube_manager.settings import load_settings
from tests.support.config_support import cli_parser, load, write
from tests.support.paths import REPO

SAMPLE = REPO / "etc" / "contrail-kubernetes.conf"


def test_defaults_without_a_file() -> None:
    config = load([])
    assert config.cluster.name == "k8s"
    assert config.cluster.owner == "k8s"
    assert config.vnc.endpoints == ["127.0.0.1"]
    assert config.vnc.port == 8082
    assert (config.introspect.listen_ip, config.introspect.port) == ("0.0.0.0", 8108)
    assert config.reconciler.resync_interval == 120
    assert config.log.level == logging.INFO and config.log.file == ""
    assert config.reconciler.concurrency == 8
    assert not config.auth.keystone and not config.vnc.embedded and not config.kubernetes.emulated
    assert config.origin.warnings == [] and config.origin.files == []


def test_file_values_are_typed(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    path = write(tmp_path, f"""
        [DEFAULTS]
        http_server_ip = 127.0.0.1
        http_server_port = 9108
        log_level = SYS_NOTICE
        kube_timer_interval = 30.5
        [KUBERNETES]
        cluster_name = prod-east
        kubernetes_cluster_owner = team-a
        kubernetes_api_server = 10.0.0.10
        kubernetes_api_port = 8081
        kubernetes_api_secure_port = 443
        [VNC]
        vnc_endpoint_ip = 10.1.1.1, 10.1.1.2 ctl3.example.com
        vnc_endpoint_port = 18082
        vnc_use_ssl = yes
        vnc_ca_cert = {ca}
        vnc_max_concurrency = 4
        [AUTH]
        auth_token_url = http://keystone:5000/v3/auth/tokens
        auth_user = admin
        auth_password = s3cr%t
        auth_tenant = demo
    """)
    config = load(["-c", path])
    assert config.origin.files == [path]
    assert (config.introspect.listen_ip, config.introspect.port) == ("127.0.0.1", 9108)
    assert config.log.level == logging.INFO and config.reconciler.resync_interval == 30.5
    assert (config.cluster.name, config.cluster.owner) == ("prod-east", "team-a")
    assert (config.kubernetes.api_server, config.kubernetes.api_port,
            config.kubernetes.api_secure_port) == ("10.0.0.10", 8081, 443)
    assert config.vnc.endpoints == ["10.1.1.1", "10.1.1.2", "ctl3.example.com"]
    assert (config.vnc.port, config.vnc.use_ssl, config.vnc.ca_cert,
            config.reconciler.concurrency) == (18082, True, str(ca), 4)
    assert config.auth.keystone
    assert (config.auth.user, config.auth.password, config.auth.tenant) == ("admin", "s3cr%t", "demo")
    assert config.origin.warnings == []


@pytest.mark.parametrize("form", [["-c", "{path}"], ["run", "-c", "{path}"],
                                  ["-c", "{path}", "run"], ["--config-file", "{path}", "run"]])
def test_both_config_file_forms(tmp_path: Path, form: List[str]) -> None:
    path = write(tmp_path, "[KUBERNETES]\ncluster_name = from-file\n")
    config = load([arg.format(path=path) for arg in form])
    assert config.cluster.name == "from-file"
    assert config.origin.files == [path]


@pytest.mark.parametrize("form", [["--cluster-name", "cli", "-c", "{path}"],
                                  ["run", "-c", "{path}", "--cluster-name", "cli"],
                                  ["-c", "{path}", "run", "--cluster-name", "cli"],
                                  ["--cluster-name", "cli", "run", "-c", "{path}"]])
def test_command_line_overrides_file_in_every_form(tmp_path: Path, form: List[str]) -> None:
    path = write(tmp_path, "[KUBERNETES]\ncluster_name = from-file\n[VNC]\nvnc_endpoint_port = 9\n")
    config = load([arg.format(path=path) for arg in form])
    assert config.cluster.name == "cli"
    assert config.vnc.port == 9   # not reset to the default by the subparser


def test_later_files_win(tmp_path: Path) -> None:
    first = write(tmp_path, "[KUBERNETES]\ncluster_name = one\n", "a.conf")
    second = write(tmp_path, "[KUBERNETES]\ncluster_name = two\n", "b.conf")
    assert load(["-c", first, "-c", second]).cluster.name == "two"


@pytest.mark.parametrize("section,key,value,needle", [
    ("VNC", "vnc_endpoint_port", "eighty", "'eighty' is not a port number"),
    ("VNC", "vnc_endpoint_port", "70000", "not a port number"),
    ("VNC", "vnc_use_ssl", "maybe", "not a boolean"),
    ("VNC", "vnc_max_concurrency", "0", "out of range"),
    ("VNC", "vnc_endpoint_ip", "embedded, 10.0.0.1", "cannot be combined"),
    ("VNC", "vnc_endpoint_ip", "bad_host!", "neither an IP address nor a host name"),
    ("VNC", "vnc_ca_cert", "/nonexistent/ca.pem", "not a readable file"),
    ("DEFAULTS", "http_server_ip", "localhost", "not an IP address"),
    ("DEFAULTS", "kube_timer_interval", "-5", "positive number of seconds"),
    ("DEFAULTS", "kube_timer_interval", "nan", "positive number of seconds"),
    ("KUBERNETES", "staged_run_budget", "0", "positive number of seconds"),
    ("KUBERNETES", "staged_run_debounce", "soon", "number of seconds"),
    ("DEFAULTS", "log_level", "LOUD", "not a log level"),
    ("KUBERNETES", "cluster_name", "a:b", "must be 1-63 letters"),
    ("KUBERNETES", "kubernetes_cluster_owner", "", "must not be empty"),
    ("KUBERNETES", "kubeconfig", "/nonexistent/kubeconfig", "not a readable file"),
    ("KUBERNETES", "emulated_manifests", "/nonexistent/dir", "no such file or directory"),
])
def test_bad_value_names_section_and_key(tmp_path: Path, section: str, key: str, value: str,
                                         needle: str) -> None:
    path = write(tmp_path, f"[{section}]\n{key} = {value}\n")
    with pytest.raises(ConfigError) as info:
        load(["-c", path])
    message = str(info.value)
    assert message.startswith(f"[{section}] {key}: ")
    assert needle in message


def test_bad_command_line_value_names_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"^--http-server-port \(\[DEFAULTS\] http_server_port\): "
                                          r"'x' is not a port number"):
        load(["--http-server-port", "x"])


def test_secret_values_are_not_echoed_in_errors(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(KEYS, "auth_password", dataclasses.replace(KEYS["auth_password"], parse=values.nonempty))
    path = write(tmp_path, "[AUTH]\nauth_password = \n")
    with pytest.raises(ConfigError) as info:
        load(["-c", path])
    assert str(info.value) == "[AUTH] auth_password: invalid value"


def test_cross_key_rules(tmp_path: Path) -> None:
    path = write(tmp_path, "[AUTH]\nauth_token_url = http://k:5000/v3/auth/tokens\nauth_user = a\n")
    with pytest.raises(ConfigError, match=r"^\[AUTH\] auth_password: required when auth_token_url"):
        load(["-c", path])
    with pytest.raises(ConfigError, match=r"^\[VNC\] vnc_endpoint_port: 0 .* only works with"):
        load(["--vnc-endpoint-port", "0"])
    config = load(["--vnc-endpoint-ip", "embedded", "--vnc-endpoint-port", "0"])
    assert config.vnc.embedded and config.vnc.port == 0
    with pytest.raises(ConfigError, match=r"^\[KUBERNETES\] kubernetes_api_port: 0"):
        load(["--kubernetes-api-port", "0"])
    emulated = load(["--kubernetes-api-server", "Emulated", "--kubernetes-api-port", "0",
                     "--emulated-manifests", str(tmp_path)])
    assert emulated.kubernetes.emulated and emulated.emulation.manifests == [str(tmp_path)]
    stray = load(["--emulated-manifests", str(tmp_path)])
    assert any("emulated_manifests: ignored unless" in w for w in stray.origin.warnings)


def test_missing_or_broken_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read configuration file"):
        load(["-c", str(tmp_path / "missing.conf")])
    broken = write(tmp_path, "cluster_name = no section\n")
    with pytest.raises(ConfigError, match="not a valid INI file"):
        load(["-c", broken])


def test_unknown_legacy_and_misplaced_keys(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [DEFAULTS]
        orchestrator = kubernetes
        log_levle = DEBUG
        [KUBERNETES]
        pod_subnets = 10.32.0.0/12
        [VNC]
        rabbit_server = 10.0.0.1
        cluster_name = moved
        [SANDESH]
        introspect_ssl_enable = False
        [DEFAULT]
        x = 1
        [EXTRA]
        y = 2
    """)
    config = load(["-c", path])
    assert config.cluster.name == "moved"
    assert sorted(config.origin.warnings) == sorted([
        "[DEFAULTS] log_levle: unknown key ignored (did you mean log_level?)",
        "[VNC] cluster_name: belongs in [KUBERNETES]; used anyway",
        "unknown section [DEFAULT] ignored (did you mean [DEFAULTS]?)",
        "unknown section [EXTRA] ignored",
    ])
    assert config.origin.ignored_keys == ["[SANDESH]", "orchestrator", "pod_subnets", "rabbit_server"]


@pytest.mark.parametrize("text, warning", [
    ("[KUBERNETES]\npolicy_semantic = kubernetes\n",
     "[KUBERNETES] policy_semantic: unknown key ignored (did you mean policy_semantics?)"),
    ("[KUBERNETES]\nlog_levle = DEBUG\n",
     "[KUBERNETES] log_levle: unknown key ignored (did you mean log_level, in [DEFAULTS]?)"),
    ("[VNC]\nflavour = mint\n", "[VNC] flavour: unknown key ignored"),
    ("[kubernetes]\ncluster_name = a\n", "unknown section [kubernetes] ignored (did you mean [KUBERNETES]?)"),
    ("[SPICES]\nx = 1\n", "unknown section [SPICES] ignored"),
])
def test_an_unknown_key_or_section_names_what_was_likely_meant(tmp_path: Path, text: str, warning: str) -> None:
    assert load(["-c", write(tmp_path, text)]).origin.warnings == [warning]


def test_findings_are_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path, "[DEFAULTS]\nbogus = 1\norchestrator = kubernetes\n")
    config = load(["-c", path])
    with caplog.at_level(logging.INFO):
        config.origin.log(logging.getLogger("t"))
    assert ("t", logging.WARNING, "configuration: [DEFAULTS] bogus: unknown key ignored") \
        in caplog.record_tuples
    assert any(level == logging.INFO and "orchestrator" in message
               for _name, level, message in caplog.record_tuples)


@pytest.mark.parametrize("text,level", [
    ("DEBUG", logging.DEBUG), ("info", logging.INFO), ("Warning", logging.WARNING),
    ("WARN", logging.WARNING), ("ERROR", logging.ERROR), ("CRITICAL", logging.CRITICAL),
    ("SYS_DEBUG", logging.DEBUG), ("SYS_INFO", logging.INFO), ("SYS_NOTICE", logging.INFO),
    ("SYS_WARN", logging.WARNING), ("SYS_ERR", logging.ERROR), ("sys_crit", logging.CRITICAL),
])
def test_log_levels(text: str, level: int) -> None:
    assert load(["--log-level", text]).log.level == level


def test_original_bracketed_endpoint_list(tmp_path: Path) -> None:
    path = write(tmp_path, "[VNC]\nvnc_endpoint_ip = [127.0.0.1]\n")
    assert load(["-c", path]).vnc.endpoints == ["127.0.0.1"]


def test_public_view_has_no_secret(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [DEFAULTS]
        token = tok-abcdef-123
        [AUTH]
        auth_token_url = http://keystone:5000/v3/auth/tokens
        auth_user = svc-user
        auth_password = pw-98765
        auth_tenant = tenant-x
    """)
    config = load(["-c", path])
    view = config.public_view()
    assert not {k for k in view if k.startswith("auth_") or k == "token"}
    text = repr(view)
    for secret in ("tok-abcdef-123", "pw-98765", "svc-user", "keystone"):
        assert secret not in text
    assert view["cluster_name"] == "k8s" and view["log_level"] == "INFO"
    assert view["config_files"] == [path]
    assert sorted(config.secrets()) == ["pw-98765", "tok-abcdef-123"]


def test_secrets_have_no_command_line_flag() -> None:
    parser = cli_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["--auth-password", "x"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--token", "x"])


# --- the sample file ---------------------------------------------------------------------------

def _sample_defaults() -> dict:
    """`# key = value` lines of the sample, per section (the first occurrence documents the default)."""
    section, found = "", {}
    for line in SAMPLE.read_text().splitlines():
        header = re.match(r"^\[(\w+)\]$", line)
        if header:
            section = header.group(1)
        entry = re.match(r"^# (\w+) =(?: (.*))?$", line)
        if entry and entry.group(1) in KEYS:
            found.setdefault(entry.group(1), (section, entry.group(2) or ""))
    return found


def test_sample_documents_every_key_with_its_default() -> None:
    documented = _sample_defaults()
    assert set(documented) == set(KEYS)
    defaults = OperatorSettings()
    for name, (section, text) in documented.items():
        key = KEYS[name]
        assert section == key.section, name
        default = keys.get(defaults, key)
        value = key.parse(text) if text else type(default)()
        assert value == default, name


def test_sample_loads_cleanly() -> None:
    config = load(["-c", str(SAMPLE)])
    assert config.origin.warnings == [] and config.origin.ignored_keys == []
    assert config.public_view() == dict(OperatorSettings().public_view(), config_files=[str(SAMPLE)])


# --- logging -----------------------------------------------------------------------------------

def _record(message: str, *args, **fields) -> logging.LogRecord:
    record = logging.LogRecord("kube_manager.x", logging.INFO, __file__, 1, message, args, None)
    record.__dict__.update(kv(**fields))
    return record


def test_key_value_lines() -> None:
    line = KeyValueFormatter().format(_record("watch %s", "started", resource="pods", rv=42,
                                              note='say "hi"\nbye', empty=""))
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=INFO logger=kube_manager.x "
                    r'msg="watch started" resource=pods rv=42 note="say \\"hi\\"\\nbye" empty=""$',
                    line), line


def test_exceptions_stay_on_one_line() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = KeyValueFormatter().format(record)
    assert "\n" not in line and 'exc="Traceback' in line and "RuntimeError: boom" in line


def test_secrets_are_masked_in_every_line() -> None:
    formatter = KeyValueFormatter(secrets=["hunter2", "hunter2-long", ""])
    line = formatter.format(_record("auth with %s", "hunter2-long", header="Bearer hunter2"))
    assert "hunter2" not in line
    assert 'msg="auth with ***"' in line and 'header="Bearer ***"' in line


def test_setup_logging_to_file_at_level(tmp_path: Path) -> None:
    log_file = tmp_path / "km.log"
    path = write(tmp_path, f"[DEFAULTS]\nlog_file = {log_file}\nlog_level = SYS_WARN\n"
                           "token = tok-secret-1\nbogus = 1\n")
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    try:
        handler = setup_from_settings(load(["-c", path]))
        setup_from_settings(load(["-c", path]))  # a second setup replaces the handler
        assert [h.get_name() for h in root.handlers].count("kube-manager") == 1
        log = logging.getLogger("kube_manager.test")
        log.info("hidden at SYS_WARN")
        log.warning("shown with tok-secret-1", extra=kv(resource="pods"))
        for h in root.handlers:
            h.flush()
        text = log_file.read_text()
        assert "hidden" not in text
        assert 'msg="shown with ***" resource=pods' in text
        assert "bogus: unknown key ignored" in text
        assert handler is not None
    finally:
        for h in [h for h in root.handlers if h.get_name() == "kube-manager"]:
            root.removeHandler(h)
            h.close()
        root.setLevel(saved[0])


def test_unopenable_log_file_is_a_config_error(tmp_path: Path) -> None:
    settings = OperatorSettings(log=LogSettings(file=str(tmp_path / "no-such-dir" / "km.log")))
    with pytest.raises(ConfigError, match=r"^\[DEFAULTS\] log_file: cannot open"):
        setup_from_settings(settings)


def test_stderr_logging(capsys: pytest.CaptureFixture) -> None:
    root = logging.getLogger()
    saved = root.level
    try:
        setup_logging(logging.DEBUG)
        logging.getLogger("kube_manager.t").debug("to stderr")
        assert 'msg="to stderr"' in capsys.readouterr().err
        assert logging.getLogger("kubernetes").level == logging.INFO
    finally:
        for h in [h for h in root.handlers if h.get_name() == "kube-manager"]:
            root.removeHandler(h)
        root.setLevel(saved)


def test_what_the_operator_wrote_wins_over_what_demo_implies(tmp_path: Path) -> None:
    """`run --demo PATH -c FILE`: the file's values, then the options, win over `--demo`'s."""
    implied = {"vnc_endpoint_ip": "embedded", "vnc_endpoint_port": "0", "http_server_ip": "127.0.0.1",
               "kubernetes_api_server": "emulated", "kubernetes_api_port": "0"}
    path = write(tmp_path, "[DEFAULTS]\nhttp_server_ip = 127.0.0.2\n[KUBERNETES]\nkubernetes_api_port = 18080\n")
    config = load_settings(cli_parser().parse_args(["-c", path, "--vnc-endpoint-port", "18082"]), implied=implied)
    assert (config.introspect.listen_ip, config.kubernetes.api_port, config.vnc.port) == ("127.0.0.2", 18080, 18082)
    assert (config.vnc.endpoints, config.kubernetes.api_server) == (["embedded"], "emulated")  # implied, unwritten


@pytest.mark.parametrize("flag", ["--semantics", "--policy-semantics"])
def test_the_daemon_takes_the_semantics_flag_the_commands_take(flag: str) -> None:
    """`--semantics` on `run` as on translate, explain and what-if; the key's own spelling stays."""
    assert load([flag, "cluster-wide"]).cluster.semantics == "cluster-wide"
    assert load([]).cluster.semantics == "kubernetes"


def test_every_offline_flag_of_the_semantics_is_the_daemons() -> None:
    import argparse

    from kube_manager.cli.options import add_semantics_argument
    offline = argparse.ArgumentParser()
    add_semantics_argument(offline)
    spelt = {flag for action in offline._actions for flag in action.option_strings if "semantics" in flag}
    assert spelt == {"--semantics"} and KEYS["policy_semantics"].flags[0] == "--semantics"
    with pytest.raises(ConfigError, match=r"--semantics \(\[KUBERNETES\] policy_semantics\)"):
        load(["--semantics", "everywhere"])
