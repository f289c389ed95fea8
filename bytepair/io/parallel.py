"""Compressing on several cores.

Frames are independent: while this thread encodes frames, ``threads - 1``
workers encode others, whole, so that the work of a frame that cannot be split
(cutting blocks, escapes, packing) is spread too. Work waits in one queue,
oldest first, and goes to whoever is free: a feeder thread per worker hands its
worker the next item the moment the worker is done, and this thread takes items
itself while more are waiting than the feeders will take next. So no worker
waits for this thread to finish a frame, and nothing waits inside a pool, where
it could no longer be taken back. Blocks are independent as well: a frame with
no other after it (the last of a stream, or the only one) is split into shares
of blocks, one per engine batch and at least one per worker, the last of them
in one piece per worker (``share_edges``), which go through the same queue, and
assembled here. Frames smaller than ``MIN_SHARE`` per worker are encoded here:
starting work elsewhere would cost more than it saves.

What a worker is depends on the path ``bytepair.backend`` chose for the process. The
compiled kernels release the GIL, so on that path the workers are threads of this
process, kept for its life: nothing is pickled or copied. The numpy engine makes
many short numpy calls and holds the GIL most of the time, so there the workers are
processes (``workers``), which never import the caller's ``__main__``: a script
without a main guard, ``python -``, ``python -c``, an interactive session and a
notebook all get their output. Either way the output is the same bytes for every
thread count.
"""

from __future__ import annotations

import collections
import itertools
import os
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from .._threads import resolve_threads
from ..container.codec import encode_frame, run_engine
from ..core.params import Params

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from ..core.engine import EncodedBlocks

__all__ = ["MIN_SHARE", "Finished", "FramePipeline", "resolve_threads", "share_edges"]

MIN_SHARE = 1 << 18
"""Least input (256 KiB) worth sending to a worker."""

MIN_TAIL_SHARE = 1 << 17
"""Least input (128 KiB) of a piece of a frame's last share (see ``share_edges``)."""

SPARE_FRAMES = 1
"""Frames left waiting per worker while the caller's thread encodes one: a worker that
is done before it takes the next at once."""


class _Place(Protocol):
    """Where a feeder's jobs run: ``run`` returns the job's result or raises its exception."""

    def run(self, job: Callable[..., Any], *args: Any) -> Any: ...


class _Threads:
    """Worker threads for the compiled path, kept for the life of the process (and with
    them the scratch arrays each thread keeps: fresh pages cost faults)."""

    def __init__(self, workers: int) -> None:
        from concurrent.futures import ThreadPoolExecutor  # imported on first use: start-up stays short

        self.pool: ThreadPoolExecutor = ThreadPoolExecutor(workers, thread_name_prefix="bytepair-worker")

    def run(self, job: Callable[..., Any], *args: Any) -> Any:
        return self.pool.submit(job, *args).result()


_thread_pools: dict[int, _Threads] = {}
_pools_lock = threading.Lock()


def _shared_pool(workers: int, in_threads: bool) -> _Place:
    """Threads (one pool per size) or the process's worker processes, for the life of the
    process: starting a worker process costs ~0.3 s."""
    if not in_threads:
        from .workers import shared_workers

        return shared_workers()
    with _pools_lock:
        pool = _thread_pools.get(workers)
        if pool is None:
            pool = _thread_pools[workers] = _Threads(workers)
        return pool


def _forget_threads_in_child() -> None:
    """A forked child has none of its parent's threads: its pools would wait for them forever."""
    global _pools_lock
    _pools_lock = threading.Lock()
    _thread_pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_threads_in_child)


