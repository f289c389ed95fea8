"""One frame of data to one frame of the container and back.

This is where the stages meet: bytes -> blocks -> escapes -> engine -> choice of
stored or encoded blocks -> container, and container -> decoder -> checked bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .. import backend
from ..core import faults
from ..core.escape import Escapes
from ..core.expand import node_budget
from ..core.params import MAX_BLOCK_SIZE, Params
from ..core.tables import PairTables, concat_ranges
from .crc import crc32
from .format import (
    BLOCK_HEADER_SIZE,
    CompactRecord,
    FrameHeader,
    code_set_sizes,
    frame_from_body,
    one_frame_stream,
    pack_frame,
    unpack_compact,
    unpack_frame_body,
)

if TYPE_CHECKING:  # the numpy engine is imported by the numpy path only (start-up)
    from ..core.engine import EncodedBlocks

__all__ = [
    "FRAME_SIZE",
    "SPARE",
    "block_costs",
    "decode_compact",
    "decode_frame",
    "encode_frame",
    "encode_stream",
]

FRAME_SIZE = 1 << 21
"""Original bytes per frame. Large enough that the decoder's fixed cost per frame
(a few ms) is small against its work, small enough for bounded memory and
random access."""


SPARE = 32
"""Bytes past a frame's end that ``decode_frame`` may write in a given output (the
compiled decoder copies 32 bytes at a time: ``kernels.decode.SPARE``)."""


def block_costs(enc: EncodedBlocks) -> npt.NDArray[np.int64]:
    """Body bytes each encoded block costs beyond its header and its escapes."""
    n_recycled = enc.n_merges - enc.n_fresh
    code_set_size = code_set_sizes(enc.n_merges, enc.n_fresh, enc.code)
    return enc.payload_len + 2 * enc.n_fresh + 3 * n_recycled + code_set_size


def _stored_blocks(orig_len: npt.NDArray[np.int64], enc: EncodedBlocks, esc: Escapes) -> npt.NDArray[np.bool_]:
    """Blocks to store as they are: those encoding does not shrink, and enough of
    the rest to keep the frame's code expansions within the decoder's budget.

    Runs of stored blocks share block headers, so an encoded block must save
    its own header too (which matters only for tiny blocks)."""
    stored = block_costs(enc) + esc.cost() + BLOCK_HEADER_SIZE >= orig_len
    block_of_merge = np.repeat(np.arange(len(orig_len)), enc.n_merges)
    node_bytes = np.bincount(block_of_merge, weights=enc.expansion, minlength=len(orig_len)).astype(np.int64)
    budget = node_budget(int(orig_len.sum()))
    if int(node_bytes[~stored].sum()) > budget:
        for b in np.argsort(-node_bytes, kind="stable"):
            stored[b] = True
            if int(node_bytes[~stored].sum()) <= budget:
                break
    return stored


def _assemble(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], enc: EncodedBlocks, esc: Escapes
) -> PairTables:
    """The frame's blocks: encoded ones as the engine made them, runs of stored
    ones merged into as few blocks of at most 64 KiB as possible."""
    orig_len = np.diff(bounds)
    stored = _stored_blocks(orig_len, enc, esc)
    keep_merge = np.repeat(~stored, enc.n_merges)
    payload_start = np.cumsum(enc.payload_len) - enc.payload_len
    lengths: list[int] = []
    payload_lens: list[int] = []
    n_merges: list[int] = []
    n_fresh: list[int] = []
    n_escaped: list[int] = []
    marks: list[int] = []
    payload_parts: list[npt.NDArray[np.uint8]] = []
    b = 0
    n_blocks = len(orig_len)
    while b < n_blocks:
        if not stored[b]:
            lengths.append(int(orig_len[b]))
            payload_lens.append(int(enc.payload_len[b]))
            n_merges.append(int(enc.n_merges[b]))
            n_fresh.append(int(enc.n_fresh[b]))
            n_escaped.append(int(esc.count[b]))
            marks.append(int(esc.mark[b]))
            payload_parts.append(enc.payload[payload_start[b] : payload_start[b] + enc.payload_len[b]])
            b += 1
            continue
        end = b
        while end < n_blocks and stored[end]:
            end += 1
        for lo in range(int(bounds[b]), int(bounds[end]), MAX_BLOCK_SIZE):
            hi = min(lo + MAX_BLOCK_SIZE, int(bounds[end]))
            lengths.append(hi - lo)
            payload_lens.append(hi - lo)
            n_merges.append(0)
            n_fresh.append(0)
            n_escaped.append(0)
            marks.append(0)
            payload_parts.append(data[lo:hi])
        b = end
    as_array = np.asarray
    return PairTables(
        orig_len=as_array(lengths, dtype=np.int64),
        n_merges=as_array(n_merges, dtype=np.int64),
        n_fresh=as_array(n_fresh, dtype=np.int64),
        code=enc.code[keep_merge],
        left=enc.left[keep_merge],
        right=enc.right[keep_merge],
        payload_len=as_array(payload_lens, dtype=np.int64),
        payload=np.concatenate(payload_parts) if payload_parts else np.zeros(0, dtype=np.uint8),
        escapes=Escapes(
            as_array(n_escaped, dtype=np.int64), as_array(marks, dtype=np.uint8), esc.take(~stored).literals
        ),
    )


EngineRunner = Callable[[npt.NDArray[np.uint8], npt.NDArray[np.int64], Params], "EncodedBlocks"]


def run_engine(data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], params: Params) -> EncodedBlocks:
    """Encode the blocks of *data* in this thread."""
    return backend.encode_blocks(
        data, bounds, threshold=params.threshold, recycle=params.recycle, merges_per_step=params.merges_per_step
    )


def _encode_blocks(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], params: Params, engine: EngineRunner
) -> PairTables:
    """The blocks ``data[bounds[k]:bounds[k + 1]]`` encoded, with escapes as *params* ask,
    as the frame holds them (stored ones merged)."""
    return _assemble(data, bounds, *_encode_with_escapes(data, bounds, params, engine))


def _encode_with_escapes(
    data: npt.NDArray[np.uint8],
    bounds: npt.NDArray[np.int64],
    params: Params,
    engine: EngineRunner,
    escaped: tuple[npt.NDArray[np.uint8], Escapes] | None = None,
) -> tuple[EncodedBlocks, Escapes]:
    """The blocks ``data[bounds[k]:bounds[k + 1]]`` encoded, with escapes as *params* ask
    (with ``escape_trial``, each block the smaller way); *escaped*: ``find_escapes``'s
    result, when the caller has it already."""
    n_blocks = len(bounds) - 1
    if not params.escape_limit:
        return engine(data, bounds, params), Escapes.none(n_blocks)
    changed, esc = backend.find_escapes(data, bounds, params.escape_limit) if escaped is None else escaped
    escaping = np.flatnonzero(esc.count)
    if not params.escape_trial or not len(escaping):
        return engine(changed, bounds, params), esc
    # one engine run holds every block as it is, then the escaping ones changed
    lengths = np.diff(bounds)[escaping]
    both_bounds = np.concatenate((bounds, len(data) + np.cumsum(lengths)))
    both = engine(np.concatenate((data, changed[concat_ranges(bounds[escaping], lengths)])), both_bounds, params)
    costs = backend.kernel("frame").block_costs(both) if backend.compiled() else block_costs(both)
    use_escapes = np.zeros(n_blocks, dtype=np.bool_)
    use_escapes[escaping] = costs[n_blocks:] + esc.cost()[escaping] < costs[escaping]
    chosen = np.arange(n_blocks)
    chosen[use_escapes] = n_blocks + np.flatnonzero(use_escapes[escaping])
    return both.take(chosen), esc.take(use_escapes)


def _pack(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], enc: EncodedBlocks, esc: Escapes, content_crc: int
) -> bytes:
    """The frame of the blocks *enc* encoded: ``pack_frame(_assemble(...))``, by the
    compiled loop (``kernels.frame``) on the compiled path: the same bytes."""
    if backend.compiled():
        body, n_blocks = backend.kernel("frame").pack_frame_body(data, bounds, enc, esc, node_budget(len(data)))
        return frame_from_body(body.data, n_blocks, len(data), content_crc)
    return pack_frame(_assemble(data, bounds, enc, esc), content_crc)


def _cut(
    data: npt.NDArray[np.uint8], block_size: int, max_distinct: int, escape_limit: int
) -> tuple[npt.NDArray[np.int64], tuple[npt.NDArray[np.uint8], Escapes] | None]:
    """The blocks' bounds, and their escapes when *escape_limit* asks for them (one pass
    over the frame on the compiled path); else None."""
    if escape_limit:
        bounds, changed, esc = backend.split_and_find_escapes(data, block_size, max_distinct, escape_limit)
        return bounds, (changed, esc)
    return backend.split_blocks(data, block_size, max_distinct), None


def encode_frame(data: npt.NDArray[np.uint8], params: Params, engine: EngineRunner = run_engine) -> tuple[bytes, int]:
    """Compress a non-empty run of at most ``FRAME_SIZE`` bytes; returns the frame and the content's CRC-32.

    Each of the level's cuttings into blocks is tried and the smallest frame kept. On the
    compiled path, a level of one cutting without the escape trial (1-5) is one kernel call.
    """
    content_crc = crc32(data)
    if engine is run_engine and not params.trials and not params.escape_trial and backend.compiled():
        body, n_blocks = backend.kernel("frame").encode_frame_body(data, params, node_budget(len(data)))
        return frame_from_body(body.data, n_blocks, len(data), content_crc), content_crc
    best = b""
    for block_size, max_distinct in params.cuttings():
        bounds, escaped = _cut(data, block_size, max_distinct, params.escape_limit)
        frame = _pack(data, bounds, *_encode_with_escapes(data, bounds, params, engine, escaped), content_crc)
        if not best or len(frame) < len(best):
            best = frame
    return best, content_crc


def encode_stream(data: memoryview, params: Params) -> bytes:
    """The whole stream of *data* (at most ``FRAME_SIZE`` bytes): what ``BytePairCompressor``
    writes for it, compact when it is one block (``format.one_frame_stream``). On the
    compiled path, a level of one cutting without the escape trial is one kernel call."""
    if not len(data):
        return one_frame_stream(None)
    if not params.trials and not params.escape_trial and backend.compiled():  # the view as it is: no array
        return backend.kernel("frame").encode_stream(data, params, node_budget(len(data)))  # type: ignore[no-any-return]
    return one_frame_stream(encode_frame(np.frombuffer(data, dtype=np.uint8), params)[0])


def decode_frame(
    header: FrameHeader,
    body: bytes | memoryview,
    frame_index: int,
    first_block: int,
    into: Callable[[int], npt.NDArray[np.uint8]] | None = None,
) -> npt.NDArray[np.uint8]:
    """Decode and verify one frame whose header has been read (compiled or numpy:
    the same bytes and errors).

    With *into*, the frame is decoded in ``into(orig_size)`` (a writable array of
    ``orig_size + SPARE`` bytes, asked for only once the frame's body has passed
    some checks), and the view of its bytes returned: a caller gathering frames
    into one buffer saves a copy (the compiled path writes there directly)."""
    if backend.compiled():
        return backend.kernel("decode").decode_frame_body(header, body, frame_index, first_block, into)  # type: ignore[no-any-return]
    decoded = backend.expand(unpack_frame_body(header, body, frame_index, first_block))
    if crc32(decoded) != header.content_crc:
        raise faults.content_crc(frame_index)
    if into is None:
        return decoded
    out = into(len(decoded))
    out[: len(decoded)] = decoded
    return out[: len(decoded)]


def decode_compact(
    rec: CompactRecord, buf: bytes | memoryview, into: Callable[[int], npt.NDArray[np.uint8]] | None = None
) -> npt.NDArray[np.uint8]:
    """Decode and verify a compact record (``format.compact_record``; *buf* holds it whole),
    as ``decode_frame`` does a frame: the same errors, its frame number 0."""
    if not rec.stored:
        return decode_frame(unpack_compact(rec, buf), buf[rec.start : rec.end], 0, 0, into)
    data = np.frombuffer(buf, dtype=np.uint8, count=rec.orig_size, offset=rec.start)
    if crc32(data) != rec.content_crc:
        raise faults.content_crc(0)
    out = into(rec.orig_size) if into is not None else np.empty(rec.orig_size, dtype=np.uint8)
    out[: rec.orig_size] = data
    return out[: rec.orig_size]


MOST_PER_BYTE = 4096
"""The one-call reader (``backend.read_whole``, from ``bytepair.decompress``) takes a framed
stream whose end record claims at most this many bytes for each of its own: beyond any
stream the format can describe (a block of 65,535 bytes takes at least some 60), so no
legitimate stream is refused. A bound behind ``plan_stream``'s
checks: a stream crafted to pass them (right CRCs, block lengths that add up, columns
that do not) cannot make ``decompress`` reserve more than this before it is refused."""
