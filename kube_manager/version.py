"""The one place kube-manager's version is written: setup.py reads it from here (as text, without
importing the package), `--version` prints it, the daemon logs it at start, the introspect index
shows it and `/metrics` exports it as `kube_manager_build_info` (SPEC 8)."""
from __future__ import annotations

import platform

VERSION = "0.1.0"


def python_version() -> str:
    """The running interpreter's version, e.g. `3.11.7`: the other half of a build's identity."""
    return platform.python_version()


def version_line(prog: str = "contrail-kube-manager") -> str:
    """What `--version` prints."""
    return f"{prog} {VERSION} (Python {python_version()})"
