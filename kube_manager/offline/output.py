"""The offline commands' standard output, for readers that leave early (SPEC 8).

`explain -o json | head -c 10` closes the pipe before the answer is written: the write fails with
EPIPE (Python ignores SIGPIPE, so it is a `BrokenPipeError`). The answer is then no one's to read,
so the command ends silently, with the exit status it computed (explain's 0 or 1 is the answer
itself), instead of a traceback and status 1.
"""
from __future__ import annotations

import os
import sys
from typing import Iterable, Union


def write_out(data: Union[str, bytes]) -> None:
    """Write `data` to standard output and flush it; nothing happens when the reader is gone."""
    if isinstance(data, bytes):
        write_parts((data,))
        return
    try:
        sys.stdout.write(data)
        sys.stdout.flush()
    except BrokenPipeError:
        _reader_gone()


def write_parts(parts: Iterable[Union[bytes, memoryview]]) -> None:
    """Write each of `parts` to standard output as it comes, and flush; once the reader is gone,
    the parts left are neither made nor written."""
    try:
        sys.stdout.flush()
        write = sys.stdout.buffer.write
        for part in parts:
            write(part)
        sys.stdout.flush()
    except BrokenPipeError:
        _reader_gone()


def _reader_gone() -> None:
    # What is still buffered would fail again when the interpreter flushes at exit, with a
    # message and status 120: standard output goes to /dev/null instead.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
