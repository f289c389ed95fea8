"""The compiled preparation of a frame for the engine: cutting it into blocks, and escapes.

Import only after :func:`bytepair.core.jit.use_numba` returned True (numba is
imported here). Each function returns exactly what its numpy counterpart
returns (``core.blocks.split_blocks``, ``core.escape.find_escapes``); tests
hold them to each other. With the engine compiled, these passes over the
frame were a third of the time left (numpy needs several passes and
temporaries where one loop over the bytes does).
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from ..escape import BYTES_PER_FREE_CODE, Escapes

__all__ = ["find_escapes", "split_and_find_escapes", "split_blocks"]


def split_blocks(data: npt.NDArray[np.uint8], block_size: int, max_distinct: int) -> npt.NDArray[np.int64]:
    """``core.blocks.split_blocks``, compiled: start offsets of the blocks, then ``len(data)``."""
    starts: npt.NDArray[np.int64] = _split(np.ascontiguousarray(data, dtype=np.uint8), block_size, max_distinct)
    return starts


@numba.njit(cache=True, nogil=True)
def _split(data, block_size, max_distinct):  # type: ignore[no-untyped-def]
    """Gage's cutting: a block ends after *block_size* bytes, or at the byte that brings
    its distinct values to *max_distinct* (that byte included)."""
    n = len(data)
    starts = np.empty(n // max(block_size, 1) + n // max_distinct + 2, dtype=np.int64)
    seen = np.zeros(256, dtype=np.int64)  # the block that last saw each value, plus one
    n_starts = 1
    starts[0] = 0
    block = 1
    lo = 0
    while lo < n:  # one block: its bytes up to the size limit, counting new values without a branch
        end = min(lo + block_size, n)
        distinct = 0
        i = lo
        while i < end:
            v = data[i]
            distinct += seen[v] != block
            seen[v] = block
            i += 1
            if distinct == max_distinct:
                break
        if i < n:
            starts[n_starts] = i
            n_starts += 1
        block += 1
        lo = i
    starts[n_starts] = n
    if n == 0:
        return starts[:1].copy()
    return starts[: n_starts + 1].copy()


def find_escapes(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], limit: int
) -> tuple[npt.NDArray[np.uint8], Escapes]:
    """``core.escape.find_escapes``, compiled: the changed data and the escapes."""
    data = np.ascontiguousarray(data, dtype=np.uint8)
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    count, mark, literals, changed = _escapes(data, bounds, limit, BYTES_PER_FREE_CODE)
    if not len(literals):
        return data, Escapes.none(len(bounds) - 1)
    return changed, Escapes(count, mark, literals)


@numba.njit(cache=True, nogil=True)
def _escapes(data, bounds, limit, bytes_per_free_code):  # type: ignore[no-untyped-def]
    """Per block: count its values; if at least two occur at most *limit* times and the
    block is long enough to run out of codes, replace each of them by the smallest one
    (the mark), keeping the originals in position order."""
    n_blocks = len(bounds) - 1
    count = np.zeros(n_blocks, dtype=np.int64)
    mark = np.zeros(n_blocks, dtype=np.uint8)
    literals = np.empty(len(data), dtype=np.uint8)
    changed = np.empty(0, dtype=np.uint8)
    n_literals = 0
    counts = np.empty(256, dtype=np.int64)
    lanes = np.empty((4, 256), dtype=np.int32)  # four tables: a run of one value is not one chain of adds
    for b in range(n_blocks):
        lo = bounds[b]
        hi = bounds[b + 1]
        lanes[:] = 0
        i = lo
        while i + 4 <= hi:
            lanes[0, data[i]] += 1
            lanes[1, data[i + 1]] += 1
            lanes[2, data[i + 2]] += 1
            lanes[3, data[i + 3]] += 1
            i += 4
        while i < hi:
            lanes[0, data[i]] += 1
            i += 1
        for v in range(256):
            counts[v] = lanes[0, v] + lanes[1, v] + lanes[2, v] + lanes[3, v]
        n_rare = 0
        smallest = -1
        distinct = 0
        for v in range(256):
            if counts[v] > 0:
                distinct += 1
                if counts[v] <= limit:
                    n_rare += 1
                    if smallest < 0:
                        smallest = v
        if n_rare < 2 or hi - lo < bytes_per_free_code * (256 - distinct):
            continue
        if len(changed) == 0:
            changed = data.copy()
        mark[b] = smallest
        for i in range(lo, hi):
            v = data[i]
            if counts[v] <= limit:
                literals[n_literals] = v
                n_literals += 1
                changed[i] = smallest
                count[b] += 1
    return count, mark, literals[:n_literals].copy(), changed


def split_and_find_escapes(
    data: npt.NDArray[np.uint8], block_size: int, max_distinct: int, limit: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8], Escapes]:
    """``split_blocks`` then ``find_escapes`` in one pass over the bytes: the bounds, the
    changed data and the escapes, exactly as the two give them."""
    data = np.ascontiguousarray(data, dtype=np.uint8)
    starts, count, mark, literals, changed = _split_escapes(data, block_size, max_distinct, limit, BYTES_PER_FREE_CODE)
    if not len(literals):
        return starts, data, Escapes.none(len(starts) - 1)
    return starts, changed, Escapes(count, mark, literals)


@numba.njit(cache=True, nogil=True)
def _split_escapes(data, block_size, max_distinct, limit, bytes_per_free_code):  # type: ignore[no-untyped-def]
    """``_split`` and ``_escapes`` at once. The cutting loop counts each block's values
    (a value not seen before is a new one), which is all the escapes need, so the frame
    is read once, and a second time only where a block escapes. While 64 more bytes cannot
    reach *max_distinct* values, it takes them without testing for the limit at each byte
    (1.11x with the lanes below, 1.16x on kennedy.xls and ptt5)."""
    n = len(data)
    room = n // max(block_size, 1) + n // max_distinct + 2
    starts = np.empty(room, dtype=np.int64)
    count = np.zeros(room, dtype=np.int64)
    mark = np.zeros(room, dtype=np.uint8)
    literals = np.empty(n, dtype=np.uint8)
    changed = np.empty(0, dtype=np.uint8)
    n_literals = 0
    counts = np.zeros(256, dtype=np.int64)
    # the counts in four lanes, byte i in lane i % 4, and whether each value was seen: in a
    # run (aaaa) one count would wait for its own store at every byte
    lanes = np.zeros(4 * 256, dtype=np.int32)
    seen = np.zeros(256, dtype=np.bool_)
    starts[0] = 0
    n_blocks = 0
    lo = 0
    while lo < n:  # one block: its bytes up to the size limit, or to its max_distinct-th value
        end = min(lo + block_size, n)
        lanes[:] = 0
        seen[:] = False
        distinct = 0
        i = lo
        while i < end:
            if distinct + 64 < max_distinct and i + 64 <= end:  # 64 bytes cannot reach the limit
                for k in range(np.uint64(i), np.uint64(i + 64)):  # unsigned: no wrap-around checks
                    byte = np.uint64(data[k])
                    distinct += not seen[byte]
                    seen[byte] = True
                    lanes[((k & np.uint64(3)) << np.uint64(8)) | byte] += 1
                i += 64
                continue
            v = np.int64(data[i])
            distinct += not seen[v]
            seen[v] = True
            lanes[(i & 3) * 256 + v] += 1
            i += 1
            if distinct == max_distinct:
                break
        for value in range(256):
            counts[value] = lanes[value] + lanes[256 + value] + lanes[512 + value] + lanes[768 + value]
        starts[n_blocks + 1] = i
        smallest = _escape_mark(counts, distinct, i - lo, limit, bytes_per_free_code)
        if smallest >= 0:
            if len(changed) == 0:
                changed = data.copy()
            mark[n_blocks] = smallest
            done = _escape_block(data, lo, i, counts, limit, smallest, literals, n_literals, changed)
            count[n_blocks] = done - n_literals
            n_literals = done
        n_blocks += 1
        lo = i
    return (
        starts[: n_blocks + 1].copy(),
        count[:n_blocks].copy(),
        mark[:n_blocks].copy(),
        literals[:n_literals].copy(),
        changed,
    )


@numba.njit(cache=True, nogil=True)
def _escape_mark(counts, distinct, length, limit, bytes_per_free_code):  # type: ignore[no-untyped-def]
    """The mark of a block whose values occur *counts* times, or -1 if it does not escape:
    it needs two rare values, and enough bytes per free code to run out of codes."""
    n_rare = 0
    smallest = -1
    for v in range(255, -1, -1):
        if 0 < counts[v] <= limit:
            n_rare += 1
            smallest = v
    if n_rare < 2 or length < bytes_per_free_code * (256 - distinct):
        return -1
    return smallest


@numba.njit(cache=True, nogil=True)
def _escape_block(data, lo, hi, counts, limit, smallest, literals, n_literals, changed):  # type: ignore[no-untyped-def]
    """Escape the rare values of ``data[lo:hi]`` into *changed*, their originals appended to
    *literals* from *n_literals* on; returns the new end of *literals*. (A loop of its own:
    written inline in the pass above, numba made it some twenty times slower. Unsigned
    indices: numba checks none for wrap-around, 1.2x for cutting and escapes.)"""
    end = np.uint64(n_literals)
    for i in range(np.uint64(lo), np.uint64(hi)):  # unsigned: no wrap-around checks
        v = data[i]
        if counts[v] <= limit:
            literals[end] = v
            end += np.uint64(1)
            changed[i] = smallest
    return np.int64(end)
