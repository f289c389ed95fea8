"""The compiled engine (``core.kernels.encode``, ``_encode.pyx``) against the numpy engine: the
same result, field for field, for every parameter the package uses; and whole streams alike."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair
import bytepair.gage
from bytepair import backend
from bytepair.core import engine
from bytepair.core.blocks import split_blocks
from bytepair.core.engine import EncodedBlocks, encode_blocks
from bytepair.core.params import LEVELS
from tests.golden import GOLDEN
from tests.helpers import corpus_files, replace_kernels, use_kernels
from tests.strategies import blocky_bytes

pytest.importorskip(
    "bytepair.core.kernels._encode",
    reason="the compiled kernels are not built (pip install . with a C compiler; see docs/kernels.md)",
)

from bytepair.core.kernels import _encode
from bytepair.core.kernels import encode as compiled
from bytepair.core.kernels import frame as compiled_frame

GAGE_DEPTH = bytepair.gage.MAX_STACK


@pytest.fixture(autouse=True)
def _numpy_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference runs the numpy path whatever the environment says."""
    use_kernels("numpy", monkeypatch)


def assert_same(
    data: bytes | npt.NDArray[np.uint8], bounds: list[int] | npt.NDArray[np.int64], **params: Any
) -> EncodedBlocks:
    arr = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else data
    cuts = np.asarray(bounds, dtype=np.int64)
    expected = encode_blocks(arr, cuts, **params)
    got = compiled.encode_blocks(arr, cuts, **params)
    for field in dataclasses.fields(EncodedBlocks):
        want, have = getattr(expected, field.name), getattr(got, field.name)
        assert have.dtype == want.dtype, field.name
        assert np.array_equal(have, want), f"{field.name} differs: {have[:20]} against {want[:20]}"
    return got


PARAMS: list[dict[str, Any]] = [
    {"threshold": 3, "merges_per_step": 8},
    {"threshold": 2, "merges_per_step": 1},
    {"threshold": 2, "merges_per_step": 2},
    {"threshold": 3, "merges_per_step": 64},
    {"threshold": 4, "merges_per_step": 8, "recycle": False},
    {"threshold": 3, "recycle": False, "max_depth": GAGE_DEPTH},
    {"threshold": 2, "max_depth": 3},
    {"threshold": 2, "max_depth": 2, "recycle": False},
]


def test_the_compiled_constants_are_the_python_ones() -> None:
    from bytepair.container import format as container_format
    from bytepair.core import escape, params

    assert _encode.constants() == {
        "MAX_RECYCLED": engine.MAX_RECYCLED,
        "MAX_COMPILED_BLOCK": engine.MAX_COMPILED_BLOCK,
        "BYTES_PER_FREE_CODE": escape.BYTES_PER_FREE_CODE,
        "BLOCK_HEADER_SIZE": container_format.BLOCK_HEADER_SIZE,
        "CODE_SET_BITMAP": container_format.CODE_SET_BITMAP,
        "MAX_RUNS": container_format.MAX_RUNS,
        "MAX_BLOCK_SIZE": params.MAX_BLOCK_SIZE,
    }


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9, 1000, 65535])
def test_runs(n: int, params: dict[str, Any]) -> None:
    assert_same(b"a" * n, [0, n], **params)


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_runs_of_every_length(seed: int, params: dict[str, Any]) -> None:
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
def test_adjacent_matches(data: bytes, params: dict[str, Any]) -> None:
    assert_same(data, [0, len(data)], **params)


@pytest.mark.parametrize("params", PARAMS)
def test_block_boundaries(params: dict[str, Any]) -> None:
    data = b"ab.a" + b"b.ab" + b"aaaa" + b"a" + b"ab" * 40 + b"x"
    assert_same(data, [0, 4, 8, 11, 12, 13, 60, len(data) - 1, len(data)], **params)


@pytest.mark.parametrize("params", PARAMS)
def test_blocks_holding_every_value(params: dict[str, Any]) -> None:
    rng = np.random.default_rng(7)
    words = [bytes(rng.integers(0, 256, 3).astype(np.uint8)) for _ in range(30)]
    block = bytes(range(256)) + b"".join(words[i] for i in rng.integers(0, 30, 2000))
    data = block + bytes(range(255, -1, -1)) * 3 + block
    assert_same(data, [0, len(block), len(block) + 768, len(data)], **params)


