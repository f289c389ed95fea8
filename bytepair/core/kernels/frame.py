"""The compiled packing of a frame: which blocks to store, and the frame's body.

Import only after :func:`bytepair.core.jit.use_numba` returned True (numba is
imported here). :func:`pack_frame_body` writes exactly the body that
``container.format.pack_frame(container.codec._assemble(...))`` writes; tests hold
the two to each other. With the engine compiled, those numpy passes (some sixty
numpy calls) were a fixed half millisecond or more a frame, a tenth of the time
on files of a few hundred kilobytes; one loop over the blocks costs a few
microseconds.

The body (docs/FORMAT.md), one column after the other: every block's header
fields (orig_len u16, payload_len u16, n_fresh u8, n_recycled u8, code-set kind
u8, n_escaped u16), the code sets, the escape marks, the fresh pairs
(left, right), the recycled merges (code, left, right), the escaped bytes, the
payloads.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from ...container.format import BLOCK_HEADER_SIZE, CODE_SET_BITMAP, MAX_RUNS
from ..engine import EncodedBlocks
from ..escape import BYTES_PER_FREE_CODE, Escapes
from ..params import MAX_BLOCK_SIZE, Params
from .encode import _encode
from .prepare import _split_escapes

__all__ = ["block_costs", "encode_frame_body", "pack_frame_body"]


def pack_frame_body(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], enc: EncodedBlocks, esc: Escapes, budget: int
) -> tuple[npt.NDArray[np.uint8], int]:
    """The body of the frame holding the blocks ``data[bounds[k]:bounds[k + 1]]`` as *enc*
    encoded them (with the escapes *esc*), and its number of blocks.

    As ``codec._assemble``: blocks that encoding does not shrink are stored, and enough
    of the others (most expansion bytes first) to keep the frame's code expansions
    within *budget* bytes; runs of stored blocks become as few blocks as they can.
    """
    body, n_blocks = _pack(
        data,
        bounds,
        enc.n_merges,
        enc.n_fresh,
        enc.code,
        enc.left,
        enc.right,
        enc.expansion,
        enc.payload_len,
        enc.payload,
        esc.count,
        esc.mark,
        esc.literals,
        budget,
    )
    return body, int(n_blocks)


def encode_frame_body(data: npt.NDArray[np.uint8], params: Params, budget: int) -> tuple[npt.NDArray[np.uint8], int]:
    """The body of *data*'s frame and its number of blocks, for *params* of one cutting
    without the escape trial: ``split_and_find_escapes``, ``encode.encode_blocks`` and
    :func:`pack_frame_body` in one call (the same body). Between the three, Python's
    checks, arguments and result objects cost more than a small file's whole encoding
    when caches are cold (grammar.lsp: about 0.1 ms of 0.35)."""
    body, n_blocks = _encode_frame(
        np.ascontiguousarray(data, dtype=np.uint8),
        params.block_size,
        params.max_distinct,
        params.escape_limit,
        BYTES_PER_FREE_CODE,
        params.threshold,
        params.recycle,
        params.merges_per_step,
        budget,
    )
    return body, int(n_blocks)


@numba.njit(cache=True, nogil=True)
def _encode_frame(  # type: ignore[no-untyped-def]
    data, block_size, max_distinct, escape_limit, bytes_per_free_code, threshold, recycle, merges_per_step, budget
):
    """Cut *data* into blocks and escape them, encode them, pack the frame's body.

    numba's cache holds this function's code with the engine and the cutting compiled
    into it, and checks only this file's time stamp: after a change to ``encode.py`` or
    ``prepare.py`` alone, a cached copy would run the old kernels (the same bytes, the
    old speed). ``jit.kernels_folder`` names the cache's folder by a digest of every
    kernel's source for that; a harness loading kernels some other way needs a fresh
    ``NUMBA_CACHE_DIR``."""
    bounds, esc_count, esc_mark, literals, changed = _split_escapes(
        data, block_size, max_distinct, escape_limit, bytes_per_free_code
    )
    n_merges, n_fresh, code, left, right, _, expansion, payload_len, payload = _encode(
        changed if len(literals) else data, bounds, threshold, recycle, -1, merges_per_step
    )
    return _pack(
        data,
        bounds,
        n_merges,
        n_fresh,
        code,
        left,
        right,
        expansion,
        payload_len,
        payload,
        esc_count,
        esc_mark,
        literals,
        budget,
    )


def block_costs(enc: EncodedBlocks) -> npt.NDArray[np.int64]:
    """``codec.block_costs``, compiled: body bytes each block costs beyond its header and escapes."""
    costs: npt.NDArray[np.int64] = _block_costs(enc.n_merges, enc.n_fresh, enc.code, enc.payload_len)
    return costs


@numba.njit(cache=True, nogil=True)
def _code_set_runs(code, first, n_fresh):  # type: ignore[no-untyped-def]
    """How many descending runs the fresh codes ``code[first:first + n_fresh]`` form."""
    runs = 0
    previous = 256
    for m in range(first, first + n_fresh):
        if m == first or previous - code[m] != 1:  # a block's first code always starts a run
            runs += 1
        previous = code[m]
    return runs


@numba.njit(cache=True, nogil=True)
def _block_costs(n_merges, n_fresh, code, payload_len):  # type: ignore[no-untyped-def]
    costs = np.empty(len(n_merges), dtype=np.int64)
    first = 0
    for b in range(len(n_merges)):
        runs = _code_set_runs(code, first, n_fresh[b])
        code_set = 32 if runs > MAX_RUNS else 2 * runs
        costs[b] = payload_len[b] + 2 * n_fresh[b] + 3 * (n_merges[b] - n_fresh[b]) + code_set
        first += n_merges[b]
    return costs


@numba.njit(cache=True, nogil=True)
def _stored(bounds, n_merges, n_fresh, code, expansion, payload_len, esc_count, budget):  # type: ignore[no-untyped-def]
    """``codec._stored_blocks``: the blocks to store as they are."""
    nb = len(bounds) - 1
    costs = _block_costs(n_merges, n_fresh, code, payload_len)
    stored = np.zeros(nb, dtype=np.bool_)
    node_bytes = np.zeros(nb, dtype=np.int64)
    kept_bytes = 0
    first = 0
    for b in range(nb):
        escape_cost = esc_count[b] + (1 if esc_count[b] > 0 else 0)
        stored[b] = costs[b] + escape_cost + BLOCK_HEADER_SIZE >= bounds[b + 1] - bounds[b]
        for m in range(first, first + n_merges[b]):
            node_bytes[b] += expansion[m]
        first += n_merges[b]
        if not stored[b]:
            kept_bytes += node_bytes[b]
    if kept_bytes > budget:  # most expansion bytes first, ties by block order
        for b in np.argsort(-node_bytes, kind="mergesort"):
            if not stored[b]:
                stored[b] = True
                kept_bytes -= node_bytes[b]
            if kept_bytes <= budget:
                break
    return stored


@numba.njit(cache=True, nogil=True)
def _pack(  # type: ignore[no-untyped-def]
    data,
    bounds,
    n_merges,
    n_fresh,
    code,
    left,
    right,
    expansion,
    payload_len,
    payload,
    esc_count,
    esc_mark,
    literals,
    budget,
):
    nb = len(bounds) - 1
    stored = _stored(bounds, n_merges, n_fresh, code, expansion, payload_len, esc_count, budget)
    # the frame's blocks: an encoded block's index, or -1 and the bytes [lo, hi) stored
    # (a run of stored blocks never needs more blocks than it holds: each is at most 64 KiB)
    source = np.empty(nb, dtype=np.int64)
    lo = np.empty(nb, dtype=np.int64)
    hi = np.empty(nb, dtype=np.int64)
    merge_at = np.empty(nb, dtype=np.int64)
    payload_at = np.empty(nb, dtype=np.int64)
    literal_at = np.empty(nb, dtype=np.int64)
    n_runs = np.zeros(nb, dtype=np.int64)
    out = 0
    size = 0
    merge = 0
    pay = 0
    lit = 0
    b = 0
    while b < nb:
        merge_at[b] = merge
        payload_at[b] = pay
        literal_at[b] = lit
        merge += n_merges[b]
        pay += payload_len[b]
        lit += esc_count[b]
        b += 1
    b = 0
    while b < nb:
        if not stored[b]:
            source[out] = b
            n_runs[b] = _code_set_runs(code, merge_at[b], n_fresh[b])
            code_set = 32 if n_runs[b] > MAX_RUNS else 2 * n_runs[b]
            n_recycled = n_merges[b] - n_fresh[b]
            mark = 1 if esc_count[b] > 0 else 0
            size += BLOCK_HEADER_SIZE + code_set + mark + 2 * n_fresh[b] + 3 * n_recycled
            size += esc_count[b] + payload_len[b]
            out += 1
            b += 1
            continue
        end = b
        while end < nb and stored[end]:
            end += 1
        start = bounds[b]
        while start < bounds[end]:
            source[out] = -1
            lo[out] = start
            hi[out] = min(start + MAX_BLOCK_SIZE, bounds[end])
            size += BLOCK_HEADER_SIZE + hi[out] - lo[out]
            start = hi[out]
            out += 1
        b = end

    body = np.zeros(size, dtype=np.uint8)
    at = 0
    for k in range(out):  # orig_len, then payload_len, u16 little-endian
        b = source[k]
        length = bounds[b + 1] - bounds[b] if b >= 0 else hi[k] - lo[k]
        body[at + 2 * k] = length & 0xFF
        body[at + 2 * k + 1] = (length >> 8) & 0xFF
    at += 2 * out
    for k in range(out):
        b = source[k]
        length = payload_len[b] if b >= 0 else hi[k] - lo[k]
        body[at + 2 * k] = length & 0xFF
        body[at + 2 * k + 1] = (length >> 8) & 0xFF
    at += 2 * out
    for k in range(out):  # n_fresh, n_recycled, code-set kind: u8
        b = source[k]
        if b >= 0:
            body[at + k] = n_fresh[b] & 0xFF
            body[at + out + k] = (n_merges[b] - n_fresh[b]) & 0xFF
            body[at + 2 * out + k] = CODE_SET_BITMAP if n_runs[b] > MAX_RUNS else n_runs[b]
    at += 3 * out
    for k in range(out):  # n_escaped, u16
        b = source[k]
        if b >= 0:
            body[at + 2 * k] = esc_count[b] & 0xFF
            body[at + 2 * k + 1] = (esc_count[b] >> 8) & 0xFF
    at += 2 * out
    for k in range(out):  # code sets: (skip, take) per descending run, or a bitmap of 255 - code
        b = source[k]
        if b < 0 or n_fresh[b] == 0:
            continue
        first = merge_at[b]
        if n_runs[b] > MAX_RUNS:
            for m in range(first, first + n_fresh[b]):
                bit = 255 - code[m]
                body[at + (bit >> 3)] |= 0x80 >> (bit & 7)
            at += 32
            continue
        previous = 256
        for m in range(first, first + n_fresh[b]):
            if m == first or previous - code[m] != 1:
                body[at] = (previous - code[m] - 1) & 0xFF
                body[at + 1] = 1
                at += 2
            else:
                body[at - 1] += 1
            previous = code[m]
    for k in range(out):  # escape marks
        b = source[k]
        if b >= 0 and esc_count[b] > 0:
            body[at] = esc_mark[b]
            at += 1
    for k in range(out):  # fresh merges: left, right
        b = source[k]
        if b >= 0:
            for m in range(merge_at[b], merge_at[b] + n_fresh[b]):
                body[at] = left[m]
                body[at + 1] = right[m]
                at += 2
    for k in range(out):  # recycled merges: code, left, right
        b = source[k]
        if b >= 0:
            for m in range(merge_at[b] + n_fresh[b], merge_at[b] + n_merges[b]):
                body[at] = code[m]
                body[at + 1] = left[m]
                body[at + 2] = right[m]
                at += 3
    for k in range(out):  # escaped bytes
        b = source[k]
        if b >= 0:
            body[at : at + esc_count[b]] = literals[literal_at[b] : literal_at[b] + esc_count[b]]
            at += esc_count[b]
    for k in range(out):  # payloads: the encoded symbols, or the stored bytes
        b = source[k]
        if b >= 0:
            body[at : at + payload_len[b]] = payload[payload_at[b] : payload_at[b] + payload_len[b]]
            at += payload_len[b]
        else:
            body[at : at + hi[k] - lo[k]] = data[lo[k] : hi[k]]
            at += hi[k] - lo[k]
    return body, out
