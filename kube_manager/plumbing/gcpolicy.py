"""The cyclic garbage collector's policy for processes that hold a large, long-lived heap (and for
bulk jobs: `collector_paused`).

CPython's full (generation 2) collection walks every tracked object: with the records, the desired
state and what the config API holds (millions of objects at 100,000 pods), one such pass stalls the
event loop for hundreds of milliseconds, whichever event happens to be under way. Objects that
have lived through a full collection are moved out of the collector's view (`gc.freeze`): the next
full pass walks only what became long-lived since, and a young collection never sees them.
Reference counting still frees a frozen object once nothing refers to it; what is lost is only the
collection of reference cycles among objects frozen before they died.
"""
from __future__ import annotations

import ctypes
import gc
from typing import Any, Callable, Dict, Optional, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class TrackedDict(Dict[K, V]):
    """A dict the collector never untracks (only exact dicts are): for a large map of atoms that
    lives long and grows with events (keys and fq_names to positions, owners, ...). A full pass
    untracks an exact dict holding only atoms; the first key an event adds then puts it back, whole,
    into generation 0, where the next young collections walk it entry by entry (an event's latency
    growing with the cluster). Tracked throughout, it is frozen with the rest by `settle`."""

    __slots__ = ()


class collector_paused:
    """The cyclic garbage collector off for a bulk job (`with collector_paused():`), as it was after.

    Parsing, translating and printing a cluster dump allocate millions of long-lived containers and
    no reference cycles (the translator creates none); every full collection would rescan them all
    (a large part of `translate`'s time on a big dump, and of the first flush of a daemon's initial
    lists), for nothing to free. What the job allocated still meets one young-generation pass after
    it (figures in docs/operations.md, "Measurements behind the code"): a
    caller that keeps the result for good (the daemon) freezes it.
    """

    __slots__ = ("_enabled",)

    def __enter__(self) -> None:
        self._enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._enabled:
            gc.enable()


def settle() -> None:
    """After a bulk phase (initial lists, a resync converged): collect what it left behind and
    freeze the rest, which lives as long as the process or until the next bulk phase.

    The young generations only: a full pass also untracks every dict holding only atoms (strings,
    tuples of strings: the keys and maps of the records, the desired and actual state), and the
    first key an event adds to one puts it back, whole, into the youngest generation, which the
    next young collections then walk entry by entry (a cost growing with the cluster). Frozen while tracked, such a dict stays out of view. What a full pass would add
    is the reference cycles that died in the oldest generation since the last automatic full pass:
    none at the end of the benches' initial lists, cold starts and events (measured)."""
    freeze_young()
    release_free_memory()


def freeze_young() -> None:
    """Collect the young generations and freeze what lives: `settle` without giving memory back,
    cheap enough (a millisecond or two) for a lazily grown index (a namespace's policies compiled
    by an explain question), which would otherwise reach the oldest generation and be walked
    by every full pass."""
    gc.collect(1)
    gc.freeze()


def _malloc_trim() -> Optional[Callable[[int], int]]:
    # The C library the interpreter already runs on, looked up in the process's own symbols:
    # `ctypes.util.find_library` would run `ldconfig` in a child process at every start.
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to call
        return None


_TRIM = _malloc_trim()


def release_free_memory() -> None:
    """Give the C allocator's free pages back to the system (glibc's `malloc_trim`). The large
    blocks of a bulk phase (a listing's answers, the initial lists) are freed into holes of the heap
    which glibc keeps for itself, as RSS, after a restart's resync (docs/operations.md,
    "Measurements behind the code"). Python's own small-object arenas are returned when empty anyway."""
    if _TRIM is not None:
        _TRIM(0)


_start_paused = False


def pause_for_start() -> None:
    """A daemon's start: the collector off while its modules are imported and its long-lived parts
    built (`started` ends it). Importing allocates hundreds of thousands of objects (classes,
    functions, the official client's pydantic models) and few reference cycles; each automatic
    collection on the way walks again all that the imports before it made, a large part of the
    imports' CPU (docs/operations.md, "A start that costs what it must")."""
    global _start_paused
    if gc.isenabled() and not _start_paused:
        gc.disable()
        _start_paused = True


def started() -> None:
    """The start's modules and long-lived parts are in place: frozen as they are, with no collection
    (one would walk them all once more, for a few cycles of the imports' that then stay, a one-time
    amount), and the collector on again. Nothing when `pause_for_start` did not pause it."""
    global _start_paused
    if _start_paused:
        _start_paused = False
        gc.freeze()
        gc.enable()


def leave_to_exit() -> None:
    """The process ends next (an offline command has written its answer): what it allocated goes
    out of the collector's view, so that neither a collection nor the interpreter's exit walks the
    job's heap and frees it object by object; the kernel takes it back whole. The translator's parts
    call back into each other (reference cycles), so its whole graph would wait for the collector."""
    gc.freeze()


def thaw() -> None:
    """Before dropping long-lived objects that hold reference cycles (a leader's term ends): back in
    the collector's view, so that its next full pass reclaims them; the next `settle` freezes what
    still lives."""
    gc.unfreeze()


def frozen() -> int:
    """Objects out of the collector's view."""
    return gc.get_freeze_count()


def _freeze_survivors(phase: str, info: Dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def freeze_after_full_collections() -> None:
    """From now on, whatever survives a full collection is frozen (idempotent). For a server whose
    store only grows and whose objects hold no cycles (the embedded config API)."""
    if _freeze_survivors not in gc.callbacks:
        gc.callbacks.append(_freeze_survivors)
