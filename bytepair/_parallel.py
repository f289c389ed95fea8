"""Compressing on several cores.

Frames are independent: while this process encodes one frame, ``threads - 1``
worker processes encode the frames after it, whole, so that the work of a frame
that cannot be split (cutting blocks, escapes, packing) is spread too. Blocks
are independent as well: a frame with no other under way (the last of a stream,
or the only one) is split into one share of blocks per process instead, and
assembled here. The engine makes many short numpy calls and holds the GIL most
of the time, so threads would not scale. Frames smaller than ``MIN_SHARE`` per
worker are encoded here: starting work elsewhere would cost more than it saves.
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing
import os
import threading
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np
import numpy.typing as npt

from ._codec import encode_frame, run_engine
from ._engine import EncodedBlocks
from ._params import Params

__all__ = ["MIN_SHARE", "FrameEncoder", "FramePipeline", "resolve_threads"]

MIN_SHARE = 1 << 18
"""Least input (256 KiB) worth sending to a worker."""


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


_pools: dict[int, ProcessPoolExecutor] = {}
_pools_lock = threading.Lock()


def _shared_pool(workers: int) -> ProcessPoolExecutor:
    """One pool per size for the life of the process: starting workers costs ~0.3 s."""
    with _pools_lock:
        pool = _pools.get(workers)
        if pool is None:
            context = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
            pool = _pools[workers] = ProcessPoolExecutor(workers, mp_context=context)
        return pool


def _engine_job(data: bytes, bounds: npt.NDArray[np.int64], params: Params) -> EncodedBlocks:
    return run_engine(np.frombuffer(data, dtype=np.uint8), bounds, params)


def _frame_job(chunk: bytes, params: Params) -> tuple[bytes, int]:
    return encode_frame(np.frombuffer(chunk, dtype=np.uint8), params)


class FrameEncoder:
    """Encodes frames one after another, each with up to ``threads`` processes."""

    def __init__(self, params: Params, threads: int) -> None:
        self.params = params
        self.workers = resolve_threads(threads)
        """Processes, this one included."""

    def encode(self, chunk: bytes | bytearray | memoryview) -> tuple[bytes, int]:
        """The frame for *chunk* and the CRC-32 of *chunk*."""
        data = np.frombuffer(chunk, dtype=np.uint8)
        if self.workers == 1 or len(data) < 2 * MIN_SHARE:
            return encode_frame(data, self.params)
        return encode_frame(data, self.params, self._run_parallel)

    def _run_parallel(
        self, data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], params: Params
    ) -> EncodedBlocks:
        groups = min(self.workers, len(data) // MIN_SHARE, len(bounds) - 1)
        # cut at the block boundaries nearest to equal shares of bytes
        targets = np.arange(1, groups) * (len(data) / groups)
        cuts = np.unique(np.concatenate(([0], np.searchsorted(bounds, targets), [len(bounds) - 1])))
        shares = [(int(bounds[a]), int(bounds[b]), bounds[a : b + 1] - bounds[a]) for a, b in itertools.pairwise(cuts)]
        # this process encodes the first share itself while the workers take the others
        pool = _shared_pool(self.workers - 1)
        jobs = [pool.submit(_engine_job, data[lo:hi].tobytes(), local, params) for lo, hi, local in shares[1:]]
        lo, hi, local = shares[0]
        here = run_engine(data[lo:hi], local, params)
        return EncodedBlocks.concatenate([here, *(job.result() for job in jobs)])


Finished = tuple[bytes, int, int]
"""A frame, the CRC-32 of its content and the content's length."""


class FramePipeline:
    """Encodes the frames of one stream, on every core it may use, and gives them back in order.

    Each frame is held until the next one arrives (or the stream ends), so that
    the last frame is known to be last: it is shared block by block among the
    processes (the workers' shares start once their frames are done), while the
    others go whole to a free worker, or are encoded here when every worker is
    busy. At most ``threads + 1`` frames are in memory.
    """

    def __init__(self, params: Params, threads: int) -> None:
        self._encoder = FrameEncoder(params, threads)
        self._held: bytes | None = None
        self._queue: collections.deque[Future[tuple[bytes, int]] | tuple[bytes, int]] = collections.deque()
        self._lengths: collections.deque[int] = collections.deque()

    def add(self, chunk: bytes | bytearray | memoryview) -> list[Finished]:
        """Take *chunk* as the next frame's content; returns the frames finished so far."""
        if self._encoder.workers == 1:
            frame, crc = self._encoder.encode(chunk)
            return [(frame, crc, len(chunk))]
        if self._held is not None:
            self._start(self._held, last=False)
        self._held = bytes(chunk)
        return self._finished(keep=self._encoder.workers)

    def finish(self) -> list[Finished]:
        """Encode what is held and wait for every frame; returns those not yet returned."""
        if self._held is not None:
            held, self._held = self._held, None
            self._start(held, last=True)
        return self._finished(keep=0)

    def _start(self, chunk: bytes, *, last: bool) -> None:
        running = sum(isinstance(item, Future) and not item.done() for item in self._queue)
        if last:  # shared block by block; the workers' shares wait for their frames
            self._queue.append(self._encoder.encode(chunk))
        elif running < self._encoder.workers - 1:
            self._queue.append(_shared_pool(self._encoder.workers - 1).submit(_frame_job, chunk, self._encoder.params))
        else:
            self._queue.append(_frame_job(chunk, self._encoder.params))
        self._lengths.append(len(chunk))

    def _finished(self, *, keep: int) -> list[Finished]:
        """The frames done at the head of the queue, waiting for the head while more
        than *keep* frames are queued (so a slow worker cannot make frames pile up)."""
        out: list[Finished] = []
        while self._queue:
            head = self._queue[0]
            if isinstance(head, Future):
                if len(self._queue) <= keep and not head.done():
                    break
                head = head.result()
            self._queue.popleft()
            out.append((*head, self._lengths.popleft()))
        return out
