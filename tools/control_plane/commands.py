"""tools/control-plane's command line: `build`, `up`, `down`, `status` (see --help, and
docs/operations.md "Try the daemon against a real API server")."""
from __future__ import annotations

import argparse
import ssl
import sys
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional

from tools.control_plane import local_processes
from tools.control_plane.building import BuildError, binaries_for, ensure_built
from tools.control_plane.env_file import read_env
from tools.control_plane.launch import UpOptions, up
from tools.control_plane.pins import PinError, read_pins

# Stopped in this order: the API server before the store it writes to.
PROCESSES = (("kube-apiserver", "APISERVER_PID", "APISERVER_BIN"), ("etcd", "ETCD_PID", "ETCD_BIN"))
NOT_BUILT = 3   # `build --check`: the binaries for the current pins are not in the cache


def say(line: str) -> None:
    print(f"control-plane: {line}", flush=True)


def down(folder: Path) -> int:
    env = read_env(folder)
    if not env:
        say(f"nothing to stop: no {folder / 'env'}")
        return 0
    for name, pid_key, binary_key in PROCESSES:
        if pid_key in env:
            ending = local_processes.stop(int(env[pid_key]), Path(env[binary_key]))
            say(f"{name} pid {env[pid_key]}: {ending}")
    return 0


def _readyz(env: Dict[str, str]) -> str:
    context = ssl.create_default_context(cafile=env["CA_CERT"])
    try:
        with urllib.request.urlopen(env["APISERVER_URL"] + "/readyz", context=context, timeout=5) as answer:
            return f"{answer.status} {answer.read().decode().strip()}"
    except OSError as exc:
        return f"no answer ({exc})"


def _running(env: Dict[str, str]) -> Dict[str, bool]:
    """Each process `up` wrote into `env`: whether it still runs."""
    return {name: pid_key in env and local_processes.runs(int(env[pid_key]), Path(env[binary_key]))
            for name, pid_key, binary_key in PROCESSES}


def status(folder: Path) -> int:
    """0 when both processes run, 1 otherwise."""
    env = read_env(folder)
    if not env:
        say(f"not started: no {folder / 'env'}")
        return 1
    running = _running(env)
    for name, pid_key, _ in PROCESSES:
        say(f"{name} pid {env.get(pid_key, '-')}: {'running' if running[name] else 'not running'}")
    if "CA_CERT" in env and any(running.values()):
        say(f"{env['APISERVER_URL']}/readyz: {_readyz(env)}")
    say(f"kubernetes {env.get('KUBERNETES_VERSION')}, etcd {env.get('ETCD_VERSION')}")
    return 0 if all(running.values()) else 1


def build(check: bool) -> int:
    pins = read_pins()
    binaries = binaries_for(pins)
    if check:
        found = binaries.complete()
        say(f"{'built' if found else 'not built'}: {binaries.folder}")
        return 0 if found else NOT_BUILT
    ensure_built(pins, say)
    print(binaries.folder)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tools/control-plane", description=(
        "A real kube-apiserver and etcd on loopback, built from the pinned Go modules."))
    commands = parser.add_subparsers(dest="command", required=True)
    built = commands.add_parser("build", help="build the binaries for the pins, or reuse the cache")
    built.add_argument("--check", action="store_true",
                       help=f"only say whether they are built (exit {NOT_BUILT} when not)")
    started = commands.add_parser("up", help="start a control plane into --dir")
    started.add_argument("--min-request-timeout", type=int, default=UpOptions.min_request_timeout,
                         help="seconds: a watch lasts between this and twice this (default %(default)s)")
    started.add_argument("--etcd-compaction-interval", default=UpOptions.etcd_compaction_interval,
                         help="how often kube-apiserver compacts etcd, e.g. 5m; 0 never (default %(default)s)")
    started.add_argument("--watch-cache", choices=("true", "false"), default="true")
    started.add_argument("--apiserver-arg", action="append", default=[], metavar="--FLAG=VALUE",
                         help="one more kube-apiserver flag (repeatable)")
    for name, text in (("down", "stop what `up` started in --dir"), ("status", "say what runs")):
        commands.add_parser(name, help=text)
    for name in ("up", "down", "status"):
        commands.choices[name].add_argument("--dir", required=True, type=Path,
                                            help="the control plane's folder (files, logs, env)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    arguments = _parser().parse_args(argv)
    try:
        if arguments.command == "build":
            return build(arguments.check)
        if arguments.command == "down":
            return down(arguments.dir)
        if arguments.command == "status":
            return status(arguments.dir)
        if any(_running(read_env(arguments.dir)).values()):
            say(f"a control plane already runs in {arguments.dir}: `down --dir {arguments.dir}` first")
            return 1
        options = UpOptions(arguments.dir, arguments.min_request_timeout,
                            arguments.etcd_compaction_interval, arguments.watch_cache == "true",
                            extra_apiserver_args=tuple(arguments.apiserver_arg))
        try:
            up(options, say)
        except BaseException:
            down(arguments.dir)
            raise
        return 0
    except (PinError, BuildError) as exc:
        say(f"cannot build: {exc}")
        return 1
    except (RuntimeError, TimeoutError, OSError) as exc:
        say(f"failed: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
