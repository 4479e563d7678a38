"""`contrail-kube-manager explain`: the verdict for one flow, offline (SPEC sections 6 and 8).

Reads the manifests, translates them as the daemon would, and prints as JSON how Contrail decides
the flow (deciding rule and policy), how Kubernetes would, and whether they differ by the documented
cluster-wide enforcement. Bad input is a message on stderr and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys

from kube_manager.manifests import ManifestError, load_manifests
from kube_manager.translator.explain import ExplainError, Explainer

log = logging.getLogger(__name__)

USAGE_ERROR = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", dest="paths", metavar="PATH", nargs="+", action="extend",
                        required=True,
                        help="manifest files or directories (Namespace, Pod, NetworkPolicy)")
    parser.add_argument("--from", dest="source", metavar="NS/POD|IP", required=True,
                        help="the flow's source: a pod as namespace/name, or an IP address")
    parser.add_argument("--to", dest="destination", metavar="NS/POD|IP", required=True,
                        help="the flow's destination: a pod as namespace/name, or an IP address")
    parser.add_argument("--port", required=True, help="destination port (1-65535)")
    parser.add_argument("--protocol", default="TCP", help="TCP, UDP or SCTP (default TCP)")
    parser.add_argument("--cluster-name", default="k8s",
                        help="the cluster_name the objects are named after (default k8s)")


def main(args: argparse.Namespace) -> int:
    from kube_manager.translator import translate  # the translator is large; load it only here

    try:
        manifests = load_manifests(args.paths)
        translation = translate(manifests.namespaces, manifests.pods, manifests.network_policies,
                                cluster_name=args.cluster_name).to_dict()
        result = Explainer(translation, manifests, args.cluster_name).explain(
            args.source, args.destination, args.port, args.protocol)
    except (ManifestError, ExplainError) as exc:
        print(f"contrail-kube-manager explain: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if result["deviation"] == "mismatch":
        log.warning("explain %s -> %s: Contrail and Kubernetes disagree: %s",
                    args.source, args.destination, result["reason"])
    print(json.dumps(result, sort_keys=True, indent=2))
    return 0
