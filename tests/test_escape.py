"""Escapes: which bytes a block sends aside, and putting them back."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair
from bytepair import CorruptDataError
from bytepair.backend import expand
from bytepair.container.codec import _encode_blocks, run_engine
from bytepair.container.format import pack_frame
from bytepair.core.escape import BYTES_PER_FREE_CODE, Escapes, find_escapes, restore_escapes
from bytepair.core.params import Params
from tests.helpers import DECODERS


def _text_with_rare_bytes(length: int, rare: bytes, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    words = [b"the ", b"pair ", b"byte ", b"code ", b"block ", b"of ", b"and "]
    text = bytearray(b"".join(words[i] for i in rng.integers(0, len(words), length // 3)))[:length]
    for k, value in enumerate(rare):
        text[(k * 7919) % length] = value
    return bytes(text)


def _one_block(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    return np.frombuffer(data, dtype=np.uint8), np.array([0, len(data)], dtype=np.int64)


def test_rare_values_are_escaped_under_the_smallest_of_them() -> None:
    data = _text_with_rare_bytes(5000, b"\xe9\x80\xe9\x01\xfc")
    arr, bounds = _one_block(data)
    changed, esc = find_escapes(arr, bounds, limit=10)
    assert esc.count.tolist() == [5] and esc.mark.tolist() == [0x01]
    assert esc.literals.tobytes() == bytes(v for v in data if v in b"\xe9\x80\x01\xfc")
    assert not set(changed.tobytes()) & {0xE9, 0x80, 0xFC}  # freed: they can serve as codes
    assert changed.tobytes().count(1) == 5
    out = changed.copy()
    restore_escapes(out, np.diff(bounds), esc, 0)
    assert out.tobytes() == data


def test_limit_counts_occurrences() -> None:
    data = _text_with_rare_bytes(5000, b"\xe9" * 3 + b"\x80" * 4 + b"\xfc")
    arr, bounds = _one_block(data)
    assert find_escapes(arr, bounds, limit=3)[1].literals.tobytes() == bytes(v for v in data if v in b"\xe9\xfc")
    assert find_escapes(arr, bounds, limit=4)[1].count.tolist() == [8]
    assert find_escapes(arr, bounds, limit=0)[1].count.tolist() == [0]


def test_one_rare_value_is_not_escaped() -> None:
    """It would only become the mark: nothing is freed."""
    arr, bounds = _one_block(_text_with_rare_bytes(5000, b"\xe9\xe9"))
    changed, esc = find_escapes(arr, bounds, limit=10)
    assert esc.count.tolist() == [0] and changed is arr


def test_short_blocks_are_not_escaped() -> None:
    """A block shorter than BYTES_PER_FREE_CODE bytes per free code rarely runs out of codes."""
    data = _text_with_rare_bytes(5000, b"\xe9\x80\x01")
    free = 256 - len(set(data))
    arr, _ = _one_block(data)
    for length, escapes in ((BYTES_PER_FREE_CODE * free - 1, False), (BYTES_PER_FREE_CODE * free, True)):
        part = np.ascontiguousarray(arr[:length])
        assert len(set(part.tobytes())) == 256 - free  # the rare bytes are in the prefix
        count = find_escapes(part, np.array([0, length]), limit=10)[1].count
        assert bool(count[0]) is escapes
    assert find_escapes(*_one_block(b"ABABCABCD"), limit=10)[1].count.tolist() == [0]


def test_blocks_are_escaped_independently() -> None:
    a = _text_with_rare_bytes(4000, b"\xe9\x80", seed=1)
    b = _text_with_rare_bytes(4000, b"", seed=2)
    c = _text_with_rare_bytes(4000, b"\x80\x02\x80", seed=3)
    arr = np.frombuffer(a + b + c, dtype=np.uint8)
    bounds = np.array([0, 4000, 8000, 12000], dtype=np.int64)
    changed, esc = find_escapes(arr, bounds, limit=10)
    assert esc.count.tolist() == [2, 0, 3] and esc.mark.tolist() == [0x80, 0, 0x02]
    assert esc.literals.tobytes() == b"\xe9\x80" + b"\x80\x80\x02"  # in position order
    out = changed.copy()
    restore_escapes(out, np.diff(bounds), esc, 0)
    assert out.tobytes() == a + b + c


def test_blocks_beyond_the_first_256_are_escaped_as_alone() -> None:
    """Blocks are counted and looked up 256 at a time: each block past the first
    group escapes exactly as it does on its own, at its own place."""
    pieces = [
        _text_with_rare_bytes(4096, bytes([0x80 + k % 7, 0xC0 + k % 5]) if k % 3 else b"", seed=k) for k in range(600)
    ]
    arr = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    bounds = np.arange(0, 4096 * 601, 4096, dtype=np.int64)
    changed, esc = find_escapes(arr, bounds, limit=10)
    for k in (0, 1, 255, 256, 257, 511, 512, 599):
        alone_changed, alone = find_escapes(*_one_block(pieces[k]), limit=10)
        assert esc.count[k] == alone.count[0] == (2 if k % 3 else 0), k
        assert esc.blocks(k, k + 1).literals.tobytes() == alone.literals.tobytes()
        assert changed[bounds[k] : bounds[k + 1]].tobytes() == alone_changed.tobytes()
    out = changed.copy()
    restore_escapes(out, np.diff(bounds), esc, 0)
    assert out.tobytes() == arr.tobytes()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=3000), min_size=1, max_size=6), st.integers(1, 40))
def test_find_then_restore_is_the_identity(blocks: list[bytes], limit: int) -> None:
    arr = np.frombuffer(b"".join(blocks), dtype=np.uint8)
    bounds = np.concatenate(([0], np.cumsum([len(b) for b in blocks]))).astype(np.int64)
    changed, esc = find_escapes(arr, bounds, limit)
    assert int(esc.count.sum()) == len(esc.literals)
    out = changed.copy()
    restore_escapes(out, np.diff(bounds), esc, 0)
    assert out.tobytes() == arr.tobytes()


@pytest.mark.parametrize("delta", [-1, 1])
def test_a_mark_count_that_does_not_match_is_corrupt(delta: int) -> None:
    data = _text_with_rare_bytes(5000, b"\xe9\x80\x01")
    arr, bounds = _one_block(data)
    changed, esc = find_escapes(arr, bounds, limit=10)
    wrong = Escapes(esc.count + delta, esc.mark, np.zeros(int(esc.count[0]) + delta, dtype=np.uint8))
    with pytest.raises(CorruptDataError, match="block 7: holds its escape mark 3 times, its header says"):
        restore_escapes(changed.copy(), np.diff(bounds), wrong, 7)


def test_fast_and_reference_decoders_restore_escapes_alike() -> None:
    data = _text_with_rare_bytes(9000, b"\xe9\x80\x01\xfc\xfc", seed=4) + _text_with_rare_bytes(9000, b"\x03\x04")
    arr = np.frombuffer(data, dtype=np.uint8)
    tables = _encode_blocks(arr, np.array([0, 9000, 18000]), Params(), run_engine)
    assert tables.escapes is not None and tables.escapes.count.tolist() == [5, 2]
    assert all(decoder(tables) == data for decoder in DECODERS)
    bad = dataclasses.replace(
        tables, escapes=Escapes(tables.escapes.count, tables.escapes.mark ^ np.uint8(1), tables.escapes.literals)
    )
    for decoder in DECODERS:
        with pytest.raises(CorruptDataError, match="escape mark"):
            decoder(bad)
    assert len(pack_frame(tables, 0)) < len(data)


def test_trial_keeps_the_smaller_way_per_block() -> None:
    """Level 6 and up encode escaping blocks both ways: never bigger than either alone."""
    rng = np.random.default_rng(3)
    data = _text_with_rare_bytes(40000, bytes(rng.integers(128, 256, 60).astype(np.uint8)))
    arr = np.frombuffer(data, dtype=np.uint8)
    bounds = np.array([0, 8000, 16000, 24000, 32000, 40000], dtype=np.int64)
    sizes = {}
    for name, params in {
        "plain": Params(escape_limit=0),
        "escaped": Params(escape_limit=10),
        "trial": Params(escape_limit=10, escape_trial=True),
    }.items():
        tables = _encode_blocks(arr, bounds, params, run_engine)
        assert expand(tables).tobytes() == data
        sizes[name] = len(pack_frame(tables, 0))
    assert sizes["trial"] <= min(sizes["plain"], sizes["escaped"])


def test_escape_limit_is_a_compress_parameter() -> None:
    data = _text_with_rare_bytes(30000, b"\xe9\x80\x01\xfc")
    plain = bytepair.compress(data, escape_limit=0)
    escaped = bytepair.compress(data, escape_limit=10)
    assert bytepair.decompress(plain) == bytepair.decompress(escaped) == data
    assert plain != escaped
    with pytest.raises(ValueError, match="escape_limit"):
        bytepair.compress(data, escape_limit=-1)
    with pytest.raises(TypeError, match="escape_limit"):
        bytepair.compress(data, escape_limit=1.5)  # type: ignore[arg-type]


@st.composite
def text_with_rare_bytes(draw: st.DrawFn) -> bytes:
    """A small alphabet, long enough to run out of codes, with a few rare bytes sprinkled in:
    the inputs where blocks escape (hypothesis' usual short inputs never do)."""
    alphabet = draw(st.lists(st.integers(0, 255), min_size=2, max_size=40, unique=True))
    size = draw(st.integers(4096, 12000))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    data = np.asarray(alphabet, dtype=np.uint8)[rng.integers(0, len(alphabet), size)]
    rare = draw(st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, 255)), min_size=0, max_size=60))
    for at, value in rare:
        data[at] = value
    return data.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    data=text_with_rare_bytes(),
    escape_limit=st.integers(0, 30),
    block_size=st.sampled_from([None, 1000, 4096, 30000]),
    level=st.sampled_from([1, 5, 8]),
)
def test_round_trip_with_escapes(data: bytes, escape_limit: int, block_size: int | None, level: int) -> None:
    packed = bytepair.compress(data, level=level, block_size=block_size, escape_limit=escape_limit)
    assert bytepair.decompress(packed) == data


