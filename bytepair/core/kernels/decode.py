"""The compiled decoder: a frame body, or a run of blocks (``PairTables``), back to bytes, in numba.

The same contract as the numpy path (``container.format.unpack_frame_body`` then
``core.expand.expand_numpy``), which stays the portable path and the reference
this one is tested against: the same output, and for bad input the same
exception class (``CorruptDataError``) with the same message. Imported only after
``jit.use_numba`` said yes: ``codec.decode_frame`` calls :func:`decode_frame_body`,
``expand.expand`` (Gage's format, tests) calls :func:`expand`.

:func:`decode_body` reads the body's columns, checking them in the order
``unpack_frame_body`` does, then :func:`decode_blocks` takes the blocks through
two passes:

1. **Validate the merges** (:func:`check_blocks` without the payloads), writing
   nothing: per block, the fresh codes are distinct; each merge, in creation
   order, uses only literals and codes already defined (a fresh code before its
   merge is a forward reference, or a cycle); no merge expands to more than its
   block holds; all merges of the run together stay within the frame's budget
   (``node_budget``). Lengths are checked as they are computed, so none can grow
   past a block (a 255-deep doubling chain stops at its first long code).
2. **Write** (:func:`write_blocks`), block by block: each merge's expansion, in
   creation order, into a table (an operand means what it means at that moment,
   so a recycled code is simply redefined); then each payload symbol's
   expansion, copied 32 bytes at a time into the output, which has 32 spare
   bytes at its end. A short expansion writes past its end; the next symbol
   overwrites that. The escaped bytes go back in as their symbols are written.
   Each symbol's length is checked against what is left of its block before its
   copy, and its escape marks against the block's escaped bytes left; at the
   block's end, both must be used up exactly (the payload expands to
   ``orig_len`` bytes, and holds the escape mark ``n_escaped`` times).

When the writing meets a fault, :func:`check_blocks` runs in full (payloads
too, as it ran before the writing until 2026-11-27) to name the first fault as
the numpy decoder does.

A kernel cannot raise a useful exception, so it fills a status (what went
wrong, in which block, with which values) and the Python caller raises from it.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import llvmlite.ir as ir
import numba
import numpy as np
import numpy.typing as npt
from numba.core import cgutils, types
from numba.extending import intrinsic

from ..._errors import CorruptDataError
from ...container.format import _CODES_PER_RUN as CODES_PER_RUN
from ...container.format import CODE_SET_BITMAP, MAX_RUNS, FrameHeader
from ..escape import Escapes
from ..expand import NODE_BUDGET, expand_numpy, node_budget
from ..tables import PairTables
from . import crc32 as crc_kernel

__all__ = ["SPARE", "check_blocks", "decode_body", "decode_frame_body", "expand", "load_kernels", "write_blocks"]

W = 32
"""Bytes per copy: one 32-byte load and store, however short the expansion (16 until
2026-11-27: expansions of 17-32 bytes then took a second copy behind a branch that a
predictor cannot learn on binary files)."""
SPARE = W
"""Bytes an output needs past its end: a copy may write that far."""

# what went wrong: status[0]; the block: status[1]; details: status[2:]
OK = 0
BAD_PAYLOAD_LEN = 1  # a payload empty or longer than its block
FRESH_TWICE = 2  # a fresh code listed twice in a block
FORWARD_REF = 3  # (code, merge, operand): an operand that is a fresh code not defined yet
TOO_LONG = 4  # (code, orig_len): a merge expands to more than its block
OVER_BUDGET = 5  # (bytes,): the merges of the run expand to more than the budget
WRONG_TOTAL = 6  # (total, orig_len): a block expands to another length than its header says
ESCAPE_COUNT = 7  # (held, count): a block holds its escape mark another number of times than it has escaped bytes
# the frame body's columns (bytepair.container.format.unpack_frame_body)
SHORT_BODY = 10  # the body is shorter than its columns
LONG_BODY = 11  # (extra,): bytes after the last payload
BAD_LENGTHS = 12  # impossible lengths in a block header
WRONG_SIZE = 13  # (sum,): the blocks hold another size than the frame header says
BAD_SET_HEADER = 14  # impossible code-set header
BAD_RUNS = 15  # fresh code runs that do not describe the block's codes
BAD_BITMAP = 16  # a code bitmap that does not match the code count
CONTENT_CRC = 17  # the frame's bytes fail their CRC-32

NO_CRC = -1
"""A CRC argument that means: not checked here (the caller checks it with ``zlib.crc32``)."""

CRC_IN_KERNEL = crc_kernel.AVAILABLE
"""Whether the kernels check both CRCs themselves (with the carry-less multiply); elsewhere
the caller does, with ``zlib.crc32``: a byte-at-a-time loop here would read 1 GB/s or less."""

if CRC_IN_KERNEL:
    _crc32 = crc_kernel.crc32
else:  # the carry-less multiply must not even be compiled for a CPU without it

    @numba.njit(cache=True, nogil=True)
    def _crc32(data: npt.NDArray[np.uint8], value: int = 0) -> int:
        """Never called with a CRC to check (see ``CRC_IN_KERNEL``)."""
        return 0


@intrinsic
def _move(typingctx: Any, dst: Any, d: Any, src: Any, s: Any) -> Any:
    """``memmove(&dst[d], &src[s], W)``: LLVM makes it one W-byte load and one store."""
    sig = types.void(dst, types.intp, src, types.intp)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        dst_arr = context.make_array(signature.args[0])(context, builder, args[0])
        src_arr = context.make_array(signature.args[2])(context, builder, args[2])
        to = builder.gep(dst_arr.data, [args[1]])
        frm = builder.gep(src_arr.data, [args[3]])
        cgutils.raw_memmove(builder, to, frm, context.get_constant(types.intp, W), 1)  # type: ignore[no-untyped-call]
        return context.get_dummy_value()

    return sig, codegen


if getattr(numba.config, "BOUNDSCHECK", None):
    # NUMBA_BOUNDSCHECK=1 (tests): index every byte, so that an overrun raises IndexError.
    # numba's cache does not key on this setting: give such a run its own NUMBA_CACHE_DIR.

    @numba.njit(cache=True, nogil=True)
    def copy_word(dst: npt.NDArray[np.uint8], d: int, src: npt.NDArray[np.uint8], s: int) -> None:
        for i in range(W):
            dst[d + i] = src[s + i]

else:

    @numba.njit(cache=True, nogil=True)
    def copy_word(dst: npt.NDArray[np.uint8], d: int, src: npt.NDArray[np.uint8], s: int) -> None:
        """``dst[d : d + W] = src[s : s + W]``, both ranges inside their arrays.

        One move: about 0.55 ns a symbol where a loop of 16 byte copies
        took 3-6.5 ns (numba checks each signed index for wrap-around).
        """
        _move(dst, d, src, s)  # type: ignore[call-arg]


@numba.njit(cache=True, nogil=True)
def copy_over(dst: npt.NDArray[np.uint8], d: int, src: npt.NDArray[np.uint8], s: int, n: int) -> None:
    """Copy *n* bytes in W-byte pieces: writes up to W - 1 bytes past ``d + n``."""
    copy_word(dst, d, src, s)
    if n > W:  # rare: most expansions are short
        for k in range(W, n, W):
            copy_word(dst, d + k, src, s + k)


@numba.njit(cache=True, nogil=True)
def fail(status: npt.NDArray[np.int64], kind: int, block: int, x: int = 0, y: int = 0, z: int = 0) -> int:
    """Record what went wrong in *status*; returns -1, for ``return fail(...)``."""
    status[0] = kind
    status[1] = block
    status[2] = x
    status[3] = y
    status[4] = z
    return -1


@intrinsic
def _equal_mask64(typingctx: Any, arr: Any, at: Any, value: Any) -> Any:
    """Bit k set where ``arr[at + k] == value``, for k < 64: two 32-byte compares (AVX2).

    (One 64-byte compare into an AVX-512 mask made the decoding of text 1.2x slower in
    turns: a core wakes its 512-bit units for each block's few compares.)"""
    sig = types.uint64(arr, types.intp, types.uint8)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array = context.make_array(signature.args[0])(context, builder, args[0])
        i8, i32, i64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
        vec = ir.VectorType(i8, 32)
        base = builder.gep(array.data, [args[1]])
        splat = builder.insert_element(ir.Constant(vec, None), args[2], ir.Constant(i32, 0))
        splat = builder.shuffle_vector(splat, ir.Constant(vec, None), ir.Constant(ir.VectorType(i32, 32), [0] * 32))
        halves = []
        for h in range(2):
            where = builder.bitcast(builder.gep(base, [ir.Constant(i64, 32 * h)]), vec.as_pointer())
            equal = builder.icmp_unsigned("==", builder.load(where, align=1), splat)
            halves.append(builder.zext(builder.bitcast(equal, i32), i64))
        return builder.or_(halves[0], builder.shl(halves[1], ir.Constant(i64, 32)))

    return sig, codegen


def _bit_intrinsic(name: str, doc: str) -> Any:
    """A uint64 -> uint64 intrinsic calling ``llvm.<name>.i64`` (cttz, ctpop)."""

    @intrinsic
    def bits(typingctx: Any, x: Any) -> Any:
        sig = types.uint64(types.uint64)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            i64 = ir.IntType(64)
            if name == "cttz":  # its second operand: a zero input is undefined (never passed)
                fn = cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
                    builder.module, ir.FunctionType(i64, [i64, ir.IntType(1)]), "llvm.cttz.i64"
                )
                return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 1)])
            fn = cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
                builder.module, ir.FunctionType(i64, [i64]), f"llvm.{name}.i64"
            )
            return builder.call(fn, [args[0]])

        return sig, codegen

    bits.__doc__ = doc
    return bits


