"""`contrail-kube-manager [-c FILE] [run] [--once] [--demo PATH]`: the daemon.

gevent's monkey-patching must happen before anything imports ssl, urllib3, requests or kubernetes,
so that their blocking sockets become cooperative; `cli/main.py` imports this module lazily, only for the
`run` command, and this module patches (`plumbing/gevent_patch.py`, which imports nothing else of
kube-manager) before importing anything else of kube-manager.

`--demo PATH` is the main job on embedded defaults: the in-process config API
(`vnc_endpoint_ip = embedded`), an emulated Kubernetes API server loaded with the manifests under
PATH, the emulated CNI, and the introspect pages on 127.0.0.1. Values given explicitly, in a `-c`
file or as an option, win over those `--demo` implies.

Exit status: 0 after a clean stop (SIGTERM, SIGINT) or, with `--once`, when everything converged;
1 when `--once` did not converge or the daemon failed; 2 for a bad configuration (systemd's
`RestartPreventExitStatus=2` then does not restart it in a loop).
"""
from kube_manager.plumbing import gevent_patch

gevent_patch.patch_all()

import argparse  # noqa: E402  (after the monkey-patching, on purpose)
import logging  # noqa: E402
import sys  # noqa: E402
from typing import Dict  # noqa: E402

from kube_manager import settings as settings_module  # noqa: E402
from kube_manager.plumbing import gcpolicy  # noqa: E402
from kube_manager.settings import EMBEDDED, EMULATED, ConfigError  # noqa: E402
from kube_manager.offline.manifests import ManifestError  # noqa: E402

log = logging.getLogger("kube_manager.run")

DEFAULT_ONCE_TIMEOUT = 300.0


def demo_overrides(paths: "list[str]") -> Dict[str, str]:
    """The settings `--demo PATH...` stands for (INI key -> text), below the `-c` files and options."""
    return {
        "vnc_endpoint_ip": EMBEDDED,
        "vnc_endpoint_port": "0",
        "kubernetes_api_server": EMULATED,
        "kubernetes_api_port": "0",
        "emulated_manifests": ",".join(paths),
        "emulated_cni": "true",
        "http_server_ip": "127.0.0.1",
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    settings_module.add_arguments(parser)
    group = parser.add_argument_group("run")
    # SUPPRESS, as for the configuration flags: they may be given before or after `run`.
    group.add_argument("--once", action="store_true", default=argparse.SUPPRESS,
                       help="converge once and exit: status 0 when everything converged")
    group.add_argument("--once-timeout", type=float, metavar="SECONDS", default=argparse.SUPPRESS,
                       help="with --once, give up after this long, initial lists and first resync included: "
                            f"exit 1 naming what did not converge (default {DEFAULT_ONCE_TIMEOUT:g})")
    group.add_argument("--demo", metavar="PATH", action="append", default=argparse.SUPPRESS,
                       help="embedded defaults: in-process config API, emulated Kubernetes API server "
                            "loaded from PATH (file or directory, repeatable, - for standard input), "
                            "emulated CNI, introspect on 127.0.0.1")


def main(args: argparse.Namespace) -> int:
    demo = getattr(args, "demo", None)
    from kube_manager.observability.logging_setup import setup_from_settings
    try:
        settings = settings_module.load_settings(args, implied=demo_overrides(demo) if demo else None)
        if getattr(args, "once_timeout", DEFAULT_ONCE_TIMEOUT) <= 0:
            raise ConfigError(f"--once-timeout: must be positive, got {args.once_timeout:g}")
        setup_from_settings(settings, log)
    except ConfigError as exc:
        print(f"contrail-kube-manager: configuration error: {exc}", file=sys.stderr)
        return 2
    from kube_manager.service.daemon import Daemon
    daemon = Daemon(settings)
    gcpolicy.started()  # what the start imported and built lives as long as the process
    try:
        return daemon.run(once=getattr(args, "once", False),
                          once_timeout=getattr(args, "once_timeout", DEFAULT_ONCE_TIMEOUT))
    except ConfigError as exc:
        log.error("configuration error: %s", exc)
        return 2
    except ManifestError as exc:  # --demo PATH that cannot be read
        print(f"contrail-kube-manager: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        log.error("start-up failed: %s", exc)
        return 1
