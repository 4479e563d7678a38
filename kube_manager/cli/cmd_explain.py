"""`contrail-kube-manager explain`: the verdict for one flow, offline (SPEC sections 6 and 8).

Reads the manifests (ClusterNetworkPolicies included), translates them as the daemon would, and
says how Contrail decides the flow (deciding rule and policy), how Kubernetes would (tier by tier:
Admin, NetworkPolicy, Baseline), whether they differ by the documented cluster-wide enforcement,
and the trace of why. `-o text` (the default) is a few lines for people,
`-o json` the whole answer. The exit status answers the question, as `kubectl auth can-i` does: 0
when Contrail allows the flow, 1 when it drops it, 2 on bad usage or input (a message on stderr,
never a traceback). Translation errors are printed only when they concern the flow (a policy of
its trace, one of its pods), so a bad policy elsewhere does not bury the answer.

`--staged` (SPEC 17) answers twice: as enforced now, and with the staged policies (annotated
`contrail-kube-manager/staged: "true"`) enforced; the exit status answers for now.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys

from kube_manager.cli.options import add_semantics_argument
from kube_manager.explain.text import flow_errors, render
from kube_manager.offline.manifests import ManifestError, load_manifests
from kube_manager.offline.output import write_out
from kube_manager.explain.explainer import MISMATCH, ExplainError, Explainer

log = logging.getLogger(__name__)

ALLOWED, DROPPED, USAGE_ERROR = 0, 1, 2
TRANSLATOR_LOGGER = "kube_manager.translator"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", dest="paths", metavar="PATH", nargs="+", action="extend",
                        required=True,
                        help="manifest files or directories (Namespace, Pod, NetworkPolicy, "
                             "ClusterNetworkPolicy); - reads standard input")
    parser.add_argument("--from", dest="source", metavar="NS/POD|IP", required=True,
                        help="the flow's source: a pod as namespace/name, or an IP address")
    parser.add_argument("--to", dest="destination", metavar="NS/POD|IP", required=True,
                        help="the flow's destination: a pod as namespace/name, or an IP address")
    parser.add_argument("--port", required=True, help="destination port (1-65535)")
    parser.add_argument("--protocol", default="TCP", help="TCP, UDP or SCTP (default TCP)")
    parser.add_argument("--cluster-name", default="k8s",
                        help="the cluster_name the objects are named after (default k8s)")
    add_semantics_argument(parser)
    parser.add_argument("--staged", action="store_true",
                        help="also the verdict with the staged policies enforced, beside the verdict without")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="text (default): verdict, deciding rule and trace in a few lines; "
                             "json: the whole answer (SPEC section 6 keys)")


def main(args: argparse.Namespace) -> int:
    if args.staged:
        return _staged(args)
    from kube_manager.translator import translate  # the translator is large; load it only here

    translator_log = logging.getLogger(TRANSLATOR_LOGGER)
    level = translator_log.level
    translator_log.setLevel(logging.ERROR)  # its rejections come back below, if they concern us
    try:
        manifests = load_manifests(args.paths)
        translation = translate(manifests.objects, cluster_name=args.cluster_name, semantics=args.semantics)
        result = Explainer(translation.to_dict(), manifests, args.cluster_name,
                           translation.selectors, semantics=args.semantics).explain(
            args.source, args.destination, args.port, args.protocol)
    except (ManifestError, ExplainError) as exc:
        print(f"contrail-kube-manager explain: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        translator_log.setLevel(level)
    for line in flow_errors(translation.errors, result):
        print(f"warning: {line}", file=sys.stderr)
    if result["deviation"] == MISMATCH:
        log.warning("explain %s -> %s: Contrail and Kubernetes disagree: %s",
                    args.source, args.destination, result["reason"])
    write_out(json.dumps(result, sort_keys=True, indent=2) + "\n" if args.output == "json" else render(result))
    return ALLOWED if result["allowed"] else DROPPED


def _staged(args: argparse.Namespace) -> int:
    from kube_manager.explain.staged_verdicts import StagedExplainer, render_both

    translator_log = logging.getLogger(TRANSLATOR_LOGGER)
    level = translator_log.level
    translator_log.setLevel(logging.ERROR)
    try:
        explainer = StagedExplainer(load_manifests(args.paths).objects, args.cluster_name, args.semantics)
        result = explainer.explain(args.source, args.destination, args.port, args.protocol)
    except (ManifestError, ExplainError) as exc:
        print(f"contrail-kube-manager explain: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        translator_log.setLevel(level)
    write_out(json.dumps(result, sort_keys=True, indent=2) + "\n" if args.output == "json" else render_both(result))
    return ALLOWED if result["enforced"]["allowed"] else DROPPED