_lowest_bit = _bit_intrinsic("cttz", "The index of the lowest set bit of a nonzero uint64.")
_bit_count = _bit_intrinsic("ctpop", "How many bits of a uint64 are set.")


if getattr(numba.config, "BOUNDSCHECK", None):

    @numba.njit(cache=True, nogil=True)
    def equal_mask64(arr: npt.NDArray[np.uint8], at: int, value: np.uint8) -> np.uint64:
        mask = np.uint64(0)
        for k in range(64):
            if arr[at + k] == value:
                mask |= np.uint64(1) << np.uint64(k)
        return mask

else:

    @numba.njit(cache=True, nogil=True)
    def equal_mask64(arr: npt.NDArray[np.uint8], at: int, value: np.uint8) -> np.uint64:
        """Bit k set where ``arr[at + k] == value`` (``arr[at : at + 64]`` inside *arr*)."""
        return _equal_mask64(arr, at, value)  # type: ignore[call-arg]


@numba.njit(cache=True, nogil=True)
def restore_escapes(
    out: npt.NDArray[np.uint8],
    start: int,
    end: int,
    mark: np.uint8,
    literals: npt.NDArray[np.uint8],
    lit: int,
    lit_end: int,
) -> int:
    """Put ``literals[lit:lit_end]`` back where ``out[start:end]`` holds *mark*, in order;
    returns the next literal's index, or -1 when the block holds the mark more often.

    Every mark in a block's expansion is an escape (the format counts them so), so a
    scan 64 bytes at a time finds them: cheaper than noting each expansion's mark
    offsets as its table is built and testing each payload symbol for them."""
    pos = start
    limit = len(out) - 64  # a compare may read past the block, not past out
    while pos < end:
        if pos <= limit:
            mask = equal_mask64(out, pos, mark)
            if end - pos < 64:
                mask &= (np.uint64(1) << np.uint64(end - pos)) - np.uint64(1)
            if mask:
                found = int(_bit_count(mask))
                if lit + found > lit_end:
                    return -1
                # unsigned indices: numba checks no wrap-around then
                at, k = np.uint64(pos), np.uint64(lit)
                while mask:
                    out[at + _lowest_bit(mask)] = literals[k]
                    k += np.uint64(1)
                    mask &= mask - np.uint64(1)
                lit += found
            pos += 64
        else:
            if out[pos] == mark:
                if lit == lit_end:
                    return -1
                out[pos] = literals[lit]
                lit += 1
            pos += 1
    return lit


