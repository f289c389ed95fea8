"""The shared column helpers: ranges, running sums, byte counts and runs of blocks."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bytepair.core import tables as _tables
from bytepair.core.tables import (
    block_byte_counts,
    block_cells,
    byte_counts,
    concat_ranges,
    cumulative_sum,
    empty_for_sums,
    fast_sums_step,
    for_sums,
    run_edges,
)

_lengths = st.lists(st.integers(0, 40), max_size=60)


@given(_lengths, st.integers(0, 1000), st.sampled_from([1, -1]))
def test_concat_ranges_is_the_ranges_one_after_another(lengths: list[int], seed: int, step: int) -> None:
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, 10_000, len(lengths))
    expected = [k for s, n in zip(starts.tolist(), lengths, strict=True) for k in range(s, s + n)]
    with mock.patch.object(_tables, "fast_sums_step", lambda: step):
        got = concat_ranges(starts.astype(np.int64), np.array(lengths, dtype=np.int64))
    assert got.dtype == np.int64 and got.tolist() == expected


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.uint16, np.uint32, np.int32, np.int64])
@pytest.mark.parametrize("size", [0, 1, 2, 17, 100_000])
def test_cumulative_sum_matches_numpy(dtype: type[np.generic], size: int, sums_step: int) -> None:
    values = np.random.default_rng(size).integers(0, 2 if dtype is np.bool_ else 200, size).astype(dtype)
    got = cumulative_sum(values)
    assert got.dtype == np.int64 and np.array_equal(got, values.cumsum(dtype=np.int64))
    # the sums behave as an ordinary array: indexing, slicing, copying out
    assert got.tolist() == np.cumsum(values, dtype=np.int64).tolist()
    assert np.array_equal(np.arange(size)[got % max(size, 1)], (values.cumsum(dtype=np.int64) % max(size, 1)))


@pytest.fixture(params=[1, -1], ids=["contiguous", "reversed"])
def sums_step(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Either layout of running sums, whichever this machine would pick."""
    step: int = request.param
    monkeypatch.setattr(_tables, "fast_sums_step", lambda: step)
    return step


def test_the_probe_picks_a_layout_once() -> None:
    assert fast_sums_step() in (1, -1)
    assert fast_sums_step() == fast_sums_step()


def test_sums_go_into_the_layout_picked(sums_step: int) -> None:
    assert empty_for_sums(4).strides == (8 * sums_step,)
    buf = np.arange(5, dtype=np.int64)
    view = for_sums(buf)
    assert np.shares_memory(view, buf) and view.strides == (8 * sums_step,)
    assert sorted(view.tolist()) == buf.tolist()


def test_cumulative_sum_in_place_and_into_part_of_an_array(sums_step: int) -> None:
    steps = empty_for_sums(6)
    steps[...] = [5, 1, 1, -3, 1, 1]
    assert cumulative_sum(steps, out=steps) is steps
    assert steps.tolist() == [5, 6, 7, 4, 5, 6]
    at = empty_for_sums(5)
    at[0] = 0
    cumulative_sum(np.array([2, 3, 1, 4], dtype=np.uint32), out=at[1:])
    assert at.tolist() == [0, 2, 5, 6, 10]


@pytest.mark.parametrize(
    ("weights", "per_run", "edges"),
    [
        ([], 10, [0, 0]),
        ([5], 10, [0, 1]),
        ([4, 4, 4, 4], 10, [0, 2, 4]),
        ([6, 6, 6], 10, [0, 1, 3]),
        ([30, 1, 1], 10, [0, 3]),
    ],
)
def test_run_edges_cut_where_the_running_weight_passes_a_multiple(
    weights: list[int], per_run: int, edges: list[int]
) -> None:
    assert run_edges(np.array(weights, dtype=np.int64), per_run) == edges


@pytest.mark.parametrize("size", [0, 1, 5, 1 << 18, (1 << 18) + 1, (1 << 18) + 7])
def test_byte_counts_match_bincount_short_or_long_even_or_odd(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(size)
    data = rng.integers(0, 256, size, dtype=np.uint8)
    data[: size // 3] = 7  # a long run of one value
    expected = np.bincount(data, minlength=256)
    assert byte_counts(data).tolist() == expected.tolist()
    monkeypatch.setattr(_tables, "_PAIRWISE_COUNT", 2)  # two bytes at a time, from an odd offset too
    assert byte_counts(data).tolist() == expected.tolist()
    if size > 1:
        assert byte_counts(data[1:]).tolist() == np.bincount(data[1:], minlength=256).tolist()


@given(st.lists(st.integers(1, 300), min_size=1, max_size=600), st.integers(0, 1000))
def test_block_byte_counts_are_each_blocks_bincount(lengths: list[int], seed: int) -> None:
    """Blocks 256 at a time, of any number (more than 256 here often): each row is its block's counts."""
    bounds = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    data = np.random.default_rng(seed).integers(0, 256, int(bounds[-1]), dtype=np.uint8)
    counts = block_byte_counts(data, bounds)
    assert counts.shape == (len(lengths), 256) and counts.dtype == np.int64
    for b in range(len(lengths)):
        assert counts[b].tolist() == np.bincount(data[bounds[b] : bounds[b + 1]], minlength=256).tolist()
    groups = list(block_cells(data, bounds))
    nb = len(lengths)
    assert [(lo, hi) for lo, hi, _ in groups] == [(lo, min(lo + 256, nb)) for lo in range(0, nb, 256)]
    for lo, hi, cells in groups:
        assert cells.dtype == np.uint16
        expected = np.repeat(np.arange(hi - lo), lengths[lo:hi]) * 256 + data[bounds[lo] : bounds[hi]]
        assert cells.tolist() == expected.tolist()
