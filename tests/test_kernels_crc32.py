"""The compiled CRC-32 (``core.kernels._crc``) against ``zlib.crc32``, on every path this CPU
has; its ``crc32_combine``; and ``container.crc.crc32``, which takes it on the compiled path."""

from __future__ import annotations

import array
import platform
import zlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "bytepair.core.kernels._crc",
    reason="the compiled kernels are not built (pip install . with a C compiler; see docs/kernels.md)",
)

from bytepair.container import crc
from bytepair.core.kernels import _crc
from tests.helpers import KERNEL_PATHS, use_kernels

STARTS = [0, 1, 0xFFFFFFFF, 0x12345678]

PATHS = _crc.PATHS
"""Every way to compute it this CPU has: the table loop (the only one on other CPUs) always."""


def _bytes(n: int, seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def test_the_paths_this_cpu_has() -> None:
    assert PATHS in (("slicing-by-16",), ("slicing-by-16", "pclmulqdq"), ("slicing-by-16", "pclmulqdq", "vpclmulqdq"))
    if platform.machine().lower() in ("x86_64", "amd64") and not _crc.PORTABLE:
        assert "pclmulqdq" in PATHS  # every x86-64 CPU since 2010
    with pytest.raises(ValueError, match="not one of"):
        _crc.crc32_by(b"", 0, "crc32c")


# the 128-bit folds (64 bytes a group), then the 512-bit ones (four groups a step, groups left one by one)
FOLD_LENGTHS = [0, 1, 3, 4, 15, 16, 63, 64, 65, 127, 128, 191, 192, 255, 256, 257, 319, 320, 383, 384, 447, 448, 511,
                512, 513, 575, 576, 767, 768, 1023, 1024, 1087, 4096, 65_537]  # fmt: skip


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n", FOLD_LENGTHS)
def test_every_length_around_the_folds(n: int, path: str) -> None:
    data = _bytes(n, n)
    for value in STARTS:
        assert _crc.crc32_by(np.frombuffer(data, np.uint8), value, path) == zlib.crc32(data, value)


@pytest.mark.parametrize("path", PATHS)
def test_every_length_to_300_at_every_start(path: str) -> None:
    data = _bytes(300 + 16, 5)
    for skip in range(16):  # unaligned starts
        for n in range(301):
            part = data[skip : skip + n]
            assert _crc.crc32_by(memoryview(data)[skip : skip + n], 7, path) == zlib.crc32(part, 7), (skip, n)


def test_zeros_ones_and_large_buffers() -> None:
    for data in (bytes(1000), b"\xff" * 1000, _bytes(3 << 20, 7), _bytes((17 << 20) + 13, 8)):
        for path in PATHS:
            assert _crc.crc32_by(data, 0, path) == zlib.crc32(data)
        assert _crc.crc32(np.frombuffer(data, np.uint8)) == zlib.crc32(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=1500), st.integers(0, 2**32 - 1), st.integers(0, 17))
def test_any_bytes_any_start_any_alignment(data: bytes, value: int, skip: int) -> None:
    view = np.frombuffer(data, np.uint8)[skip:]  # read-only, at any offset from an aligned start
    want = zlib.crc32(data[skip:], value)
    assert _crc.crc32(view, value) == want
    for path in PATHS:
        assert _crc.crc32_by(view, value, path) == want


def test_it_takes_what_zlib_takes() -> None:
    data = _bytes(5000, 2)
    want = zlib.crc32(data, 99)
    for buf in (
        data,
        bytearray(data),
        memoryview(data),
        np.frombuffer(data, np.uint8),
        np.frombuffer(data, np.uint32),  # any contiguous buffer, whatever its item type
        array.array("B", data),
        memoryview(data).cast("I"),
    ):
        assert _crc.crc32(buf, 99) == want, type(buf)
    # any start value, taken modulo 2**32 as zlib does
    for value in (-1, 2**32, 2**40 + 5, -(2**33)):
        assert _crc.crc32(data, value) == zlib.crc32(data, value)
    for bad in ("text", 5, None, np.arange(10, dtype=np.uint8)[::2]):
        with pytest.raises((TypeError, BufferError, ValueError)):
            zlib.crc32(bad)  # type: ignore[arg-type]
        with pytest.raises((TypeError, BufferError, ValueError)):
            _crc.crc32(bad)
    with pytest.raises(TypeError):
        _crc.crc32(data, 1.5)  # type: ignore[arg-type]


def test_a_run_continues_from_its_parts() -> None:
    data = _bytes(10_000, 3)
    head = _crc.crc32(np.frombuffer(data[:4567], np.uint8))
    assert _crc.crc32(np.frombuffer(data[4567:], np.uint8), head) == zlib.crc32(data)


def test_x2n_table_is_the_containers() -> None:
    assert _crc.x2n_table() == crc.X2N


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.data())
def test_combine_is_the_crc_of_the_concatenation(data: bytes, draw: st.DataObject) -> None:
    cut = draw.draw(st.integers(0, len(data)))
    a, b = data[:cut], data[cut:]
    got = _crc.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b))
    assert got == zlib.crc32(data) == crc.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFF), st.integers(0, 1 << 40))
def test_combine_is_the_containers(crc1: int, crc2: int, len2: int) -> None:
    assert _crc.crc32_combine(crc1, crc2, len2) == crc.crc32_combine(crc1, crc2, len2)


def test_combine_over_long_and_random_splits() -> None:
    rng = np.random.default_rng(11)
    data = _bytes(1 << 20, 4)
    for _ in range(50):
        cut = int(rng.integers(0, len(data) + 1))
        a, b = data[:cut], data[cut:]
        assert _crc.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(data)
    a, b = b"head", bytes(5_000_000)
    assert _crc.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)
    with pytest.raises(OverflowError):
        _crc.crc32_combine(0, 0, -1)
    with pytest.raises(OverflowError):
        _crc.crc32_combine(1 << 32, 0, 1)


@pytest.mark.parametrize("path", KERNEL_PATHS)
def test_the_chooser_gives_zlibs_value_on_both_paths(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    use_kernels(path, monkeypatch)
    for n in (0, 100, 4095, 4096, 100_000):
        data = _bytes(n, n)
        for buf in (data, memoryview(data), np.frombuffer(data, np.uint8), bytearray(data)):
            assert crc.crc32(buf, 99) == zlib.crc32(data, 99)


def test_the_chooser_takes_the_kernel_on_the_compiled_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = _crc.crc32

    def counted(data: Any, value: int = 0) -> int:
        calls.append(len(data))
        return int(real(data, value))

    monkeypatch.setattr(_crc, "crc32", counted)
    data = _bytes(4096, 1)
    numpy_path, compiled_path = KERNEL_PATHS
    use_kernels(numpy_path, monkeypatch)
    assert crc.crc32(data) == zlib.crc32(data) and calls == []
    use_kernels(compiled_path, monkeypatch)
    assert crc.crc32(data[:-1]) == zlib.crc32(data[:-1]) and crc.crc32(data) == zlib.crc32(data)
    assert calls == [len(data) - 1, len(data)]  # any length: a call costs about what zlib takes for 100 bytes
