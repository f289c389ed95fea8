"""The compiled engine (``core.kernels.encode``) against the numpy engine: the same result,
field for field, for every parameter the package uses; and whole streams alike."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair
import bytepair.gage
from bytepair.core import jit
from bytepair.core.blocks import split_blocks
from bytepair.core.engine import EncodedBlocks, encode_blocks
from bytepair.core.params import LEVELS
from tests.golden import GOLDEN
from tests.helpers import corpus_files
from tests.strategies import blocky_bytes

pytest.importorskip("numba", reason="the compiled engine needs numba (pip install 'bytepair[fast]')")
if not jit._ready(quiet=True):  # sets numba's cache directory up before numba is imported
    pytest.skip("numba has no writable cache directory here", allow_module_level=True)

from bytepair.core.kernels import encode as compiled

GAGE_DEPTH = bytepair.gage.MAX_STACK


@pytest.fixture(autouse=True)
def _numpy_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference runs the numpy engine whatever the environment says."""
    monkeypatch.setenv(jit.KERNELS_ENV, "numpy")


def assert_same(
    data: bytes | npt.NDArray[np.uint8], bounds: list[int] | npt.NDArray[np.int64], **params: object
) -> None:
    arr = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else data
    cuts = np.asarray(bounds, dtype=np.int64)
    expected = encode_blocks(arr, cuts, **params)  # type: ignore[arg-type]
    got = compiled.encode_blocks(arr, cuts, **params)  # type: ignore[arg-type]
    for field in dataclasses.fields(EncodedBlocks):
        want, have = getattr(expected, field.name), getattr(got, field.name)
        assert have.dtype == want.dtype, field.name
        assert np.array_equal(have, want), f"{field.name} differs: {have[:20]} against {want[:20]}"


PARAMS = [
    {"threshold": 3, "merges_per_step": 8},
    {"threshold": 2, "merges_per_step": 1},
    {"threshold": 2, "merges_per_step": 2},
    {"threshold": 3, "merges_per_step": 64},
    {"threshold": 4, "merges_per_step": 8, "recycle": False},
    {"threshold": 3, "recycle": False, "max_depth": GAGE_DEPTH},
    {"threshold": 2, "max_depth": 3},
    {"threshold": 2, "max_depth": 2, "recycle": False},
]


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9, 1000, 65535])
def test_runs(n: int, params: dict[str, object]) -> None:
    assert_same(b"a" * n, [0, n], **params)


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_runs_of_every_length(seed: int, params: dict[str, object]) -> None:
    """Runs of 1-40 bytes or byte pairs side by side, cut anywhere: the compiled engine
    matches a run along its links and changes its counts once per merge."""
    rng = np.random.default_rng(seed)
    units = [b"a", b"b", b"\x00", b"ab", b"ba"]
    data = b"".join(
        units[int(u)] * int(k) for u, k in zip(rng.integers(0, 5, 300), rng.integers(1, 41, 300), strict=True)
    )
    cuts = sorted({0, len(data), *(int(c) for c in rng.integers(1, len(data), 4))})
    assert_same(data, cuts, **params)


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("data", [b"abab" * 50, b"ab" * 3 + b"a", b"abcabcab" * 40, b"aab" * 99, b"ABABCABCD"])
def test_adjacent_matches(data: bytes, params: dict[str, object]) -> None:
    assert_same(data, [0, len(data)], **params)


@pytest.mark.parametrize("params", PARAMS)
def test_block_boundaries(params: dict[str, object]) -> None:
    data = b"ab.a" + b"b.ab" + b"aaaa" + b"a" + b"ab" * 40 + b"x"
    assert_same(data, [0, 4, 8, 11, 12, 13, 60, len(data) - 1, len(data)], **params)


@pytest.mark.parametrize("params", PARAMS)
def test_blocks_holding_every_value(params: dict[str, object]) -> None:
    rng = np.random.default_rng(7)
    words = [bytes(rng.integers(0, 256, 3).astype(np.uint8)) for _ in range(30)]
    block = bytes(range(256)) + b"".join(words[i] for i in rng.integers(0, 30, 2000))
    data = block + bytes(range(255, -1, -1)) * 3 + block
    assert_same(data, [0, len(block), len(block) + 768, len(data)], **params)


@pytest.mark.parametrize("params", PARAMS)
def test_random_data(params: dict[str, object]) -> None:
    rng = np.random.default_rng(11)
    data = rng.integers(0, 256, 50_000, dtype=np.uint8)
    assert_same(data, split_blocks(data, 5000, 200), **params)
    skewed = rng.geometric(0.2, 50_000).clip(0, 255).astype(np.uint8)
    assert_same(skewed, split_blocks(skewed, 16384, 200), **params)


def test_recycling_runs_out_of_spare_values() -> None:
    """Many merges with few codes: fresh ones, then recycled ones, up to the limit."""
    rng = np.random.default_rng(3)
    words = [bytes(rng.integers(0, 250, 2).astype(np.uint8)) for _ in range(12)]
    data = bytes(range(250)) + b"".join(words[i] for i in rng.integers(0, 12, 30_000))
    for merges in (1, 2, 8, 64):
        assert_same(data, [0, len(data)], threshold=2, merges_per_step=merges)


