"""The carry-less multiply CRC-32 (``core.kernels.crc32``) against ``zlib.crc32``, and the
``container.crc.crc32`` that chooses between them."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.container import crc
from bytepair.core import jit
from tests.helpers import KERNEL_PATHS, use_kernels

pytest.importorskip("numba", reason="the compiled kernels need numba (pip install 'bytepair[fast]')")
if not jit._ready(quiet=True):  # sets numba's cache directory up before numba is imported
    pytest.skip("numba has no writable cache directory here", allow_module_level=True)

from bytepair.core.kernels import crc32 as compiled

if not compiled.AVAILABLE:
    pytest.skip("this CPU (as numba compiles for it) has no carry-less multiply", allow_module_level=True)

STARTS = [0, 1, 0xFFFFFFFF, 0x12345678]


def _bytes(n: int, seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


# the 128-bit folds (64 bytes a group), then the 512-bit ones (four groups a step, groups left one by one)
FOLD_LENGTHS = [0, 1, 3, 4, 15, 16, 63, 64, 65, 127, 128, 191, 192, 255, 256, 257, 319, 320, 383, 384, 447, 448, 511,
                512, 513, 575, 576, 767, 768, 1023, 1024, 1087, 4096, 65_537]  # fmt: skip


@pytest.mark.parametrize("n", FOLD_LENGTHS)
def test_every_length_around_the_folds(n: int) -> None:
    data = _bytes(n, n)
    for value in STARTS:
        assert compiled.crc32(np.frombuffer(data, np.uint8), value) == zlib.crc32(data, value)


def test_zeros_ones_and_a_large_buffer() -> None:
    for data in (bytes(1000), b"\xff" * 1000, _bytes(3 << 20, 7)):
        assert compiled.crc32(np.frombuffer(data, np.uint8)) == zlib.crc32(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=700), st.integers(0, 2**32 - 1), st.integers(0, 17))
def test_any_bytes_any_start_any_alignment(data: bytes, value: int, skip: int) -> None:
    view = np.frombuffer(data, np.uint8)[skip:]  # read-only, at any offset from an aligned start
    assert compiled.crc32(view, value) == zlib.crc32(data[skip:], value)


def test_a_run_continues_from_its_parts() -> None:
    data = _bytes(10_000, 3)
    head = compiled.crc32(np.frombuffer(data[:4567], np.uint8))
    assert compiled.crc32(np.frombuffer(data[4567:], np.uint8), head) == zlib.crc32(data)


@pytest.mark.parametrize("path", KERNEL_PATHS)
def test_the_chooser_gives_zlibs_value_on_both_paths(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    use_kernels(path, monkeypatch)
    for n in (0, 100, crc._FAST_MIN - 1, crc._FAST_MIN, 100_000):
        data = _bytes(n, n)
        for buf in (data, memoryview(data), np.frombuffer(data, np.uint8), bytearray(data)):
            assert crc.crc32(buf, 99) == zlib.crc32(data, 99)


def test_the_chooser_takes_the_kernel_on_the_compiled_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = compiled.crc32

    def counted(data: np.ndarray, value: int = 0) -> int:
        calls.append(len(data))
        return int(real(data, value))

    monkeypatch.setattr(compiled, "crc32", counted)
    data = _bytes(crc._FAST_MIN, 1)
    use_kernels("numpy", monkeypatch)
    assert crc.crc32(data) == zlib.crc32(data) and calls == []
    use_kernels("numba", monkeypatch)
    assert crc.crc32(data[:-1]) == zlib.crc32(data[:-1]) and calls == []  # too short to pay
    assert crc.crc32(data) == zlib.crc32(data) and calls == [crc._FAST_MIN]


_NARROW_CHECK = """
import sys, zlib
import numpy as np
from bytepair.core.kernels import crc32 as k
assert k.AVAILABLE and not k.WIDE, (k.AVAILABLE, k.WIDE)
for n in map(int, sys.argv[1:]):
    data = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    for value in (0, 0xFFFFFFFF):
        assert k.crc32(data, value) == zlib.crc32(data.tobytes(), value), n
print("ok")
"""


@pytest.mark.skipif(not compiled.WIDE, reason="this CPU has no 512-bit folds: the 128-bit kernel is the one tested")
def test_the_128_bit_kernel_where_the_cpu_has_no_512_bit_folds(tmp_path: Path) -> None:
    """The kernel for CPUs with the carry-less multiply but not AVX-512 (most laptops), tested
    here too: numba compiles, in a process of its own, for this CPU without those features."""
    features = ",".join(f for f in compiled._features() if f not in ("+avx512f", "+vpclmulqdq"))
    env = {**os.environ, "NUMBA_CPU_FEATURES": f"{features},-avx512f,-vpclmulqdq", "NUMBA_CACHE_DIR": str(tmp_path)}
    lengths = [str(n) for n in FOLD_LENGTHS]
    done = subprocess.run(
        [sys.executable, "-c", _NARROW_CHECK, *lengths], env=env, capture_output=True, text=True, timeout=300
    )
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-2000:]
