"""The compiled reader of a whole stream: its header, every frame and its end, in two calls.

``bytepair.decompress`` of one stream in the Python reader (``io.stream.StreamParser``)
takes some 60 Python calls and two numba dispatches a frame (headers, the limit, the
tally, the end record): 16 us in a warm loop, but 65-75 us when the interpreter's
code is cold, as it is after other work, on a file whose decoding takes 100-300 us.
:func:`plan_stream` checks what the reader checks before it gives a frame room, so
that the caller reserves the output only then; :func:`decode_stream` decodes it all.

It is an accelerator, not a second reader: it decodes a buffer only when the buffer
is exactly one stream that passes every check the Python reader makes (the stream
header, each frame header's ranges, each frame's CRC, its columns and merges
(``decode.decode_body``), its content's CRC, the end record's check and its counts
and CRC, nothing after it); for anything else it reports :data:`NOT_WHOLE` and
the caller reads the buffer frame by frame, which raises the precise error. So the
errors a caller sees come from one place, whatever the path.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from ...container import crc
from ...container.format import _CODES_PER_RUN as CODES_PER_RUN
from ...container.format import (
    END_SIZE,
    FRAME_HEADER_SIZE,
    KIND_END,
    KIND_FRAME,
    MAGIC,
    MAX_FRAME_SIZE,
    STREAM_HEADER_SIZE,
    VERSION,
)
from ..expand import NODE_BUDGET, NODE_SLACK
from .decode import CRC_IN_KERNEL, OK, SPARE, _crc32, decode_body

__all__ = ["AVAILABLE", "DECODED", "NOT_WHOLE", "decode_stream", "load_kernels", "plan_stream"]

AVAILABLE = CRC_IN_KERNEL
"""The kernel checks the CRCs itself, so it exists only where the carry-less multiply does."""

DECODED = 0
NOT_WHOLE = 1
"""Not one intact stream of exactly the size given: the caller reads it frame by frame."""

_MAGIC = np.frombuffer(MAGIC, dtype=np.uint8).copy()
_BODY_AT = FRAME_HEADER_SIZE
_FIELDS = FRAME_HEADER_SIZE - 4  # the header's bytes its frame CRC covers (all but the CRC)
_END_FIELDS = END_SIZE - 4


_X2N = np.array(crc.X2N, dtype=np.uint32)
"""``x^(2^k) mod P`` for k = 0..31 (zlib's ``x2n_table``)."""


@numba.njit(cache=True, nogil=True)
def multmodp(a: int, b: int) -> int:
    """The product of two polynomials modulo CRC-32's (reflected bit order), as zlib's."""
    m = 1 << 31
    product = 0
    while m:
        if a & m:
            product ^= b
        m >>= 1
        b = (b >> 1) ^ 0xEDB88320 if b & 1 else b >> 1
    return product


@numba.njit(cache=True, nogil=True)
def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """``zlib.crc32(a + b)`` from ``crc32(a)``, ``crc32(b)`` and ``len(b)``
    (``container.crc.crc32_combine``): *crc1* times ``x^(8 len2)``, plus *crc2*."""
    power = 1 << 31  # x^0
    k = 3  # x^8 = x^(2^3): one byte
    n = len2
    while n:
        if n & 1:
            power = multmodp(int(_X2N[k & 31]), power)
        n >>= 1
        k += 1
    return multmodp(power, crc1) ^ crc2


@numba.njit(cache=True, nogil=True)
def u32(raw: npt.NDArray[np.uint8], at: int) -> int:
    """The little-endian 32-bit number at *at*."""
    return int(raw[at]) | int(raw[at + 1]) << 8 | int(raw[at + 2]) << 16 | int(raw[at + 3]) << 24


@numba.njit(cache=True, nogil=True)
def frame_size_ok(n_blocks: int, orig_size: int, body_size: int) -> bool:
    """The ranges ``format.unpack_frame_header`` checks: sizes a frame can have."""
    return (
        1 <= orig_size <= MAX_FRAME_SIZE
        and 1 <= n_blocks <= orig_size
        and 9 * n_blocks <= body_size <= 9 * n_blocks + orig_size
    )


@numba.njit(cache=True, nogil=True)
def stream_size(raw: npt.NDArray[np.uint8]) -> int:
    """The bytes the frames of *raw* hold, when *raw* is one stream whose structure is
    intact: its header, frame headers in range whose bodies are all there, then an end
    record that passes its check, counts these frames and sizes, and ends *raw*; else -1.
    Reads the headers only: the frames' CRCs and bodies are :func:`decode_stream`'s."""
    n = len(raw)
    if n < STREAM_HEADER_SIZE + END_SIZE:
        return -1
    for i in range(len(_MAGIC)):
        if raw[i] != _MAGIC[i]:
            return -1
    if raw[4] != VERSION or raw[5] != 0:
        return -1
    if (_crc32(raw[:6], 0) & 0xFFFF) != (int(raw[6]) | int(raw[7]) << 8):
        return -1
    pos = STREAM_HEADER_SIZE
    total = 0
    n_frames = 0
    while n - pos >= FRAME_HEADER_SIZE and raw[pos] == KIND_FRAME:
        orig_size = u32(raw, pos + 5)
        body_size = u32(raw, pos + 9)
        if not frame_size_ok(u32(raw, pos + 1), orig_size, body_size):
            return -1
        total += orig_size
        n_frames += 1
        pos += FRAME_HEADER_SIZE + body_size
    if pos != n - END_SIZE or raw[pos] != KIND_END:
        return -1
    if _crc32(raw[pos : pos + _END_FIELDS], 0) != u32(raw, pos + _END_FIELDS):
        return -1
    declared_size = u32(raw, pos + 5) | u32(raw, pos + 9) << 32
    if u32(raw, pos + 1) != n_frames or declared_size != total:
        return -1
    return total


@numba.njit(cache=True, nogil=True)
def plan_stream(raw: npt.NDArray[np.uint8]) -> int:
    """:func:`stream_size`, once every frame's CRC is right and its block headers add up
    to its size; else -1. The Python reader gives a frame room only once it passed
    these checks: called before the output is reserved, this keeps ``decode_stream``'s
    room to what the reader would give (a byte changed in the end record, say, must
    not reserve the thousands of bytes a byte it could claim)."""
    total = stream_size(raw)
    if total < 0:
        return -1
    pos = STREAM_HEADER_SIZE
    while raw[pos] == KIND_FRAME:
        n_blocks = u32(raw, pos + 1)
        orig_size = u32(raw, pos + 5)
        body_size = u32(raw, pos + 9)
        body = raw[pos + _BODY_AT : pos + _BODY_AT + body_size]
        if _crc32(body, _crc32(raw[pos : pos + _FIELDS], 0)) != u32(raw, pos + _FIELDS):
            return -1
        held = 0
        for b in range(n_blocks):  # 9 bytes a block header: the lengths are there
            held += int(body[2 * b]) | int(body[2 * b + 1]) << 8
        if held != orig_size:
            return -1
        pos += _BODY_AT + body_size
    return total


@numba.njit(cache=True, nogil=True)
def decode_stream(raw: npt.NDArray[np.uint8], out: npt.NDArray[np.uint8], status: npt.NDArray[np.int64]) -> int:
    """Decode *raw*, one whole stream, into *out* (its size plus ``SPARE`` bytes, which
    hold junk after): :data:`DECODED`, or :data:`NOT_WHOLE` (with *out* holding
    anything) when *raw* is not one intact stream of ``len(out) - SPARE`` bytes.

    Frame by frame, as the Python reader: the frame CRC over its header's fields and
    body, then ``decode_body`` (the columns, the merges, the payloads, the content
    CRC), writing straight into *out* at the frame's place; a frame's spare bytes fall
    on the next frame's place, written after. Then the end record's CRC of the whole.
    """
    size = len(out) - SPARE
    if size < 0 or stream_size(raw) != size:
        return NOT_WHOLE
    pos = STREAM_HEADER_SIZE
    at = 0
    whole_crc = 0
    while raw[pos] == KIND_FRAME:
        n_blocks = u32(raw, pos + 1)
        orig_size = u32(raw, pos + 5)
        body_size = u32(raw, pos + 9)
        content_crc = u32(raw, pos + 13)
        body = raw[pos + _BODY_AT : pos + _BODY_AT + body_size]
        if _crc32(body, _crc32(raw[pos : pos + _FIELDS], 0)) != u32(raw, pos + _FIELDS):
            return NOT_WHOLE
        budget = NODE_BUDGET * orig_size + NODE_SLACK
        decode_body(body, n_blocks, orig_size, budget, CODES_PER_RUN, status, out[at:], content_crc)
        if status[0] != OK:
            return NOT_WHOLE
        whole_crc = crc32_combine(whole_crc, content_crc, orig_size)
        at += orig_size
        pos += _BODY_AT + body_size
    if whole_crc != u32(raw, pos + 13):
        return NOT_WHOLE
    return DECODED


def load_kernels() -> None:
    """Compile, or load from numba's cache, :func:`plan_stream` and :func:`decode_stream` on arrays of our own
    (as ``decode.load_kernels``: a first call's frames may hold its arguments for a while)."""
    raw = np.zeros(0, dtype=np.uint8)
    raw.flags.writeable = False
    plan_stream(raw)
    decode_stream(raw, np.zeros(SPARE, dtype=np.uint8), np.zeros(5, dtype=np.int64))
