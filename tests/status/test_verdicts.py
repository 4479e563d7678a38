"""What kube_manager/status says about one policy (SPEC 15), as tables: the Events a change of its
record's facts calls for, and a ClusterNetworkPolicy's conditions."""
from __future__ import annotations

from typing import Optional

import pytest

from kube_manager.records.db import PARKED, PENDING, REJECTED, RETRYING, STAGED, SYNCED
from kube_manager.status.verdicts import (NOTE_LIMIT, PolicyFacts, conditions_of, events_between, merged_conditions,
                                          truncated)

BASE = PolicyFacts("NetworkPolicy", "shop", "p", "u1", 1, SYNCED, (), (), True)
BAD = BASE._replace(state=REJECTED, errors=("peer a: bad",))
PARKED_ONE = BASE._replace(state=PARKED, write_errors=("firewall-rule r: 400 no",))


@pytest.mark.parametrize("before, after, announce, expected", [
    (None, BASE, False, []),
    (None, BASE, True, [("Normal", "Synced", "Write")]),
    (None, BAD, False, [("Warning", "InvalidPolicy", "Translate")]),
    (BAD, BAD, False, []),                                     # nothing new: nothing said
    (BAD, BAD._replace(errors=("peer a: bad", "port b: bad")), False, [("Warning", "InvalidPolicy", "Translate")]),
    (BASE, PARKED_ONE, False, [("Warning", "WriteFailed", "Write")]),
    (PARKED_ONE, BASE._replace(state=PENDING), False, []),     # cleared for a retry
    (BASE._replace(state=PENDING), PARKED_ONE, False, [("Warning", "WriteFailed", "Write")]),  # refused again
    (None, BASE._replace(state=PENDING), True, []),            # not programmed: no Synced yet
    (None, BASE._replace(state=RETRYING), True, []),
    (None, BAD, True, [("Warning", "InvalidPolicy", "Translate"), ("Normal", "Synced", "Write")]),  # partly: programmed
    (None, BAD._replace(has_objects=False), True, [("Warning", "InvalidPolicy", "Translate")]),  # rejected whole
])
def test_events_between(before: Optional[PolicyFacts], after: PolicyFacts, announce: bool, expected: list) -> None:
    assert [(e.type, e.reason, e.action) for e in events_between(before, after, announce)] == expected


CNP = BASE._replace(kind="ClusterNetworkPolicy", namespace="", generation=4)


@pytest.mark.parametrize("facts, accepted, programmed", [
    (CNP, ("True", "Accepted"), ("True", "Programmed")),
    (CNP._replace(state=PENDING), ("True", "Accepted"), ("False", "Pending")),
    (CNP._replace(state=RETRYING), ("True", "Accepted"), ("False", "Pending")),
    (CNP._replace(state=PARKED, write_errors=("r: 400 no",)), ("True", "Accepted"), ("False", "WriteFailed")),
    (CNP._replace(state=REJECTED, errors=("x",)), ("False", "PartiallyInvalid"), ("True", "Programmed")),
    (CNP._replace(state=REJECTED, errors=("x",), has_objects=False), ("False", "Invalid"), ("False", "Invalid")),
    (CNP._replace(state=STAGED, has_objects=False), ("True", "Accepted"), ("False", "Staged")),
    (CNP._replace(state=STAGED, errors=("x",), has_objects=False), ("False", "PartiallyInvalid"), ("False", "Staged")),
])
def test_conditions_of(facts: PolicyFacts, accepted: tuple, programmed: tuple) -> None:
    held = {c["type"]: c for c in conditions_of(facts)}
    assert (held["Accepted"]["status"], held["Accepted"]["reason"]) == accepted
    assert (held["Programmed"]["status"], held["Programmed"]["reason"]) == programmed
    assert {c["observedGeneration"] for c in held.values()} == {4}


def test_the_messages_name_the_rejected_parts_and_the_config_apis_message() -> None:
    held = {c["type"]: c for c in conditions_of(CNP._replace(state=PARKED, errors=("spec.ingress[1]: bad",),
                                                        write_errors=("firewall-rule r: 400 no",)))}
    assert "spec.ingress[1]: bad" in held["Accepted"]["message"]
    assert held["Programmed"]["message"] == "firewall-rule r: 400 no"


def test_last_transition_time_moves_only_with_the_status() -> None:
    held = [{"type": "Accepted", "status": "True", "lastTransitionTime": "T0"},
            {"type": "Programmed", "status": "True", "lastTransitionTime": "T0"}]
    wanted = [{"type": "Accepted", "status": "True", "reason": "Accepted"},
              {"type": "Programmed", "status": "False", "reason": "Pending"}]
    assert [c["lastTransitionTime"] for c in merged_conditions(held, wanted, "T1")] == ["T0", "T1"]
    assert [c["lastTransitionTime"] for c in merged_conditions([], wanted, "T1")] == ["T1", "T1"]


@pytest.mark.parametrize("note", ["short", "x" * NOTE_LIMIT, "é" * NOTE_LIMIT, "y" * 5000])
def test_notes_are_at_most_1_kib(note: str) -> None:
    cut = truncated(note)
    assert len(cut.encode()) <= NOTE_LIMIT
    assert cut == note if len(note.encode()) <= NOTE_LIMIT else cut.endswith(" ...")
