"""zlib's CRC-32 of large buffers by carry-less multiplication (PCLMULQDQ), in numba.

``zlib.crc32`` reads about 5.8 GB/s here, which made the decoder's two checks (the
frame's body and the decoded content) a fifth of its time. Folding 128 bytes at a
time with carry-less products (Gopal et al., "Fast CRC Computation for Generic
Polynomials Using PCLMULQDQ", Intel 2009) reads about 18 GB/s; the last 16 folded bytes and the tail
go through the usual byte table. The value is ``zlib.crc32``'s, bit for bit.

Only x86-64 processors with PCLMULQDQ have the instruction: :func:`crc32` asks
:func:`available` first and falls back to ``zlib.crc32``, so the kernel is
compiled nowhere else. Small buffers take ``zlib.crc32`` too (the call into
numba costs more than the fold saves). Imported only after ``jit.use_numba`` said yes.
"""

from __future__ import annotations

import functools
import platform
import zlib
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from llvmlite import ir  # type: ignore[import-untyped]
from numba.core import cgutils, types
from numba.extending import intrinsic

__all__ = ["MIN_FOLD_BYTES", "available", "crc32"]

MIN_FOLD_BYTES = 1 << 13
"""Shorter buffers take ``zlib.crc32``: both take about 1 us at 4 KiB."""

# To move a 128-bit lane D bits ahead: its low half times x^(D+32) mod P, its high
# half times x^(D-32) mod P (P the CRC-32 polynomial), each bit-reflected and times x
# (the CRC's own bit order); tests/test_kernels_crc.py derives them again.
FOLD8_LOW, FOLD8_HIGH = 0x1E88EF372, 0x14A7FE880  # 1024 bits ahead (eight lanes of 128)
FOLD1_LOW, FOLD1_HIGH = 0x1751997D0, 0xCCAA009E  # 128 bits ahead


def _byte_table() -> npt.NDArray[np.uint32]:
    """The reflected CRC-32 of each byte value, for the byte-at-a-time steps."""
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[i] = c
    return table


TABLE = _byte_table()


@intrinsic
def _fold(typingctx: Any, low: Any, high: Any, k_low: Any, k_high: Any) -> Any:
    """``clmul(low, k_low) ^ clmul(high, k_high)`` as (low, high) 64-bit halves: a 128-bit
    lane moved ahead by the distance the constants stand for (two PCLMULQDQ)."""
    sig = types.UniTuple(types.uint64, 2)(  # type: ignore[no-untyped-call]
        types.uint64, types.uint64, types.uint64, types.uint64
    )

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i64, i32, i8 = ir.IntType(64), ir.IntType(32), ir.IntType(8)
        pair = ir.VectorType(i64, 2)
        fnty = ir.FunctionType(pair, [pair, pair, i8])
        clmul = cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.pclmulqdq")  # type: ignore[no-untyped-call]

        def vector(a: Any, b: Any) -> Any:
            v = builder.insert_element(ir.Constant(pair, ir.Undefined), a, ir.Constant(i32, 0))
            return builder.insert_element(v, b, ir.Constant(i32, 1))

        x, k = vector(args[0], args[1]), vector(args[2], args[3])
        both = builder.xor(
            builder.call(clmul, [x, k, ir.Constant(i8, 0x00)]), builder.call(clmul, [x, k, ir.Constant(i8, 0x11)])
        )
        halves = [builder.extract_element(both, ir.Constant(i32, i)) for i in (0, 1)]
        return context.make_tuple(builder, signature.return_type, halves)

    return sig, codegen


@numba.njit(cache=True, nogil=True)
def fold(low: np.uint64, high: np.uint64, k_low: int, k_high: int) -> tuple[np.uint64, np.uint64]:
    """A 128-bit lane (*low*, *high*) moved ahead by the distance of (*k_low*, *k_high*)."""
    return _fold(low, high, k_low, k_high)  # type: ignore[call-arg]


@numba.njit(cache=True, nogil=True)
def _bytes_into(reg: np.uint32, data: npt.NDArray[np.uint8]) -> np.uint32:
    """The CRC register after *data*, a byte at a time."""
    for v in data:
        reg = TABLE[(reg ^ v) & 0xFF] ^ (reg >> 8)
    return reg


@numba.njit(cache=True, nogil=True)
def _word_into(reg: np.uint32, word: np.uint64) -> np.uint32:
    """The CRC register after the 8 bytes of *word* (little-endian)."""
    for k in range(8):
        reg = TABLE[(reg ^ (word >> np.uint64(8 * k))) & 0xFF] ^ (reg >> 8)
    return reg


