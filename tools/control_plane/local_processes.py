"""The control plane's processes: free loopback ports, starting in a session of their own (they
outlive `up`), and stopping by pid. A pid is only ever signalled while /proc shows it still runs the
binary `up` started, so a pid reused by another program is left alone."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import List, Optional

LOOPBACK = "127.0.0.1"
STOP_GRACE_SECONDS = 15.0   # kube-apiserver drains its requests on SIGTERM before it exits
EXEC_SECONDS = 10.0


def free_port() -> int:
    """A port free on 127.0.0.1 now (the kernel's choice); the server binds it right after."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def start(binary: Path, arguments: List[str], log_file: Path) -> int:
    """The pid of `binary`, returned once /proc shows it runs: Popen may return (vfork) while the
    child is still inside exec, when /proc shows neither the old nor the new command line."""
    with open(log_file, "ab") as log:
        process = subprocess.Popen([str(binary), *arguments], stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + EXEC_SECONDS
    while not runs(process.pid, binary):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{binary} did not start (exit status {process.poll()}); see {log_file}")
        time.sleep(0.005)
    return process.pid


def _state(pid: int) -> Optional[str]:
    """The process state letter from /proc, None when no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def runs(pid: int, binary: Path) -> bool:
    """`pid` is alive (not a zombie) and runs `binary`."""
    state = _state(pid)
    if state is None or state in ("Z", "X"):
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            program = cmdline.read().split(b"\0", 1)[0].decode(errors="replace")
    except OSError:
        return False
    return program == str(binary)


def _reap(pid: int) -> None:
    """Collects the exit status when `pid` is this process's child (the tests' own `up`)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop(pid: int, binary: Path, grace: float = STOP_GRACE_SECONDS) -> str:
    """SIGTERM, then SIGKILL after `grace` seconds; says how it ended."""
    if not runs(pid, binary):
        return "not running"
    os.kill(pid, signal.SIGTERM)
    for sig, bound, ending in ((None, grace, "stopped"), (signal.SIGKILL, 5.0, "killed")):
        if sig is not None:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return "stopped"
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            _reap(pid)
            if not runs(pid, binary):
                return ending
            time.sleep(0.05)
    raise RuntimeError(f"pid {pid} ({binary.name}) still runs after SIGKILL")
