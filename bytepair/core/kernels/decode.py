"""The compiled decoder: a run of blocks (``PairTables``) back to bytes, in numba.

The same contract as :func:`bytepair.core.expand.expand`, which stays the
portable path and the reference this one is tested against: the same output,
and for bad tables the same exception class (``CorruptDataError``) with the
same messages. Imported only after ``jit.use_numba`` said yes.

:func:`decode_blocks` works in two passes over the blocks:

1. **Validate**, writing nothing: per block, the fresh codes are distinct; each
   merge, in creation order, uses only literals and codes already defined (a
   fresh code before its merge is a forward reference, or a cycle); no merge
   expands to more than its block holds; all merges of the run together stay
   within the frame's budget (``node_budget``); the payload expands to exactly
   ``orig_len`` bytes. Lengths are checked as they are computed, so none can
   grow past a block (a 255-deep doubling chain stops at its first long code).
2. **Write**, block by block: each merge's expansion, in creation order, into a
   table (operands resolve to the definition current at that time, so a
   recycled code is simply redefined); then each payload symbol's expansion,
   copied 16 bytes at a time into the output, which has 16 spare bytes at its
   end. A short expansion writes past its end; the next symbol overwrites that.
   Then the block's escapes are put back.

A kernel cannot raise a useful exception, so it returns a status (what went
wrong, in which block, with which values) and :func:`expand` raises from it.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from numba.core import cgutils, types
from numba.extending import intrinsic

from ..._errors import CorruptDataError
from ..escape import Escapes
from ..expand import NODE_BUDGET, node_budget
from ..tables import PairTables

__all__ = ["check_blocks", "expand", "write_blocks"]

W = 16
"""Bytes per copy: one 16-byte load and store, however short the expansion."""

# what went wrong: status[0]; the block: status[1]; details: status[2:]
OK = 0
BAD_PAYLOAD_LEN = 1  # a payload empty or longer than its block
FRESH_TWICE = 2  # a fresh code listed twice in a block
FORWARD_REF = 3  # (code, merge, operand): an operand that is a fresh code not defined yet
TOO_LONG = 4  # (code,): a merge expands to more than its block
OVER_BUDGET = 5  # (bytes,): the merges of the run expand to more than the budget
WRONG_TOTAL = 6  # (total,): a block expands to another length than its header says
ESCAPE_COUNT = 7  # (held,): a block holds its escape mark another number of times than it has escaped bytes


@intrinsic
def _move16(typingctx: Any, dst: Any, d: Any, src: Any, s: Any) -> Any:
    """``memmove(&dst[d], &src[s], 16)``: LLVM makes it one 16-byte load and one store."""
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
    def copy16(dst: npt.NDArray[np.uint8], d: int, src: npt.NDArray[np.uint8], s: int) -> None:
        for i in range(W):
            dst[d + i] = src[s + i]

else:

    @numba.njit(cache=True, nogil=True)
    def copy16(dst: npt.NDArray[np.uint8], d: int, src: npt.NDArray[np.uint8], s: int) -> None:
        """``dst[d : d + 16] = src[s : s + 16]``, both ranges inside their arrays.

        One 16-byte move: about 0.55 ns a symbol where a loop of 16 byte copies
        took 3-6.5 ns (numba checks each signed index for wrap-around).
        """
        _move16(dst, d, src, s)  # type: ignore[call-arg]


@numba.njit(cache=True, nogil=True)
def copy_over(dst: npt.NDArray[np.uint8], d: int, src: npt.NDArray[np.uint8], s: int, n: int) -> None:
    """Copy *n* bytes in 16-byte pieces: writes up to 15 bytes past ``d + n``."""
    copy16(dst, d, src, s)
    k = W
    while k < n:
        copy16(dst, d + k, src, s + k)
        k += W


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
) -> int:
    """Pass 1: validate every block, writing nothing but *status*.

    Returns the most bytes one block's merges expand to (the size of pass 2's
    table), or -1 with *status* saying what is wrong.
    """
    nb = len(orig_len)
    for b in range(nb):
        if payload_len[b] < 1 or payload_len[b] > orig_len[b]:
            status[0] = BAD_PAYLOAD_LEN
            status[1] = b
            return -1
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
                status[0] = FRESH_TWICE
                status[1] = b
                return -1
            pending[code[m]] = True
        block_nodes = 0
        for m in range(m0, m0 + n_merges[b]):
            lv, rv = left[m], right[m]
            if pending[lv] or pending[rv]:
                status[0] = FORWARD_REF
                status[1] = b
                status[2] = code[m]
                status[3] = m - m0
                status[4] = lv if pending[lv] else rv
                return -1
            n = length[lv] + length[rv]
            if n > size:
                status[0] = TOO_LONG
                status[1] = b
                status[2] = code[m]
                return -1
            spent += n
            if spent > budget:
                status[0] = OVER_BUDGET
                status[1] = b
                status[2] = spent
                return -1
            length[code[m]] = n
            marks[code[m]] = marks[lv] + marks[rv]
            pending[code[m]] = False
            block_nodes += n
        total = 0
        held = 0
        if esc_count[b]:
            for p in range(p0, p0 + payload_len[b]):
                total += length[payload[p]]
                held += marks[payload[p]]
        else:
            for p in range(p0, p0 + payload_len[b]):
                total += length[payload[p]]
        if total != size:
            status[0] = WRONG_TOTAL
            status[1] = b
            status[2] = total
            return -1
        if held != esc_count[b]:
            status[0] = ESCAPE_COUNT
            status[1] = b
            status[2] = held
            return -1
        most = max(most, block_nodes)
        m0 += n_merges[b]
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
) -> None:
    """Pass 2: write every block into *out* (its length plus 16 spare bytes), escapes
    restored; only after :func:`check_blocks` passed, which makes every copy fit."""
    # table[0:256] holds the literals, then a block's merges' expansions back to back
    table = np.empty(256 + most_nodes + 2 * W, dtype=np.uint8)
    for v in range(256):
        table[v] = v
    start = np.empty(256, dtype=np.int64)  # where each byte value's expansion starts in table
    length = np.empty(256, dtype=np.int64)
    # where the escape marks are in each expansion: marks[v] offsets from mark_at[mark_start[v]] on
    mark_at = np.empty(most_nodes + 1, dtype=np.int64)
    mark_start = np.zeros(256, dtype=np.int64)
    marks = np.zeros(256, dtype=np.int64)
    m0 = 0
    p0 = 0
    d = 0  # where the next byte goes in out
    lit = 0  # the next escaped byte
    for b in range(len(orig_len)):
        escaping = esc_count[b] > 0
        if n_merges[b] == 0 and not escaping:  # a stored block: its payload is its data
            out[d : d + payload_len[b]] = payload[p0 : p0 + payload_len[b]]
            d += payload_len[b]
            p0 += payload_len[b]
            continue
        for v in range(256):
            start[v] = v
            length[v] = 1
            marks[v] = 0
        if escaping:
            marks[esc_mark[b]] = 1
            mark_start[esc_mark[b]] = 0
            mark_at[0] = 0
        at = 256
        mark_end = 1
        for m in range(m0, m0 + n_merges[b]):
            lv, rv = left[m], right[m]
            # read both operands before redefining the code (it may be one of them)
            ls, ln, rs, rn = start[lv], length[lv], start[rv], length[rv]
            copy_over(table, at, table, ls, ln)
            copy_over(table, at + ln, table, rs, rn)
            c = code[m]
            if escaping:
                lm, rm = mark_start[lv], mark_start[rv]
                first = mark_end
                for j in range(lm, lm + marks[lv]):
                    mark_at[mark_end] = mark_at[j]
                    mark_end += 1
                for j in range(rm, rm + marks[rv]):
                    mark_at[mark_end] = mark_at[j] + ln
                    mark_end += 1
                mark_start[c] = first
                marks[c] = mark_end - first
            start[c] = at
            length[c] = ln + rn
            at += ln + rn
        for p in range(p0, p0 + payload_len[b]):
            v = payload[p]
            copy_over(out, d, table, start[v], length[v])
            if marks[v]:  # put back the escaped bytes this expansion covers
                for j in range(mark_start[v], mark_start[v] + marks[v]):
                    out[d + mark_at[j]] = esc_literals[lit]
                    lit += 1
            d += length[v]
        m0 += n_merges[b]
        p0 += payload_len[b]


def _ints(values: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int64]:
    """*values* as a contiguous read-only int64 array: one compiled variant for every caller."""
    arr = np.ascontiguousarray(values, dtype=np.int64).view()
    arr.flags.writeable = False
    return arr


def _bytes(values: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """*values* as a contiguous read-only uint8 array (see ``_ints``)."""
    arr = np.ascontiguousarray(values, dtype=np.uint8).view()
    arr.flags.writeable = False
    return arr


def expand(t: PairTables) -> npt.NDArray[np.uint8]:
    """Decode a run of blocks: ``bytepair.core.expand.expand``, compiled."""
    nb = len(t.orig_len)
    total = int(t.orig_len.sum())
    esc = t.escapes if t.escapes is not None else Escapes.none(nb)
    _check_columns(t, esc)
    orig_len, n_merges, n_fresh, payload_len, esc_count = map(
        _ints, (t.orig_len, t.n_merges, t.n_fresh, t.payload_len, esc.count)
    )
    code, left, right, payload, esc_mark, esc_literals = map(
        _bytes, (t.code, t.left, t.right, t.payload, esc.mark, esc.literals)
    )
    status = np.zeros(5, dtype=np.int64)
    most = check_blocks(
        orig_len,
        n_merges,
        n_fresh,
        code,
        left,
        right,
        payload_len,
        payload,
        esc_count,
        esc_mark,
        node_budget(total),
        status,
    )
    if most < 0:
        raise _error(t, status)
    out = np.empty(total + W, dtype=np.uint8)
    write_blocks(
        orig_len, n_merges, code, left, right, payload_len, payload, esc_count, esc_mark, esc_literals, most, out
    )
    return out[:total]


def _check_columns(t: PairTables, esc: Escapes) -> None:
    """The columns agree in length (the container builds them so): the kernels rely on it."""
    nb = len(t.orig_len)
    if not (
        len(t.n_merges) == len(t.n_fresh) == len(t.payload_len) == len(esc.count) == len(esc.mark) == nb
        and len(t.code) == len(t.left) == len(t.right) == int(t.n_merges.sum())
        and len(t.payload) == int(t.payload_len.sum())
        and len(esc.literals) == int(esc.count.sum())
        and not np.count_nonzero((t.n_fresh < 0) | (t.n_fresh > t.n_merges) | (esc.count < 0))
    ):
        raise ValueError("PairTables columns disagree in length")


def _error(t: PairTables, status: npt.NDArray[np.int64]) -> CorruptDataError:
    """The numpy decoder's error for what *status* reports."""
    kind, b, x, y, z = status.tolist()
    block = f"block {t.first_block + b}"
    size = int(t.orig_len[b])
    if kind == BAD_PAYLOAD_LEN:
        return CorruptDataError("a block's payload is empty or longer than the block")
    if kind == FRESH_TWICE:
        return CorruptDataError("pair table lists a fresh code twice")
    if kind == FORWARD_REF:
        return CorruptDataError(f"{block}: pair code {x} (merge {y}) uses code {z} before it is defined")
    if kind == TOO_LONG:
        return CorruptDataError(f"{block}: pair code {x} expands to more than the block's {size} bytes")
    if kind == OVER_BUDGET:
        last = t.first_block + len(t.orig_len) - 1
        return CorruptDataError(
            f"blocks {t.first_block}..{last}: pair tables expand to "
            f"{x} bytes or more, more than {NODE_BUDGET}x the data they describe"
        )
    if kind == WRONG_TOTAL:
        return CorruptDataError(f"{block}: expands to {x} bytes, header says {size}")
    if kind == ESCAPE_COUNT:
        count = int(t.escapes.count[b]) if t.escapes is not None else 0
        return CorruptDataError(f"{block}: holds its escape mark {x} times, its header says {count} escaped bytes")
    raise AssertionError(f"unknown decoder status {kind}")