@numba.njit(cache=True, nogil=True)
def fold_crc32(data: npt.NDArray[np.uint8], value: int) -> np.uint32:
    """``zlib.crc32(data, value)`` for *data* of at least 128 bytes.

    The register goes into the first 4 bytes; eight 128-bit lanes (low halves
    ``l0..l7``, high halves ``h0..h7``) each fold 128 bytes ahead per step (eight
    lanes keep the multiplier busy: four read 14 GB/s, eight 18); the eight fold
    into one, which folds 16 bytes ahead per step; its 16 bytes and the tail under
    16 then go through the byte table.
    """
    n = len(data)
    words = data[: n - n % 16].view(np.uint64)  # whole 16-byte lanes
    nw = len(words)
    l0 = words[0] ^ np.uint64(value ^ 0xFFFFFFFF)
    h0, l1, h1, l2, h2, l3, h3 = words[1], words[2], words[3], words[4], words[5], words[6], words[7]
    l4, h4, l5, h5, l6, h6, l7, h7 = (
        words[8],
        words[9],
        words[10],
        words[11],
        words[12],
        words[13],
        words[14],
        words[15],
    )
    i = 16
    while i + 16 <= nw:
        x, y = fold(l0, h0, FOLD8_LOW, FOLD8_HIGH)
        l0, h0 = x ^ words[i], y ^ words[i + 1]
        x, y = fold(l1, h1, FOLD8_LOW, FOLD8_HIGH)
        l1, h1 = x ^ words[i + 2], y ^ words[i + 3]
        x, y = fold(l2, h2, FOLD8_LOW, FOLD8_HIGH)
        l2, h2 = x ^ words[i + 4], y ^ words[i + 5]
        x, y = fold(l3, h3, FOLD8_LOW, FOLD8_HIGH)
        l3, h3 = x ^ words[i + 6], y ^ words[i + 7]
        x, y = fold(l4, h4, FOLD8_LOW, FOLD8_HIGH)
        l4, h4 = x ^ words[i + 8], y ^ words[i + 9]
        x, y = fold(l5, h5, FOLD8_LOW, FOLD8_HIGH)
        l5, h5 = x ^ words[i + 10], y ^ words[i + 11]
        x, y = fold(l6, h6, FOLD8_LOW, FOLD8_HIGH)
        l6, h6 = x ^ words[i + 12], y ^ words[i + 13]
        x, y = fold(l7, h7, FOLD8_LOW, FOLD8_HIGH)
        l7, h7 = x ^ words[i + 14], y ^ words[i + 15]
        i += 16
    # the eight lanes into one, each 16 bytes ahead of the one before
    x, y = fold(l0, h0, FOLD1_LOW, FOLD1_HIGH)
    low, high = x ^ l1, y ^ h1
    x, y = fold(low, high, FOLD1_LOW, FOLD1_HIGH)
    low, high = x ^ l2, y ^ h2
    x, y = fold(low, high, FOLD1_LOW, FOLD1_HIGH)
    low, high = x ^ l3, y ^ h3
    x, y = fold(low, high, FOLD1_LOW, FOLD1_HIGH)
    low, high = x ^ l4, y ^ h4
    x, y = fold(low, high, FOLD1_LOW, FOLD1_HIGH)
    low, high = x ^ l5, y ^ h5
    x, y = fold(low, high, FOLD1_LOW, FOLD1_HIGH)
    low, high = x ^ l6, y ^ h6
    x, y = fold(low, high, FOLD1_LOW, FOLD1_HIGH)
    low, high = x ^ l7, y ^ h7
    while i < nw:
        x, y = fold(low, high, FOLD1_LOW, FOLD1_HIGH)
        low, high = x ^ words[i], y ^ words[i + 1]
        i += 2
    reg = _word_into(_word_into(np.uint32(0), low), high)
    return _bytes_into(reg, data[8 * nw :]) ^ np.uint32(0xFFFFFFFF)


@functools.cache
def available() -> bool:
    """This processor has PCLMULQDQ (x86-64 only), so :func:`fold_crc32` can be compiled."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    from llvmlite import binding

    return bool(binding.get_host_cpu_features().get("pclmul", False))


def crc32(data: npt.NDArray[np.uint8], value: int = 0) -> int:
    """``zlib.crc32(data, value)``: folded when the processor allows and *data* is large."""
    if len(data) < MIN_FOLD_BYTES or not available():
        return zlib.crc32(data, value)  # type: ignore[arg-type]
    return int(fold_crc32(data, value))
