"""Builds kube-apiserver and etcd from the pinned modules into the per-machine cache, or reuses what
an earlier build left there. Only source comes from the Go module proxy: no binary is downloaded.

A build goes to a temporary folder beside the cache entry and is renamed into place when both
binaries are there, under a file lock: two runs at once build once, and an interrupted build leaves
nothing that looks complete."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List

from tools.control_plane.pins import BUILD_MODULE, ETCD, Pins, cache_key, cache_root, go_command

APISERVER_PACKAGE = "k8s.io/kubernetes/cmd/kube-apiserver"
# Static binaries, as Kubernetes builds its own: no C toolchain needed, nothing to link at run time.
BUILD_ENV = {"CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false"}
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")


class BuildError(RuntimeError):
    """`go build` failed: the message ends with the tail of its output."""


@dataclass(frozen=True)
class Binaries:
    folder: Path

    @property
    def apiserver(self) -> Path:
        return self.folder / "kube-apiserver"

    @property
    def etcd(self) -> Path:
        return self.folder / "etcd"

    def complete(self) -> bool:
        return all(os.access(path, os.X_OK) for path in (self.apiserver, self.etcd))


def apiserver_ldflags(pins: Pins) -> str:
    """Stamps the release into the binary, as Kubernetes' own build does (hack/lib/version.sh), so
    /version reports the pinned release rather than a development placeholder."""
    stamps = {"gitVersion": pins.kubernetes, "gitMajor": "1", "gitMinor": pins.kubernetes_minor,
              "gitTreeState": "clean"}
    flags = ["-s", "-w"] + [f"-X {package}.{key}={value}"
                            for package in VERSION_PACKAGES for key, value in stamps.items()]
    return " ".join(flags)


def build_flags(pins: Pins) -> str:
    """Everything that changes the output, for the cache key."""
    return f"-trimpath {apiserver_ldflags(pins)} {sorted(BUILD_ENV.items())}"


def binaries_for(pins: Pins) -> Binaries:
    return Binaries(cache_root() / cache_key(pins, build_flags(pins)))


def _go_build(package: str, output: Path, ldflags: str) -> None:
    env: Dict[str, str] = dict(os.environ, **BUILD_ENV)
    command: List[str] = [go_command(), "build", "-trimpath", "-ldflags", ldflags, "-o", str(output),
                          package]
    done = subprocess.run(command, cwd=BUILD_MODULE, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-30:])
        raise BuildError(f"go build {package} failed (exit {done.returncode}):\n{tail}")


def ensure_built(pins: Pins, say: Callable[[str], None]) -> Binaries:
    """The cached binaries for these pins, built first if missing (each build said, with its time)."""
    binaries = binaries_for(pins)
    if binaries.complete():
        say(f"using cached kube-apiserver {pins.kubernetes} and etcd {pins.etcd} ({binaries.folder})")
        return binaries
    binaries.folder.parent.mkdir(parents=True, exist_ok=True)
    with open(binaries.folder.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binaries.complete():  # another run built them while this one waited for the lock
            say(f"using kube-apiserver and etcd just built by another run ({binaries.folder})")
            return binaries
        staging = Path(tempfile.mkdtemp(prefix=".building-", dir=binaries.folder.parent))
        try:
            targets = ((APISERVER_PACKAGE, "kube-apiserver", pins.kubernetes, apiserver_ldflags(pins)),
                       (ETCD, "etcd", pins.etcd, "-s -w"))
            for package, name, version, ldflags in targets:
                say(f"building {name} {version} from the Go module proxy ({pins.go_version}; "
                    "the first build takes minutes)")
                started = time.monotonic()
                _go_build(package, staging / name, ldflags)
                say(f"built {name} {version} in {time.monotonic() - started:.1f} s")
            shutil.rmtree(binaries.folder, ignore_errors=True)
            os.rename(staging, binaries.folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return binaries