@settings(max_examples=30, deadline=None)
@given(data=text_with_rare_bytes())
def test_escape_trial_round_trips_and_is_never_bigger(data: bytes) -> None:
    """Level 8 tries each escaping block both ways: per block it keeps the smaller."""
    arr = np.frombuffer(data, dtype=np.uint8)
    bounds = np.array([0, len(data)], dtype=np.int64)
    sizes = []
    for params in (Params(escape_limit=0), Params(), Params(escape_trial=True)):
        tables = _encode_blocks(arr, bounds, params, run_engine)
        assert expand(tables).tobytes() == data
        sizes.append(len(pack_frame(tables, 0)))
    assert sizes[2] <= min(sizes[0], sizes[1])


@pytest.mark.parametrize("marks", [(7, 7, 7), (7, 9, 7), (7, 7, 0)])
def test_restore_leaves_blocks_without_escapes_alone(marks: tuple[int, int, int]) -> None:
    """Each block's own mark, and none in a block that escapes nothing (whatever its mark field)."""
    blocks = [bytes([7, 1, 7, 9, 0]), bytes([7, 9, 0, 7]), bytes([9, 7, 0, 0, 7, 9])]
    count = np.array([blocks[0].count(marks[0]), 0, blocks[2].count(marks[2])], dtype=np.int64)
    literals = np.array([100, 101, 102, 103, 104][: int(count.sum())], dtype=np.uint8)
    out = np.frombuffer(b"".join(blocks), dtype=np.uint8).copy()
    restore_escapes(out, np.array([5, 4, 6]), Escapes(count, np.array(marks, dtype=np.uint8), literals), 0)
    expected = bytearray(b"".join(blocks))
    found = [k for k in range(5) if expected[k] == marks[0]] + [9 + k for k in range(6) if blocks[2][k] == marks[2]]
    for k, value in zip(found, literals.tolist(), strict=True):
        expected[k] = value
    assert out.tobytes() == bytes(expected)


