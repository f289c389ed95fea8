"""The compiled preparation of a frame for the engine: cutting it into blocks, and escapes.

Import only where the compiled extension ``_encode`` was built (``bytepair.backend``
checks). Each function returns exactly what its numpy counterpart returns
(``core.blocks.split_blocks``, ``core.escape.find_escapes``); tests hold them to
each other. With the engine compiled, these passes over the frame were a third of
the time left (numpy needs several passes and temporaries where one loop over the
bytes does). The loops are ``_encode.pyx``'s ``_split``, ``_escapes`` and
``_split_escapes``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..escape import Escapes
from . import _encode

__all__ = ["find_escapes", "split_and_find_escapes", "split_blocks"]


def split_blocks(data: npt.NDArray[np.uint8], block_size: int, max_distinct: int) -> npt.NDArray[np.int64]:
    """``core.blocks.split_blocks``, compiled: start offsets of the blocks, then ``len(data)``.

    Gage's cutting: a block ends after *block_size* bytes, or at the byte that brings its
    distinct values to *max_distinct* (that byte included); both must be at least 1.
    """
    starts: npt.NDArray[np.int64] = _encode.split_blocks(
        np.ascontiguousarray(data, dtype=np.uint8), int(block_size), int(max_distinct)
    )
    return starts


def find_escapes(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], limit: int
) -> tuple[npt.NDArray[np.uint8], Escapes]:
    """``core.escape.find_escapes``, compiled: the changed data and the escapes.

    Per block: count its values; if at least two occur at most *limit* times and the
    block is long enough to run out of codes, replace each of them by the smallest one
    (the mark), keeping the originals in position order.
    """
    data = np.ascontiguousarray(data, dtype=np.uint8)
    count, mark, literals, changed = _encode.find_escapes(data, np.ascontiguousarray(bounds, dtype=np.int64), limit)
    if changed is None:
        return data, Escapes.none(len(bounds) - 1)
    return changed, Escapes(count, mark, literals)


def split_and_find_escapes(
    data: npt.NDArray[np.uint8], block_size: int, max_distinct: int, limit: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8], Escapes]:
    """``split_blocks`` then ``find_escapes`` in one pass over the bytes: the bounds, the
    changed data and the escapes, exactly as the two give them."""
    data = np.ascontiguousarray(data, dtype=np.uint8)
    starts, count, mark, literals, changed = _encode.split_and_find_escapes(
        data, int(block_size), int(max_distinct), int(limit)
    )
    if changed is None:
        return starts, data, Escapes.none(len(starts) - 1)
    return starts, changed, Escapes(count, mark, literals)