@numba.njit(cache=True, nogil=True)
def check_blocks(
    orig_len: npt.NDArray[np.int64],
    n_merges: npt.NDArray[np.int64],
    n_fresh: npt.NDArray[np.int64],
    code: npt.NDArray[np.uint8],
    left: npt.NDArray[np.uint8],
    right: npt.NDArray[np.uint8],
    payload_len: npt.NDArray[np.int64],
    payload: npt.NDArray[np.uint8],
    esc_count: npt.NDArray[np.int64],
    esc_mark: npt.NDArray[np.uint8],
    budget: int,
    status: npt.NDArray[np.int64],
    payloads: bool = True,
) -> int:
    """Validate every block, writing nothing but *status*; with *payloads* false,
    only the block headers and merges (:func:`write_blocks` checks the payloads).

    Returns the most bytes one block's merges expand to (the size of pass 2's
    table), or -1 with *status* saying what is wrong.
    """
    nb = len(orig_len)
    for b in range(nb):
        if payload_len[b] < 1 or payload_len[b] > orig_len[b]:
            return fail(status, BAD_PAYLOAD_LEN, b)
    length = np.empty(256, dtype=np.int64)  # what each byte value expands to, as things stand
    marks = np.empty(256, dtype=np.int64)  # how many escape marks that expansion holds
    pending = np.empty(256, dtype=np.bool_)  # a fresh code whose merge has not come yet
    spent = 0  # bytes all merges so far expand to
    most = 0
    m0 = 0
    p0 = 0
    for b in range(nb):
        size = orig_len[b]
        length[:] = 1
        marks[:] = 0
        if esc_count[b]:
            marks[esc_mark[b]] = 1
        pending[:] = False
        for m in range(m0, m0 + n_fresh[b]):
            if pending[code[m]]:
                return fail(status, FRESH_TWICE, b)
            pending[code[m]] = True
        block_nodes = 0
        for m in range(m0, m0 + n_merges[b]):
            lv, rv = left[m], right[m]
            if pending[lv] or pending[rv]:
                return fail(status, FORWARD_REF, b, code[m], m - m0, lv if pending[lv] else rv)
            n = length[lv] + length[rv]
            if n > size:
                return fail(status, TOO_LONG, b, code[m], size)
            spent += n
            if spent > budget:
                return fail(status, OVER_BUDGET, b, spent)
            length[code[m]] = n
            marks[code[m]] = marks[lv] + marks[rv]
            pending[code[m]] = False
            block_nodes += n
        most = max(most, block_nodes)
        m0 += n_merges[b]
        if not payloads:
            continue
        # (loops over a block's own slice: numba checks no index for wrap-around then)
        symbols = payload[p0 : p0 + payload_len[b]]
        total = 0
        held = 0
        if esc_count[b]:
            for v in symbols:
                total += length[v]
                held += marks[v]
        else:
            for v in symbols:
                total += length[v]
        if total != size:
            return fail(status, WRONG_TOTAL, b, total, size)
        if held != esc_count[b]:
            return fail(status, ESCAPE_COUNT, b, held, esc_count[b])
        p0 += payload_len[b]
    return most


