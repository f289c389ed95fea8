"""The folded CRC-32 (``core.kernels.crc``) against ``zlib.crc32``: the same value for
every length, alignment and starting value."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.core import jit

pytest.importorskip("numba", reason="the compiled kernels need numba (pip install 'bytepair[fast]')")
if not jit._ready(quiet=True):  # sets numba's cache directory up before numba is imported
    pytest.skip("numba has no writable cache directory here", allow_module_level=True)

from bytepair.core.kernels import crc

needs_fold = pytest.mark.skipif(not crc.available(), reason="this processor has no PCLMULQDQ (x86-64 only)")


@needs_fold
@settings(max_examples=300, deadline=None)
@given(data=st.binary(min_size=128, max_size=3000), value=st.integers(0, 0xFFFFFFFF), skip=st.integers(0, 15))
def test_fold_is_zlibs_crc(data: bytes, value: int, skip: int) -> None:
    """Any length from 128 on, any starting value, any alignment of the buffer."""
    arr = np.frombuffer(data, dtype=np.uint8)[skip:]
    if len(arr) < 128:
        return
    assert int(crc.fold_crc32(arr, value)) == zlib.crc32(arr.data, value)


@needs_fold
@pytest.mark.parametrize("size", [128, 129, 143, 144, 255, 256, 257, 383, 384, 4095, 4096, 1 << 20, (1 << 20) + 7])
def test_fold_at_lane_edges(size: int) -> None:
    """Lengths around the 16-byte lanes and the 128-byte steps, random and extreme bytes."""
    rng = np.random.default_rng(size)
    for arr in (rng.integers(0, 256, size, dtype=np.uint8), np.zeros(size, np.uint8), np.full(size, 255, np.uint8)):
        assert int(crc.fold_crc32(arr, 0)) == zlib.crc32(arr.data)
        assert int(crc.fold_crc32(arr, 0xFFFFFFFF)) == zlib.crc32(arr.data, 0xFFFFFFFF)


@pytest.mark.parametrize("size", [0, 1, 63, crc.MIN_FOLD_BYTES - 1, crc.MIN_FOLD_BYTES, 3 * crc.MIN_FOLD_BYTES + 5])
def test_crc32_is_zlibs_on_both_sides_of_the_threshold(size: int) -> None:
    arr = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    assert crc.crc32(arr, 77) == zlib.crc32(arr.data, 77)
    arr.flags.writeable = False  # the decoder passes read-only views of the frame body
    assert crc.crc32(arr) == zlib.crc32(arr.data)


def test_crc32_without_the_instruction_is_zlibs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the processor lacks PCLMULQDQ, ``zlib.crc32`` answers and the fold is never called."""
    monkeypatch.setattr(crc, "available", lambda: False)
    monkeypatch.setattr(crc, "fold_crc32", None)
    arr = np.arange(1 << 16, dtype=np.uint32).view(np.uint8)
    assert crc.crc32(arr, 5) == zlib.crc32(arr.data, 5)


def _x_power_reflected(power: int) -> int:
    """x^power mod the CRC-32 polynomial, bit-reflected and times x: a fold constant."""
    r = 1
    for _ in range(power):
        r <<= 1
        if r & (1 << 32):
            r ^= 0x104C11DB7
    return int(f"{r:032b}"[::-1], 2) << 1


@pytest.mark.parametrize(
    ("distance", "low", "high"),
    [(1024, crc.FOLD8_LOW, crc.FOLD8_HIGH), (128, crc.FOLD1_LOW, crc.FOLD1_HIGH)],
)
def test_fold_constants_are_the_powers_of_x_they_stand_for(distance: int, low: int, high: int) -> None:
    assert (low, high) == (_x_power_reflected(distance + 32), _x_power_reflected(distance - 32))
