"""Options several commands share, kept in one place so that their spelling and help agree."""
from __future__ import annotations

import argparse

# SPEC 14's policy_semantics values, spelt here so that building a parser does not load the
# translator (tests keep them equal to the translator's).
SEMANTICS_CHOICES = ("kubernetes", "cluster-wide")
DEFAULT_SEMANTICS = "kubernetes"


def add_semantics_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--semantics", choices=SEMANTICS_CHOICES, default=DEFAULT_SEMANTICS,
        help="how the policies are enforced, as the daemon's policy_semantics: kubernetes "
             "(the default: exactly the Kubernetes verdict) or cluster-wide (the Contrail wiki's: "
             "a NetworkPolicy allowing a flow at one end admits it at the other)")