@numba.njit(cache=True, nogil=True)
def write_blocks(
    orig_len: npt.NDArray[np.int64],
    n_merges: npt.NDArray[np.int64],
    code: npt.NDArray[np.uint8],
    left: npt.NDArray[np.uint8],
    right: npt.NDArray[np.uint8],
    payload_len: npt.NDArray[np.int64],
    payload: npt.NDArray[np.uint8],
    esc_count: npt.NDArray[np.int64],
    esc_mark: npt.NDArray[np.uint8],
    esc_literals: npt.NDArray[np.uint8],
    most_nodes: int,
    out: npt.NDArray[np.uint8],
) -> bool:
    """Pass 2: write every block into *out* (its length plus W spare bytes), escapes
    restored; only after :func:`check_blocks` passed on the merges, which makes
    every table copy fit. Each payload copy is checked to fit its block before
    it is made; returns False at the first payload that does not expand to its
    block's length and escaped bytes exactly (what was written is then junk).

    (Checking here rather than in a payload pass of its own made the decoding of
    text a third faster: each symbol is read once.) A block's escaped bytes go back
    once it is written, where its expansion holds the mark (:func:`restore_escapes`)."""
    # table[0:256] holds the literals, then a block's merges' expansions back to back
    table = np.empty(256 + most_nodes + 2 * W, dtype=np.uint8)
    for v in range(256):
        table[v] = v
    # what each byte value means, as things stand: the literal itself at first
    start = np.arange(256, dtype=np.int64)  # where its expansion starts in table
    length = np.ones(256, dtype=np.int64)
    # the same in one number, for one load per payload symbol: where the expansion
    # starts (high 32 bits) and its length
    packed = (start << 32) | length
    m0 = 0
    p0 = 0
    d = 0  # where the next byte goes in out
    lit = 0  # the next escaped byte
    for b in range(len(orig_len)):
        escaping = esc_count[b] > 0
        if n_merges[b] == 0 and not escaping:  # a stored block: its payload is its data
            if payload_len[b] != orig_len[b]:
                return False
            out[d : d + payload_len[b]] = payload[p0 : p0 + payload_len[b]]
            d += payload_len[b]
            p0 += payload_len[b]
            continue
        at = 256
        for m in range(m0, m0 + n_merges[b]):
            lv, rv = left[m], right[m]
            # read both operands before redefining the code (it may be one of them)
            ls, ln, rs, rn = start[lv], length[lv], start[rv], length[rv]
            copy_over(table, at, table, ls, ln)
            copy_over(table, at + ln, table, rs, rn)
            c = code[m]
            start[c] = at
            length[c] = ln + rn
            packed[c] = (at << 32) | (ln + rn)
            at += ln + rn
        end = d + orig_len[b]
        symbols = payload[p0 : p0 + payload_len[b]]
        for v in symbols:
            what = packed[v]
            n = what & 0xFFFFFFFF
            if d + n > end:
                return False
            copy_over(out, d, table, what >> 32, n)
            d += n
        if d != end:
            return False
        if escaping:
            lit_end = lit + esc_count[b]
            lit = restore_escapes(out, end - orig_len[b], end, esc_mark[b], esc_literals, lit, lit_end)
            if lit != lit_end:
                return False
        # the byte values this block redefined are literals again for the next
        for m in range(m0, m0 + n_merges[b]):
            c = code[m]
            start[c] = c
            length[c] = 1
            packed[c] = (np.int64(c) << 32) | 1
        m0 += n_merges[b]
        p0 += payload_len[b]
    return True


