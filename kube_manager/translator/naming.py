"""Names and sequence numbers of the Contrail objects (SPEC 4 and 5).

Names follow the wiki's convention prefixed with the cluster name, so an operator can read a rule
name back to its NetworkPolicy, block, peer and port. Sequences are derived from names, so adding or
removing a NetworkPolicy never renumbers the others.
"""
from __future__ import annotations

import hashlib

from .encoding import sha1_hex

MAX_NAME_LENGTH = 255
_KEPT_LENGTH = 246
DENYALL_SEQUENCE = "2.0"
ALLOWALL_SEQUENCE = "3.0"
INGRESS, EGRESS = "ingress", "egress"


def shorten(name: str) -> str:
    """Names over 255 characters keep 246 plus `-` and 8 hex of sha1(full name)."""
    if len(name) <= MAX_NAME_LENGTH:
        return name
    return f"{name[:_KEPT_LENGTH]}-{sha1_hex(name)[:8]}"


def collision_label(namespace: str, name: str) -> str:
    """What replaces `<np>` in every name of a NetworkPolicy whose names collide with another's."""
    return f"{name}-{sha1_hex(f'{namespace}/{name}')[:8]}"


def policy_name(cluster: str, namespace: str, np_label: str) -> str:
    return f"{cluster}-{namespace}-{np_label}"


def rule_prefix(cluster: str, namespace: str, direction: str, np_label: str) -> str:
    """`<cluster>-<ns>-<dir>-<np>-`, the start of every rule name of one direction."""
    return f"{cluster}-{namespace}-{direction}-{np_label}-"


def deny_rule_name(rule_prefix: str) -> str:
    """The deny rule of one direction, from that direction's `rule_prefix`."""
    return f"{rule_prefix}denyall"


def application_policy_set_name(cluster: str) -> str:
    return cluster


def denyall_policy_name(cluster: str) -> str:
    return f"{cluster}-denyall"


def allowall_policy_name(cluster: str) -> str:
    return f"{cluster}-allowall"


def rule_sequence(index: int) -> str:
    """Sequence of the index-th pass rule inside its NetworkPolicy's firewall policy."""
    return "%05d.0" % index


_SHA1 = hashlib.sha1
_FROM_BYTES = int.from_bytes


def hashed_sequence(name: str) -> str:
    """`1.<first 12 decimal digits of int(sha1(name), 16)>`: stable whatever else exists.

    Asked for every policy and deny rule of a bulk load: the lookups are module globals. The byte
    order is spelt out, as Python 3.10 (supported) has no default for it."""
    return "1." + str(_FROM_BYTES(_SHA1(name.encode()).digest(), "big"))[:12]


def sequence_sort_key(sequence: str, name: str) -> str:
    """One string ordering refs by sequence in numeric order of `major.minor` (the minor digits
    compare as decimals), then by name, cheaper to build and to compare than a tuple: the major number zero-padded (as text: majors are the translator's
    own canonical integers), the minor digits, then NUL (below every digit, so a shorter minor
    sorts first, as in the tuple) and the name (names never contain NUL)."""
    major, _, minor = sequence.partition(".")
    return f"{major.zfill(10)}.{minor}\0{name}"


# --- the cluster's own policies and blocks (SPEC 5, 13, 14): named here alone; the reconciler's
# make before break asks for them by these names.

def block_policy_name(cluster: str, block: str) -> str:
    """`<cluster>--<block>`, the firewall policy of one ordered block."""
    return f"{cluster}--{block}"


ADMIN_BLOCK, BASELINE_NP_BLOCK, BASELINE_BLOCK = "admin", "baseline-np", "baseline"
ISOLATION_BLOCK, ISOLATION_DENY_BLOCK = "isolation", "isolation-deny"
# Every ordered block, in APS order: the three tier blocks and the exact enforcement's two.
ORDERED_BLOCKS = (ADMIN_BLOCK, ISOLATION_BLOCK, ISOLATION_DENY_BLOCK, BASELINE_NP_BLOCK, BASELINE_BLOCK)


def isolation_policy_name(cluster: str) -> str:
    return block_policy_name(cluster, ISOLATION_BLOCK)


def isolation_deny_policy_name(cluster: str) -> str:
    return block_policy_name(cluster, ISOLATION_DENY_BLOCK)


def isolation_deny_name(cluster: str) -> str:
    """The one rule of `<cluster>--isolation-deny`."""
    return f"{cluster}--isolated-egress-to-isolated-ingress"
