"""The compiled decoder's Python side: a frame body, or a run of blocks (``PairTables``), back to bytes.

The kernels are ``_decode.pyx``, compiled at install (its docstring says how they
work). The same contract as the numpy path (``container.format.unpack_frame_body``
then ``core.expand.expand_numpy``), which stays the portable path and the reference
this one is tested against: the same output, and for bad input the same exception
class (``CorruptDataError``) with the same message. ``codec.decode_frame`` calls
:func:`decode_frame_body`, ``expand.expand`` (Gage's format, tests) calls :func:`expand`.

A kernel fills a status (what went wrong, in which block, with which values) and
:func:`_error` makes the numpy decoder's exception from it.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._errors import CorruptDataError
from ...container.format import FrameHeader
from .. import faults
from ..escape import Escapes
from ..expand import NODE_BUDGET, expand_numpy, node_budget
from ..tables import PairTables
from ._decode import (
    BAD_BITMAP,
    BAD_LENGTHS,
    BAD_PAYLOAD_LEN,
    BAD_RUNS,
    BAD_SET_HEADER,
    CONTENT_CRC,
    DISAGREE,
    ESCAPE_COUNT,
    FORWARD_REF,
    FRESH_TWICE,
    LONG_BODY,
    OK,
    OVER_BUDGET,
    SHORT_BODY,
    TOO_LONG,
    WRONG_SIZE,
    WRONG_TOTAL,
    W,
    decode_blocks,
    decode_body,
    frame_check,
    restore_escapes,
)

__all__ = [
    "SPARE",
    "W",
    "decode_blocks",
    "decode_body",
    "decode_frame_body",
    "expand",
    "frame_check",
    "restore_escapes",
]

SPARE = W
"""Bytes an output needs past its end: a copy may write that far (``W``: the kernel
copies 32 bytes at a time, however short the expansion)."""

_NO_OUTPUT = np.empty(0, dtype=np.uint8)


def decode_frame_body(
    header: FrameHeader,
    body: bytes | memoryview,
    frame_index: int,
    first_block: int,
    into: Callable[[int], npt.NDArray[np.uint8]] | None = None,
) -> npt.NDArray[np.uint8]:
    """``expand(unpack_frame_body(...))``, compiled, and the content CRC checked: the frame's bytes.

    With *into*, they are written to ``into(orig_size)`` (``orig_size + SPARE``
    writable bytes), asked for only once the frame CRC is right and the block
    lengths add up to ``orig_size``: a frame that claims a large size in a few
    bytes gets no output before its columns are checked. Both CRCs are
    ``zlib.crc32``'s, checked in the kernels (``_crc.pyx``)."""
    raw = body if isinstance(body, bytes) else np.frombuffer(body, dtype=np.uint8)
    size, nb = header.orig_size, header.n_blocks
    total = frame_check(raw, zlib.crc32(header.header), header.frame_crc, nb)
    if total == -1:
        raise CorruptDataError(f"frame {frame_index}: compressed data is corrupt (frame checksum mismatch)")
    out = _NO_OUTPUT  # the kernel makes its own, once the columns and merges passed
    if into is not None and total == size:
        out = into(size)
    status = np.zeros(5, dtype=np.int64)
    out = decode_body(raw, nb, size, node_budget(size), status, out, header.content_crc)
    if status[0] != OK:
        raise _error(status, first_block, nb, frame_index)
    return out[:size]


def _ints(values: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int64]:
    """*values* as a writable contiguous int64 array (a copy if need be; these columns hold
    one item per block or merge): the type the kernel takes."""
    if values.dtype == np.int64 and values.flags.c_contiguous and values.flags.writeable:
        return values  # type: ignore[return-value]
    return np.array(values, dtype=np.int64)


