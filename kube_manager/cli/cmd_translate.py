"""`contrail-kube-manager translate -f PATH... [-o table|json|yaml] [--cluster-name NAME]
[--semantics kubernetes|cluster-wide]` (SPEC 8, 14).

Offline: reads Namespace, Pod, NetworkPolicy and ClusterNetworkPolicy manifests and prints the Contrail objects the daemon
would write for them. The same input always gives byte-identical output, so the result can be
diffed and kept under version control.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Iterable

from kube_manager.cli.options import add_semantics_argument
from kube_manager.offline.manifests import ManifestError, load_manifests
from kube_manager.offline.output import write_parts
from kube_manager.offline.serialize import Chunk, json_chunks
from kube_manager.plumbing.gcpolicy import collector_paused, leave_to_exit

USAGE_ERROR = 2
FORMATS = ("table", "json", "yaml")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", dest="paths", metavar="PATH", nargs="+", action="extend",
                        required=True,
                        help="manifest files or directories (YAML or JSON, multi-document, List kinds); "
                             "- reads standard input")
    parser.add_argument("-o", "--output", choices=FORMATS, default="table",
                        help="table (the Contrail wiki's tables, Markdown), json or yaml (default table)")
    parser.add_argument("--cluster-name", default="k8s",
                        help="the cluster_name the objects are named after (default k8s)")
    add_semantics_argument(parser)


def render(translation: Any, output: str) -> bytes:
    """The translation in one of FORMATS, ending with a newline."""
    return b"".join(render_parts(translation, output))


def render_parts(translation: Any, output: str) -> Iterable[Chunk]:
    """`render`'s bytes in parts, each made when the one before is written (JSON: a large
    translation's text is never held whole)."""
    if output == "json":
        return json_chunks(translation.to_dict())
    if output == "yaml":
        from kube_manager.offline.serialize import yaml_bytes  # PyYAML's import only when asked for

        return (yaml_bytes(translation.to_dict()),)
    from kube_manager.offline.render_table import render_table

    return (render_table(translation).encode(),)


def main(args: argparse.Namespace) -> int:
    with collector_paused():
        status = _translate(args)
        leave_to_exit()
        return status


def _translate(args: argparse.Namespace) -> int:
    from kube_manager.translator import cluster_name_problem, translate

    problem = cluster_name_problem(args.cluster_name)
    if problem:
        print(f"contrail-kube-manager translate: --cluster-name: {problem}", file=sys.stderr)
        return USAGE_ERROR
    try:
        manifests = load_manifests(args.paths)
    except ManifestError as exc:
        print(f"contrail-kube-manager translate: {exc}", file=sys.stderr)
        return USAGE_ERROR
    translation = translate(manifests.handed_over(), cluster_name=args.cluster_name, semantics=args.semantics)
    write_parts(render_parts(translation, args.output))
    return 0
