"""The columns every stage passes along: pair tables and payloads of a run of blocks.

The engine produces them, the container packs and unpacks them, the decoders
consume them; none of those needs to know about the others.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from ._escape import Escapes

__all__ = ["PairTables", "concat_ranges", "cumulative_sum", "reversed_empty", "run_edges"]


@dataclasses.dataclass
class PairTables:
    """A run of blocks, block-major.

    ``code/left/right`` list each block's merges in creation order; the first
    ``n_fresh[b]`` use fresh codes (descending byte values), the rest reuse
    byte values that no longer occurred. ``payload`` is all payloads back to back.
    A block with no merges and ``payload_len == orig_len`` is stored as is.
    ``escapes`` (None: no block has any) says which expanded bytes to replace.
    """

    orig_len: npt.NDArray[np.int64]
    n_merges: npt.NDArray[np.int64]
    n_fresh: npt.NDArray[np.int64]
    code: npt.NDArray[np.uint8]
    left: npt.NDArray[np.uint8]
    right: npt.NDArray[np.uint8]
    payload_len: npt.NDArray[np.int64]
    payload: npt.NDArray[np.uint8]
    first_block: int = 0
    """Index of block 0 in its stream, for error messages."""
    escapes: Escapes | None = None

    def blocks(self, lo: int, hi: int) -> PairTables:
        """Blocks *lo* to *hi* (exclusive) as a run of their own."""
        merge_at = int(self.n_merges[:lo].sum())
        merge_end = merge_at + int(self.n_merges[lo:hi].sum())
        payload_at = int(self.payload_len[:lo].sum())
        payload_end = payload_at + int(self.payload_len[lo:hi].sum())
        return PairTables(
            self.orig_len[lo:hi],
            self.n_merges[lo:hi],
            self.n_fresh[lo:hi],
            self.code[merge_at:merge_end],
            self.left[merge_at:merge_end],
            self.right[merge_at:merge_end],
            self.payload_len[lo:hi],
            self.payload[payload_at:payload_end],
            self.first_block + lo,
            self.escapes.blocks(lo, hi) if self.escapes is not None else None,
        )


def cumulative_sum(values: npt.NDArray[Any], out: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.int64]:
    """``values.cumsum(dtype=np.int64)``, into *out* if given, in well under half the time.

    numpy (2.x) accumulates into a contiguous array at about 2.2 ns an item, and
    into any other at about 0.5-1 ns (``timeit``, a million int64 items). So the
    sums go into a reversed view of a contiguous array: read forwards, that view
    holds them in order, and it serves every caller like any other array. *out*
    should be such a view (``reversed_empty``) or a slice of one; any other array
    gets the same sums, only more slowly.
    """
    if out is None:
        out = reversed_empty(len(values))
    return values.cumsum(dtype=np.int64, out=out)


def reversed_empty(size: int) -> npt.NDArray[np.int64]:
    """An uninitialised int64 array, as a reversed view (for ``cumulative_sum``)."""
    return np.empty(size, dtype=np.int64)[::-1]


def concat_ranges(starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])`` in a few numpy calls.

    Built as ones with a jump at the head of each range, then a cumulative sum:
    cheaper than ``np.repeat`` for the short ranges that dominate here.
    """
    if len(lengths) and lengths.min() < 1:
        keep = lengths > 0
        starts, lengths = starts[keep], lengths[keep]
    total = int(lengths.sum())
    idx = reversed_empty(total)
    idx.fill(1)
    if total == 0:
        return idx
    heads = lengths[:-1].cumsum()
    idx[0] = starts[0]
    idx[heads] = starts[1:] - starts[:-1] - lengths[:-1] + 1
    return cumulative_sum(idx, out=idx)


def run_edges(weights: npt.NDArray[np.int64], per_run: int) -> list[int]:
    """Where to cut consecutive blocks into runs of about *per_run* of their *weights*
    (bytes, merges, codes): ``[0, ..., len(weights)]``, a run holding at least one block.

    Work that needs memory per unit of weight goes run by run, so that no frame,
    however its blocks are made, needs more than a run's worth at once.
    """
    run_of_block = weights.cumsum() // per_run
    return [0, *((run_of_block[1:] != run_of_block[:-1]).nonzero()[0] + 1).tolist(), len(weights)]
