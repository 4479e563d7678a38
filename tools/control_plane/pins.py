"""What the control plane is built from: the versions pinned in the two go.mod files beside this
module, and the per-machine cache folder whose name changes exactly when a pin (or the Go toolchain,
or the build flags) changes, so binaries are rebuilt then and only then."""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD_MODULE = HERE / "go"          # kube-apiserver and etcd
CRD_MODULE = HERE / "crd"           # sigs.k8s.io/network-policy-api, the CRD's source

KUBERNETES = "k8s.io/kubernetes"
ETCD = "go.etcd.io/etcd/server/v3"
NETWORK_POLICY_API = "sigs.k8s.io/network-policy-api"


class PinError(RuntimeError):
    """A pin is missing from its go.mod, or the Go toolchain cannot be asked."""


@dataclass(frozen=True)
class Pins:
    kubernetes: str
    etcd: str
    network_policy_api: str
    go_version: str

    @property
    def kubernetes_minor(self) -> str:
        """`37` for v1.37.2: what /version reports as `minor`."""
        return self.kubernetes.lstrip("v").split(".")[1]


def required_version(go_mod: Path, module: str) -> str:
    """The version `module` is required at in `go_mod` (a `require` line, in a block or not)."""
    pattern = re.compile(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", re.M)
    found = pattern.search(go_mod.read_text(encoding="utf-8"))
    if not found:
        raise PinError(f"{go_mod}: no requirement of {module}")
    return found.group(1)


def go_command() -> str:
    return os.environ.get("GO", "go")


def go_version() -> str:
    try:
        out = subprocess.run([go_command(), "env", "GOVERSION"], check=True, capture_output=True,
                             text=True, cwd=BUILD_MODULE)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise PinError(f"the Go toolchain cannot be run ({go_command()}): {exc}") from None
    return out.stdout.strip()


def read_pins() -> Pins:
    build_mod = BUILD_MODULE / "go.mod"
    return Pins(kubernetes=required_version(build_mod, KUBERNETES),
                etcd=required_version(build_mod, ETCD),
                network_policy_api=required_version(CRD_MODULE / "go.mod", NETWORK_POLICY_API),
                go_version=go_version())


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kube-manager" / "control-plane"


def cache_key(pins: Pins, build_flags: str) -> str:
    """Names the binaries' folder: the pins, the full module graph (go.sum), the toolchain, the flags."""
    digest = hashlib.sha256()
    for part in (BUILD_MODULE / "go.mod", BUILD_MODULE / "go.sum"):
        digest.update(part.read_bytes())
    digest.update(pins.go_version.encode())
    digest.update(build_flags.encode())
    return f"{pins.kubernetes}-etcd{pins.etcd}-{digest.hexdigest()[:12]}"