@numba.njit(cache=True, nogil=True)
def decode_blocks(
    orig_len: npt.NDArray[np.int64],
    n_merges: npt.NDArray[np.int64],
    n_fresh: npt.NDArray[np.int64],
    code: npt.NDArray[np.uint8],
    left: npt.NDArray[np.uint8],
    right: npt.NDArray[np.uint8],
    payload_len: npt.NDArray[np.int64],
    payload: npt.NDArray[np.uint8],
    esc_count: npt.NDArray[np.int64],
    esc_mark: npt.NDArray[np.uint8],
    esc_literals: npt.NDArray[np.uint8],
    budget: int,
    status: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
) -> npt.NDArray[np.uint8]:
    """The blocks written into *out*, or into an array of their length plus W spare
    bytes made once the merges passed their checks when *out* is shorter; returns
    the array written (on damage, with *status* saying what is wrong).

    The merges are checked first (:func:`check_blocks` without the payloads); the
    payloads as they are written (:func:`write_blocks`). When writing meets a
    fault, :func:`check_blocks` runs in full to find the first one, so the
    report is the numpy decoder's whatever the order the two passes meet faults in.
    """
    most = check_blocks(
        orig_len, n_merges, n_fresh, code, left, right, payload_len, payload, esc_count, esc_mark, budget, status, False
    )
    if most < 0:
        return out
    total = 0
    for size in orig_len:
        total += size
    if len(out) < total + W:
        out = np.empty(total + W, dtype=np.uint8)
    if not write_blocks(
        orig_len, n_merges, code, left, right, payload_len, payload, esc_count, esc_mark, esc_literals, most, out
    ):
        check_blocks(
            orig_len, n_merges, n_fresh, code, left, right, payload_len, payload, esc_count, esc_mark, budget, status
        )
        if status[0] == OK:
            raise AssertionError("write_blocks met a fault that check_blocks does not see")
    return out


@numba.njit(cache=True, nogil=True)
def u16(raw: npt.NDArray[np.uint8], at: int) -> np.int64:
    """The little-endian 16-bit number at *at*."""
    return np.int64(raw[at]) | (np.int64(raw[at + 1]) << 8)


@numba.njit(cache=True, nogil=True)
def frame_check(raw: npt.NDArray[np.uint8], start: int, frame_crc: int, nb: int) -> int:
    """What the *nb* block headers at the start of the body *raw* add up to, once its CRC-32
    (continued from *start*, the header's) is *frame_crc* (``NO_CRC``: checked by the
    caller); -1 when it is not, -2 when the body is too short to hold the block lengths.

    One call for both: each call of a compiled function costs a few microseconds when
    its code is cold, as it is right after a compression."""
    if frame_crc != NO_CRC and _crc32(raw, start) != frame_crc:
        return -1
    if len(raw) < 2 * nb:
        return -2
    total = 0
    for b in range(nb):
        total += int(u16(raw, 2 * b))
    return total


