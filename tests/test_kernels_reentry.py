"""Calls inside calls: each path keeps room per thread (the compiled engine's workspace and a
small frame's scratch in ``_encode.pyx``, a stream's columns and table and a compact record's
room in ``_decode.pyx``; the numpy engine's and decoder's arrays, ``core.buffers``), and
Python code can run in the middle of a call, where an allocation starts a collection: the
collector's callbacks and finalisers (a file object closed by the collector writes its last
frame). A call made from there must neither take the room of the call it interrupted nor be
harmed by it. Sharing it crashed the interpreter on the compiled path (an encoder's cutting
overwritten under it) and gave other bytes and IndexErrors on the numpy one, before each
call marked its room held."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

pytest.importorskip(
    "bytepair.core.kernels._encode",
    reason="the compiled kernels are not built (pip install . with a C compiler; see docs/kernels.md)",
)

import bytepair
from tests.helpers import kernels

TEXT = b"".join(b"the %d quick brown foxes jump over %d lazy dogs\n" % (k, k * 7 % 13) for k in range(1500))
NOISE = bytes(np.random.default_rng(3).integers(0, 256, 20000).astype(np.uint8))
# compact (one block) and framed streams, one block and several, escaped blocks too
OUTER = [TEXT[:5000], TEXT[:40000], NOISE + TEXT[:30000]]
SMALL_ALPHABET = bytes(np.random.default_rng(4).integers(0, 40, 9000).astype(np.uint8))
INNER = [TEXT[7:3000][::-1], TEXT[100:36000][::-1], SMALL_ALPHABET]
EVERY = 5  # collections between two rounds of the callback's calls (every one: minutes on the numpy path)


@pytest.fixture
def collecting_often() -> Iterator[list[Exception | None]]:
    """The collector run at (nearly) every allocation, its callback compressing and
    decompressing other data at every EVERY-th collection (not from inside itself); yields
    the outcome of each such round (None, or what went wrong)."""
    inner_streams = [bytepair.compress(data) for data in INNER]
    rounds: list[Exception | None] = []
    seen = [0]
    busy = [False]

    def callback(phase: str, info: dict[str, int]) -> None:
        seen[0] += 1
        if phase != "start" or busy[0] or seen[0] % EVERY:
            return
        busy[0] = True
        try:  # (an exception here would be reported, not raised: it is kept as the round's result)
            for data, stream in zip(INNER, inner_streams, strict=True):
                if bytepair.compress(data) != stream or bytepair.decompress(stream) != data:
                    raise AssertionError(f"a call inside a call gave other bytes for {len(data)} bytes")
            rounds.append(None)
        except Exception as exc:
            rounds.append(exc)
        finally:
            busy[0] = False

    threshold = gc.get_threshold()
    gc.set_threshold(1)
    gc.callbacks.append(callback)
    try:
        yield rounds
    finally:
        gc.callbacks.remove(callback)
        gc.set_threshold(*threshold)


@pytest.fixture
def streams() -> list[bytes]:
    """OUTER's streams, made before the collector's callback is set (a test asks for this first)."""
    return [bytepair.compress(data) for data in OUTER]


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_compress_and_decompress_inside_a_compress_or_a_decompress(
    streams: list[bytes], collecting_often: list[Exception | None], path: str
) -> None:
    with kernels(path):
        rounds = len(collecting_often)
        for data, stream in zip(OUTER, streams, strict=True):
            assert bytepair.compress(data) == stream
            assert bytepair.decompress(stream) == data
            assert bytepair.decompress(bytearray(stream)) == data
        assert len(collecting_often) > rounds  # the callback ran inside these calls
    assert not [outcome for outcome in collecting_often if outcome is not None]
