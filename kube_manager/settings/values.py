"""Value parsers of the settings: the text of an INI value or a command-line flag -> its value.

Each parser raises ValueError with the reason; the loader adds where the text came from (the
section and key, or the flag), so every message names the key.
"""
from __future__ import annotations

import ipaddress
import logging
import os
import re
from typing import Callable, List, TypeVar

T = TypeVar("T")

EMBEDDED = "embedded"   # vnc_endpoint_ip: run the in-memory config API in-process
EMULATED = "emulated"   # kubernetes_api_server: run the emulated Kubernetes API server in-process


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names where it came from."""


# Contrail's Sandesh levels, so that files written for the original keep working. Python has no
# NOTICE level; "normal but significant" maps to INFO, so that nothing the operator asked for is hidden.
CONTRAIL_LOG_LEVELS = {
    "SYS_EMERG": logging.CRITICAL,
    "SYS_ALERT": logging.CRITICAL,
    "SYS_CRIT": logging.CRITICAL,
    "SYS_ERR": logging.ERROR,
    "SYS_WARN": logging.WARNING,
    "SYS_NOTICE": logging.INFO,
    "SYS_INFO": logging.INFO,
    "SYS_DEBUG": logging.DEBUG,
}
PYTHON_LOG_LEVELS = {
    "CRITICAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARNING": logging.WARNING,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
}


def _number(text: str, convert: Callable[[str], T], what: str) -> T:
    """`convert(text)`, or a ValueError saying the text is not `what`."""
    try:
        return convert(text)
    except ValueError:
        raise ValueError(f"{text!r} is not {what}") from None


def port(allow_zero: bool) -> Callable[[str], int]:
    low = 0 if allow_zero else 1

    def parse(text: str) -> int:
        value = _number(text, int, "a port number")
        if not low <= value <= 65535:
            raise ValueError(f"{value} is not a port number ({low}-65535)")
        return value
    return parse


def int_range(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = _number(text, int, "an integer")
        if not low <= value <= high:
            raise ValueError(f"{value} is out of range ({low}-{high})")
        return value
    return parse


def positive_int(text: str) -> int:
    value = _number(text, int, "a whole number of seconds")
    if value < 1:
        raise ValueError(f"{value} must be at least 1")
    return value


def positive_seconds(text: str) -> float:
    value = _number(text, float, "a number of seconds")
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"{text!r} must be a positive number of seconds")
    return value


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"{text!r} is not a boolean (true/false, yes/no, on/off, 1/0)")


def stripped(text: str) -> str:
    return text.strip()


def listen_ip(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        raise ValueError(f"{text!r} is not an IP address") from None


_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                       r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")


def host(text: str) -> str:
    """An IP address or a DNS name (brackets around IPv6 literals are dropped)."""
    name = text.strip().strip("[]")
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        pass
    if not _HOSTNAME.match(name):
        raise ValueError(f"{text!r} is neither an IP address nor a host name")
    return name


def split_list(text: str) -> List[str]:
    """Comma- or space-separated; the original wrote lists as `[a, b]`, so brackets and quotes go."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    return [item.strip().strip("'\"") for item in re.split(r"[,\s]+", body) if item.strip("'\" ")]


def api_server(text: str) -> str:
    value = text.strip()
    return EMULATED if value.lower() == EMULATED else (host(value) if value else "")


def vnc_endpoints(text: str) -> List[str]:
    items = split_list(text)
    if not items:
        raise ValueError("no endpoint given")
    if any(item.lower() == EMBEDDED for item in items):
        if len(items) > 1:
            raise ValueError(f"{EMBEDDED!r} cannot be combined with other endpoints")
        return [EMBEDDED]
    return [host(item) for item in items]


def existing_file(text: str) -> str:
    path = os.path.expanduser(text.strip())
    if path and not os.path.isfile(path):
        raise ValueError(f"{path!r} is not a readable file")
    return path


def existing_paths(text: str) -> List[str]:
    paths = [os.path.expanduser(item) for item in split_list(text)]
    missing = [path for path in paths if path != "-" and not os.path.exists(path)]  # -: standard input
    if missing:
        raise ValueError(f"no such file or directory: {', '.join(missing)}")
    return paths


def log_file(text: str) -> str:
    path = os.path.expanduser(text.strip())
    if path and os.path.isdir(path):
        raise ValueError(f"{path!r} is a directory")
    return path


def parse_log_level(text: str) -> int:
    """A Python level name (`INFO`) or a Contrail one (`SYS_NOTICE`), case-insensitive."""
    name = text.strip().upper()
    level = PYTHON_LOG_LEVELS.get(name, CONTRAIL_LOG_LEVELS.get(name))
    if level is None:
        known = ", ".join(list(PYTHON_LOG_LEVELS) + list(CONTRAIL_LOG_LEVELS))
        raise ValueError(f"{text!r} is not a log level (one of {known})")
    return level


# The cluster name ends up in tag values (`application=<cluster>`) and object names, so it must not
# carry the separators of either (`=`, `:`) nor spaces.
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")


def cluster_name(text: str) -> str:
    value = text.strip()
    if not _CLUSTER_NAME.match(value):
        raise ValueError(f"{value!r} must be 1-63 letters, digits, '.', '_' or '-', "
                         "starting and ending with a letter or digit")
    return value


def policy_semantics(text: str) -> str:
    """SPEC 14's `policy_semantics`: how the emitted objects decide a flow."""
    # Imported here: the values live with the translator, whose package a module-level import
    # would load with the settings, before a bad configuration could stop the start.
    from kube_manager.translator.semantics import semantics_problem
    value = text.strip()
    problem = semantics_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def nonempty(text: str) -> str:
    value = text.strip()
    if not value:
        raise ValueError("must not be empty")
    return value