def test_candidates_at_the_threshold_while_recycling() -> None:
    """Once the four fresh codes are used up, the merged pairs' values are recycled, and a
    recycled code needs ``threshold + 1`` occurrences: pairs seen exactly ``threshold``
    times stay, first candidate of a step or not."""
    head = bytes(range(236))  # 236..239 absent: four fresh codes
    counts = [12, 10, 9, 8, 5, 4, 3, 3]
    body = b"".join(bytes([240 + 2 * k, 241 + 2 * k]) * c for k, c in enumerate(counts))
    data = head + body
    for threshold in (2, 3, 4, 5):
        for merges in (1, 2, 3, 8):
            assert_same(data, [0, len(data)], threshold=threshold, merges_per_step=merges)
            assert_same(data, [0, len(data)], threshold=threshold, merges_per_step=merges, recycle=False)
        assert_same(data, [0, len(data)], threshold=threshold, max_depth=3)


def test_no_blocks() -> None:
    assert_same(b"", [0], threshold=3)


def test_bad_arguments_raise_as_numpy_does() -> None:
    arr = np.frombuffer(b"abcabc", dtype=np.uint8)
    with pytest.raises(ValueError, match="non-empty"):
        compiled.encode_blocks(arr, np.array([0, 3, 3, 6]), threshold=3)
    with pytest.raises(ValueError, match="merges_per_step"):
        compiled.encode_blocks(arr, np.array([0, 6]), threshold=3, max_depth=30, merges_per_step=8)


@settings(max_examples=150, deadline=None)
@given(
    data=blocky_bytes(max_size=4000),
    cut_seed=st.integers(0, 2**32 - 1),
    threshold=st.integers(2, 5),
    merges=st.sampled_from([1, 2, 3, 8, 64]),
    recycle=st.booleans(),
    depth=st.sampled_from([None, None, 2, 3, 5, GAGE_DEPTH]),
)
def test_hypothesis(data: bytes, cut_seed: int, threshold: int, merges: int, recycle: bool, depth: int | None) -> None:
    rng = np.random.default_rng(cut_seed)
    cuts = sorted(set(rng.integers(1, max(2, len(data)), rng.integers(0, 8)).tolist()) - {len(data)})
    params: dict[str, object] = {"threshold": threshold, "recycle": recycle, "merges_per_step": merges}
    if depth is not None:
        params |= {"max_depth": depth, "merges_per_step": 1}
    assert_same(data, [0, *cuts, len(data)], **params)


def _compress_both(monkeypatch: pytest.MonkeyPatch, data: bytes, **params: object) -> tuple[bytes, bytes]:
    """The whole stream, once per path."""
    monkeypatch.setenv(jit.KERNELS_ENV, "numpy")
    expected = bytepair.compress(data, **params)  # type: ignore[arg-type]
    monkeypatch.setenv(jit.KERNELS_ENV, "numba")
    got = bytepair.compress(data, **params)  # type: ignore[arg-type]
    return expected, got


def _golden_inputs() -> list[Path]:
    return sorted(GOLDEN.glob("*.bin"))


@pytest.mark.parametrize("path", _golden_inputs(), ids=lambda p: p.stem)
def test_golden_inputs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = path.read_bytes()
    arr = np.frombuffer(data, dtype=np.uint8)
    for block_size, max_distinct in [(32768, 200), (1024, 200), (5000, 120)]:
        bounds = split_blocks(arr, block_size, max_distinct)
        for params in PARAMS:
            assert_same(arr, bounds, **params)
    for level in LEVELS:
        expected, got = _compress_both(monkeypatch, data, level=level)
        assert got == expected, f"level {level}"
    monkeypatch.setenv(jit.KERNELS_ENV, "numpy")
    expected = bytepair.gage.compress(data, threshold=2)
    monkeypatch.setenv(jit.KERNELS_ENV, "numba")
    assert bytepair.gage.compress(data, threshold=2) == expected


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_streams_alike_at_every_level(level: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(level)
    words = [b"the ", b"cat ", b"sat ", b"on ", b"mat ", b"\x00\x01", b"aaaa", bytes(range(200, 256))]
    data = b"".join(words[w] for w in rng.integers(0, len(words), 20_000)) + rng.bytes(5000)
    expected, got = _compress_both(monkeypatch, data, level=level)
    assert got == expected
    assert bytepair.decompress(got) == data


@pytest.mark.parametrize("corpus", ["canterbury", "calgary"])
def test_corpus(corpus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first 256 KiB of every file: the engine at Gage's settings, whole streams at levels 1, 5, 9."""
    for path in corpus_files(corpus):
        data = path.read_bytes()[: 1 << 18]
        arr = np.frombuffer(data, dtype=np.uint8)
        assert_same(arr, split_blocks(arr, 5000, 200), threshold=3, recycle=False, max_depth=GAGE_DEPTH)
        for level in (1, 5, 9):
            expected, got = _compress_both(monkeypatch, data, level=level)
            assert got == expected, f"{path.name} at level {level}"


def test_blocks_longer_than_the_compiled_engine_takes_stay_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    data = np.frombuffer(b"ab" * 40_000, dtype=np.uint8)
    bounds = np.array([0, len(data)], dtype=np.int64)
    with pytest.raises(ValueError, match="at most"):
        compiled.encode_blocks(data, bounds, threshold=3)
    monkeypatch.setenv(jit.KERNELS_ENV, "numba")
    result = encode_blocks(data, bounds, threshold=3)  # the numpy engine: no error
    assert int(result.n_merges[0]) > 0
