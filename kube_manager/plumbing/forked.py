"""A long computation in a forked child, its result read without holding up the event loop.

A thread of the same process would share the interpreter's lock with the event loop: a pure-Python
computation of seconds then delays every greenlet by the lock's switch interval at each of its
I/O waits, which multiplies the latency of writes. A forked child runs on another core, sees the
parent's memory as it was at the fork (copy on write: no snapshot to serialise), and hands back a
JSON result through a pipe that the loop reads cooperatively. The child logs nothing (what it
would log is the parent's to say) and leaves with `os._exit`, so no handler of the parent runs.
"""
from __future__ import annotations

import json
import logging
import os
import signal
from typing import Any, Callable

import gevent
import gevent.os

CHUNK = 1 << 20


class ChildFailed(RuntimeError):
    """The child ended without a result: what it raised, or how it exited."""


def in_child(work: Callable[[], Any], timeout: float, nice: int = 0) -> Any:
    """`work()`, computed in a forked child, `nice` added to its niceness (the CPU goes to others
    first); its result must be JSON. TimeoutError (the child killed) when no result came within
    `timeout` seconds, ChildFailed when the child failed."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        _child(work, read_fd, write_fd, nice)
    os.close(write_fd)
    chunks = []
    try:
        gevent.os.make_nonblocking(read_fd)
        with gevent.Timeout(timeout, TimeoutError(f"no result within {timeout:g} s")):
            while True:
                chunk = gevent.os.nb_read(read_fd, CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
    except BaseException:  # a timeout, or the greenlet killed: the child must not outlive it
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(read_fd)
        _, status = os.waitpid(pid, 0)  # it has closed the pipe: it is exiting
    if status != 0:
        raise ChildFailed(f"the child exited with status {status}")
    answer = json.loads(b"".join(chunks))
    if "error" in answer:
        raise ChildFailed(answer["error"])
    return answer["result"]


def _child(work: Callable[[], Any], read_fd: int, write_fd: int, nice: int) -> None:
    status = 1
    try:
        os.nice(nice)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        logging.disable(logging.CRITICAL)
        os.close(read_fd)
        try:
            answer = {"result": work()}
        except Exception as exc:  # said to the parent, which raises it as ChildFailed
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        view = memoryview(json.dumps(answer).encode())
        while view:
            view = view[os.write(write_fd, view):]
        status = 0
    finally:
        os._exit(status)
