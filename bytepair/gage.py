"""Philip Gage's 1994 file format: write files his ``expand.c`` reads, read files his ``compress.c`` wrote.

The format (C Users Journal, February 1994) is a bare sequence of blocks, each a
run-length coded pair table, a 2-byte big-endian packed size and the payload.
There is no header, no length and no checksum, so this module is an interchange
format, not the project's container: use :func:`bytepair.compress` for storage.

Writing uses the project's engine under the constraints of Gage's expander: no
code recycling (his table maps each byte value to one pair for the whole block),
no code whose expansion needs more than 30 stack slots (his stack holds 30), at
most 65535 payload bytes per block. Blocks that encoding does not shrink are
stored with an empty table and joined into blocks of up to 65535 bytes, so
incompressible data grows by 6 bytes per 64 KiB instead of his 1.5%.

Reading builds the decoder's columns (:class:`~bytepair.core.tables.PairTables`)
from the tables, ordering each block's codes so that operands come first, and
hands runs of blocks to the shared vectorised decoder (a table whose codes spell
out far more than its block (our writer never makes one) goes to the stack decoder
instead, to keep memory proportional to the output). Everything is validated
before anything is expanded: cycles and codes that refer to themselves, runs
past code 255, cuts inside a table, a size field or a payload, and the output
size against ``max_length``. The whole table is checked, not only the codes the
payload uses: a cycle among unused codes, or a code longer than its block's
whole output, cannot come from any writer and is reported as damage, although
Gage's expander would never look at them. Codes needing more than 30 stack
entries are read correctly (his own compressor writes them; his expander fails).

What cannot be detected, because the format carries no length or checksum:

* a file cut exactly at a block boundary (it is a valid, shorter file; the empty
  file is a valid file of no blocks), and blocks appended to a file;
* payload bytes changed to other byte values (any byte is a valid symbol), table
  entries changed to other valid pairs, a packed size changed so that the rest
  of the file still parses as blocks: of 1000 random one-byte changes to a
  compressed text, 998 decoded to wrong data without an error;
* a block whose expansion is larger than any writer makes but within
  :data:`MAX_BLOCK_OUTPUT`: the format bounds no expansion ratio (a 255-code
  doubling chain describes 2**255 bytes), so pass ``max_length`` when the input
  is untrusted.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from . import backend
from ._errors import CorruptDataError, OutputLimitError, TruncatedDataError
from .core.expand import NODE_BUDGET, NODE_SLACK, expand_reference
from .core.params import Params
from .core.tables import PairTables, concat_ranges, cumulative_sum, empty_for_sums
from .io.stream import as_byte_view

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "EMPTY_TABLE",
    "MAX_BLOCK_OUTPUT",
    "MAX_PACKED_SIZE",
    "MAX_STACK",
    "compress",
    "decompress",
    "iter_decompress",
]

DEFAULT_BLOCK_SIZE = 16384
"""Input bytes per block. Gage used 5000; his expander accepts any block whose
payload fits the 16-bit size, and 16 KiB blocks make files 2-4% smaller
(Canterbury 0.336 -> 0.322, Calgary 0.491 -> 0.481)."""

MAX_PACKED_SIZE = 65535
"""Largest payload the 2-byte size field can declare."""

MAX_STACK = 30
"""Entries of the stack in Gage's ``expand.c``; no code written may need more."""

MAX_BLOCK_OUTPUT = 1 << 20
"""Most bytes one block may expand to when reading. No writer makes blocks larger
than 65535 bytes (Gage's: 5000); this bounds what a few table bytes can demand."""

EMPTY_TABLE = b"\xfe\x7f\xfe\xff"
"""A pair table with no pairs, as Gage writes it: 127 literals, literal 127, 127 literals, literal 255."""

_EMPTY_BLOCK = EMPTY_TABLE + b"\x00\x00"
_CHUNK = 1 << 22  # input (writing) or output (reading) bytes handled per engine/decoder call
_CHUNK_BLOCKS = 4096  # blocks analysed together when reading; bounds the 256-entry tables


# -- writing --------------------------------------------------------------------


def _pack_table(leftcode: list[int], rightcode: list[int]) -> bytes:
    """Gage's ``filewrite`` table loop, transliterated so that his run caps (127
    literals, 128 pairs) and his absorption of a lone literal between two pair
    codes give the same bytes as his program for the same table."""
    out = bytearray()
    c = 0
    while c < 256:
        if leftcode[c] == c:
            n = 1
            c += 1
            while n < 127 and c < 256 and leftcode[c] == c:
                n += 1
                c += 1
            out.append(n + 127)
            if c == 256:
                break
            n = 0
        else:
            n = 0
            c += 1
            while (n < 127 and c < 256 and leftcode[c] != c) or (n < 125 and c < 254 and leftcode[c + 1] != c + 1):
                n += 1
                c += 1
            out.append(n)
            c -= n + 1
        for _ in range(n + 1):
            out.append(leftcode[c])
            if leftcode[c] != c:
                out.append(rightcode[c])
            c += 1
    return bytes(out)