@pytest.mark.parametrize("params", PARAMS)
def test_random_data(params: dict[str, Any]) -> None:
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


def test_recycled_codes() -> None:
    """Words of two values that vanish once merged: their values are recycled as codes."""
    rng = np.random.default_rng(5)
    rare = b"".join(bytes([2 * k, 2 * k + 1]) * 5 for k in range(125))
    common = [bytes([2 * k, 2 * k + 1]) for k in range(20)]
    data = rare + b"".join(common[i] for i in rng.integers(0, 20, 30_000))
    for merges in (1, 8):
        got = assert_same(data, [0, len(data)], threshold=2, merges_per_step=merges)
        assert int(got.n_merges[0] - got.n_fresh[0]) > 0


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


def _many_pairs(seed: int) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    rng = np.random.default_rng(seed)
    words = [bytes(rng.integers(0, 256, 2).astype(np.uint8)) for _ in range(300)]
    data = np.frombuffer(b"".join(words[i] for i in rng.integers(0, 300, 20_000)), dtype=np.uint8)
    return data, split_blocks(data, 8000, 255)


@pytest.mark.parametrize("merges", [65, 100, 254])
def test_more_merges_a_step_than_the_levels_use(merges: int) -> None:
    """``merges_per_step`` beyond the levels' 64: the same merges (the numpy engine takes
    up to 254; ``Params`` allows 64)."""
    for recycle in (True, False):
        assert_same(*_many_pairs(merges), threshold=2, recycle=recycle, merges_per_step=merges)


def test_merges_per_step_above_256_change_nothing() -> None:
    """A block has at most 255 free codes and 256 rows: 256 merges a step and more give the
    same result (the compiled engine's step arrays are sized for 256)."""
    data, bounds = _many_pairs(1)
    results = [compiled.encode_blocks(data, bounds, threshold=2, merges_per_step=m) for m in (256, 300, 10**6)]
    for other in results[1:]:
        for field in dataclasses.fields(EncodedBlocks):
            assert np.array_equal(getattr(other, field.name), getattr(results[0], field.name)), field.name


@pytest.mark.parametrize("depth", [-5, -1, 0, 1, 2])
def test_depths_that_forbid_codes(depth: int) -> None:
    """``max_depth`` below 2 forbids every code, in both engines (below 0 as 0)."""
    data = b"abcabcabcabc" * 20
    got = assert_same(data, [0, len(data)], threshold=2, max_depth=depth)
    assert (int(got.n_merges[0]) == 0) == (depth < 2)


@pytest.mark.parametrize("threshold", [1, 2, 3, 100, 65535, 10**6])
def test_thresholds(threshold: int) -> None:
    data = b"the cat sat on the mat; " * 300 + b"aaaa" * 100
    for merges in (1, 8):
        assert_same(data, [0, 1000, len(data)], threshold=threshold, merges_per_step=merges)


def test_bounds_from_anywhere_in_the_data() -> None:
    """Blocks need not start at 0 nor end at the data's end (the numpy engine reads
    ``data[bounds[0]:bounds[-1]]``)."""
    data = b"xyzxyzxyz" * 50 + b"the cat sat on the mat " * 40
    assert_same(data, [7, 100, 460, len(data) - 3], threshold=2, merges_per_step=8)


def test_no_blocks() -> None:
    assert_same(b"", [0], threshold=3)
    assert_same(b"abc", [0], threshold=3)


def test_bad_arguments_raise_as_numpy_does() -> None:
    arr = np.frombuffer(b"abcabc", dtype=np.uint8)
    with pytest.raises(ValueError, match="non-empty"):
        compiled.encode_blocks(arr, np.array([0, 3, 3, 6]), threshold=3)
    for merges, depth in ((8, 30), (0, None), (-1, None)):
        with pytest.raises(ValueError, match="merges_per_step must be 1 with max_depth, and at least 1") as got:
            compiled.encode_blocks(arr, np.array([0, 6]), threshold=3, max_depth=depth, merges_per_step=merges)
        with pytest.raises(ValueError) as want:
            encode_blocks(arr, np.array([0, 6]), threshold=3, max_depth=depth, merges_per_step=merges)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize(
    "bounds",
    [[0, 7], [-1, 6], [0, 4, 2, 6], [], [3, 2], [0, 3, 3], [5, 10**12]],
    ids=["past the end", "before the start", "going back", "no bounds", "backwards", "empty block", "huge"],
)
def test_hostile_bounds_raise(bounds: list[int]) -> None:
    """Bounds that would take the loops outside the data: ValueError, never a read past it."""
    arr = np.frombuffer(b"abcabc", dtype=np.uint8)
    with pytest.raises(ValueError, match="encode_blocks needs"):
        compiled.encode_blocks(arr, np.array(bounds, dtype=np.int64), threshold=3)


