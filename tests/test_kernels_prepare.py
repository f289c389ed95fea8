"""The compiled frame preparation (``core.kernels.prepare``, ``_encode.pyx``) against numpy's:
the same cuts into blocks and the same escapes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.core.blocks import split_blocks
from bytepair.core.escape import BYTES_PER_FREE_CODE, find_escapes
from tests.helpers import corpus_files, use_kernels
from tests.strategies import blocky_bytes

pytest.importorskip(
    "bytepair.core.kernels._encode",
    reason="the compiled kernels are not built (pip install . with a C compiler; see docs/kernels.md)",
)

from bytepair.core.kernels import prepare as compiled

CUTTINGS = [(32768, 200), (5000, 200), (65535, 220), (8192, 120), (1, 1), (3, 255), (100, 2)]


@pytest.fixture(autouse=True)
def _numpy_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference runs the numpy path whatever the environment says."""
    use_kernels("numpy", monkeypatch)


def assert_same(data: npt.NDArray[np.uint8], block_size: int, max_distinct: int, limit: int) -> None:
    bounds = split_blocks(data, block_size, max_distinct)
    got = compiled.split_blocks(data, block_size, max_distinct)
    assert got.dtype == bounds.dtype and np.array_equal(got, bounds)
    one_pass = compiled.split_and_find_escapes(data, block_size, max_distinct, limit)
    assert one_pass[0].dtype == bounds.dtype and np.array_equal(one_pass[0], bounds)
    if not len(data):
        assert not len(one_pass[1]) and not len(one_pass[2].count)
        return
    assert_same_escapes(data, bounds, limit, one_pass[1:])


def assert_same_escapes(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], limit: int, *more: tuple[object, object]
) -> None:
    """``find_escapes`` of numpy, the compiled one and any results in *more*: all alike."""
    changed, esc = find_escapes(data, bounds, limit)
    for got_changed, got_esc in (compiled.find_escapes(data, bounds, limit), *more):
        assert isinstance(got_changed, np.ndarray)
        assert got_changed.dtype == changed.dtype and np.array_equal(got_changed, changed)
        assert (got_changed is data) == (changed is data)  # not a copy when nothing escapes, as numpy
        for name in ("count", "mark", "literals"):
            want, have = getattr(esc, name), getattr(got_esc, name)
            assert have.dtype == want.dtype and np.array_equal(have, want), name


@pytest.mark.parametrize(("block_size", "max_distinct"), CUTTINGS)
@pytest.mark.parametrize("kind", ["empty", "one", "random", "text", "every value"])
def test_inputs(kind: str, block_size: int, max_distinct: int) -> None:
    rng = np.random.default_rng(2)
    data = {
        "empty": np.zeros(0, dtype=np.uint8),
        "one": np.zeros(1, dtype=np.uint8),
        "random": rng.integers(0, 256, 30_000, dtype=np.uint8),
        "text": np.frombuffer(b"the cat sat on the mat \xe9\xfc\x01. " * 1000, dtype=np.uint8),
        "every value": np.tile(np.arange(256, dtype=np.uint8), 100),
    }[kind]
    for limit in (0, 1, 10, 1000):
        assert_same(data, block_size, max_distinct, limit)


@pytest.mark.parametrize("limit", [-1, 0, 1, 3, 10, 65535, 1 << 40])
def test_escape_limits(limit: int) -> None:
    """Every limit, up to ones no block reaches and below any count."""
    rng = np.random.default_rng(4)
    text = np.frombuffer(b"the cat sat on the mat. " * 2000, dtype=np.uint8).copy()
    text[rng.integers(0, len(text), 300)] = rng.integers(128, 256, 300)  # rare values scattered
    assert_same(text, 32768, 200, limit)
    assert_same(text, 4000, 120, limit)


