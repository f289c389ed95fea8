"""The compiled frame packing (``core.kernels.frame``) against numpy's: the same frame bytes
(``format.pack_frame(codec._assemble(...))``) for the same encoded blocks and escapes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.container import codec
from bytepair.container.format import frame_from_body, pack_frame
from bytepair.core import jit
from bytepair.core.blocks import split_blocks
from bytepair.core.engine import encode_blocks
from bytepair.core.escape import Escapes, find_escapes
from bytepair.core.expand import node_budget
from bytepair.core.params import LEVELS, Params
from tests.helpers import corpus_files
from tests.strategies import blocky_bytes

pytest.importorskip("numba", reason="the compiled kernels need numba (pip install 'bytepair[fast]')")
if not jit._ready(quiet=True):  # sets numba's cache directory up before numba is imported
    pytest.skip("numba has no writable cache directory here", allow_module_level=True)

from bytepair.core.kernels import frame as compiled
from bytepair.core.kernels import prepare


@pytest.fixture(autouse=True)
def _numpy_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jit.KERNELS_ENV, "numpy")


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
    bounds = split_blocks(data, block_size, max_distinct)
    if escape_limit:
        changed, esc = find_escapes(data, bounds, escape_limit)
    else:
        changed, esc = data, Escapes.none(len(bounds) - 1)
    enc = encode_blocks(changed, bounds, threshold=threshold, recycle=recycle, merges_per_step=8)
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


@pytest.mark.parametrize("corpus", ["canterbury", "calgary"])
def test_corpus(corpus: str) -> None:
    for path in corpus_files(corpus):
        data = np.fromfile(path, dtype=np.uint8)[: 1 << 18]
        for block_size, max_distinct in [(32768, 200), (8192, 120)]:
            assert_same(data, block_size, max_distinct)


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
    monkeypatch.setenv(jit.KERNELS_ENV, "numba")
    assert [codec.encode_frame(data, LEVELS[level]) for level in (5, 7)] == want
    assert calls == ["encode_frame_body"] + ["split_and_find_escapes"] * len(LEVELS[7].cuttings())