def test_thresholds_below_one_raise() -> None:
    """The compiled engine needs every merge to replace something (a threshold of at least
    1: its merge columns are sized by that); the package's levels use 2 or more."""
    arr = np.frombuffer(b"abcabc" * 10, dtype=np.uint8)
    for threshold in (0, -3):
        with pytest.raises(ValueError, match="threshold of at least 1"):
            compiled.encode_blocks(arr, np.array([0, len(arr)]), threshold=threshold)


def test_blocks_longer_than_the_compiled_engine_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    data = np.frombuffer(b"ab" * 40_000, dtype=np.uint8)
    bounds = np.array([0, len(data)], dtype=np.int64)
    with pytest.raises(ValueError, match="at most 65535 bytes"):
        compiled.encode_blocks(data, bounds, threshold=3)
    use_kernels("compiled", monkeypatch)
    result = backend.encode_blocks(data, bounds, threshold=3, recycle=True, merges_per_step=1)  # the numpy engine
    assert int(result.n_merges[0]) > 0


def test_read_only_and_other_inputs() -> None:
    """bytes, read-only arrays, other integer dtypes and lists of bounds are taken as numpy takes them."""
    data = b"the cat sat on the mat " * 50
    frozen = np.frombuffer(data, dtype=np.uint8)
    assert not frozen.flags.writeable
    assert_same(frozen, np.array([0, 500, len(data)], dtype=np.int32), threshold=2)
    assert_same(frozen[::-1].copy(), [0, len(data)], threshold=3, merges_per_step=8)


def test_the_workspace_kept_between_calls() -> None:
    """Each thread keeps its workspace between calls: long blocks, then short ones, then
    long ones again, with other options each time, give what fresh workspaces give."""
    rng = np.random.default_rng(8)
    text = b"".join(rng.choice([b"the ", b"cat ", b"sat ", b"on ", b"a ", b"mat. "], 30_000))
    arr = np.frombuffer(text, dtype=np.uint8)
    for block_size, params in [(65535, PARAMS[0]), (100, PARAMS[1]), (4000, PARAMS[5]), (65535, PARAMS[3])]:
        assert_same(arr, split_blocks(arr, block_size, 200), **params)


def test_threads_at_once() -> None:
    """The GIL is released for the loops, and each thread has its own workspace: calls from
    several threads at once give each what one thread gives."""
    rng = np.random.default_rng(9)
    inputs = []
    for k in range(6):
        words = [bytes(rng.integers(0, 256, 3).astype(np.uint8)) for _ in range(20 + 10 * k)]
        data = np.frombuffer(b"".join(words[i] for i in rng.integers(0, len(words), 20_000)), dtype=np.uint8)
        inputs.append((data, split_blocks(data, 2000 * (k + 1), 200)))
    alone = [compiled.encode_blocks(d, b, threshold=2, merges_per_step=8) for d, b in inputs]
    together: list[EncodedBlocks | None] = [None] * len(inputs)

    def run(k: int) -> None:
        for _ in range(3):
            together[k] = compiled.encode_blocks(*inputs[k], threshold=2, merges_per_step=8)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for one, many in zip(alone, together, strict=True):
        assert many is not None and one.payload.tobytes() == many.payload.tobytes()
        assert np.array_equal(one.code, many.code) and np.array_equal(one.n_merges, many.n_merges)


@pytest.fixture(params=["baseline", "avx2"])
def vector_loops(request: pytest.FixtureRequest) -> Iterator[str]:
    """The engine's three vector loops (``_largest_key``, ``_rescan``, ``_select``) in each of
    their builds: the baseline one, and the AVX2 one where the CPU has it (it runs by default
    there). The checked build runs ``_select``'s plain loop either way."""
    before = _encode.VECTOR_LOOPS
    taken = _encode.use_vector_loops(request.param)
    try:
        if taken != request.param:
            pytest.skip("this CPU has no AVX2 (or the compiler built no AVX2 loops)")
        yield taken
    finally:
        _encode.use_vector_loops(before)