def test_blocks_just_long_enough_to_escape() -> None:
    """A block escapes only with ``BYTES_PER_FREE_CODE`` bytes per free code: at the edge."""
    for extra in (-1, 0, 1):
        distinct = 60
        length = BYTES_PER_FREE_CODE * (256 - distinct) + extra
        values = np.arange(distinct, dtype=np.uint8)
        data = np.resize(np.concatenate((values, np.zeros(length, dtype=np.uint8))), length)
        assert_same_escapes(data, np.array([0, length], dtype=np.int64), 3)


def test_escapes_of_given_bounds() -> None:
    """``find_escapes`` takes any bounds in order within the data: empty blocks, blocks that
    start after 0 or end before the data does."""
    rng = np.random.default_rng(6)
    data = np.frombuffer(b"abcabcabc \x01\x02\x03 the end" * 700, dtype=np.uint8).copy()
    data[rng.integers(0, len(data), 100)] = rng.integers(200, 256, 100)
    for bounds in ([0, 0, 5000, 5000, len(data)], [10, 3000, len(data) - 7], [0], [50, 50]):
        assert_same_escapes(data, np.array(bounds, dtype=np.int64), 4)


@pytest.mark.parametrize(
    "bounds",
    [[0, 7000], [-1, 100], [0, 300, 200, 500], []],
    ids=["past the end", "before the start", "going back", "no bounds"],
)
def test_hostile_bounds_raise(bounds: list[int]) -> None:
    data = np.zeros(1000, dtype=np.uint8)
    with pytest.raises(ValueError, match="find_escapes needs bounds"):
        compiled.find_escapes(data, np.array(bounds, dtype=np.int64), 10)


@pytest.mark.parametrize(("block_size", "max_distinct"), [(0, 200), (-5, 200), (100, 0), (100, -1)])
def test_cuttings_that_cannot_cut_raise(block_size: int, max_distinct: int) -> None:
    """A block of no byte, or of no value, would never end: ValueError (``Params`` never asks)."""
    data = np.frombuffer(b"some bytes", dtype=np.uint8)
    with pytest.raises(ValueError, match="at least 1"):
        compiled.split_blocks(data, block_size, max_distinct)
    with pytest.raises(ValueError, match="at least 1"):
        compiled.split_and_find_escapes(data, block_size, max_distinct, 10)


def test_read_only_and_other_inputs() -> None:
    data = b"the cat sat on the mat \xe9\xfc\x01. " * 1000
    frozen = np.frombuffer(data, dtype=np.uint8)
    assert_same(frozen, 5000, 20, 10)
    assert_same(frozen[::-1].copy(), 3000, 30, 10)
    bounds = split_blocks(frozen, 4000, 25).astype(np.int32)
    assert_same_escapes(frozen, bounds, 10)


@settings(max_examples=100, deadline=None)
@given(
    data=blocky_bytes(max_size=20_000),
    block_size=st.integers(1, 5000),
    max_distinct=st.integers(1, 255),
    limit=st.integers(0, 50),
)
def test_hypothesis(data: bytes, block_size: int, max_distinct: int, limit: int) -> None:
    assert_same(np.frombuffer(data, dtype=np.uint8), block_size, max_distinct, limit)


@settings(max_examples=50, deadline=None)
@given(
    data=st.binary(min_size=0, max_size=3000),
    max_distinct=st.integers(1, 400),
    cuts=st.lists(st.integers(0, 3000), max_size=6),
    limit=st.integers(-2, 5),
)
def test_hypothesis_escapes_of_any_bounds(data: bytes, max_distinct: int, cuts: list[int], limit: int) -> None:
    array = np.frombuffer(data, dtype=np.uint8)
    assert_same(array, 1 + max_distinct * 3, max_distinct, limit)
    bounds = np.array(sorted(min(c, len(data)) for c in [0, *cuts, len(data)]), dtype=np.int64)
    assert_same_escapes(array, bounds, limit)


@pytest.mark.parametrize("corpus", ["canterbury", "calgary"])
def test_corpus(corpus: str) -> None:
    for path in corpus_files(corpus):
        data = np.fromfile(path, dtype=np.uint8)
        for block_size, max_distinct in CUTTINGS[:4]:
            assert_same(data, block_size, max_distinct, 10)
