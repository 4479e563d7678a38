"""A long computation in a forked child, its result read without holding up the event loop.

A thread of the same process would share the interpreter's lock with the event loop: a pure-Python
computation of seconds then delays every greenlet by the lock's switch interval at each of its
I/O waits, which multiplies the latency of writes. A forked child runs on another core, sees the
parent's memory as it was at the fork (copy on write: no snapshot to serialise), and hands back a
JSON result through a pipe that the loop reads cooperatively. The child logs nothing (what it
would log is the parent's to say) and leaves with `os._exit`, so no handler of the parent runs.

The fork is made in a process of one thread. The daemon has others: gevent's default resolver runs
each `getaddrinfo` (every connection to the API server or the config API, even to an IP literal) in
the hub's pool of native threads, and up to 10 idle workers stay. A lock one of them held at the
fork would stay held in the child forever (Python 3.12 and later warn "This process is
multi-threaded, use of fork() may lead to deadlocks in the child"), so the idle workers are let go
first; the pool starts them again at its next lookup.
"""
from __future__ import annotations

import json
import logging
import os
import signal
from typing import Any, Callable, Optional

import gevent
import gevent.os

CHUNK = 1 << 20
THREADS_WAIT = 2.0  # seconds a lookup under way in the hub's pool may hold up a fork


class ChildFailed(RuntimeError):
    """The child ended without a result: what it raised, or how it exited."""


def in_child(work: Callable[[], Any], timeout: float, nice: int = 0) -> Any:
    """`work()`, computed in a forked child, `nice` added to its niceness (the CPU goes to others
    first); its result must be JSON. TimeoutError (the child killed) when no result came within
    `timeout` seconds, ChildFailed when the child failed."""
    _threads_let_go(THREADS_WAIT)
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


def _threads_let_go(wait: float) -> None:
    """The hub's pool of native threads emptied (see the module docstring), waiting at most `wait`
    seconds for the lookups under way: past it, the fork goes ahead with them."""
    pool = gevent.get_hub().threadpool
    workers, threads = pool.size, _os_threads()
    with gevent.Timeout(wait, False):
        pool.size = 0
        # A worker leaves the pool's books just before its thread ends: wait for the ends too.
        while threads is not None and (_os_threads() or 0) > threads - workers:
            gevent.sleep(0.001)


def _os_threads() -> Optional[int]:
    """The process's native threads (Linux), or None where they cannot be counted."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


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
