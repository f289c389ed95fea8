"""Reusable scratch arrays, one set per thread.

Fresh large arrays cost page faults on every call (several milliseconds per
megabyte-sized temporary on these machines), so the engine and the decoder
keep their big scratch arrays between calls and write into them with ``out=``.
Nothing handed to a caller ever lives in these buffers.

A set is held by one call at a time (:func:`held`). Python code can run inside a
call: an allocation may start a collection, which runs the collector's callbacks
and finalisers (a file object closed by the collector writes its last frame). A
call made from there gets a set of its own, not kept: sharing the held one wrote
its arrays under the call it interrupted (wrong output and an IndexError, found by
a test that compresses from a callback).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["Buffers", "held"]


class Buffers:
    """Named arrays that only grow; their contents are garbage until written."""

    def __init__(self) -> None:
        self._buffers: dict[str, npt.NDArray[Any]] = {}
        self.held = False  # by a call, in :func:`held`

    def buffer(self, name: str, size: int, dtype: type[np.generic]) -> npt.NDArray[Any]:
        """A reusable array of *size* elements."""
        buf = self._buffers.get(name)
        if buf is None or len(buf) < size or buf.dtype != dtype:
            grown = max(size, 2 * len(buf)) if buf is not None and buf.dtype == dtype else size
            buf = self._buffers[name] = np.empty(grown, dtype=dtype)
        return buf[:size]

    def grow(self, name: str, used: int, size: int) -> npt.NDArray[Any]:
        """The buffer *name* with room for *size* elements, keeping its first *used* ones."""
        buf = self._buffers[name]
        if len(buf) < size:
            bigger = np.empty(max(size, 2 * len(buf)), dtype=buf.dtype)
            bigger[:used] = buf[:used]
            buf = self._buffers[name] = bigger
        return buf


B = TypeVar("B", bound=Buffers)
_local = threading.local()


@contextlib.contextmanager
def held(kind: type[B]) -> Iterator[B]:
    """This thread's instance of *kind* (made on first use) for the ``with`` block; a fresh
    one, not kept, when the thread's is held already (a call inside a call)."""
    found: B | None = getattr(_local, kind.__name__, None)
    if found is None:
        found = kind()
        setattr(_local, kind.__name__, found)
    if found.held:
        yield kind()
        return
    found.held = True
    try:
        yield found
    finally:
        found.held = False
