"""The compiled frame preparation (``core.kernels.prepare``) against numpy's: the same
cuts into blocks and the same escapes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.core import jit
from bytepair.core.blocks import split_blocks
from bytepair.core.escape import find_escapes
from tests.helpers import corpus_files
from tests.strategies import blocky_bytes

pytest.importorskip("numba", reason="the compiled kernels need numba (pip install 'bytepair[fast]')")
if not jit._ready(quiet=True):  # sets numba's cache directory up before numba is imported
    pytest.skip("numba has no writable cache directory here", allow_module_level=True)

from bytepair.core.kernels import prepare as compiled

CUTTINGS = [(32768, 200), (5000, 200), (65535, 220), (8192, 120), (1, 1), (3, 255), (100, 2)]


@pytest.fixture(autouse=True)
def _numpy_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jit.KERNELS_ENV, "numpy")


def assert_same(data: npt.NDArray[np.uint8], block_size: int, max_distinct: int, limit: int) -> None:
    bounds = split_blocks(data, block_size, max_distinct)
    got = compiled.split_blocks(data, block_size, max_distinct)
    assert got.dtype == bounds.dtype and np.array_equal(got, bounds)
    one_pass = compiled.split_and_find_escapes(data, block_size, max_distinct, limit)
    assert one_pass[0].dtype == bounds.dtype and np.array_equal(one_pass[0], bounds)
    if not len(data):
        assert not len(one_pass[1]) and not len(one_pass[2].count)
        return
    changed, esc = find_escapes(data, bounds, limit)
    for got_changed, got_esc in (compiled.find_escapes(data, bounds, limit), one_pass[1:]):
        assert got_changed.dtype == changed.dtype and np.array_equal(got_changed, changed)
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


@settings(max_examples=100, deadline=None)
@given(
    data=blocky_bytes(max_size=20_000),
    block_size=st.integers(1, 5000),
    max_distinct=st.integers(1, 255),
    limit=st.integers(0, 50),
)
def test_hypothesis(data: bytes, block_size: int, max_distinct: int, limit: int) -> None:
    assert_same(np.frombuffer(data, dtype=np.uint8), block_size, max_distinct, limit)


@pytest.mark.parametrize("corpus", ["canterbury", "calgary"])
def test_corpus(corpus: str) -> None:
    for path in corpus_files(corpus):
        data = np.fromfile(path, dtype=np.uint8)
        for block_size, max_distinct in CUTTINGS[:4]:
            assert_same(data, block_size, max_distinct, 10)