def _block(table: bytes, payload: bytes | memoryview) -> list[bytes | memoryview]:
    return [table, len(payload).to_bytes(2, "big"), payload]


def _stored(view: memoryview, lo: int, hi: int) -> list[bytes | memoryview]:
    """Input bytes ``lo..hi`` as blocks with empty tables, at most 65535 bytes each."""
    parts: list[bytes | memoryview] = []
    for start in range(lo, hi, MAX_PACKED_SIZE):
        parts += _block(EMPTY_TABLE, view[start : min(start + MAX_PACKED_SIZE, hi)])
    return parts


def _encoded_blocks(arr: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], threshold: int) -> list[bytes | None]:
    """Every block as Gage's expander reads it (table, size, payload), or None where
    the engine found nothing to replace or the fast decoder's budget would be exceeded."""
    blocks: list[bytes | None] = []
    first = 0
    n_blocks = len(bounds) - 1
    while first < n_blocks:
        last = int(np.searchsorted(bounds, bounds[first] + _CHUNK, side="right")) - 1
        last = min(max(last, first + 1), n_blocks)
        base = int(bounds[first])
        enc = backend.encode_blocks(
            arr[base : int(bounds[last])],
            bounds[first : last + 1] - base,
            threshold=threshold,
            recycle=False,
            merges_per_step=1,  # Gage's program: one merge a step
            max_depth=MAX_STACK,
        )
        merge_end = np.cumsum(enc.n_merges).tolist()
        payload_end = np.cumsum(enc.payload_len).tolist()
        codes, lefts, rights = enc.code.tolist(), enc.left.tolist(), enc.right.tolist()
        # what the reader's fast decoder accepts, even for a block decoded on its own
        block_of_merge = np.repeat(np.arange(last - first), enc.n_merges)
        node_bytes = np.bincount(block_of_merge, weights=enc.expansion, minlength=last - first).tolist()
        block_len = np.diff(bounds[first : last + 1]).tolist()
        m_lo = p_lo = 0
        for k in range(last - first):
            m_hi, p_hi = merge_end[k], payload_end[k]
            if m_hi > m_lo and node_bytes[k] <= NODE_BUDGET * block_len[k] + NODE_SLACK:
                leftcode = list(range(256))
                rightcode = [0] * 256
                for c, left, right in zip(codes[m_lo:m_hi], lefts[m_lo:m_hi], rights[m_lo:m_hi], strict=True):
                    leftcode[c] = left
                    rightcode[c] = right
                blocks.append(b"".join(_block(_pack_table(leftcode, rightcode), enc.payload[p_lo:p_hi].tobytes())))
            else:
                blocks.append(None)
            m_lo, p_lo = m_hi, p_hi
        first = last
    return blocks


def _choose_stored(encoded: list[bytes | None], block_len: list[int]) -> list[bool]:
    """Which blocks to store rather than encode, for the smallest file.

    Stored blocks join their stored neighbours under one 6-byte header, so the
    choice is a shortest path over (block, stored or not).
    """
    header = len(_EMPTY_BLOCK)
    inf = float("inf")
    cost_enc, cost_raw = 0.0, inf  # the file so far, its last block encoded / stored
    came_from: list[tuple[bool, bool]] = []  # (previous stored?) for each choice of this block
    for enc, size in zip(encoded, block_len, strict=True):
        via_enc = len(enc) + min(cost_enc, cost_raw) if enc is not None else inf
        enc_prev_raw = cost_raw < cost_enc
        raw_prev_raw = cost_raw <= cost_enc + header
        via_raw = size + (cost_raw if raw_prev_raw else cost_enc + header)
        came_from.append((enc_prev_raw, raw_prev_raw))
        cost_enc, cost_raw = via_enc, via_raw
    stored = [False] * len(encoded)
    last_raw = cost_raw <= cost_enc
    for k in range(len(encoded) - 1, -1, -1):
        stored[k] = last_raw
        last_raw = came_from[k][1] if last_raw else came_from[k][0]
    return stored


