"""Incremental compression and decompression, with lzma's object semantics."""

from __future__ import annotations

import itertools
import re
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bytepair
from bytepair import BytePairCompressor, BytePairDecompressor, CorruptDataError

DATA = b"".join(b"line %d of a stream that arrives in pieces\n" % i for i in range(3000))
PACKED = bytepair.compress(DATA)


def test_compressor_in_pieces_equals_one_shot(kernels: str) -> None:
    """On either path, the one-shot output made at import (numpy's, for an input this small)."""
    c = BytePairCompressor()
    out = b"".join(c.compress(DATA[i : i + 999]) for i in range(0, len(DATA), 999)) + c.flush()
    assert out == PACKED


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 3 * 4096, len(DATA)])
def test_one_shot_equals_compress_then_flush(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bytepair.compress`` encodes every frame straight from the caller's buffer: the
    same frames as a compressor fed the whole input, then flushed, at every frame edge."""
    monkeypatch.setattr(bytepair.io.stream, "FRAME_SIZE", 4096)
    c = BytePairCompressor()
    expected = c.compress(DATA[:size]) + c.flush()
    assert bytepair.compress(DATA[:size]) == expected
    assert bytepair.compress(memoryview(bytearray(DATA[:size])), threads=2) == expected


def test_compressor_refuses_use_after_flush() -> None:
    c = BytePairCompressor()
    c.flush()
    with pytest.raises(ValueError):
        c.compress(b"more")
    with pytest.raises(ValueError):
        c.flush()


def _out_of_memory(chunk: object) -> list[tuple[bytes, int, int]]:
    raise MemoryError("no room for a frame")


def test_a_failed_call_ends_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output the failed call had made (the header, earlier frames) is gone with it:
    going on would write a stream missing them, so every later call refuses."""
    monkeypatch.setattr(bytepair.io.stream, "FRAME_SIZE", 4096)
    c = BytePairCompressor()
    monkeypatch.setattr(c._frames, "add", _out_of_memory)
    with pytest.raises(MemoryError):
        c.compress(DATA)
    with pytest.raises(
        ValueError, match=re.escape("failed earlier (MemoryError: no room for a frame); its stream is incomplete")
    ):
        c.compress(b"more")
    with pytest.raises(ValueError, match="failed earlier"):
        c.flush()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(0, len(PACKED)), max_size=30))
def test_any_split_decodes_like_one_shot(cuts: list[int], kernels: str) -> None:
    d = BytePairDecompressor()
    points = [0, *sorted(cuts), len(PACKED)]
    out = []
    for a, b in itertools.pairwise(points):
        if d.eof:
            assert a == b == len(PACKED), "eof is set only at the end of the stream"
            continue
        out.append(d.decompress(PACKED[a:b]))
    assert b"".join(out) == DATA
    assert d.eof and d.unused_data == b""


def test_one_byte_at_a_time(kernels: str) -> None:
    small = bytepair.compress(b"tiny tiny tiny tiny")
    d = BytePairDecompressor()
    assert b"".join(d.decompress(small[i : i + 1]) for i in range(len(small))) == b"tiny tiny tiny tiny"
    assert d.eof


@settings(max_examples=40, deadline=None)
@given(limit=st.integers(0, 5000))
def test_max_length_limits_every_call(limit: int) -> None:
    d = BytePairDecompressor()
    chunks = [d.decompress(PACKED, max_length=limit)]
    assert len(chunks[0]) <= limit
    while not d.eof:
        assert not d.needs_input
        chunk = d.decompress(b"", max_length=max(limit, 1))
        assert len(chunk) <= max(limit, 1)
        chunks.append(chunk)
    assert b"".join(chunks) == DATA


def test_needs_input_and_eof() -> None:
    d = BytePairDecompressor()
    assert d.needs_input and not d.eof
    d.decompress(PACKED[:10])
    assert d.needs_input and not d.eof
    d.decompress(PACKED[10:])
    assert d.eof and not d.needs_input
    with pytest.raises(EOFError):
        d.decompress(b"x")


def test_unused_data_after_the_end() -> None:
    d = BytePairDecompressor()
    assert d.decompress(PACKED + b"next") == DATA
    assert d.unused_data == b"next"


def test_damage_raises() -> None:
    damaged = bytearray(PACKED)
    damaged[len(damaged) // 2] ^= 0x10
    with pytest.raises(CorruptDataError):
        BytePairDecompressor().decompress(bytes(damaged))


def test_concurrent_use_of_one_object_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import bytepair.io.stream as stream

    monkeypatch.setattr(stream, "FRAME_SIZE", 10_000)  # every call encodes frames, so calls overlap
    c = BytePairCompressor()
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def work() -> None:
        barrier.wait()
        try:
            for _ in range(20):
                c.compress(DATA[:50_000])
        except RuntimeError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors and "another thread" in str(errors[0])
