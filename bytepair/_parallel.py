"""Compressing frames on several cores.

Frames are independent, so they are encoded in worker processes (the engine
makes many short numpy calls and holds the GIL most of the time, so threads
would not scale). Results come back in order; at most two frames per worker
are in flight, which bounds memory.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np

from ._codec import encode_frame
from ._params import Params

__all__ = ["FrameEncoder", "resolve_threads"]


def resolve_threads(threads: int) -> int:
    """Number of workers for *threads* (0 means one per available core)."""
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be an integer, not {type(threads).__name__}")
    if threads < 0:
        raise ValueError(f"threads must be >= 0 (0 = all cores), got {threads}")
    if threads == 0:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not every platform has affinity
            return os.cpu_count() or 1
    return threads


def _encode(chunk: bytes, params: Params) -> tuple[bytes, int]:
    return encode_frame(np.frombuffer(chunk, dtype=np.uint8), params)


class FrameEncoder:
    """Encodes frames in order, in this process or in a pool of worker processes."""

    def __init__(self, params: Params, threads: int) -> None:
        self._params = params
        self._workers = resolve_threads(threads)
        self._pool: ProcessPoolExecutor | None = None
        self._in_flight: deque[tuple[Future[tuple[bytes, int]], int]] = deque()

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
            self._pool = ProcessPoolExecutor(self._workers, mp_context=context)
        return self._pool

    def submit(self, chunk: bytes | bytearray | memoryview) -> Iterator[tuple[bytes, int, int]]:
        """Queue a frame's data; yields (frame, crc, length) of frames that are done, in order."""
        if self._workers == 1:
            arr = np.frombuffer(chunk, dtype=np.uint8)
            frame, crc = encode_frame(arr, self._params)
            yield frame, crc, len(arr)
            return
        data = bytes(chunk)
        self._in_flight.append((self._get_pool().submit(_encode, data, self._params), len(data)))
        while len(self._in_flight) > 2 * self._workers or (self._in_flight and self._in_flight[0][0].done()):
            yield self._pop()

    def _pop(self) -> tuple[bytes, int, int]:
        future, length = self._in_flight.popleft()
        frame, crc = future.result()
        return frame, crc, length

    def drain(self) -> Iterator[tuple[bytes, int, int]]:
        """Yield every frame still in flight, in order."""
        while self._in_flight:
            yield self._pop()

    def close(self) -> None:
        for future, _ in self._in_flight:
            future.cancel()
        self._in_flight.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def encode_all(self, chunks: Iterable[bytes | bytearray | memoryview]) -> Iterator[tuple[bytes, int, int]]:
        """All frames of *chunks*, in order."""
        try:
            for chunk in chunks:
                yield from self.submit(chunk)
            yield from self.drain()
        finally:
            self.close()
