"""The compiled packing of a frame: which blocks to store, and the frame's body.

Import only where the compiled extension ``_encode`` was built (``bytepair.backend``
checks). :func:`pack_frame_body` writes exactly the body that
``container.format.pack_frame(container.codec._assemble(...))`` writes; tests hold
the two to each other. Those numpy passes (some sixty numpy calls) were a fixed
half millisecond or more a frame; one loop over the blocks costs a few
microseconds.

The body (docs/FORMAT.md), one column after the other: every block's header
fields (orig_len u16, payload_len u16, n_fresh u8, n_recycled u8, code-set kind
u8, n_escaped u16), the code sets, the escape marks, the fresh pairs
(left, right), the recycled merges (code, left, right), the escaped bytes, the
payloads. The loops are ``_encode.pyx``'s ``_stored``, ``_plan`` and ``_write``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..engine import EncodedBlocks
from ..escape import Escapes
from ..params import Params
from . import _encode

__all__ = ["block_costs", "encode_frame_body", "encode_stream", "pack_frame_body"]


def _column(values: npt.NDArray[np.generic], dtype: type[np.generic]) -> npt.NDArray[np.generic]:
    return np.ascontiguousarray(values, dtype=dtype)


def pack_frame_body(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], enc: EncodedBlocks, esc: Escapes, budget: int
) -> tuple[npt.NDArray[np.uint8], int]:
    """The body of the frame holding the blocks ``data[bounds[k]:bounds[k + 1]]`` as *enc*
    encoded them (with the escapes *esc*), and its number of blocks.

    As ``codec._assemble``: blocks that encoding does not shrink are stored, and enough
    of the others (most expansion bytes first) to keep the frame's code expansions
    within *budget* bytes; runs of stored blocks become as few blocks as they can.
    Columns that disagree with each other (more merges counted than listed, say) raise
    ValueError.
    """
    if len(bounds) < 1:
        raise ValueError("pack_frame_body needs the blocks' bounds, at least [0]")
    i64, u8 = np.int64, np.uint8
    body, n_blocks = _encode.pack_frame_body(
        _column(data, u8),
        _column(bounds, i64),
        _column(enc.n_merges, i64),
        _column(enc.n_fresh, i64),
        _column(enc.code, u8),
        _column(enc.left, u8),
        _column(enc.right, u8),
        _column(enc.expansion, i64),
        _column(enc.payload_len, i64),
        _column(enc.payload, u8),
        _column(esc.count, i64),
        _column(esc.mark, u8),
        _column(esc.literals, u8),
        int(budget),
    )
    return body, int(n_blocks)


def encode_frame_body(data: npt.NDArray[np.uint8], params: Params, budget: int) -> tuple[npt.NDArray[np.uint8], int]:
    """The body of *data*'s frame and its number of blocks, for *params* of one cutting
    without the escape trial: ``split_and_find_escapes``, ``encode.encode_blocks`` and
    :func:`pack_frame_body` in one call (the same body). Between the three, Python's
    checks, arguments and result objects cost more than a small file's whole encoding
    when caches are cold."""
    body, n_blocks = _encode.encode_frame_body(np.ascontiguousarray(data, dtype=np.uint8), *_settings(params, budget))
    return body, int(n_blocks)


def _settings(params: Params, budget: int) -> tuple[int, int, int, int, bool, int, int]:
    """The engine's settings as the one-call kernels take them, after the data."""
    return (
        params.block_size,
        params.max_distinct,
        params.escape_limit,
        params.threshold,
        params.recycle,
        params.merges_per_step,
        int(budget),
    )


def encode_stream(data: npt.NDArray[np.uint8] | memoryview, params: Params, budget: int) -> bytes:
    """The whole stream of *data* (1 byte to a frame's worth) in one call: :func:`encode_frame_body`
    and ``container.format.one_frame_stream`` (compact for one block), the same bytes. A small
    input's stream costs a few microseconds, no more than the Python calls around it once did."""
    stream: bytes = _encode.encode_stream(data, *_settings(params, budget))
    return stream


def block_costs(enc: EncodedBlocks) -> npt.NDArray[np.int64]:
    """``codec.block_costs``, compiled: body bytes each block costs beyond its header and escapes."""
    costs: npt.NDArray[np.int64] = _encode.block_costs(
        _column(enc.n_merges, np.int64),
        _column(enc.n_fresh, np.int64),
        _column(enc.code, np.uint8),
        _column(enc.payload_len, np.int64),
    )
    return costs
