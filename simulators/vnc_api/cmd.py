"""`contrail-kube-manager vnc-server`: the embedded in-memory config API, standalone.

Runs until SIGTERM or SIGINT, then stops cleanly with status 0. The latency and fault options make
it a stand-in for a slow or flaky contrail-api in demos and manual tests. Status 2: bad options;
status 1: cannot listen.
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import Tuple

import gevent
import gevent.event

from kube_manager.plumbing.gcpolicy import freeze_after_full_collections
from kube_manager.settings import parse_log_level
from kube_manager.observability.logging_setup import setup_logging

from .faults import ServerOptions
from .runner import EmbeddedServer

log = logging.getLogger(__name__)

DEFAULT_LISTEN = "127.0.0.1:8082"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                        help=f"address to serve on (default {DEFAULT_LISTEN}; port 0 picks a free one; "
                             "IPv6 as [::1]:8082)")
    parser.add_argument("--latency", type=float, default=0.0, metavar="SECONDS",
                        help="delay added before every answer")
    parser.add_argument("--fail-rate", type=float, default=0.0, metavar="SHARE",
                        help="share of requests answered 503 (0..1)")
    parser.add_argument("--drop-rate", type=float, default=0.0, metavar="SHARE",
                        help="share of requests whose connection is dropped without an answer (0..1)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the fault decisions")
    parser.add_argument("--log-level", default="INFO", help="INFO, DEBUG, ... or SYS_* (default INFO)")


def parse_listen(text: str) -> Tuple[str, int]:
    """`HOST:PORT` or `[IPV6]:PORT` as (host, port); ValueError with the reason otherwise."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"--listen {text!r}: expected HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"--listen {text!r}: write an IPv6 address in brackets, e.g. [::1]:8082")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"--listen {text!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"--listen {text!r}: port {port} is out of range")
    return host, port


def main(args: argparse.Namespace) -> int:
    try:
        setup_logging(parse_log_level(args.log_level))
        host, port = parse_listen(args.listen)
        options = ServerOptions(latency=args.latency, fail_rate=args.fail_rate, drop_rate=args.drop_rate,
                                seed=args.seed)
    except ValueError as exc:
        print(f"vnc-server: {exc}", file=sys.stderr)
        return 2
    server = EmbeddedServer(host, port, options=options)
    # Its store is the whole config API: a full collection walking it would stall every answer.
    freeze_after_full_collections()
    try:
        server.start()
    except OSError as exc:
        log.error("cannot listen on %s: %s", args.listen, exc.strerror or exc)
        return 1
    stop = gevent.event.Event()
    handlers = [gevent.signal_handler(signum, stop.set) for signum in (signal.SIGTERM, signal.SIGINT)]
    try:
        stop.wait()
        log.info("signal received, stopping the embedded config API")
        server.stop()
    finally:
        for handler in handlers:
            handler.cancel()
    return 0
