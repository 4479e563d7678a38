"""What to say in Kubernetes about one policy (SPEC 15): pure functions of its record's facts.

`PolicyFacts` is what a policy's record holds that Kubernetes is told about (its identity and
generation, its sync state, its rejected parts and its parked objects); `events_between` says which
Events a change of those facts calls for, `conditions_of` what a ClusterNetworkPolicy's
`status.conditions` say (`unreachable_conditions` while the leader cannot read the config API),
and `merged_conditions` carries `lastTransitionTime` over from the
conditions the object holds. No I/O here: the recorder and the outbox do that.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from kube_manager.records.db import PARKED, REJECTED, STAGED, SYNCED

WARNING, NORMAL = "Warning", "Normal"
INVALID_POLICY, WRITE_FAILED, SYNCED_REASON = "InvalidPolicy", "WriteFailed", "Synced"
# The Event's `action`: what kube-manager was doing when it saw what the Event reports.
TRANSLATE, WRITE = "Translate", "Write"
ACCEPTED, PROGRAMMED = "Accepted", "Programmed"
CONFIG_API_UNREACHABLE = "ConfigAPIUnreachable"  # Programmed's reason while a leader cannot read the config API
NOTE_LIMIT = 1024  # bytes: the API server refuses a longer note


class PolicyFacts(NamedTuple):
    """One NetworkPolicy or ClusterNetworkPolicy as its record states it (a tuple: made for every
    record at each push of sync states, a resync's included, so cheap to make and compare)."""

    kind: str              # NetworkPolicy | ClusterNetworkPolicy
    namespace: str         # "" for a ClusterNetworkPolicy
    name: str
    uid: str
    generation: int
    state: str             # the record's sync state
    errors: Tuple[str, ...]        # its rejected parts, as `errors` words them
    write_errors: Tuple[str, ...]  # its parked objects, with the config API's message
    has_objects: bool      # it emits something (False: rejected whole)

    @property
    def programmed(self) -> bool:
        """Every object it emits is in the config API as desired (a partly rejected policy whose
        remaining objects are written is programmed: its state says `rejected` for its errors)."""
        return self.state == SYNCED or (self.state == REJECTED and self.has_objects)


@dataclass(frozen=True)
class EventSpec:
    """One Event to record about a policy."""

    type: str
    reason: str
    action: str
    note: str


def events_between(before: Optional[PolicyFacts], after: PolicyFacts, announce_synced: bool) -> List[EventSpec]:
    """The Events a change of facts calls for: a Warning for each rejected part and each parked
    object that `before` did not have (a parked object that was tried again, cleared and parked
    anew is a new occurrence), and Synced when `after` is programmed and `announce_synced` (the
    publisher decides once per generation)."""
    events = [EventSpec(WARNING, INVALID_POLICY, TRANSLATE, truncated(error))
              for error in after.errors if before is None or error not in before.errors]
    events += [EventSpec(WARNING, WRITE_FAILED, WRITE, truncated(error))
               for error in after.write_errors if before is None or error not in before.write_errors]
    if announce_synced and after.programmed:
        events.append(EventSpec(NORMAL, SYNCED_REASON, WRITE, synced_note(after)))
    return events


def synced_note(facts: PolicyFacts) -> str:
    rejected = f"; {len(facts.errors)} part(s) rejected" if facts.errors else ""
    return f"generation {facts.generation}: every object written to the Contrail config API{rejected}"


def truncated(note: str, limit: int = NOTE_LIMIT) -> str:
    """`note` cut to `limit` bytes of UTF-8 (never inside a character), marked when cut."""
    raw = note.encode()
    if len(raw) <= limit:
        return note
    return raw[:limit - len(" ...")].decode(errors="ignore") + " ..."


def conditions_of(facts: PolicyFacts) -> List[Dict[str, Any]]:
    """`Accepted` and `Programmed` of a ClusterNetworkPolicy, without `lastTransitionTime`."""
    parts = "; ".join(facts.errors)
    if not facts.errors:
        accepted = ("True", ACCEPTED, "the policy is valid")
    elif not facts.has_objects and facts.state != STAGED:
        accepted = ("False", "Invalid", truncated(f"rejected whole: {parts}"))
    else:
        accepted = ("False", "PartiallyInvalid", truncated(f"rejected parts: {parts}"))
    if facts.state == STAGED:  # SPEC 17
        programmed = ("False", "Staged", "staged: translated and reported, nothing written to the Contrail config API")
    elif not facts.has_objects:
        programmed = ("False", "Invalid", "nothing to program: the policy was rejected whole")
    elif facts.state == PARKED:
        programmed = ("False", "WriteFailed", truncated("; ".join(facts.write_errors)))
    elif facts.programmed:
        programmed = ("True", PROGRAMMED, "every object is written to the Contrail config API")
    else:
        programmed = ("False", "Pending", "objects are being written to the Contrail config API")
    return [{"type": kind, "status": status, "reason": reason, "message": message,
             "observedGeneration": facts.generation}
            for kind, (status, reason, message) in ((ACCEPTED, accepted), (PROGRAMMED, programmed))]


def unreachable_conditions(facts: PolicyFacts, cause: str) -> List[Dict[str, Any]]:
    """The conditions of a policy whose objects' state cannot be known: the leader's start-up
    resync could not read the config API (`cause`, the error's class). `Accepted` is judged from the
    translation alone, and so is `Programmed` for a policy that writes nothing (rejected whole or
    staged); any other `Programmed` is `False` / ConfigAPIUnreachable, which `merged_conditions`
    never lets replace a `True` held for the same generation."""
    accepted, programmed = conditions_of(facts)
    if facts.has_objects and facts.state != STAGED:
        programmed = {**programmed, "status": "False", "reason": CONFIG_API_UNREACHABLE,
                      "message": f"the Contrail config API cannot be read ({cause}): the objects are "
                                 "written once it answers"}
    return [accepted, programmed]


def merged_conditions(held: Sequence[Mapping[str, Any]], wanted: Sequence[Mapping[str, Any]],
                      now: str) -> List[Dict[str, Any]]:
    """`wanted` with the `lastTransitionTime` of the condition of the same type `held`, where its
    status did not change, `now` where it did (or was not there). A `Programmed` `True` held for
    the wanted generation stays as it is against a wanted ConfigAPIUnreachable: what was written is
    still in Contrail as far as anyone can tell, and a new leader that cannot read the config API
    would otherwise flap it (and move its `lastTransitionTime`) at every failover."""
    old = {c.get("type"): c for c in held if isinstance(c, Mapping)}
    merged: List[Dict[str, Any]] = []
    for condition in wanted:
        previous = old.get(condition["type"])
        if (condition["reason"] == CONFIG_API_UNREACHABLE and previous is not None and previous.get("status") == "True"
                and previous.get("observedGeneration") == condition["observedGeneration"]):
            merged.append(dict(previous))
            continue
        same = previous is not None and previous.get("status") == condition["status"]
        since = previous.get("lastTransitionTime") if same and previous is not None else None
        merged.append({**condition, "lastTransitionTime": since or now})
    return merged
