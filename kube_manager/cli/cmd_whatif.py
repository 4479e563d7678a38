"""`contrail-kube-manager what-if -f CLUSTER... (--change CHANGE... | --switch-semantics)`: review a
change before applying it.

Applies the manifests of CHANGE to those of CLUSTER (each object added or replacing the one of the
same kind, namespace and name; one annotated `contrail-kube-manager/what-if: delete` deletes it)
and prints which flows change verdict, under Contrail and under Kubernetes, as a truth table:
one row per set of sources, set of destinations, protocol and port range with the same change.
The table is bounded (`--max-rows`, names per cell cut at `--max-names`); `-o json` lists every
changed flow. Exit status 0 (whatever changed), 2 on bad usage or input.

`--switch-semantics` instead compares the cluster under `policy_semantics = cluster-wide` and
`kubernetes` (SPEC 14): the rows are the flows the switch closes (Contrail `allowed -> DROPPED`,
Kubernetes unchanged: they relied on the cluster-wide deviation), the check before migrating.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Dict, List, Tuple

from kube_manager.offline.manifests import ManifestError, load_manifests
from kube_manager.offline.output import write_out
from kube_manager.explain.whatif import DELETE_ANNOTATION, DELETE_VALUE, FlowChange, WhatIfError
from kube_manager.cli.options import add_semantics_argument

USAGE_ERROR = 2
TRANSLATOR_LOGGER = "kube_manager.translator"

Row = Tuple[Tuple[str, ...], Tuple[str, ...], FlowChange]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", dest="paths", metavar="PATH", nargs="+", action="extend",
                        required=True, help="the cluster's manifests (files or directories)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--change", dest="change", metavar="PATH", nargs="+", action="extend",
                      help="manifests to apply: added, or replacing the object of the same kind, "
                           f"namespace and name; annotated {DELETE_ANNOTATION}: {DELETE_VALUE} "
                           "to delete it")
    what.add_argument("--switch-semantics", action="store_true",
                      help="compare the cluster under policy_semantics cluster-wide and kubernetes: "
                           "the flows switching to kubernetes closes")
    parser.add_argument("--cluster-name", default="k8s",
                        help="the cluster_name the objects are named after (default k8s)")
    add_semantics_argument(parser)
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="text (default): a bounded truth table; json: every changed flow")
    parser.add_argument("--max-rows", type=int, default=40, help="table rows shown (default 40)")
    parser.add_argument("--max-names", type=int, default=4,
                        help="pods named per cell before 'and N more' (default 4)")


def _verdict(before: bool, after: bool) -> str:
    word = {True: "allowed", False: "dropped"}
    return word[before] if before == after else f"{word[before]} -> {word[after].upper()}"


def group(changes: List[FlowChange]) -> List[Row]:
    """Rows of the truth table: flows with the same protocol, ports and verdicts, their
    destinations grouped per source, then sources with the same destinations merged."""
    by_change: Dict[tuple, Dict[str, List[str]]] = {}
    for change in changes:
        key = (change.protocol, change.ports, change.contrail, change.kubernetes)
        by_change.setdefault(key, {}).setdefault(change.source, []).append(change.destination)
    rows: List[Row] = []
    for (protocol, ports, contrail, kubernetes), sources in by_change.items():
        merged: Dict[Tuple[str, ...], List[str]] = {}
        for source, destinations in sources.items():
            merged.setdefault(tuple(sorted(destinations)), []).append(source)
        for targets, srcs in merged.items():
            sample = FlowChange(srcs[0], targets[0], protocol, ports, contrail, kubernetes)
            rows.append((tuple(sorted(srcs)), targets, sample))
    rows.sort(key=lambda r: (r[0], r[1], r[2].protocol, r[2].ports))
    return rows


def _names(names: Tuple[str, ...], limit: int) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def render(rows: List[Row], flows: int, pairs: int, affected: int, max_rows: int,
           max_names: int, heading: str = "") -> str:
    lines = [f"{heading}{flows} flow(s) (pair, protocol, port range) change verdict ({pairs} pairs "
             f"with an affected end checked, {affected} affected pods)"]
    if not rows:
        return lines[0] + "\n"
    lines.append("from | to | protocol ports | Contrail | Kubernetes")
    for sources, destinations, change in rows[:max_rows]:
        low, high = change.ports
        ports = str(low) if low == high else f"{low}-{high}"
        lines.append(f"{_names(sources, max_names)} | {_names(destinations, max_names)} | "
                     f"{change.protocol.upper()} {ports} | {_verdict(*change.contrail)} | "
                     f"{_verdict(*change.kubernetes)}")
    if len(rows) > max_rows:
        lines.append(f"... {len(rows) - max_rows} more row(s); -o json lists every flow")
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    # The translator is large: load it only here.
    from kube_manager.explain.whatif import CLUSTER_WIDE, KUBERNETES, semantics_switch, what_if

    translator_log = logging.getLogger(TRANSLATOR_LOGGER)
    level = translator_log.level
    translator_log.setLevel(logging.ERROR)  # rejections are `translate`'s to report
    try:
        if args.switch_semantics:
            result = semantics_switch(load_manifests(args.paths), args.cluster_name)
        else:
            result = what_if(load_manifests(args.paths), load_manifests(args.change),
                             args.cluster_name, args.semantics)
    except (ManifestError, WhatIfError, ValueError) as exc:
        print(f"contrail-kube-manager what-if: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        translator_log.setLevel(level)
    heading = (f"switching policy_semantics from {CLUSTER_WIDE} to {KUBERNETES}: "
               if args.switch_semantics else "")
    if args.output == "json":
        write_out(json.dumps({"pairs_checked": result.pairs_checked,
                              "semantics": ({"before": CLUSTER_WIDE, "after": KUBERNETES}
                                            if args.switch_semantics else args.semantics),
                              "affected_pods": result.affected_pods,
                              "changes": [c.to_dict() for c in result.changes]},
                             sort_keys=True, indent=2) + "\n")
    else:
        write_out(render(group(result.changes), len(result.changes), result.pairs_checked,
                         result.affected_pods, max(1, args.max_rows), max(1, args.max_names), heading))
    return 0