@pytest.mark.parametrize("run_bytes", [1 << 20, 3000, 1])
def test_escapes_restore_alike_over_runs_of_blocks(run_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Restoring run by run (to bound memory) gives what one pass gives, and a bad count
    in a later run names its own block. Blocks 0, 3, 6 escape nothing; the others
    escape their rare bytes under the mark "#" (blocks 1, 4, 7) or "%" (2, 5, 8)."""
    from bytepair.core import escape as _escape

    monkeypatch.setattr(_escape, "_RESTORE_RUN", run_bytes)
    rare = [b"", b"\x01\x02", b"\x05\x06\x05"] * 3
    blocks = [_text_with_rare_bytes(2000, r, seed=k) for k, r in enumerate(rare)]
    marks = [0, ord("#"), ord("%")] * 3
    changed = b"".join(bytes(marks[k] if v in rare[k] else v for v in block) for k, block in enumerate(blocks))
    count = np.array([len(r) for r in rare], dtype=np.int64)
    literals = np.frombuffer(
        b"".join(bytes(v for v in block if v in rare[k]) for k, block in enumerate(blocks)), np.uint8
    )
    esc = Escapes(count, np.array(marks, dtype=np.uint8), literals)
    lengths = np.full(len(blocks), 2000, dtype=np.int64)
    out = np.frombuffer(changed, dtype=np.uint8).copy()
    restore_escapes(out, lengths, esc, 0)
    assert out.tobytes() == b"".join(blocks)
    wrong = count.copy()
    wrong[7] += 1
    bad = Escapes(wrong, esc.mark, np.zeros(int(wrong.sum()), dtype=np.uint8))
    with pytest.raises(CorruptDataError, match="block 17: holds its escape mark 2 times, its header says 3"):
        restore_escapes(np.frombuffer(changed, dtype=np.uint8).copy(), lengths, bad, 10)
