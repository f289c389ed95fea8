"""Escapes: rare byte values sent aside so their byte values can serve as codes.

A block holding many distinct values has few free codes, yet most of those
values may occur only a handful of times. Replacing every occurrence of the rare
values by one of them (the block's *mark*) and listing the originals aside costs
one byte per occurrence and frees the other values as codes; on the corpora that
pays for itself many times over. The engine never knows: it encodes the changed
block like any other. See docs/FORMAT.md, "Escapes".
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from . import faults
from .tables import Escapes, block_byte_counts, block_cells, run_edges

__all__ = ["BYTES_PER_FREE_CODE", "Escapes", "find_escapes", "restore_escapes"]

BYTES_PER_FREE_CODE = 16
"""A block escapes only if it holds at least this many bytes per free code: shorter
blocks rarely use up their codes, so escapes would cost bytes and free nothing
useful (on the corpora, escaping every block instead gains nothing)."""


def find_escapes(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], limit: int
) -> tuple[npt.NDArray[np.uint8], Escapes]:
    """Escape, in every block, the values that occur at most *limit* times.

    A block escapes only when it has at least two such values (escaping one
    value frees nothing: it becomes the mark) and when it is long enough to run
    out of free codes, at least ``BYTES_PER_FREE_CODE`` bytes per free code
    (shorter blocks rarely do; on the corpora this rule loses nothing against
    escaping every block). The mark is the smallest escaped
    value, so the larger freed values, which the engine takes first, stay in
    long runs. Returns the changed data and the escapes. (The numpy
    reference of ``kernels.prepare``: ``bytepair.backend.find_escapes`` chooses.)
    """
    n_blocks = len(bounds) - 1
    counts = block_byte_counts(data, bounds)
    rare = (counts > 0) & (counts <= limit)
    free_codes = 256 - np.count_nonzero(counts, axis=1)
    escaping = (np.count_nonzero(rare, axis=1) >= 2) & (np.diff(bounds) >= BYTES_PER_FREE_CODE * free_codes)
    rare &= escaping[:, None]
    if not escaping.any():
        return data, Escapes.none(n_blocks)
    mark = np.where(escaping, np.argmax(rare, axis=1), 0).astype(np.uint8)
    found = []
    for lo, hi, cells in block_cells(data, bounds):
        if escaping[lo:hi].any():
            found.append(rare[lo:hi].reshape(-1).take(cells).nonzero()[0] + bounds[lo])
    escaped_at = np.concatenate(found)
    block_of = np.searchsorted(bounds, escaped_at, side="right") - 1
    changed = data.copy()
    changed[escaped_at] = mark[block_of]
    count = np.bincount(block_of, minlength=n_blocks).astype(np.int64)
    return changed, Escapes(count, mark, data[escaped_at])


_RESTORE_RUN = 1 << 20
"""Escapes are restored over runs of blocks of about this many bytes: the positions of
the marks take 8 bytes each, and nearly every byte of a block may be one."""


def restore_escapes(
    out: npt.NDArray[np.uint8], orig_len: npt.NDArray[np.int64], esc: Escapes, first_block: int
) -> None:
    """Put the escaped bytes back into the expanded blocks *out*, in place.

    Every occurrence of a block's mark is one of its escaped bytes, so the marks
    found must number exactly ``count``; anything else is damage (the caller
    discards *out*). Runs of blocks of about ``_RESTORE_RUN`` bytes at a time.
    """
    if not np.count_nonzero(esc.count):
        return
    bounds = np.zeros(len(orig_len) + 1, dtype=np.int64)
    orig_len.cumsum(out=bounds[1:])
    for lo, hi in itertools.pairwise(run_edges(orig_len, _RESTORE_RUN)):
        run = esc.blocks(lo, hi)
        if np.count_nonzero(run.count):
            _restore_run(out[bounds[lo] : bounds[hi]], bounds[lo : hi + 1] - bounds[lo], run, first_block + lo)


def _restore_run(out: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], esc: Escapes, first_block: int) -> None:
    """``restore_escapes`` for one run of blocks starting at *bounds* within *out*."""
    escaping = esc.count > 0
    marks = esc.mark[escaping]
    every = len(marks) == len(escaping)
    if every and np.count_nonzero(marks != marks[0]) == 0:  # one mark for all: no per-byte mark needed
        found = (out == marks[0]).nonzero()[0]
    else:
        found = (out == esc.mark.repeat(bounds[1:] - bounds[:-1])).nonzero()[0]
    # found is sorted: each block's share is a range of it
    ends = found.searchsorted(bounds)
    per_block = ends[1:] - ends[:-1]
    if not every:  # a block without escapes has no mark: drop what its bytes matched
        found = found[escaping.repeat(per_block)]
        per_block[~escaping] = 0
    bad = (per_block != esc.count).nonzero()[0]
    if len(bad):
        b = int(bad[0])
        raise faults.escape_count(first_block + b, int(per_block[b]), int(esc.count[b]))
    out[found] = esc.literals
