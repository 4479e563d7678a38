"""Command line entry point: `contrail-kube-manager [run|translate|explain|what-if|vnc-server]`.

Each subcommand lives in its own module exposing `add_arguments(parser)` and `main(args) -> int`.
They are imported lazily so that the offline commands never import gevent or the network clients,
and so that the daemon can monkey-patch before anything imports ssl/requests/kubernetes.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Optional, Sequence

from kube_manager.version import version_line

# subcommand -> (module, help)
SUBCOMMANDS = {
    "run": ("kube_manager.cli.cmd_run", "run the daemon (the default)"),
    "translate": ("kube_manager.cli.cmd_translate", "translate manifests offline to Contrail objects"),
    "explain": ("kube_manager.cli.cmd_explain", "explain the verdict for one flow, offline"),
    "what-if": ("kube_manager.cli.cmd_whatif", "the flows a change of manifests opens or closes, offline"),
    "vnc-server": ("simulators.vnc_api.cmd", "run the embedded in-memory config API server"),
}


def _load(name: str):
    return importlib.import_module(SUBCOMMANDS[name][0])


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """Build the parser; only the chosen subcommand's module is imported."""
    parser = argparse.ArgumentParser(
        prog="contrail-kube-manager",
        description="Keeps the Contrail config API in step with Kubernetes NetworkPolicies.",
    )
    _add_version(parser)
    sub = parser.add_subparsers(dest="command", metavar="{" + ",".join(SUBCOMMANDS) + "}")
    chosen = _chosen(argv)
    for name, (_module, help_text) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_text)
        _add_version(sp)
        if name == chosen:
            _load(name).add_arguments(sp)
    if chosen == "run":
        # `contrail-kube-manager -c FILE` without a subcommand runs the daemon.
        _load("run").add_arguments(parser)
    return parser


def _chosen(argv: Sequence[str]) -> str:
    return next((a for a in argv if a in SUBCOMMANDS), "run")


def _add_version(parser: argparse.ArgumentParser) -> None:
    """`--version` (SPEC 8), on the top parser and every subcommand alike."""
    parser.add_argument("--version", action="version", version=version_line(),
                        help="print the version (and the Python running it) and exit")


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    daemon = _chosen(argv) == "run"
    if daemon:  # the collector paused for the daemon's imports; `cmd_run` ends the pause before it runs
        from kube_manager.plumbing import gcpolicy
        gcpolicy.pause_for_start()
    try:
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        command = args.command or "run"
        return int(_load(command).main(args) or 0)
    finally:
        if daemon:
            gcpolicy.started()  # a start that ended early (a bad configuration) too


if __name__ == "__main__":
    sys.exit(main())
