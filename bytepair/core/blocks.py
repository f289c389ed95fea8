"""Cutting input into blocks, as Gage does.

A block ends after ``block_size`` bytes, or at the byte that brings the number
of distinct byte values in it to ``max_distinct`` (that byte included), so every
block leaves at least ``256 - max_distinct`` byte values free to serve as codes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .tables import byte_counts

__all__ = ["split_blocks"]


def _block_end(window: npt.NDArray[np.uint8], max_distinct: int) -> int:
    """Length of the block that starts *window*, if the distinct limit cuts it; else 0.

    Each value's first position comes from ``np.minimum.at`` over the window, a pass
    without a sort: ``np.unique(..., return_index=True)`` sorts the window, 4x the
    time on 32 KiB of kennedy.xls (81 against 336 us). The same pass tells whether
    the window reaches the limit at all (a separate ``np.bincount`` first took 1.5x
    the time on kennedy.xls's windows of 5 KB: 25.3 against 17.2 us).
    """
    n = len(window)
    first = np.full(256, n, dtype=np.int64)
    np.minimum.at(first, window, np.arange(n, dtype=np.int64))
    if np.count_nonzero(first < n) < max_distinct:  # the values the window holds
        return 0
    return int(np.partition(first, max_distinct - 1)[max_distinct - 1]) + 1


def split_blocks(data: npt.NDArray[np.uint8], block_size: int, max_distinct: int) -> npt.NDArray[np.int64]:
    """Start offsets of the blocks of *data*, followed by ``len(data)``.

    The common case (text, where the whole input has few distinct values) costs
    one count of its bytes; binary input is cut block by block with a window that
    grows only as far as a block can reach. (The numpy reference of
    ``kernels.prepare``: ``bytepair.backend.split_blocks`` chooses.)
    """
    size = len(data)
    if size == 0:
        return np.zeros(1, dtype=np.int64)
    if np.count_nonzero(byte_counts(data)) < max_distinct:
        return np.append(np.arange(0, size, block_size, dtype=np.int64), size)
    starts = [0]
    start = 0
    guess = min(block_size, 1024)
    while True:
        end = 0
        window_len = guess
        while True:
            window = data[start : start + window_len]
            cut = _block_end(window, max_distinct)
            if cut:
                end = start + cut
                break
            if window_len >= block_size or start + window_len >= size:
                end = min(start + block_size, size)
                break
            window_len = min(block_size, window_len * 4)
        if end >= size:
            break
        guess = min(block_size, max(256, 2 * (end - start)))
        starts.append(end)
        start = end
    starts.append(size)
    return np.asarray(starts, dtype=np.int64)