def compress(
    data: object,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    max_distinct: int = 200,
    threshold: int = 3,
) -> bytes:
    """Compress a bytes-like object into Gage's format, readable by his 1994 ``expand.c``.

    *block_size* (1-65535), *max_distinct* (1-255) and *threshold* (>= 2) mean what
    they mean for :func:`bytepair.compress`; Gage's own values are 5000, 200, 3.
    """
    params = Params(block_size=block_size, max_distinct=max_distinct, threshold=threshold, recycle=False)
    view = as_byte_view(data)
    arr = np.frombuffer(view, dtype=np.uint8)
    if not len(arr):
        return _EMPTY_BLOCK
    bounds = backend.split_blocks(arr, params.block_size, params.max_distinct)
    encoded = _encoded_blocks(arr, bounds, params.threshold)
    stored = _choose_stored(encoded, np.diff(bounds).tolist())
    parts: list[bytes | memoryview] = []
    pending = 0  # input from here on is not written yet; what an encoded block skips over is stored
    for k, enc in enumerate(encoded):
        if not stored[k]:
            assert enc is not None
            parts += _stored(view, pending, int(bounds[k]))
            parts.append(enc)
            pending = int(bounds[k + 1])
    parts += _stored(view, pending, len(arr))
    return b"".join(parts)


# -- reading --------------------------------------------------------------------


@dataclasses.dataclass
class _Parsed:
    """Every block of a file, as parsed: pair codes block-major, payload positions."""

    n_codes: npt.NDArray[np.int64]
    code: npt.NDArray[np.int64]
    left: npt.NDArray[np.int64]
    right: npt.NDArray[np.int64]
    payload_start: npt.NDArray[np.int64]
    payload_len: npt.NDArray[np.int64]


class _Incomplete(Exception):
    """The data so far ends inside a block: more may come (``_parse`` with ``final=False``)."""


def _parse(buf: bytes, final: bool = True, first_block: int = 0) -> tuple[_Parsed, int]:
    """Walk the blocks as Gage's expander does, refusing what would make it loop or overrun.

    Returns the blocks and the offset where the last whole one ends. With *final*
    false a cut inside the last block is not an error: that block is left for a
    call with more data (the format has no lengths, so a reader fed in pieces
    finds the end of a block only by parsing it). *first_block* numbers the
    blocks in messages.
    """
    n = len(buf)
    codes = bytearray()
    lefts = bytearray()
    rights = bytearray()
    n_codes: list[int] = []
    starts: list[int] = []
    sizes: list[int] = []
    pos = 0
    while pos < n:
        block = first_block + len(starts)
        block_at = pos
        first_code = len(codes)
        try:
            if buf.startswith(EMPTY_TABLE, pos):
                pos += len(EMPTY_TABLE)
            else:
                c = 0
                while True:
                    if pos >= n:
                        raise _cut(final, block_at, f"block {block}: data ends inside the pair table, at code {c}")
                    count = buf[pos]
                    pos += 1
                    if count > 127:
                        c += count - 127
                        if c >= 256:
                            if c > 256:
                                raise CorruptDataError(f"block {block}: pair table runs past code 255 (to {c - 1})")
                            break
                        count = 0
                    elif c + count > 255:
                        raise CorruptDataError(f"block {block}: pair table runs past code 255 (to {c + count})")
                    end = c + count + 1
                    while c < end:
                        if pos >= n:
                            raise _cut(final, block_at, f"block {block}: data ends inside the pair table, at code {c}")
                        left = buf[pos]
                        pos += 1
                        if left != c:
                            if pos >= n:
                                raise _cut(
                                    final, block_at, f"block {block}: data ends inside the pair table, at code {c}"
                                )
                            codes.append(c)
                            lefts.append(left)
                            rights.append(buf[pos])
                            pos += 1
                        c += 1
                    if c == 256:
                        break
            if pos + 2 > n:
                raise _cut(final, block_at, f"block {block}: data ends inside the packed size")
            size = buf[pos] << 8 | buf[pos + 1]
            pos += 2
            if pos + size > n:
                raise _cut(final, block_at, f"block {block}: packed size is {size} bytes, only {n - pos} left")
            n_codes.append(len(codes) - first_code)
            starts.append(pos)
            sizes.append(size)
            pos += size
        except _Incomplete:  # the last block is not all there yet: leave it for the next call
            del codes[first_code:], lefts[first_code:], rights[first_code:]
            pos = block_at
            break

    def column(values: bytearray | list[int]) -> npt.NDArray[np.int64]:
        if isinstance(values, bytearray):
            return np.frombuffer(values, dtype=np.uint8).astype(np.int64)
        return np.asarray(values, dtype=np.int64)

    parsed = _Parsed(column(n_codes), column(codes), column(lefts), column(rights), column(starts), column(sizes))
    return parsed, pos