def share_edges(bounds: npt.NDArray[np.int64], workers: int) -> list[int]:
    """Where to cut the blocks ``bounds`` delimit (from 0) into shares for *workers* workers.

    As many shares of about equal bytes as the engine would take batches for the
    whole (``batch_edges``: sharing then costs no more engine steps), and at least
    one per worker, none under ``MIN_SHARE`` bytes. Shares go to whoever is free,
    so more of them than workers even out the end: content, not size, sets
    what a share costs. When there are more, the last share, which would run
    alone while the other workers wait, goes out as one piece per worker
    (none under ``MIN_TAIL_SHARE`` bytes): one engine batch more, for an end
    about half a share sooner.
    """
    size = int(bounds[-1])
    from ..core.engine import batch_edges  # (the numpy engine: not imported to decompress)

    batches = len(batch_edges(np.diff(bounds))) - 1
    shares = min(max(workers, batches), size // MIN_SHARE, len(bounds) - 1)
    weights = np.ones(shares)
    if shares > workers:  # a last round: its share in pieces (one piece leaves it whole)
        pieces = max(1, min(workers, size // shares // MIN_TAIL_SHARE))
        weights = np.concatenate((weights[1:], np.full(pieces, 1 / pieces)))
    targets = np.cumsum(weights[:-1]) * (size / weights.sum())
    # sorted(set()), not np.unique: numpy 2's unique imports numpy.ma (6 ms of a command's start-up)
    edges: list[int] = sorted({0, *np.searchsorted(bounds, targets).tolist(), len(bounds) - 1})
    return edges


def _compiled_path(nbytes: int) -> bool:
    """Whether the compiled kernels run (``bytepair.backend``; any size)."""
    from .. import backend

    return backend.compiled()


def _engine_job(data: bytes | npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], params: Params) -> EncodedBlocks:
    return run_engine(np.frombuffer(data, dtype=np.uint8), bounds, params)


def _frame_job(chunk: bytes | memoryview, params: Params) -> tuple[bytes, int]:
    return encode_frame(np.frombuffer(chunk, dtype=np.uint8), params)


Finished = tuple[bytes, int, int]
"""A frame, the CRC-32 of its content and the content's length."""


class _Failed(NamedTuple):
    """A job's exception, kept until its result is asked for, in stream order."""

    error: BaseException


class _WorkQueue:
    """Jobs not yet started by anyone, and the results of those done.

    Shared by the caller's thread and one feeder thread per worker, under one lock.
    A job is a module-level function and its arguments, so that it runs the same
    here, in a thread or in a worker process.
    """

    def __init__(self, n_feeders: int) -> None:
        self.in_threads = False
        """Whether the feeders' workers are threads (set before the first ``put``) or processes."""
        self.cond = threading.Condition()
        self.waiting: collections.deque[tuple[int, Callable[..., Any], tuple[Any, ...]]] = collections.deque()
        self.done: dict[int, Any] = {}
        self.n_feeders = n_feeders
        self._keys = itertools.count()
        self._feeders: list[threading.Thread] = []
        self._closed = False

    def put(self, job: Callable[..., Any], *args: Any) -> int:
        """Queue *job*; returns the key its result will be under."""
        with self.cond:
            key = next(self._keys)
            self.waiting.append((key, job, args))
            if not self._feeders:  # started on first use, for the life of the queue
                for _ in range(self.n_feeders):
                    feeder = threading.Thread(target=self._feed, name="bytepair-feeder", daemon=True)
                    feeder.start()
                    self._feeders.append(feeder)
            self.cond.notify_all()
        return key

    def store(self, outcome: Any) -> int:
        """Keep a result made outside the queue; returns its key."""
        with self.cond:
            key = next(self._keys)
            self.done[key] = outcome
        return key

    def run_one_here(self, *, unless_at_most: int = 0) -> bool:
        """Run the oldest waiting job in this thread, if more than *unless_at_most* wait."""
        with self.cond:
            if len(self.waiting) <= unless_at_most:
                return False
            key, job, args = self.waiting.popleft()
        try:
            outcome = job(*args)
        except BaseException as exc:  # kept for its turn, as a worker's would be
            outcome = _Failed(exc)
        self._settle(key, outcome)
        if isinstance(outcome, _Failed) and not isinstance(outcome.error, Exception):
            raise outcome.error  # an interrupt stops the caller now, and the stream for good
        return True

    def _settle(self, key: int, outcome: Any) -> None:
        with self.cond:
            self.done[key] = outcome
            self.cond.notify_all()

    def result(self, key: int) -> Any:
        """The result of job *key*, running waiting jobs here until it is done."""
        while True:
            with self.cond:
                if key in self.done:
                    outcome = self.done[key]
                    if not isinstance(outcome, _Failed):  # a failure stays: asked again, raised again
                        del self.done[key]
                    break
                if not self.waiting:
                    self.cond.wait()
                    continue
            self.run_one_here()
        if isinstance(outcome, _Failed):
            raise outcome.error
        return outcome

    def _feed(self) -> None:
        while True:
            with self.cond:
                while not self.waiting and not self._closed:
                    self.cond.wait()
                if self._closed:
                    return
                key, job, args = self.waiting.popleft()
            try:
                outcome = _shared_pool(self.n_feeders, self.in_threads).run(job, *args)
            except BaseException as exc:  # no pool, the job's own error: never lose a job
                outcome = _Failed(exc)
            # dropped before the caller can see the result: a job may hold a view of the
            # caller's buffer, which the caller may resize as soon as its call returns
            del job, args
            self._settle(key, outcome)

    def close(self) -> None:
        """Let the feeders end once their current jobs are done; waiting jobs are dropped."""
        with self.cond:
            self._closed = True
            self.waiting.clear()
            self.cond.notify_all()


class FramePipeline:
    """Encodes the frames of one stream, on every core it may use, and gives them back in order.

    Each frame is held until the next one arrives (or the stream ends), so that
    the last frame is known to be last: its blocks are shared among the
    workers, while the others go whole to whoever is free. At most about
    ``2 * threads + 2`` frames are in memory, on either path.
    """

    def __init__(self, params: Params, threads: int) -> None:
        self.params = params
        self.workers = resolve_threads(threads)
        """Workers (threads or processes), the caller's thread included."""
        self._held: bytes | memoryview | None = None
        self._order: collections.deque[tuple[int, int]] = collections.deque()  # (key, length), in stream order
        self._queue: _WorkQueue | None = None
        self._chosen = False
        if self.workers > 1:
            self._queue = _WorkQueue(self.workers - 1)
            weakref.finalize(self, self._queue.close)

    def add(self, chunk: bytes | bytearray | memoryview, *, borrowed: bool = False) -> list[Finished]:
        """Take *chunk* as the next frame's content; returns the frames finished so far.

        *chunk* is copied, as the caller may change it once this returns, unless
        *borrowed*: the caller keeps it alive and unchanged until ``finish`` returns
        (``bytepair.compress`` does, with the views of its input). Threads then read it
        where it is; worker processes get a copy anyway, as a pickle."""
        queue = self._queue
        if queue is None:
            frame, crc = encode_frame(np.frombuffer(chunk, dtype=np.uint8), self.params)
            return [(frame, crc, len(chunk))]
        if self._held is not None:
            self._order.append((self._put(_frame_job, self._held, self.params), len(self._held)))
        self._held = memoryview(chunk) if borrowed else bytes(chunk)
        # leave waiting frames for the workers to take when free; encode the rest here
        while queue.run_one_here(unless_at_most=SPARE_FRAMES * queue.n_feeders):
            pass
        return self._finished(keep=2 * self.workers)

    def finish(self, last: bytes | bytearray | memoryview | None = None) -> list[Finished]:
        """Encode what is held, then *last* (the stream's last frame's content, when the
        caller knows it), and wait for every frame; returns those not yet returned.

        Given *last*, this thread cuts it and finds its escapes (work no worker can
        share) first, while the workers take the frames before it, and helps with
        those only then: frames handed to ``add`` one after the other reach a queue
        whose feeders may not have started yet, and this thread would otherwise run
        one of them whole, leaving that work for the end while the workers wait."""
        queue = self._queue
        if queue is None:
            return [] if last is None else self.add(last)
        if self._held is not None and last is not None:
            self._order.append((self._put(_frame_job, self._held, self.params), len(self._held)))
        held, self._held = (self._held if last is None else last), None  # *last*: encoded before returning, no copy
        if held is None:
            return self._finished(keep=0)
        data = np.frombuffer(held, dtype=np.uint8)
        share = self._share if len(data) >= 2 * MIN_SHARE else run_engine
        # the frames before it go first: they are the oldest in the queue
        frame, crc = encode_frame(data, self.params, share)
        self._order.append((queue.store((frame, crc)), len(held)))
        finished = self._finished(keep=0)
        queue.close()
        return finished

    def _share(self, data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], params: Params) -> EncodedBlocks:
        """The engine's run over *data*, as shares of blocks (``share_edges``), through the queue."""
        assert self._queue is not None
        cuts = share_edges(bounds, self.workers)
        keys = [
            self._put(_engine_job, data[bounds[a] : bounds[b]], bounds[a : b + 1] - bounds[a], params)
            for a, b in itertools.pairwise(cuts)
        ]
        from ..core.engine import EncodedBlocks

        return EncodedBlocks.concatenate([self._queue.result(key) for key in keys])

    def _put(self, job: Callable[..., Any], data: bytes | memoryview | npt.NDArray[np.uint8], *args: Any) -> int:
        """Queue *job* on *data*; the first job chooses the workers: threads when the
        compiled kernels run (``backend.compiled``), processes otherwise (which
        take a borrowed frame as bytes: a memoryview cannot be pickled)."""
        assert self._queue is not None
        if not self._chosen:
            self._queue.in_threads = _compiled_path(len(data))
            self._chosen = True
        if isinstance(data, memoryview) and not self._queue.in_threads:
            data = bytes(data)
        return self._queue.put(job, data, *args)

    def _finished(self, *, keep: int) -> list[Finished]:
        """The frames done at the head of the stream, waiting for (and helping with) the
        head while more than *keep* frames are not yet returned."""
        out: list[Finished] = []
        queue = self._queue
        while queue is not None and self._order:
            key, length = self._order[0]
            if key not in queue.done and len(self._order) <= keep:
                break
            frame, crc = queue.result(key)
            self._order.popleft()
            out.append((frame, crc, length))
        return out
