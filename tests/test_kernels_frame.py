"""The compiled frame packing (``core.kernels.frame``, ``_encode.pyx``) against numpy's: the same
frame bytes (``format.pack_frame(codec._assemble(...))``) for the same encoded blocks and escapes."""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.container import codec
from bytepair.container.format import frame_from_body, pack_frame
from bytepair.core.blocks import split_blocks
from bytepair.core.engine import EncodedBlocks, encode_blocks
from bytepair.core.escape import Escapes, find_escapes
from bytepair.core.expand import node_budget
from bytepair.core.params import LEVELS, Params
from tests.helpers import corpus_files, replace_kernels, use_kernels
from tests.strategies import blocky_bytes

pytest.importorskip(
    "bytepair.core.kernels._encode",
    reason="the compiled kernels are not built (pip install . with a C compiler; see docs/kernels.md)",
)

from bytepair.core.kernels import frame as compiled
from bytepair.core.kernels import prepare


@pytest.fixture(autouse=True)
def _numpy_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference runs the numpy path whatever the environment says."""
    use_kernels("numpy", monkeypatch)


def encoded(
    data: npt.NDArray[np.uint8], block_size: int, max_distinct: int, escape_limit: int, threshold: int, recycle: bool
) -> tuple[npt.NDArray[np.int64], EncodedBlocks, Escapes]:
    """The blocks of *data* as the numpy engine encodes them, with their escapes."""
    bounds = split_blocks(data, block_size, max_distinct)
    if escape_limit:
        changed, esc = find_escapes(data, bounds, escape_limit)
    else:
        changed, esc = data, Escapes.none(len(bounds) - 1)
    enc = encode_blocks(changed, bounds, threshold=threshold, recycle=recycle, merges_per_step=8)
    return bounds, enc, esc


def assert_same(
    data: npt.NDArray[np.uint8],
    block_size: int,
    max_distinct: int,
    *,
    escape_limit: int = 10,
    threshold: int = 3,
    recycle: bool = True,
    budget: int | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> None:
    """Both packings of the blocks of *data* as the numpy engine encodes them; with *budget*,
    the frame's expansions may hold that many bytes instead of the format's limit."""
    bounds, enc, esc = encoded(data, block_size, max_distinct, escape_limit, threshold, recycle)
    if budget is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(codec, "node_budget", lambda _size: budget)
    want = pack_frame(codec._assemble(data, bounds, enc, esc), 1234)
    body, n_blocks = compiled.pack_frame_body(
        data, bounds, enc, esc, node_budget(len(data)) if budget is None else budget
    )
    assert body.dtype == np.uint8
    assert frame_from_body(body.data, n_blocks, len(data), 1234) == want
    assert np.array_equal(compiled.block_costs(enc), codec.block_costs(enc))
    # the whole frame in one call: cutting, escapes, engine and packing
    params = Params(block_size, max_distinct, threshold, recycle, escape_limit=escape_limit)
    body, n_blocks = compiled.encode_frame_body(data, params, node_budget(len(data)) if budget is None else budget)
    assert body.dtype == np.uint8
    assert frame_from_body(body.data, n_blocks, len(data), 1234) == want


@pytest.mark.parametrize(("block_size", "max_distinct"), [(32768, 200), (5000, 200), (65535, 220), (300, 120), (1, 1)])
@pytest.mark.parametrize("kind", ["one", "random", "text", "every value", "text then random", "scattered values"])
def test_inputs(kind: str, block_size: int, max_distinct: int) -> None:
    rng = np.random.default_rng(3)
    text = np.frombuffer(b"the cat sat on the mat \xe9\xfc\x01. " * 3000, dtype=np.uint8)
    data = {
        "one": np.zeros(1, dtype=np.uint8),
        # stored blocks, in runs longer than a block may be
        "random": rng.integers(0, 256, 200_000, dtype=np.uint8),
        "text": text,
        "every value": np.tile(np.arange(256, dtype=np.uint8), 100),
        "text then random": np.concatenate((text, rng.integers(0, 256, 150_000, dtype=np.uint8), text)),
        # free values in many short runs: code sets as bitmaps
        "scattered values": np.tile(np.arange(0, 256, 3, dtype=np.uint8).repeat(2), 300),
    }[kind]
    for escape_limit in (0, 10):
        assert_same(data, block_size, max_distinct, escape_limit=escape_limit)


@pytest.mark.parametrize("budget", [0, 100, 5000])
def test_over_budget(budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks stored, most expansion bytes first, until the rest fit the budget."""
    text = np.frombuffer(b"abcdefgh" * 2000 + b"the cat sat on the mat. " * 3000 + b"xy" * 5000, dtype=np.uint8)
    assert_same(text, 2000, 200, budget=budget, monkeypatch=monkeypatch)