def _cut(final: bool, block_at: int, message: str) -> Exception:
    """The error for data that ends inside the block starting at *block_at*."""
    return TruncatedDataError(message) if final else _Incomplete(block_at)


def _order_codes(
    nb: int,
    blk: npt.NDArray[np.int64],
    code: npt.NDArray[np.int64],
    left: npt.NDArray[np.int64],
    right: npt.NDArray[np.int64],
    first_block: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Level of every pair code (1 + its operands' highest) and the length of every
    (block, byte value), for all blocks together.

    Kahn's topological sort, one round per level: a code is settled once both its
    operands are, so each code is visited once. Codes never settled are in a cycle
    or depend on one.
    """
    self_ref = (left == code) | (right == code)
    if self_ref.any():
        m = int(np.argmax(self_ref))
        raise CorruptDataError(f"block {first_block + int(blk[m])}: pair code {int(code[m])} refers to itself")
    ci = blk * 256 + code
    li = blk * 256 + left
    ri = blk * 256 + right
    operands = np.concatenate((li, ri))
    users = np.tile(np.arange(len(ci), dtype=np.int64), 2)[np.argsort(operands, kind="stable")]
    n_users = np.bincount(operands, minlength=nb * 256)
    first_user = np.cumsum(n_users) - n_users
    is_code = np.zeros(nb * 256, dtype=np.bool_)
    is_code[ci] = True
    waiting = is_code[li].astype(np.int64) + is_code[ri]  # operands of each code not settled yet
    level = np.zeros(nb * 256, dtype=np.int64)
    length = np.ones(nb * 256, dtype=np.int64)
    cap = MAX_BLOCK_OUTPUT + 1  # lengths are clamped: a 255-code doubling chain means 2**255 bytes
    ready = np.flatnonzero(waiting == 0)
    settled = 0
    while len(ready):
        c = ci[ready]
        level[c] = np.maximum(level[li[ready]], level[ri[ready]]) + 1
        length[c] = np.minimum(length[li[ready]] + length[ri[ready]], cap)
        settled += len(ready)
        waiters = users[concat_ranges(first_user[c], n_users[c])]
        np.subtract.at(waiting, waiters, 1)
        ready = np.unique(waiters[waiting[waiters] == 0])
    if settled < len(ci):
        m = int(np.argmax(waiting > 0))
        raise CorruptDataError(
            f"block {first_block + int(blk[m])}: pair codes refer to each other in a cycle (code {int(code[m])})"
        )
    return level, length


def _decode_run(
    buf: npt.NDArray[np.uint8],
    p: _Parsed,
    code_start: npt.NDArray[np.int64],
    first: int,
    last: int,
    produced: int,
    max_length: int | None,
    base: int,
) -> Iterator[npt.NDArray[np.uint8]]:
    """Validate blocks ``first..last-1``, then expand them, yielding a few MiB of output per ``expand`` call.

    Output is yielded as it is made, never gathered: a few table bytes may spell a
    MiB of output, so a run of blocks may expand to gigabytes. *base* is the
    number of the file's first block in *p*, for messages.
    """
    nb = last - first
    n_codes = p.n_codes[first:last]
    c_lo, c_hi = int(code_start[first]), int(code_start[last])
    blk = np.repeat(np.arange(nb, dtype=np.int64), n_codes)
    code, left, right = p.code[c_lo:c_hi], p.left[c_lo:c_hi], p.right[c_lo:c_hi]
    level, length = _order_codes(nb, blk, code, left, right, base + first)

    payload_len = p.payload_len[first:last]
    symbols = buf[concat_ranges(p.payload_start[first:last], payload_len)]
    sym_len = length[np.repeat(np.arange(nb, dtype=np.int64), payload_len) * 256 + symbols]
    ends = empty_for_sums(len(sym_len) + 1)
    ends[0] = 0
    cumulative_sum(sym_len, out=ends[1:])
    orig_len = np.diff(ends[np.concatenate(([0], np.cumsum(payload_len)))])
    if max_length is not None and produced + int(orig_len.sum()) > max_length:
        raise OutputLimitError(f"output would exceed max_length={max_length} bytes (block {base + first} onwards)")
    too_big = orig_len > MAX_BLOCK_OUTPUT  # lengths are clamped just above this, so sums stay small
    if too_big.any():
        b = int(np.argmax(too_big))
        raise CorruptDataError(
            f"block {base + first + b}: expands to more than {MAX_BLOCK_OUTPUT} bytes, more than any writer makes"
        )
    # bytes the codes spell out beyond what the fast decoder allows per output byte: a
    # batch may hold NODE_SLACK of them; a block with more (our writer makes none)
    # goes to the stack decoder, whose memory is the output's
    node_bytes = np.bincount(blk, weights=length[blk * 256 + code], minlength=nb)
    excess = np.where(payload_len > 0, np.maximum(node_bytes - NODE_BUDGET * orig_len, 0), 0).astype(np.int64).tolist()

    # operands first: sort each block's codes by level
    order = np.argsort(blk * 512 + level[blk * 256 + code], kind="stable")
    code8, left8, right8 = (column[order].astype(np.uint8) for column in (code, left, right))
    code_lo = code_start[first:last] - c_lo
    sym_lo = np.cumsum(payload_len) - payload_len

    def tables(sel: npt.NDArray[np.int64]) -> PairTables:
        merges = concat_ranges(code_lo[sel], n_codes[sel])
        return PairTables(
            orig_len=orig_len[sel],
            n_merges=n_codes[sel],
            n_fresh=n_codes[sel],
            code=code8[merges],
            left=left8[merges],
            right=right8[merges],
            payload_len=payload_len[sel],
            payload=symbols[concat_ranges(sym_lo[sel], payload_len[sel])],
            first_block=base + first + int(sel[0]),
        )

    sizes = orig_len.tolist()
    b = 0
    while b < nb:
        if excess[b] > NODE_SLACK:
            yield np.frombuffer(expand_reference(tables(np.array([b]))), dtype=np.uint8)
            b += 1
            continue
        stop, size, slack = b, 0, 0
        while stop < nb and (size == 0 or (size + sizes[stop] <= _CHUNK and slack + excess[stop] <= NODE_SLACK)):
            if excess[stop] > NODE_SLACK:
                break
            size += sizes[stop]
            slack += excess[stop]
            stop += 1
        sel = np.arange(b, stop)[payload_len[b:stop] > 0]  # empty blocks expand to nothing
        if len(sel):
            yield backend.expand(tables(sel))
        b = stop


def decompress(data: object, *, max_length: int | None = None) -> bytes:
    """Expand a Gage-format file (or several concatenated); the trailing empty block is optional.

    Raises ``OutputLimitError`` before producing more than *max_length* bytes,
    ``TruncatedDataError`` for a file cut inside a block and ``CorruptDataError``
    for tables Gage's expander would loop on or overrun.
    """
    return b"".join(iter_decompress([data], max_length=max_length))


def iter_decompress(pieces: Iterable[object], *, max_length: int | None = None) -> Iterator[memoryview]:
    """Expand a Gage-format file that comes in *pieces* (bytes-like), yielding its output as it is made.

    The file is parsed as its pieces arrive and every whole block is expanded at
    once, a few MiB of output at a time, so memory is bounded by a piece, the
    one block it ends inside and a few MiB, whatever the size of the output:
    what the command line's ``-d`` and ``-t`` need, since a few kilobytes of
    tables can describe gigabytes. Errors are those of :func:`decompress`, each
    raised when the block it concerns is reached; output before it has been
    yielded already.
    """
    if max_length is not None:
        max_length = operator.index(max_length)
        if max_length < 0:
            raise ValueError(f"max_length must be non-negative or None, got {max_length}")
    pending = b""
    produced = 0
    blocks = 0
    for piece in pieces:
        view = as_byte_view(piece)
        if not len(view):
            continue
        pending = pending + bytes(view) if pending else bytes(view)
        parsed, end = _parse(pending, final=False, first_block=blocks)
        for out in _expand(pending, parsed, blocks, produced, max_length):
            produced += len(out)
            yield out
        blocks += len(parsed.n_codes)
        pending = pending[end:]
    parsed, _ = _parse(pending, final=True, first_block=blocks)
    for out in _expand(pending, parsed, blocks, produced, max_length):
        yield out


def _expand(raw: bytes, parsed: _Parsed, base: int, produced: int, max_length: int | None) -> Iterator[memoryview]:
    """The output of every block in *parsed*, in runs of a few MiB of payload."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    code_start = np.concatenate(([0], np.cumsum(parsed.n_codes)))
    nb = len(parsed.n_codes)
    first = 0
    while first < nb:
        # a run of blocks whose payloads add up to a few MiB (each expands to at least its payload)
        last = int(np.searchsorted(parsed.payload_start, parsed.payload_start[first] + _CHUNK, side="left"))
        last = min(max(last, first + 1), nb, first + _CHUNK_BLOCKS)
        for piece in _decode_run(buf, parsed, code_start, first, last, produced, max_length, base):
            produced += len(piece)
            yield piece.data
        first = last
