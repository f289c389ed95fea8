"""The engine: Gage's algorithm with exact incremental counts, on the cases where counts go wrong."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.core import buffers
from bytepair.core import engine as _engine
from bytepair.core.engine import MAX_BATCH_BLOCKS, EncodedBlocks, StepRecord, encode_blocks
from tests.strategies import blocky_bytes


def run(
    data: bytes, *, threshold: int = 2, cuts: list[int] | None = None, **kw: object
) -> tuple[EncodedBlocks, list[StepRecord]]:
    arr = np.frombuffer(data, dtype=np.uint8)
    bounds = np.array([0, *(cuts or []), len(arr)], dtype=np.int64)
    steps: list[StepRecord] = []
    result = encode_blocks(arr, bounds, threshold=threshold, on_step=steps.append, check_counts=True, **kw)  # type: ignore[arg-type]
    return result, steps


def assert_cannot_overlap(step: StepRecord) -> None:
    """A block's merges of one step are pairs no two of whose occurrences can overlap:
    one per left symbol, and none whose left symbol is another's right one (``ab`` and
    ``cb`` may go together, ``ab`` and ``bc`` may not)."""
    for block in set(step.blocks.tolist()):
        mine = step.blocks == block
        pairs = list(zip(step.left[mine].tolist(), step.right[mine].tolist(), strict=True))
        for (a, b), (c, d) in itertools.combinations(pairs, 2):
            assert a != c and b != c and d != a, f"merges {(a, b)} and {(c, d)} of one step can overlap"


def replay(data: bytes, result: EncodedBlocks) -> bytes:
    """Apply the merges in order with plain Python, as the textbook describes; must give the payload."""
    seq = list(data)
    for code, left, right in zip(result.code, result.left, result.right, strict=True):
        out: list[int] = []
        i = 0
        while i < len(seq):
            if i + 1 < len(seq) and seq[i] == left and seq[i + 1] == right:
                out.append(int(code))
                i += 2
            else:
                out.append(seq[i])
                i += 1
        seq = out
    return bytes(seq)


def test_wikipedia_example() -> None:
    result, steps = run(b"ABABCABCD")
    assert [(bytes([s.left[0]]), s.count[0]) for s in steps] == [(b"A", 3), (bytes([255]), 2)]
    assert bytes(result.left) == b"A\xff" and bytes(result.right) == b"BC"
    assert result.payload.tobytes() == b"\xff\xfe\xfeD"  # XYYD: 4 symbols left


def test_overlapping_example() -> None:
    result, steps = run(b"aaabdaaabac")
    assert (steps[0].left[0], steps[0].right[0], steps[0].count[0]) == (ord("a"), ord("a"), 4)
    assert len(steps) == 3
    assert len(result.payload) == 5


def test_gage_threshold_stops_after_first_merge() -> None:
    result, _ = run(b"ABABCABCD", threshold=3)
    assert int(result.n_merges[0]) == 1


@pytest.mark.parametrize(
    ("data", "payload"),
    [
        (b"aaaa", b"\xff\xff"),  # greedy, non-overlapping: aaaa -> XX
        (b"aaa", b"\xffa"),
        (b"aaaaa", b"\xff\xffa"),
    ],
)
@pytest.mark.parametrize("merges", [1, 8])
def test_overlapping_runs(data: bytes, payload: bytes, merges: int) -> None:
    result, _ = run(data, threshold=2, merges_per_step=merges)
    assert result.payload.tobytes() == payload
    assert replay(data, result) == result.payload.tobytes()


@pytest.mark.parametrize("merges", [1, 8])
def test_adjacent_matches_count_the_shared_pair_once(merges: int) -> None:
    data = b"abab" * 50
    result, _ = run(data, threshold=2, merges_per_step=merges)
    assert replay(data, result) == result.payload.tobytes()


@pytest.mark.parametrize("merges", [1, 8])
def test_pairs_never_cross_block_boundaries(merges: int) -> None:
    # "ab" occurs three times only if the boundary between the blocks is ignored
    data = b"ab.a" + b"b.ab"
    result, _ = run(data, threshold=3, cuts=[4], merges_per_step=merges)
    assert int(result.n_merges.sum()) == 0
    assert result.payload.tobytes() == data


def test_codes_are_fresh_descending_then_recycled() -> None:
    # 250 distinct values leave 6 fresh codes; a long repetitive text needs more
    rng = np.random.default_rng(5)
    words = [bytes(rng.integers(0, 250, 3).astype(np.uint8)) for _ in range(40)]
    data = bytes(range(250)) + b"".join(words[i] for i in rng.integers(0, 40, 3000))
    result, _ = run(data, threshold=3)
    n_fresh = int(result.n_fresh[0])
    assert n_fresh == 6
    assert list(result.code[:n_fresh]) == sorted(set(range(256)) - set(data), reverse=True)
    assert int(result.n_merges[0]) > n_fresh, "recycling must make further merges possible"
    assert all(int(c) >= 4 for c in result.count[n_fresh:]), "a recycled code needs threshold + 1"
    assert replay(data, result) == result.payload.tobytes()


def test_no_recycling_when_disabled() -> None:
    data = bytes(range(250)) + b"xyz" * 500
    result, _ = run(data, threshold=3, recycle=False)
    assert int(result.n_merges[0]) == int(result.n_fresh[0]) <= 6


def test_max_depth_limits_stack_need() -> None:
    data = b"a" * 5000
    result, _ = run(data, threshold=3, max_depth=4)
    depth: dict[int, int] = {}
    for code, left, right in zip(result.code, result.left, result.right, strict=True):
        d = max(2, 1 + depth.get(int(left), 0), depth.get(int(right), 0))
        assert d <= 4
        depth[int(code)] = d


def test_a_block_with_more_than_4096_distinct_pairs_finishes() -> None:
    # Gage's hash table hangs here (gage-vectors/compressor-hangs/debruijn65.bin, rebuilt)
    k = 65
    sequence = []
    for i in range(k):
        for j in range(k):
            sequence += [i, j]
    data = bytes(0x30 + s for s in sequence)
    result, _ = run(data, threshold=3)
    assert replay(data, result) == result.payload.tobytes()


def test_many_blocks_in_several_batches() -> None:
    data = (b"the cat sat on the mat. " * 3)[:64] * (MAX_BATCH_BLOCKS + 20)
    cuts = list(range(64, len(data), 64))
    arr = np.frombuffer(data, dtype=np.uint8)
    result = encode_blocks(arr, np.array([0, *cuts, len(data)], dtype=np.int64), threshold=3)
    assert len(result.n_merges) == MAX_BATCH_BLOCKS + 20
    assert len(set(result.payload_len.tolist())) == 1, "identical blocks encode identically"


def test_batches_by_bytes_encode_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks are cut into batches by their bytes; each block's result is the same whatever batch it is in."""
    rng = np.random.default_rng(5)
    words = [b"the ", b"cat ", b"sat ", b"on ", b"mat ", b"\x00\x01", b"aaaa"]
    data = b"".join(words[w] for w in rng.integers(0, len(words), 3000))
    cuts = sorted(set(rng.integers(1, len(data), 40).tolist()))
    bounds = np.array([0, *cuts, len(data)], dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    whole = encode_blocks(arr, bounds, threshold=3, merges_per_step=8)
    monkeypatch.setattr(_engine, "BATCH_BYTES", 700)
    assert len(_engine.batch_edges(np.diff(bounds))) > 6
    batched = encode_blocks(arr, bounds, threshold=3, merges_per_step=8)
    for field in dataclasses.fields(EncodedBlocks):
        assert np.array_equal(getattr(whole, field.name), getattr(batched, field.name)), field.name


@pytest.mark.parametrize("sizes", [[9000] * 7, [100] * 300, [1, 5000, 1, 1, 3000, 20000, 2], [4096]])
def test_batch_edges_bound_bytes_and_blocks(sizes: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_engine, "BATCH_BYTES", 10_000)
    monkeypatch.setattr(_engine, "MAX_BATCH_BLOCKS", 64)
    lengths = np.array(sizes, dtype=np.int64)
    edges = _engine.batch_edges(lengths)
    assert edges[0] == 0 and edges[-1] == len(sizes)
    for lo, hi in itertools.pairwise(edges):
        assert 0 < hi - lo <= 64
        assert hi - lo == 1 or lengths[lo:hi].sum() <= 10_000 + lengths[lo:hi].max()


@settings(max_examples=60, deadline=None)
@given(data=blocky_bytes(), cut_seed=st.integers(0, 2**32 - 1))
def test_first_pairs_come_sorted_by_block_pair_and_position(data: bytes, cut_seed: int) -> None:
    """The first index needs each (block, pair)'s occurrences as one run in position
    order; each block's keys are sorted on their own, so compare with one lexsort."""
    rng = np.random.default_rng(cut_seed)
    cuts = sorted(set(rng.integers(1, max(2, len(data)), rng.integers(0, 6)).tolist()) - {len(data)})
    bounds = np.array([0, *cuts, len(data)], dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    batch = _engine._Batch(
        arr, bounds, _engine._Workspace(), threshold=2, recycle=True, max_depth=None, merges_per_step=8, block_offset=0
    )
    pos = np.empty(len(data) - (len(bounds) - 1), dtype=np.int32)
    try:
        keys, blocks = batch._sorted_pairs(arr, pos)
    finally:
        batch._reset_tables(everything=True)
    starts = np.flatnonzero(np.isin(np.arange(len(data) - 1), bounds[1:-1] - 1, invert=True))
    block_of = np.searchsorted(bounds, starts, side="right") - 1
    key_of = arr[starts].astype(np.int64) * 256 + arr[starts + 1]
    order = np.lexsort((starts, key_of, block_of))
    assert pos.tolist() == starts[order].tolist()
    assert keys.tolist() == key_of[order].tolist()
    assert blocks.tolist() == block_of[order].tolist()


@settings(max_examples=60, deadline=None)
@given(data=blocky_bytes(), cut_seed=st.integers(0, 2**32 - 1), threshold=st.integers(2, 5))
def test_first_index_runs_hold_each_frequent_pair(data: bytes, cut_seed: int, threshold: int) -> None:
    """The first index holds every pair's position once; every (block, pair) seen at
    least *threshold* times has a recorded run of it holding exactly its positions, in
    order; and the byte counts the engine derives from the pairs are each block's own."""
    rng = np.random.default_rng(cut_seed)
    cuts = sorted(set(rng.integers(1, max(2, len(data)), rng.integers(0, 6)).tolist()) - {len(data)})
    bounds = np.array([0, *cuts, len(data)], dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    batch = _engine._Batch(
        arr,
        bounds,
        _engine._Workspace(),
        threshold=threshold,
        recycle=True,
        max_depth=None,
        merges_per_step=8,
        block_offset=0,
    )
    try:
        ws = batch.ws
        index_pos = ws.buffer("index_pos", batch.gn, np.int32).copy()
        index_run = ws.buffer("index_run", batch.gn, np.uint16).copy()
        run_at = ws.run_at.copy()
        symcount = batch.symcount.copy()
    finally:
        batch._reset_tables(everything=True)
    for b, (lo, hi) in enumerate(itertools.pairwise(bounds.tolist())):
        assert symcount[b].tolist() == np.bincount(arr[lo:hi], minlength=256).tolist()
    expected: dict[int, list[int]] = {}
    values = arr.tolist()
    for b, (lo, hi) in enumerate(itertools.pairwise(bounds.tolist())):
        for i in range(lo, hi - 1):
            expected.setdefault(b * 65536 + values[i] * 256 + values[i + 1], []).append(i)
    assert sorted(index_pos.tolist()) == sorted(i for positions in expected.values() for i in positions)
    for cell, positions in expected.items():
        if len(positions) >= threshold:
            at = int(run_at[cell])
            assert int(index_run[at]) == len(positions)
            assert index_pos[at : at + len(positions)].tolist() == positions


def assert_same_result(a: EncodedBlocks, b: EncodedBlocks) -> None:
    for field in dataclasses.fields(EncodedBlocks):
        assert np.array_equal(getattr(a, field.name), getattr(b, field.name)), field.name


@pytest.mark.parametrize("step_slice", [1, 2, 7, 64])
def test_steps_taken_in_slices_encode_as_one(step_slice: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big step replaces its candidates a slice (a stretch of the batch) at a time; the
    pairs made where matches of two slices meet (two codes of one step side by side, the
    end of a run like ``aaaa``) must be counted and indexed as when it is taken at once."""
    rng = np.random.default_rng(step_slice)
    pieces = [b"\x00" * 9, b"ab", b"cb", b"abcb", b"the ", b"then ", b"\x01\x02", b"aaaaa"]
    data = b"".join(pieces[k] for k in rng.integers(0, len(pieces), 2500))
    cuts = [1000, 5000, 5001, 9000]
    arr = np.frombuffer(data, dtype=np.uint8)
    bounds = np.array([0, *cuts, len(data)], dtype=np.int64)
    whole = encode_blocks(arr, bounds, threshold=3, merges_per_step=8)
    monkeypatch.setattr(_engine, "STEP_SLICE", step_slice)
    sliced = encode_blocks(arr, bounds, threshold=3, merges_per_step=8, check_counts=True)
    assert_same_result(whole, sliced)


@pytest.mark.parametrize("step_slice", [1, 3, 5])
def test_codes_side_by_side_across_slices(step_slice: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``DF#S`` repeated: step 1 merges ``DF`` and ``#S`` side by side, step 2 the pair of
    their codes, step 3 that code's ``cc``, whose overlapping-run filter needs its
    occurrences in position order even when the pair of codes came from two slices."""
    arr = np.frombuffer(b"DF#S" * 48, dtype=np.uint8)
    bounds = np.array([0, 8, 133, 140, 156, len(arr)], dtype=np.int64)
    whole = encode_blocks(arr, bounds, threshold=2, merges_per_step=8)
    monkeypatch.setattr(_engine, "STEP_SLICE", step_slice)
    sliced = encode_blocks(arr, bounds, threshold=2, merges_per_step=8, check_counts=True)
    assert_same_result(whole, sliced)
    assert sliced.payload_len.tolist()[3] == 2, "block 3 (16 bytes) ends as two codes"


@settings(max_examples=60, deadline=None)
@given(data=blocky_bytes(), cut_seed=st.integers(0, 2**32 - 1), step_slice=st.sampled_from([1, 3, 16]))
def test_any_slicing_of_steps_encodes_as_one(data: bytes, cut_seed: int, step_slice: int) -> None:
    rng = np.random.default_rng(cut_seed)
    cuts = sorted(set(rng.integers(1, max(2, len(data)), rng.integers(0, 4)).tolist()) - {len(data)})
    bounds = np.array([0, *cuts, len(data)], dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    whole = encode_blocks(arr, bounds, threshold=2, merges_per_step=8)
    saved = _engine.STEP_SLICE
    _engine.STEP_SLICE = step_slice  # hypothesis runs examples in one test call: no monkeypatch
    try:
        sliced = encode_blocks(arr, bounds, threshold=2, merges_per_step=8, check_counts=True)
    finally:
        _engine.STEP_SLICE = saved
    assert_same_result(whole, sliced)


def test_a_block_longer_than_64_kib_encodes() -> None:
    rng = np.random.default_rng(11)
    words = [b"pair ", b"byte ", b"code ", b"aaaa", b"abab"]
    data = b"".join(words[w] for w in rng.integers(0, len(words), 16_000))[:70_000]
    result, _ = run(data, cuts=[3], merges_per_step=8)  # check_counts recounts after every step
    assert result.payload_len.tolist()[0] == 3 and int(result.n_merges[1]) > 10
    assert replay(data[3:], result.take(np.array([1]))) == result.take(np.array([1])).payload.tobytes()


@settings(max_examples=150, deadline=None)
@given(
    data=blocky_bytes(),
    threshold=st.integers(2, 5),
    cut_seed=st.integers(0, 2**32 - 1),
    merges=st.sampled_from([1, 2, 8]),
)
def test_incremental_counts_equal_recount_after_every_merge(
    data: bytes, threshold: int, cut_seed: int, merges: int
) -> None:
    """check_counts recounts every pair from scratch after every step and asserts equality."""
    rng = np.random.default_rng(cut_seed)
    cuts = sorted(set(rng.integers(1, len(data), 3).tolist())) if len(data) > 1 else []
    result, _ = run(data, threshold=threshold, cuts=cuts, merges_per_step=merges)
    payloads = np.split(result.payload, np.cumsum(result.payload_len)[:-1])
    merge_at = np.cumsum(result.n_merges) - result.n_merges
    for b, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(data)], strict=True)):
        m = slice(int(merge_at[b]), int(merge_at[b] + result.n_merges[b]))
        block = EncodedBlocks(
            result.n_merges[b : b + 1],
            result.n_fresh[b : b + 1],
            result.code[m],
            result.left[m],
            result.right[m],
            result.count[m],
            result.expansion[m],
            result.payload_len[b : b + 1],
            payloads[b],
        )
        assert replay(data[lo:hi], block) == payloads[b].tobytes()


def test_every_step_takes_a_most_frequent_pair() -> None:
    data = b"she sells sea shells on the sea shore, the shells she sells are sea shells"
    seen: list[bytes] = [data]

    def check(step: StepRecord) -> None:
        before = seen[-1]
        counts: dict[tuple[int, int], int] = {}
        for a, b in itertools.pairwise(before):
            counts[a, b] = counts.get((a, b), 0) + 1
        assert int(step.count[0]) == max(counts.values()) == counts[int(step.left[0]), int(step.right[0])]
        seen.append(step.sequence(0))

    arr = np.frombuffer(data, dtype=np.uint8)
    encode_blocks(arr, np.array([0, len(arr)], dtype=np.int64), threshold=2, on_step=check)
    assert len(seen) > 5


# -- several merges per step ------------------------------------------------------------


def test_a_step_merges_pairs_that_share_no_symbol() -> None:
    # six pairs of count 50 (";a" 49): ".c" is the best (lowest left symbol), "ab" shares
    # nothing with it; "b." and "cd" share a symbol with a better pair, and so does "d;"
    # (with "cd", a better candidate even though it is not merged)
    data = b"ab.cd;" * 50
    after: list[bytes] = []
    arr = np.frombuffer(data, dtype=np.uint8)
    encode_blocks(
        arr, np.array([0, len(arr)]), threshold=2, merges_per_step=8, on_step=lambda s: after.append(s.sequence(0))
    )
    result, steps = run(data, threshold=2, merges_per_step=8)
    first = steps[0]
    assert [(chr(a), chr(b)) for a, b in zip(first.left, first.right, strict=True)] == [(".", "c"), ("a", "b")]
    assert first.count.tolist() == [50, 50] and first.replaced.tolist() == [50, 50]
    # the two codes end up side by side: their pair is counted (check_counts) and indexed
    x, y = (int(c) for c in first.code)
    assert after[0] == (bytes([y, x]) + b"d;") * 50
    assert replay(data, result) == result.payload.tobytes()


def test_codes_of_one_step_next_to_each_other_in_both_orders() -> None:
    data = (b"abcd" * 20 + b"cdab" * 20) * 3
    result, _ = run(data, threshold=2, merges_per_step=8)
    assert replay(data, result) == result.payload.tobytes()


def test_a_step_merges_pairs_that_share_only_their_right_symbol() -> None:
    # "ab" and "cb" (count 50 each) cannot overlap, and merging one leaves the other's
    # count as it was: one step merges both (the fillers between them make rare pairs)
    rng = np.random.default_rng(11)
    fillers = rng.integers(100, 200, (50, 2)).astype(np.uint8)
    data = b"".join(b"ab" + bytes([f]) + b"cb" + bytes([g]) for f, g in fillers)
    result, steps = run(data, threshold=3, merges_per_step=8)
    first = steps[0]
    assert [(chr(a), chr(b)) for a, b in zip(first.left, first.right, strict=True)] == [("a", "b"), ("c", "b")]
    assert first.replaced.tolist() == [50, 50]
    assert replay(data, result) == result.payload.tobytes()


def test_merges_per_step_is_a_bound() -> None:
    rng = np.random.default_rng(3)
    data = bytes(rng.integers(0, 40, 4000).astype(np.uint8))
    for merges in (1, 2, 3):
        result, steps = run(data, threshold=2, merges_per_step=merges)
        assert max(len(s.blocks) for s in steps) == merges
        assert replay(data, result) == result.payload.tobytes()
        for s in steps:
            assert_cannot_overlap(s)


def test_scarce_codes_go_one_merge_at_a_time() -> None:
    # 6 fresh codes, fewer than merges_per_step, and then at most two spare values at
    # a time to recycle: Gage's order, so the pair the first merge makes (count 6) is
    # merged before pairs of count 5
    rng = np.random.default_rng(1994)
    words = [bytes(rng.integers(0, 250, 3).astype(np.uint8)) for _ in range(40)]
    data = bytes(range(250)) + b"".join(words[i] for i in rng.integers(0, 40, 200))
    one, _ = run(data, threshold=3, merges_per_step=1)
    eight, steps = run(data, threshold=3, merges_per_step=8)
    assert all(len(s.blocks) == 1 for s in steps)
    assert eight.code.tolist() == one.code.tolist() and eight.payload.tobytes() == one.payload.tobytes()


def test_recycling_merges_several_pairs_while_spare_codes_last() -> None:
    # 250 distinct values leave 6 fresh codes; every other value only ever occurs in
    # one pair (k, k + 100), so each merge of such a pair frees two values for reuse
    rng = np.random.default_rng(7)
    data = bytes(range(200, 250)) + b"".join(bytes((k, k + 100)) for k in rng.integers(0, 100, 2000))
    result, steps = run(data, threshold=3, merges_per_step=8)
    assert int(result.n_fresh[0]) == 6
    after: list[bytes] = []  # a record's sequence is the live one: read it during the run
    arr = np.frombuffer(data, dtype=np.uint8)
    encode_blocks(
        arr, np.array([0, len(arr)]), threshold=3, merges_per_step=8, on_step=lambda s: after.append(s.sequence(0))
    )
    several = 0
    for step, before in zip(steps, [data, *after], strict=False):
        recycled = [int(c) for c, fresh in zip(step.code, step.fresh, strict=True) if not fresh]
        several += len(recycled) > 1
        assert len(set(recycled)) == len(recycled), "one code for two merges"
        assert not set(recycled) & set(before), "a recycled code still occurred"
        assert_cannot_overlap(step)
    assert several, "no step merged more than one pair with recycled codes"
    assert all(int(c) >= 4 for c in result.count[6:]), "a recycled code needs threshold + 1"
    assert replay(data, result) == result.payload.tobytes()


def test_merges_per_step_needs_one_with_max_depth() -> None:
    arr = np.frombuffer(b"abababab", dtype=np.uint8)
    with pytest.raises(ValueError, match="merges_per_step"):
        encode_blocks(arr, np.array([0, 8]), threshold=2, max_depth=4, merges_per_step=2)


def test_an_interrupted_run_leaves_the_shared_tables_clean() -> None:
    """The count tables are reused by the next batch of this thread: a run stopped
    half way (here by its observer) must not leave counts behind."""
    data = b"the cat sat on the mat, the cat sat on the hat. " * 40
    arr = np.frombuffer(data, dtype=np.uint8)
    bounds = np.array([0, 700, len(arr)], dtype=np.int64)
    expected = encode_blocks(arr, bounds, threshold=3, merges_per_step=8)

    def stop(record: StepRecord) -> None:
        if record.step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        encode_blocks(arr, bounds, threshold=3, merges_per_step=8, on_step=stop)
    with buffers.held(_engine._Workspace) as workspace:
        assert workspace is buffers._local._Workspace  # the thread's own: the interrupted call let it go
        assert not workspace.counts.any() and not workspace.rowmax.any()
    again = encode_blocks(arr, bounds, threshold=3, merges_per_step=8)
    for field in dataclasses.fields(EncodedBlocks):
        assert np.array_equal(getattr(expected, field.name), getattr(again, field.name)), field.name
