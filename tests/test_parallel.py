"""Several workers (threads on the compiled path, processes on the numpy path): frames and
shares of blocks come back in order, identical to one thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import bytepair
import bytepair.io.parallel as parallel
import bytepair.io.stream as stream
from bytepair.container.codec import encode_frame
from bytepair.core.params import resolve_params
from tests.helpers import compiled, record_pools


def chunks(count: int, size: int) -> list[bytes]:
    rng = np.random.default_rng(count)
    words = [b"frame ", b"order ", b"pair ", b"byte ", b"\x00\x01\x02", b"zzzz "]
    data = b"".join(words[w] for w in rng.integers(0, len(words), count * size))
    return [data[i * size : (i + 1) * size] for i in range(count)]


@pytest.mark.parametrize("last_named", [False, True], ids=["last-held", "last-given"])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_pipeline_gives_every_frame_in_order(
    threads: int, last_named: bool, kernels: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "MIN_SHARE", 4_000)  # the last frame is shared too
    params = resolve_params(5, block_size=3000)
    parts = chunks(6, 30_000)
    pipeline = parallel.FramePipeline(params, threads)
    finished = []
    for n, part in enumerate(parts[:-1] if last_named else parts, 1):
        now = pipeline.add(part)
        if threads == 1:
            assert len(now) == 1, "one process encodes each frame as it comes"
        finished += now
        assert len(finished) <= n - (threads > 1), "a frame is held until the next one arrives"
    finished += pipeline.finish(parts[-1] if last_named else None)
    expected = [encode_frame(np.frombuffer(part, dtype=np.uint8), params) for part in parts]
    assert [(frame, crc) for frame, crc, _ in finished] == expected
    assert [length for _, _, length in finished] == [len(part) for part in parts]
    assert pipeline.finish() == []


def test_streamed_pieces_with_threads_give_the_same_stream(kernels: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "FRAME_SIZE", 25_000)
    monkeypatch.setattr(parallel, "MIN_SHARE", 4_000)
    data = b"".join(chunks(9, 20_000))
    serial = bytepair.compress(data, block_size=3000)
    compressor = bytepair.BytePairCompressor(block_size=3000, threads=2)
    rng = np.random.default_rng(3)
    cuts = np.cumsum(rng.integers(1, 40_000, 20))
    pieces = np.split(np.frombuffer(data, dtype=np.uint8), cuts[cuts < len(data)])
    out = b"".join(compressor.compress(piece.tobytes()) for piece in pieces) + compressor.flush()
    assert out == serial
    assert bytepair.decompress(out) == data


def test_the_input_is_free_to_resize_once_compress_returns(kernels: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames of ``bytepair.compress``'s input go to the workers as views of it, not copies:
    none may still be held, by a job or a worker, when the call returns."""
    monkeypatch.setattr(stream, "FRAME_SIZE", 25_000)
    monkeypatch.setattr(parallel, "MIN_SHARE", 4_000)
    data = b"".join(chunks(7, 20_000))
    expected = bytepair.compress(data, block_size=3000)
    for _ in range(20):
        buffer = bytearray(data)
        assert bytepair.compress(buffer, block_size=3000, threads=2) == expected
        buffer.extend(b"more")  # BufferError while a view of it lives
        del buffer[:10]