def _small_bytes(values: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """*values* as a writable contiguous uint8 array (see ``_ints``)."""
    if values.dtype == np.uint8 and values.flags.c_contiguous and values.flags.writeable:
        return values
    return np.array(values, dtype=np.uint8)


def _bytes(values: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """*values* as a contiguous uint8 array, without a copy where it is one already
    (payloads and escaped bytes: views of a frame body, often read-only)."""
    return np.ascontiguousarray(values, dtype=np.uint8)


def expand(t: PairTables) -> npt.NDArray[np.uint8]:
    """Decode a run of blocks: ``bytepair.core.expand.expand``, compiled."""
    nb = len(t.orig_len)
    total = int(t.orig_len.sum())
    esc = t.escapes if t.escapes is not None else Escapes.none(nb)
    _check_columns(t, esc)
    if nb and int(t.orig_len.max()) >= 1 << 30:  # no container block is; the kernels pack lengths in 31 bits
        return expand_numpy(t)
    orig_len, n_merges, n_fresh, payload_len, esc_count = map(
        _ints, (t.orig_len, t.n_merges, t.n_fresh, t.payload_len, esc.count)
    )
    code, left, right, esc_mark = map(_small_bytes, (t.code, t.left, t.right, esc.mark))
    payload, esc_literals = _bytes(t.payload), _bytes(esc.literals)
    status = np.zeros(5, dtype=np.int64)
    out = decode_blocks(
        orig_len, n_merges, n_fresh, code, left, right, payload_len, payload, esc_count, esc_mark, esc_literals,
        node_budget(total), status
    )  # fmt: skip
    if status[0] != OK:
        raise _error(status, t.first_block, nb)
    return out[:total]


def _check_columns(t: PairTables, esc: Escapes) -> None:
    """The columns agree in length (the container builds them so): the kernels rely on it
    (and check it again)."""
    nb = len(t.orig_len)
    if not (
        len(t.n_merges) == len(t.n_fresh) == len(t.payload_len) == len(esc.count) == len(esc.mark) == nb
        and len(t.code) == len(t.left) == len(t.right) == int(t.n_merges.sum())
        and len(t.payload) == int(t.payload_len.sum())
        and len(esc.literals) == int(esc.count.sum())
        and not np.count_nonzero((t.n_fresh < 0) | (t.n_fresh > t.n_merges) | (t.n_merges < 0) | (esc.count < 0))
    ):
        raise ValueError("PairTables columns disagree in length")


def _error(status: npt.NDArray[np.int64], first_block: int, n_blocks: int, frame: int = -1) -> Exception:
    """The numpy decoder's error for what *status* reports (*frame*: its index, for the
    body's columns): ``core.faults`` words each fault once, for both paths."""
    kind, b, x, y, z = status.tolist()
    if kind == DISAGREE:
        return AssertionError("write_blocks met a fault that check_blocks does not see")
    block = first_block + b
    told: dict[int, Callable[[], CorruptDataError]] = {
        BAD_PAYLOAD_LEN: faults.bad_payload_length,
        FRESH_TWICE: faults.fresh_code_twice,
        FORWARD_REF: lambda: faults.forward_reference(block, x, y, z),
        TOO_LONG: lambda: faults.too_long(block, x, y),
        OVER_BUDGET: lambda: faults.over_budget(first_block, first_block + n_blocks - 1, x, NODE_BUDGET),
        WRONG_TOTAL: lambda: faults.wrong_total(block, x, y),
        ESCAPE_COUNT: lambda: faults.escape_count(block, x, y),
        SHORT_BODY: lambda: faults.short_body(frame),
        CONTENT_CRC: lambda: faults.content_crc(frame),
        LONG_BODY: lambda: faults.long_body(frame, x),
        BAD_LENGTHS: lambda: faults.bad_lengths(block),
        WRONG_SIZE: lambda: faults.wrong_size(frame, x, y),
        BAD_SET_HEADER: lambda: faults.bad_set_header(block),
        BAD_RUNS: lambda: faults.bad_runs(block),
        BAD_BITMAP: lambda: faults.bad_bitmap(block),
    }
    return told[kind]()
