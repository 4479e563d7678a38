"""A rule's `action_list.log` compared as a field of its own (SPEC 15): absent reads as false, so a
rule that stops logging is written although the subset comparison ignores what the server adds."""
from __future__ import annotations

import pytest

from kube_manager.reconciler.compare import changed_fields

DENY = {"simple_action": "deny"}
LOGGED = {"simple_action": "deny", "log": True}


@pytest.mark.parametrize("desired, actual, changed", [
    (DENY, DENY, False),
    (LOGGED, LOGGED, False),
    (LOGGED, DENY, True),
    (DENY, LOGGED, True),   # stops logging: written
    (DENY, {"simple_action": "deny", "log": False}, False),
    (DENY, {"simple_action": "deny", "alert": False}, False),  # what the server adds is still ignored
])
def test_log_is_compared_absent_as_false(desired: dict, actual: dict, changed: bool) -> None:
    assert bool(changed_fields("firewall-rule", {"action_list": desired}, {"action_list": actual})) == changed