def test_every_thread_count_gives_the_same_bytes(kernels: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """threads 1, 2, 3 and 0, each on both paths: one output; the workers are threads
    exactly when the compiled path runs."""
    monkeypatch.setattr(stream, "FRAME_SIZE", 25_000)  # several frames, each a job...
    monkeypatch.setattr(parallel, "MIN_SHARE", 4_000)  # ...and the last shared out in pieces
    data = b"".join(chunks(7, 20_000))
    pools = record_pools(monkeypatch)
    outputs = {threads: bytepair.compress(data, block_size=3000, threads=threads) for threads in (1, 2, 3, 0)}
    assert len(set(outputs.values())) == 1, {threads: len(out) for threads, out in outputs.items()}
    assert bytepair.decompress(outputs[1]) == data
    assert {workers for workers, _ in pools} >= {1, 2}, "threads 2 and 3 must hand work to their workers"
    assert {in_threads for _, in_threads in pools} == {compiled(kernels)}


@pytest.mark.parametrize(
    ("block_sizes", "workers", "expected_shares", "tail"),
    [
        ([32768] * 57, 2, 5, 2),  # 1.87 MB: one share per engine batch of 512 KiB, the last in two pieces
        ([32768] * 57, 3, 6, 3),  # ... in one piece per process
        ([32768] * 57, 8, 7, 0),  # as many shares as processes: no piece runs alone at the end
        ([32768] * 16, 2, 2, 0),  # 512 KiB, one batch: still one share per process
        ([32768] * 16, 8, 2, 0),  # ... but none under MIN_SHARE
        ([32768] * 9, 2, 1, 0),  # 288 KiB: one share
        ([2500] * 400, 2, 4, 2),  # 1 MB of small blocks: four batches (MAX_BATCH_BLOCKS), but none under MIN_SHARE
        ([600_000, 1000, 1000], 2, 2, 0),  # no cut inside a block
    ],
)
def test_share_edges_follow_engine_batches(
    block_sizes: list[int], workers: int, expected_shares: int, tail: int
) -> None:
    bounds = np.concatenate(([0], np.cumsum(block_sizes)))
    edges = parallel.share_edges(bounds, workers)
    assert edges[0] == 0 and edges[-1] == len(block_sizes)
    assert edges == sorted(set(edges))
    assert len(edges) - 1 == expected_shares
    sizes = np.diff(bounds[edges])
    whole, pieces = sizes[: len(sizes) - tail], sizes[len(sizes) - tail :]  # tail: pieces of the last share
    assert whole.min() >= parallel.MIN_SHARE - max(block_sizes)
    assert whole.max() - whole.min() <= 2 * max(block_sizes), "shares of about equal bytes"
    if tail:  # of about equal bytes, together about a share
        assert abs(pieces.sum() - whole.mean()) <= 2 * max(block_sizes)
        assert pieces.max() - pieces.min() <= 2 * max(block_sizes)
        assert pieces.min() >= parallel.MIN_TAIL_SHARE - max(block_sizes)


def test_no_piece_of_the_last_share_under_min_tail_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "MIN_SHARE", 65536)
    bounds = np.concatenate(([0], np.cumsum([1000] * 640)))  # six batches (128 blocks, 512 KiB)
    sizes = np.diff(bounds[parallel.share_edges(bounds, 2)])
    assert len(sizes) == 6 and sizes.max() - sizes.min() <= 2000  # pieces of the last would be 53 KB


def test_the_last_frame_is_cut_here_before_this_thread_takes_whole_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its cutting and escapes are work only this thread does: done first, while the
    workers take the frames before it, they are not left for the end with the workers
    waiting. The feeders here start late, as a new thread may, waiting for the GIL."""
    monkeypatch.setattr(parallel, "MIN_SHARE", 4_000)
    parts = chunks(3, 30_000)
    started = threading.Event()
    here: list[int] = []  # the lengths of the frames this thread encodes, in order
    feed = parallel._WorkQueue._feed

    def late_feed(queue: parallel._WorkQueue) -> None:
        started.wait(timeout=10)
        feed(queue)

    def watched(data: Any, params: Any, *engine: Any) -> tuple[bytes, int]:
        if threading.current_thread() is threading.main_thread():
            here.append(len(data))
            started.set()
        return encode_frame(data, params, *engine)

    monkeypatch.setattr(parallel._WorkQueue, "_feed", late_feed)
    monkeypatch.setattr(parallel, "encode_frame", watched)
    params = resolve_params(5, block_size=3000)
    pipeline = parallel.FramePipeline(params, 2)
    finished = [*pipeline.add(parts[0]), *pipeline.add(parts[1]), *pipeline.finish(parts[2] + b"last")]
    assert here[0] == len(parts[2]) + 4, f"this thread encoded frames of {here} bytes, in that order"
    expected = [encode_frame(np.frombuffer(part, dtype=np.uint8), params) for part in (*parts[:2], parts[2] + b"last")]
    assert [(frame, crc) for frame, crc, _ in finished] == expected


class _SlowPool:
    """A worker that takes its time over every job: the slowest worker there is, in a thread."""

    def run(self, job: Callable[..., Any], *args: Any) -> Any:
        time.sleep(0.05)
        return job(*args)


def test_a_slow_worker_does_not_make_frames_pile_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_shared_pool", lambda workers, in_threads: _SlowPool())
    params = resolve_params(5, block_size=3000)
    parts = chunks(12, 20_000)
    pipeline = parallel.FramePipeline(params, 2)
    finished = []
    for part in parts:
        finished += pipeline.add(part)
        assert len(pipeline._order) <= 2 * pipeline.workers, "frames not yet returned are bounded"
    finished += pipeline.finish()
    expected = [encode_frame(np.frombuffer(part, dtype=np.uint8), params) for part in parts]
    assert [(frame, crc) for frame, crc, _ in finished] == expected


def _until_a_worker_takes_one(pipeline: parallel.FramePipeline, parts: list[bytes]) -> None:
    """Add the first two of *parts* (which queues the first) and wait until a feeder has taken
    it: the caller's thread would run every job itself when the feeders start late."""
    pipeline.add(parts[0])
    pipeline.add(parts[1])
    assert pipeline._queue is not None
    for _ in range(10_000):
        if not pipeline._queue.waiting:
            return
        time.sleep(0.001)
    raise AssertionError("no feeder took a job in 10 s")