@pytest.mark.parametrize("budget", [0, 1, 777, 20_000, 60_000])
@pytest.mark.parametrize("block_size", [97, 300, 1000])
def test_over_budget_with_many_blocks(block_size: int, budget: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hundreds of blocks, many with the same expansion bytes (ties go by block order): the
    compiled packing's stable sort of the blocks against numpy's."""
    rng = np.random.default_rng(block_size)
    words = [b"abcd", b"abcdabcd", b"the cat ", b"xyxyxyxy", b"\x00\x00\x00\x00"]
    data = np.frombuffer(b"".join(words[i] for i in rng.integers(0, len(words), 20_000)), dtype=np.uint8)
    assert_same(data, block_size, 200, budget=budget, monkeypatch=monkeypatch)


@settings(max_examples=100, deadline=None)
@given(
    data=blocky_bytes(max_size=20_000),
    block_size=st.integers(1, 5000),
    max_distinct=st.integers(1, 255),
    escape_limit=st.integers(0, 20),
    threshold=st.integers(2, 5),
    recycle=st.booleans(),
)
def test_hypothesis(
    data: bytes, block_size: int, max_distinct: int, escape_limit: int, threshold: int, recycle: bool
) -> None:
    if data:
        array = np.frombuffer(data, dtype=np.uint8)
        assert_same(array, block_size, max_distinct, escape_limit=escape_limit, threshold=threshold, recycle=recycle)


@settings(max_examples=50, deadline=None)
@given(data=blocky_bytes(max_size=20_000), block_size=st.integers(1, 3000), budget=st.integers(0, 30_000))
def test_hypothesis_budgets(data: bytes, block_size: int, budget: int) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_same(np.frombuffer(data, dtype=np.uint8), block_size, 200, budget=budget, monkeypatch=monkeypatch)


@pytest.mark.parametrize("corpus", ["canterbury", "calgary"])
def test_corpus(corpus: str) -> None:
    for path in corpus_files(corpus):
        data = np.fromfile(path, dtype=np.uint8)[: 1 << 18]
        for block_size, max_distinct in [(32768, 200), (8192, 120)]:
            assert_same(data, block_size, max_distinct)


def test_empty_frame() -> None:
    """No bytes: no blocks, an empty body (the codec never asks; the kernels take it)."""
    empty = np.zeros(0, dtype=np.uint8)
    body, n_blocks = compiled.encode_frame_body(empty, LEVELS[5], node_budget(0))
    assert n_blocks == 0 and len(body) == 0
    bounds, enc, esc = encoded(empty, 100, 200, 10, 3, True)
    body, n_blocks = compiled.pack_frame_body(empty, bounds, enc, esc, 0)
    assert n_blocks == 0 and len(body) == 0


def _hostile_columns() -> list[tuple[str, dict[str, object]]]:
    return [
        ("more merges than listed", {"n_merges": "+1"}),
        ("more fresh than merges", {"n_fresh": "+100"}),
        ("negative merges", {"n_merges": "neg"}),
        ("payload longer than given", {"payload_len": "+1"}),
        ("escapes beyond the literals", {"esc_count": "+1"}),
        ("a column too short", {"n_fresh": "short"}),
        ("bounds past the data", {"bounds": "+1"}),
    ]


@pytest.mark.parametrize(("case", "change"), _hostile_columns(), ids=[c for c, _ in _hostile_columns()])
def test_columns_that_disagree_raise(case: str, change: dict[str, object]) -> None:
    """Columns that would take the packing past its inputs: ValueError, never a read past them."""
    data = np.frombuffer((b"the cat sat on the mat " * 300 + bytes(range(200, 210))) * 2, dtype=np.uint8)
    bounds, enc, esc = encoded(data, 8000, 200, 10, 3, True)
    assert int(esc.count.sum()) > 0 and int(enc.n_merges.sum()) > 0
    for name, how in change.items():
        holder: object = esc if name == "esc_count" else enc
        attr = "count" if name == "esc_count" else name
        if name == "bounds":
            bounds = bounds.copy()
            bounds[-1] += 1
            continue
        column = getattr(holder, attr).copy()
        if how == "+1":
            column[-1] += 1
        elif how == "+100":
            column[0] += 100
        elif how == "neg":
            column[0] = -1
        elif how == "short":
            column = column[:-1]
        if holder is esc:
            esc = dataclasses.replace(esc, count=column)
        else:
            enc = dataclasses.replace(enc, **{attr: column})
    with pytest.raises(ValueError, match="pack_frame_body needs"):
        compiled.pack_frame_body(data, bounds, enc, esc, node_budget(len(data)))


def test_block_costs_of_columns_that_disagree_raise() -> None:
    data = np.frombuffer(b"abcabcabc" * 300, dtype=np.uint8)
    _, enc, _ = encoded(data, 1000, 200, 0, 3, True)
    for bad in (
        dataclasses.replace(enc, n_merges=enc.n_merges + 1),
        dataclasses.replace(enc, n_fresh=enc.n_merges + 1),
        dataclasses.replace(enc, payload_len=enc.payload_len[:-1]),
    ):
        with pytest.raises(ValueError, match="block_costs needs"):
            compiled.block_costs(bad)


def test_blocks_longer_than_the_engine_takes_raise() -> None:
    data = np.zeros(10, dtype=np.uint8)
    wide = Params(block_size=65535)
    object.__setattr__(wide, "block_size", 70_000)  # past Params' checks, as no caller does
    with pytest.raises(ValueError, match="at most 65535 bytes"):
        compiled.encode_frame_body(data, wide, node_budget(10))


def test_encode_frame_takes_the_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the compiled path ``codec.encode_frame`` makes a frame of one cutting in one kernel
    call, and cuts and escapes in one pass for each cutting of a trial level (a merge once
    lost that hook, and the two passes ran again); the frames are the numpy path's."""
    data = np.frombuffer(b"the cat sat on the mat \xe9\xfc\x01. " * 3000, dtype=np.uint8)
    want = [codec.encode_frame(data, LEVELS[level]) for level in (5, 7)]  # numpy (the fixture)
    calls: list[str] = []

    def counted(module: object, name: str) -> None:
        function = getattr(module, name)

        def spy(*args: object) -> object:
            calls.append(name)
            return function(*args)

        monkeypatch.setattr(module, name, spy)

    counted(compiled, "encode_frame_body")
    counted(prepare, "split_and_find_escapes")
    use_kernels("compiled", monkeypatch)
    # compression takes only the packer of the three (the decoders are tested in their files)
    replace_kernels(monkeypatch, frame=compiled)
    assert [codec.encode_frame(data, LEVELS[level]) for level in (5, 7)] == want
    assert calls == ["encode_frame_body"] + ["split_and_find_escapes"] * len(LEVELS[7].cuttings())