@numba.njit(cache=True, nogil=True)
def decode_body(
    raw: npt.NDArray[np.uint8],
    nb: int,
    orig_size: int,
    budget: int,
    codes_per_run: int,
    status: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
    content_crc: int,
) -> npt.NDArray[np.uint8]:
    """A frame body (docs/FORMAT.md, "Frame body: columns") to its bytes, plus W spare
    (which hold junk after): written to *out* when it is that long, else to an array
    made once the columns and merges passed their checks; returns the array written.

    The columns are read and checked as ``unpack_frame_body`` does, in the same
    order, then the blocks go through :func:`decode_blocks`, then the bytes' CRC-32
    must be *content_crc* (unless that is ``NO_CRC``). On damage, *status* says what
    is wrong (and the array returned may hold anything).
    """
    if len(raw) < 9 * nb:
        fail(status, SHORT_BODY, 0)
        return out
    # the block headers: 9 bytes a block, column by column
    orig_len = np.empty(nb, dtype=np.int64)
    payload_len = np.empty(nb, dtype=np.int64)
    n_fresh = np.empty(nb, dtype=np.int64)
    n_merges = np.empty(nb, dtype=np.int64)
    set_kind = np.empty(nb, dtype=np.int64)
    n_escaped = np.empty(nb, dtype=np.int64)
    set_at = np.empty(nb + 1, dtype=np.int64)  # where each block's code set starts
    set_at[0] = 9 * nb
    n_marks = 0
    fresh_total = 0
    recycled_total = 0
    escaped_total = 0
    payload_total = 0
    for b in range(nb):
        orig_len[b] = u16(raw, 2 * b)
        payload_len[b] = u16(raw, 2 * nb + 2 * b)
        n_fresh[b] = raw[4 * nb + b]
        n_merges[b] = n_fresh[b] + raw[5 * nb + b]
        set_kind[b] = raw[6 * nb + b]
        n_escaped[b] = u16(raw, 7 * nb + 2 * b)
        set_at[b + 1] = set_at[b] + (32 if set_kind[b] == CODE_SET_BITMAP else 2 * set_kind[b])
        n_marks += n_escaped[b] > 0
        fresh_total += n_fresh[b]
        recycled_total += raw[5 * nb + b]
        escaped_total += n_escaped[b]
        payload_total += payload_len[b]
    marks_at = set_at[nb]
    fresh_at = marks_at + n_marks
    recycled_at = fresh_at + 2 * fresh_total
    literals_at = recycled_at + 3 * recycled_total
    payload_at = literals_at + escaped_total
    end = payload_at + payload_total
    if end > len(raw):
        fail(status, SHORT_BODY, 0)
        return out
    if end != len(raw):
        fail(status, LONG_BODY, 0, len(raw) - end)
        return out
    total = 0
    for b in range(nb):
        if orig_len[b] < 1 or payload_len[b] < 1 or payload_len[b] > orig_len[b] or n_escaped[b] > orig_len[b]:
            fail(status, BAD_LENGTHS, b)
            return out
        total += orig_len[b]
    if total != orig_size:
        fail(status, WRONG_SIZE, 0, total, orig_size)
        return out

    # fresh codes, checked run of blocks by run of blocks as the numpy path does
    # (runs of about codes_per_run codes), then listed block by block, descending
    codes = np.empty(fresh_total, dtype=np.uint8)
    fresh_before = np.empty(nb + 1, dtype=np.int64)  # fresh codes of the blocks before each
    fresh_before[0] = 0
    for b in range(nb):
        fresh_before[b + 1] = fresh_before[b] + n_fresh[b]
    lo = 0
    while lo < nb:
        hi = lo + 1
        while hi < nb and fresh_before[hi + 1] // codes_per_run == fresh_before[lo + 1] // codes_per_run:
            hi += 1
        for b in range(lo, hi):
            kind = set_kind[b]
            n_runs = 0 if kind == CODE_SET_BITMAP else kind
            if n_runs > MAX_RUNS or (kind == 0) == (n_fresh[b] > 0):
                fail(status, BAD_SET_HEADER, b)
                return out
        for b in range(lo, hi):
            if set_kind[b] == CODE_SET_BITMAP:
                continue
            took = 0
            span = 0
            zero_take = False
            for r in range(set_kind[b]):
                skip, take = raw[set_at[b] + 2 * r], raw[set_at[b] + 2 * r + 1]
                took += take
                span += skip + take
                zero_take |= take < 1
            if took != n_fresh[b] or span > 256 or zero_take:
                fail(status, BAD_RUNS, b)
                return out
        for b in range(lo, hi):
            if set_kind[b] != CODE_SET_BITMAP:
                continue
            counted = 0
            for i in range(32):
                byte = raw[set_at[b] + i]
                for j in range(8):
                    counted += (byte >> (7 - j)) & 1
            if counted != n_fresh[b]:
                fail(status, BAD_BITMAP, b)
                return out
        for b in range(lo, hi):
            k = fresh_before[b]
            if set_kind[b] == CODE_SET_BITMAP:  # bit 7 - j of byte i: value 255 - (8i + j)
                for i in range(32):
                    byte = raw[set_at[b] + i]
                    for j in range(8):
                        if (byte >> (7 - j)) & 1:
                            codes[k] = 255 - (8 * i + j)
                            k += 1
            else:  # walking down from 255: skip `skip` values, take `take`
                value = 255
                for r in range(set_kind[b]):
                    value -= raw[set_at[b] + 2 * r]
                    for _ in range(raw[set_at[b] + 2 * r + 1]):
                        codes[k] = value
                        value -= 1
                        k += 1
        lo = hi

    # each block's merges: its fresh ones (the k-th fresh code gets the k-th pair), then its recycled ones
    m_total = fresh_total + recycled_total
    code = np.empty(m_total, dtype=np.uint8)
    left = np.empty(m_total, dtype=np.uint8)
    right = np.empty(m_total, dtype=np.uint8)
    esc_mark = np.zeros(nb, dtype=np.uint8)
    m = 0
    fresh = 0
    recycled = 0
    mark = 0
    for b in range(nb):
        for _ in range(n_fresh[b]):
            code[m] = codes[fresh]
            left[m] = raw[fresh_at + 2 * fresh]
            right[m] = raw[fresh_at + 2 * fresh + 1]
            fresh += 1
            m += 1
        for _ in range(n_merges[b] - n_fresh[b]):
            code[m] = raw[recycled_at + 3 * recycled]
            left[m] = raw[recycled_at + 3 * recycled + 1]
            right[m] = raw[recycled_at + 3 * recycled + 2]
            recycled += 1
            m += 1
        if n_escaped[b]:
            esc_mark[b] = raw[marks_at + mark]
            mark += 1
    payload = raw[payload_at:end]
    literals = raw[literals_at:payload_at]
    out = decode_blocks(
        orig_len, n_merges, n_fresh, code, left, right, payload_len, payload, n_escaped, esc_mark, literals, budget,
        status, out
    )  # fmt: skip
    if status[0] == OK and content_crc != NO_CRC and _crc32(out[:orig_size], 0) != content_crc:
        fail(status, CONTENT_CRC, 0)
    return out


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
    ``zlib.crc32``'s, checked in the kernels where the processor has the carry-less
    multiply, else here with ``zlib.crc32``."""
    raw = np.frombuffer(body, dtype=np.uint8)
    if raw.flags.writeable:  # one array type for the kernels, so they are compiled once
        raw = raw.view()
        raw.flags.writeable = False
    size, nb = header.orig_size, header.n_blocks
    start = zlib.crc32(header.header)
    if CRC_IN_KERNEL:
        total = frame_check(raw, start, header.frame_crc, nb)
        content_crc = header.content_crc
    else:
        total = frame_check(raw, start, NO_CRC, nb) if zlib.crc32(body, start) == header.frame_crc else -1
        content_crc = NO_CRC
    if total == -1:
        raise CorruptDataError(f"frame {frame_index}: compressed data is corrupt (frame checksum mismatch)")
    out = _NO_OUTPUT  # the kernel makes its own, once the columns and merges passed
    if into is not None and total == size:
        out = into(size)
    status = np.zeros(5, dtype=np.int64)
    out = decode_body(raw, nb, size, node_budget(size), CODES_PER_RUN, status, out, content_crc)
    if status[0] != OK:
        raise _error(status, first_block, nb, f"frame {frame_index}")
    out = out[:size]
    if not CRC_IN_KERNEL and zlib.crc32(out.data) != header.content_crc:
        raise CorruptDataError(f"frame {frame_index}: decoded data fails its CRC-32 check")
    return out


_NO_OUTPUT = np.empty(0, dtype=np.uint8)


def load_kernels() -> None:
    """Compile, or load from numba's cache, the kernels :func:`decode_frame_body` calls, on
    arrays of our own, before any caller's buffer is passed to them.

    A call that compiles or loads a kernel can leave numba's frames, which hold that
    call's arguments, in a reference cycle until the collector runs: had they held a view
    of a ``bytearray`` (``BytePairDecompressor``'s input), it could not be resized then."""
    raw = np.zeros(0, dtype=np.uint8)
    raw.flags.writeable = False
    frame_check(raw, 0, NO_CRC, 0)
    decode_body(raw, 1, 1, node_budget(1), CODES_PER_RUN, np.zeros(5, dtype=np.int64), _NO_OUTPUT, NO_CRC)


def _ints(values: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int64]:
    """*values* as a writable contiguous int64 array (a copy if need be; these columns hold
    one item per block or merge): the types ``decode_body`` passes, so that the kernels
    are compiled once for both callers."""
    if values.dtype == np.int64 and values.flags.c_contiguous and values.flags.writeable:
        return values  # type: ignore[return-value]
    return np.array(values, dtype=np.int64)


def _small_bytes(values: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """*values* as a writable contiguous uint8 array (see ``_ints``)."""
    if values.dtype == np.uint8 and values.flags.c_contiguous and values.flags.writeable:
        return values
    return np.array(values, dtype=np.uint8)


def _bytes(values: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """*values* as a contiguous read-only uint8 array, without a copy where it is one
    already (payloads and escaped bytes: views of the frame body in ``decode_body``)."""
    arr = np.ascontiguousarray(values, dtype=np.uint8).view()
    arr.flags.writeable = False
    return arr


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
        node_budget(total), status, _NO_OUTPUT
    )  # fmt: skip
    if status[0] != OK:
        raise _error(status, t.first_block, nb)
    return out[:total]


def _check_columns(t: PairTables, esc: Escapes) -> None:
    """The columns agree in length (the container builds them so): the kernels rely on it."""
    nb = len(t.orig_len)
    if not (
        len(t.n_merges) == len(t.n_fresh) == len(t.payload_len) == len(esc.count) == len(esc.mark) == nb
        and len(t.code) == len(t.left) == len(t.right) == int(t.n_merges.sum())
        and len(t.payload) == int(t.payload_len.sum())
        and len(esc.literals) == int(esc.count.sum())
        and not np.count_nonzero((t.n_fresh < 0) | (t.n_fresh > t.n_merges) | (t.n_merges < 0) | (esc.count < 0))
    ):
        raise ValueError("PairTables columns disagree in length")


def _error(status: npt.NDArray[np.int64], first_block: int, n_blocks: int, frame: str = "") -> CorruptDataError:
    """The numpy decoder's error for what *status* reports (*frame*: "frame N", for the body's columns)."""
    kind, b, x, y, z = status.tolist()
    block = f"block {first_block + b}"
    messages = {
        BAD_PAYLOAD_LEN: "a block's payload is empty or longer than the block",
        FRESH_TWICE: "pair table lists a fresh code twice",
        FORWARD_REF: f"{block}: pair code {x} (merge {y}) uses code {z} before it is defined",
        TOO_LONG: f"{block}: pair code {x} expands to more than the block's {y} bytes",
        OVER_BUDGET: f"blocks {first_block}..{first_block + n_blocks - 1}: pair tables expand to "
        f"{x} bytes or more, more than {NODE_BUDGET}x the data they describe",
        WRONG_TOTAL: f"{block}: expands to {x} bytes, header says {y}",
        ESCAPE_COUNT: f"{block}: holds its escape mark {x} times, its header says {y} escaped bytes",
        SHORT_BODY: f"{frame}: body is shorter than its columns",
        CONTENT_CRC: f"{frame}: decoded data fails its CRC-32 check",
        LONG_BODY: f"{frame}: {x} bytes after the last payload",
        BAD_LENGTHS: f"{block}: impossible lengths in the block header",
        WRONG_SIZE: f"{frame}: blocks hold {x} bytes, frame header says {y}",
        BAD_SET_HEADER: f"{block}: impossible code-set header",
        BAD_RUNS: f"{block}: fresh code runs do not describe its codes",
        BAD_BITMAP: f"{block}: code bitmap does not match its code count",
    }
    return CorruptDataError(messages[kind])