def test_both_builds_of_the_vector_loops(vector_loops: str) -> None:
    rng = np.random.default_rng(12)
    text = b"".join(rng.choice([b"the ", b"cat ", b"sat ", b"on ", b"a ", b"mat. ", b"\x00\x00"], 20_000))
    skewed = rng.geometric(0.1, 60_000).clip(0, 255).astype(np.uint8)
    for data in (np.frombuffer(text, dtype=np.uint8), skewed):
        for params in PARAMS:
            assert_same(data, split_blocks(data, 16384, 200), **params)
    for path in sorted(GOLDEN.glob("*.bin")):
        arr = np.frombuffer(path.read_bytes(), dtype=np.uint8)
        assert_same(arr, split_blocks(arr, 32768, 200), threshold=3, merges_per_step=8)


def test_both_builds_of_the_select_filter(vector_loops: str) -> None:
    # made lists of every length around the vector filter's 8 entries, most entries not the
    # one wanted: many short words, their pairs merged into codes, then codes with codes
    rng = np.random.default_rng(5)
    words = [bytes(rng.integers(97, 123, rng.integers(2, 6))) + b" " for _ in range(40)]
    for size in (30, 61, 250, 1021, 4099, 30_000):
        data = np.frombuffer(b"".join(rng.choice(words, size // 4 + 1))[:size], dtype=np.uint8)
        for params in PARAMS:
            assert_same(data, split_blocks(data, 8192, 200), **params)


def test_vector_loops_by_name() -> None:
    with pytest.raises(ValueError, match="no vector loops named"):
        _encode.use_vector_loops("sse9")
    assert _encode.VECTOR_LOOPS in ("avx2", "baseline")


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
    params: dict[str, Any] = {"threshold": threshold, "recycle": recycle, "merges_per_step": merges}
    if depth is not None:
        params |= {"max_depth": depth, "merges_per_step": 1}
    assert_same(data, [0, *cuts, len(data)], **params)


@settings(max_examples=50, deadline=None)
@given(data=blocky_bytes(max_size=3000), merges=st.integers(1, 300), threshold=st.integers(1, 6))
def test_hypothesis_any_merges_per_step(data: bytes, merges: int, threshold: int) -> None:
    assert_same(data, [0, len(data)], threshold=threshold, merges_per_step=merges)


def compress_both(monkeypatch: pytest.MonkeyPatch, data: bytes, **params: Any) -> tuple[bytes, bytes]:
    """The whole stream, once per path: (numpy's, the compiled kernels'). Compression takes
    only the packer of ``backend.kernel`` (the decoders' modules are tested in their
    own files)."""
    use_kernels("numpy", monkeypatch)
    expected = bytepair.compress(data, **params)
    with monkeypatch.context() as patch:
        use_kernels("compiled", patch)
        replace_kernels(patch, frame=compiled_frame)
        got = bytepair.compress(data, **params)
    use_kernels("numpy", monkeypatch)
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
        expected, got = compress_both(monkeypatch, data, level=level)
        assert got == expected, f"level {level}"
    expected = bytepair.gage.compress(data, threshold=2)
    with monkeypatch.context() as patch:
        use_kernels("compiled", patch)
        assert bytepair.gage.compress(data, threshold=2) == expected


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_streams_alike_at_every_level(level: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(level)
    words = [b"the ", b"cat ", b"sat ", b"on ", b"mat ", b"\x00\x01", b"aaaa", bytes(range(200, 256))]
    data = b"".join(words[w] for w in rng.integers(0, len(words), 20_000)) + rng.bytes(5000)
    expected, got = compress_both(monkeypatch, data, level=level)
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
            expected, got = compress_both(monkeypatch, data, level=level)
            assert got == expected, f"{path.name} at level {level}"


@pytest.mark.slow
@pytest.mark.parametrize("level", range(1, 10))
@pytest.mark.parametrize("corpus", ["canterbury", "calgary"])
def test_whole_corpus_streams(corpus: str, level: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every whole file of both corpora at every level: ``bytepair.compress`` writes the same
    stream with the compiled kernels as with numpy."""
    for path in corpus_files(corpus):
        data = path.read_bytes()
        expected, got = compress_both(monkeypatch, data, level=level)
        assert got == expected, f"{path.name} at level {level}"