class _FailingPool:
    """A worker whose every job fails."""

    def run(self, job: Callable[..., Any], *args: Any) -> Any:
        raise MemoryError("worker out of memory")


def test_a_worker_error_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_shared_pool", lambda workers, in_threads: _FailingPool())
    params = resolve_params(5, block_size=3000)
    pipeline = parallel.FramePipeline(params, 2)
    parts = chunks(6, 20_000)
    with pytest.raises(MemoryError, match="worker out of memory"):
        _until_a_worker_takes_one(pipeline, parts)
        for part in parts[2:]:
            pipeline.add(part)
        pipeline.finish()


def test_no_pool_is_an_error_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pool(workers: int, in_threads: bool) -> None:
        raise OSError("cannot start workers")

    monkeypatch.setattr(parallel, "_shared_pool", no_pool)
    pipeline = parallel.FramePipeline(resolve_params(5, block_size=3000), 2)
    parts = chunks(6, 20_000)
    with pytest.raises(OSError, match="cannot start workers"):
        _until_a_worker_takes_one(pipeline, parts)
        for part in parts[2:]:
            pipeline.add(part)
        pipeline.finish()


def _interrupted() -> None:
    raise KeyboardInterrupt


class _InterruptedPool:
    """A worker interrupted in its job (Ctrl-C reaches the whole process group)."""

    def run(self, job: Callable[..., Any], *args: Any) -> Any:
        raise KeyboardInterrupt


def test_an_interrupted_job_here_is_not_lost() -> None:
    queue = parallel._WorkQueue(0)  # no workers: every job runs here
    key = queue.put(_interrupted)
    with pytest.raises(KeyboardInterrupt):
        queue.result(key)
    assert key in queue.done, "the interrupted job's outcome is kept"
    for _ in range(2):  # asked again: raised again, not waited for forever
        with pytest.raises(KeyboardInterrupt):
            queue.result(key)


def test_an_interrupted_worker_job_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_shared_pool", lambda workers, in_threads: _InterruptedPool())
    queue = parallel._WorkQueue(1)
    key = queue.put(_interrupted)
    for _ in range(2000):  # let the feeder take the job and hear back from its worker
        if key in queue.done:
            break
        time.sleep(0.001)
    assert key in queue.done, "the feeder kept the worker's interrupt"
    with pytest.raises(KeyboardInterrupt):
        queue.result(key)
    queue.close()


@pytest.mark.parametrize("path", ["numpy", "compiled"])
def test_the_first_job_chooses_threads_or_processes(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The choice follows the path, asked once per stream (the engine makes its own
    choice: the compiled kernels themselves are not needed here)."""
    asked: list[int] = []

    def compiled_path(nbytes: int) -> bool:
        asked.append(nbytes)
        return path == "compiled"

    monkeypatch.setattr(parallel, "_compiled_path", compiled_path)
    pools = record_pools(monkeypatch)
    pipeline = parallel.FramePipeline(resolve_params(5, block_size=3000), 2)
    parts = chunks(4, 20_000)
    finished = []
    for part in parts:
        finished += pipeline.add(part)
    finished += pipeline.finish()
    assert asked == [len(parts[0])]
    assert pools and {in_threads for _, in_threads in pools} == {path == "compiled"}
    assert [length for _, _, length in finished] == [len(part) for part in parts]
