"""The columns every stage passes along: pair tables and payloads of a run of blocks.

The engine produces them, the container packs and unpacks them, the decoders
consume them; none of those needs to know about the others. The helpers here
work on such columns for all of them: ranges, running sums, byte counts.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "Escapes",
    "PairTables",
    "block_byte_counts",
    "block_cells",
    "byte_counts",
    "concat_ranges",
    "cumulative_sum",
    "empty_for_sums",
    "for_sums",
    "run_edges",
]


@dataclasses.dataclass
class Escapes:
    """The escapes of a run of blocks (``core.escape`` makes them and puts them back). Per
    block: how many bytes were escaped (``count``) and the value standing for them
    (``mark``, meaningful where ``count > 0``); ``literals`` holds the escaped bytes'
    original values, block by block, in position order."""

    count: npt.NDArray[np.int64]
    mark: npt.NDArray[np.uint8]
    literals: npt.NDArray[np.uint8]

    @classmethod
    def none(cls, n_blocks: int) -> Escapes:
        return cls(np.zeros(n_blocks, dtype=np.int64), np.zeros(n_blocks, dtype=np.uint8), np.zeros(0, dtype=np.uint8))

    def cost(self) -> npt.NDArray[np.int64]:
        """Body bytes the escapes add to each block: its escaped bytes and its mark."""
        cost: npt.NDArray[np.int64] = self.count + (self.count > 0)
        return cost

    def blocks(self, lo: int, hi: int) -> Escapes:
        """The escapes of blocks *lo* to *hi* (exclusive)."""
        literal_at = int(self.count[:lo].sum())
        literal_end = literal_at + int(self.count[lo:hi].sum())
        return Escapes(self.count[lo:hi], self.mark[lo:hi], self.literals[literal_at:literal_end])

    def take(self, keep: npt.NDArray[np.bool_]) -> Escapes:
        """These escapes with those of the blocks not in *keep* dropped."""
        literal_keep = np.repeat(keep, self.count)
        return Escapes(
            np.where(keep, self.count, 0), np.where(keep, self.mark, 0).astype(np.uint8), self.literals[literal_keep]
        )


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
    """``values.cumsum(dtype=np.int64)``, into *out* if given, laid out as numpy sums fastest.

    How fast numpy accumulates depends on the layout of the sums, and which
    layout wins depends on the CPU: a contiguous array took 2.2 ns an item and
    a reversed view of one 0.5-1 ns on one of these machines (2026-11-22),
    0.45 against 2.1 ns on another (2026-11-25; a million int64 items each).
    ``fast_sums_step`` measures it once per process. *out* should come from
    ``empty_for_sums`` or ``for_sums`` (or be a slice of such an array); any
    other array gets the same sums, only perhaps more slowly.
    """
    if out is None:
        out = empty_for_sums(len(values))
    return values.cumsum(dtype=np.int64, out=out)


@functools.cache
def fast_sums_step() -> int:
    """1 if numpy sums into a contiguous int64 array faster than into a reversed view, else -1.

    Timed once, on first use (under a millisecond): 32K items, best of five tries
    each way, in turns. Either answer gives the same sums; a wrong one only costs
    time.
    """
    values = np.ones(1 << 15, dtype=np.int64)
    arrays = {step: np.empty(len(values), dtype=np.int64)[::step] for step in (1, -1)}
    best = dict.fromkeys(arrays, float("inf"))
    for _ in range(5):
        for step, out in arrays.items():
            started = time.perf_counter()
            values.cumsum(out=out)
            best[step] = min(best[step], time.perf_counter() - started)
    return 1 if best[1] <= best[-1] else -1


def for_sums(buf: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """*buf* as a view in the layout ``cumulative_sum`` writes fastest (itself or reversed)."""
    return buf[:: fast_sums_step()]


def empty_for_sums(size: int) -> npt.NDArray[np.int64]:
    """An uninitialised int64 array for ``cumulative_sum`` to write into."""
    return for_sums(np.empty(size, dtype=np.int64))


def concat_ranges(starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])`` in a few numpy calls.

    Built as ones with a jump at the head of each range, then a cumulative sum:
    cheaper than ``np.repeat`` for the short ranges that dominate here.
    """
    if len(lengths) and lengths.min() < 1:
        keep = lengths > 0
        starts, lengths = starts[keep], lengths[keep]
    total = int(lengths.sum())
    idx = empty_for_sums(total)
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


_PAIRWISE_COUNT = 1 << 18
"""Inputs at least this long are counted two bytes at a time (``byte_counts``)."""


def byte_counts(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.int64]:
    """How often each byte value occurs in *data*.

    A long input is counted two bytes at a time, as 16-bit items, and the
    65,536 pair counts are folded back into bytes: half the items, and runs of
    one value no longer add to one counter back to back (text of 1 MiB: 0.75
    against 1.54 ns a byte for ``np.bincount`` of the bytes).
    """
    n = len(data)
    if n < _PAIRWISE_COUNT:
        return np.bincount(data, minlength=256)
    pairs = np.bincount(data[: n & ~1].view(np.uint16), minlength=1 << 16).reshape(256, 256)
    counts: npt.NDArray[np.int64] = pairs.sum(axis=0)
    counts += pairs.sum(axis=1)
    if n & 1:
        counts[data[-1]] += 1
    return counts


def block_cells(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64]
) -> Iterator[tuple[int, int, npt.NDArray[np.uint16]]]:
    """The blocks *bounds* delimits, 256 at a time: the first and last block (exclusive)
    and each byte's 16-bit cell, ``(block - first) * 256 + byte``.

    Built in place from 16-bit items, not from 64-bit temporaries (a block number
    times 256 plus the byte took 8.5 ns a byte on 1 MiB of text, mostly page
    faults on the fresh arrays; this, with its count, 1.3 ns).
    """
    nb = len(bounds) - 1
    for lo in range(0, nb, 256):
        hi = min(lo + 256, nb)
        cells = np.repeat(np.arange(0, (hi - lo) * 256, 256, dtype=np.uint16), bounds[lo + 1 : hi + 1] - bounds[lo:hi])
        cells |= data[bounds[lo] : bounds[hi]]
        yield lo, hi, cells


def block_byte_counts(data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """How often each byte value occurs in each block *bounds* delimits: ``(blocks, 256)``."""
    counts = np.empty((len(bounds) - 1, 256), dtype=np.int64)
    for lo, hi, cells in block_cells(data, bounds):
        counts[lo:hi] = np.bincount(cells, minlength=(hi - lo) * 256).reshape(hi - lo, 256)
    return counts
