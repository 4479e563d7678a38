"""The leader election keys of SPEC section 9: defaults, the derived Lease name, and client-go's
timing rule lease_duration > renew_deadline > 1.2 x retry_period, whose breach stops start-up with a
message naming the key."""
from __future__ import annotations

from pathlib import Path

import pytest

from kube_manager.settings import ConfigError
from tests.support.config_support import load, write


def test_defaults_follow_client_go_and_name_the_lease_after_the_cluster() -> None:
    config = load(["--cluster-name", "blue"])
    assert config.election.enabled is True
    assert config.election.namespace == "kube-system"
    assert config.lease_name == "contrail-kube-manager-blue"
    assert (config.election.lease_duration, config.election.renew_deadline,
            config.election.retry_period) == (15, 10.0, 2.0)


def test_file_values_are_read_from_the_kubernetes_section(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [KUBERNETES]
        leader_elect = false
        leader_elect_namespace = contrail
        leader_elect_name = ckm
        leader_elect_lease_duration = 3
        leader_elect_renew_deadline = 2
        leader_elect_retry_period = 0.5
        """)
    config = load(["-c", path])
    assert config.election.enabled is False and config.lease_name == "ckm"
    assert (config.election.namespace, config.election.lease_duration, config.election.renew_deadline,
            config.election.retry_period) == ("contrail", 3, 2.0, 0.5)


@pytest.mark.parametrize("argv, key", [
    (["--leader-elect-lease-duration", "10"], "leader_elect_lease_duration"),          # == renew deadline
    (["--leader-elect-lease-duration", "8"], "leader_elect_lease_duration"),
    (["--leader-elect-retry-period", "9"], "leader_elect_renew_deadline"),             # 10 < 1.2 x 9
    (["--leader-elect-renew-deadline", "2.4", "--leader-elect-retry-period", "2"], "leader_elect_renew_deadline"),
    (["--leader-elect-lease-duration", "2.5"], "leader_elect_lease_duration"),         # whole seconds
    (["--leader-elect-retry-period", "0"], "leader_elect_retry_period"),
    (["--leader-elect-namespace", " "], "leader_elect_namespace"),
])
def test_bad_timings_stop_start_up_naming_the_key(argv: list, key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        load(argv)


def test_timings_are_not_checked_without_election() -> None:
    config = load(["--leader-elect", "false", "--leader-elect-lease-duration", "5"])
    assert config.election.enabled is False


def test_just_inside_the_rule_is_accepted() -> None:
    config = load(["--leader-elect-lease-duration", "3", "--leader-elect-renew-deadline", "2.5",
                   "--leader-elect-retry-period", "2"])
    assert config.election.renew_deadline == 2.5
