"""Turning (pair table, payload) back into blocks: a fast decoder and a reference one.

Both take the same columns (no file format here) and validate before they
allocate: every operand is a literal or an earlier code, no code expands to more
than its block holds, and every block expands to exactly its declared length.
The fast decoder is numpy calls over all blocks at once, except where Python is
cheaper than the calls' fixed cost: runs of few merges build their code expansions
in Python (``PYTHON_NODES``), and those with few symbols too are decoded wholly in
Python (``SMALL_RUN``). The reference decoder checks its tables with ``_BlockNodes``.

A code's meaning is the definition current when it is used: with code recycling
one byte value can stand for several pairs over a block's life. Each merge is a
*node*; an operand ``v`` of merge ``m`` resolves to the latest earlier merge of
the same block whose code is ``v``, or to the literal ``v`` if there is none.

The fast decoder copies bytes 16 at a time (``_WORD``): every expansion is written
as whole 16-byte words, in ascending order of position, so the bytes a short
one writes past its end are overwritten by the expansions that follow it. That
needs numpy to apply a fancy assignment in index order, which it does but does
not promise; ``ordered_writes()`` checks it once, and without it the decoder
gathers byte by byte instead (the same result in about 1.25x the time on the
corpora).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from .._errors import CorruptDataError
from . import faults
from .buffers import Buffers, held
from .escape import restore_escapes
from .tables import PairTables, concat_ranges, cumulative_sum, empty_for_sums, for_sums, run_edges

__all__ = ["NODE_BUDGET", "expand_numpy", "expand_reference", "node_budget"]

NODE_BUDGET = 4
"""The expansions of all codes of a run of blocks may hold at most this many times
its original size (plus ``NODE_SLACK``); the encoder never writes more (docs/FORMAT.md)."""

NODE_SLACK = 65536
"""... plus this many bytes, so that small blocks with long codes stay within budget."""


def node_budget(orig_size: int) -> int:
    """The most bytes the code expansions of a frame of *orig_size* bytes may total."""
    return NODE_BUDGET * orig_size + NODE_SLACK


_W = 16
_WORD = np.dtype(f"V{_W}")
"""Bytes are copied as words of 16: numpy moves one such item about as fast as one
byte, and most expansions are shorter (text: 2 bytes on average)."""

_GROUP = 1 << 16  # words copied per numpy call: bounds the temporaries whatever the tables
_SYMBOLS_PER_TABLE = 2048
"""Blocks of fewer payload bytes than this on average are decoded together, not one
by one through tables of their own (which cost a few numpy calls each)."""


def _words(buf: npt.NDArray[np.uint8]) -> npt.NDArray[np.void]:
    """A view of *buf* whose item ``k`` is ``buf[k : k + 16]`` (items overlap; one per start byte)."""
    return np.ndarray((len(buf) - _W + 1,), dtype=_WORD, buffer=buf, strides=(1,))


@functools.cache
def ordered_writes() -> bool:
    """Whether ``words[at] = values`` with overlapping words leaves each byte as the
    last word covering it wrote it, at the size the decoder uses (checked once)."""
    n = _GROUP
    values = (np.arange(n, dtype=np.int64) % 251 + 1).astype(np.uint8)
    buf = np.zeros(n + _W, dtype=np.uint8)
    _words(buf)[np.arange(n)] = np.repeat(values, _W).view(_WORD)
    return bool(np.array_equal(buf[:n], values)) and bool((buf[n : n + _W - 1] == values[-1]).all())


def _copy_words(
    dst: npt.NDArray[np.void], dst_at: npt.NDArray[np.int64], src: npt.NDArray[np.void], src_at: npt.NDArray[np.int64]
) -> None:
    """``dst[dst_at] = src[src_at]``, at most ``_GROUP`` words per call.

    numpy assigns a fancy index in index order (the overlapping writes rely on it).
    """
    for lo in range(0, len(dst_at), _GROUP):
        dst[dst_at[lo : lo + _GROUP]] = src[src_at[lo : lo + _GROUP]]


def _chunks(
    src: npt.NDArray[np.int64], dst: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64], skip_first: bool
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Copies of ``lengths[k]`` bytes from ``src[k]`` to ``dst[k]`` as 16-byte words, in order.

    A copy of ``n > 16`` bytes takes ``ceil(n / 16)`` words at offsets ``0, r,
    r + 16, ..., n - 16`` (``1 <= r <= 16``): only copies shorter than a word write
    past their end. With *skip_first* (every length then above 16) the word at 0
    is left out, it was written already. Returns the words' sources and
    destinations, and each copy's first word.
    """
    if not len(lengths):  # e.g. a group of symbols none of which is longer than a word
        return src[:0], dst[:0], lengths[:0]
    count = (lengths + (_W - 1)) // _W
    second = lengths - _W * (count - 1)  # offset of a copy's second word
    last = np.maximum(lengths - _W, 0)  # offset of its last word
    if skip_first:
        count -= 1
        head = src + second
    else:
        head = src
    first = cumulative_sum(count)
    first -= count
    # word positions as a cumulative sum of steps: 16 inside a copy, the second
    # word's offset after the first, a jump from one copy's last word to the next's head
    step = empty_for_sums(int(first[-1] + count[-1]))
    step.fill(_W)
    if not skip_first:
        multi = count > 1
        step[first[multi] + 1] = second[multi]
    step[first[1:]] = head[1:] - (src[:-1] + last[:-1])
    step[0] = head[0]
    words_src = cumulative_sum(step, out=step)
    words_dst = (dst - src).repeat(count)
    words_dst += words_src
    return words_src, words_dst, first


class _Resolved:
    """Operands and final meanings of a run of blocks, resolved to node ids.

    Nodes 0..255 are the literals; node ``256 + m`` is merge ``m``. ``ops[m]`` holds
    the nodes of merge ``m``'s left and right operands. ``final`` (when the blocks
    are not too many for a table of 256 entries each) is what each
    ``block * 256 + byte value`` means at the end of its block; else ``resolve``
    searches per symbol.
    """

    def __init__(self, t: PairTables) -> None:
        nb = len(t.orig_len)
        m_total = len(t.code)
        self.m_total = m_total
        self.block_of_merge = np.arange(nb, dtype=np.int64).repeat(t.n_merges)
        base = self.block_of_merge * 256
        slots = np.empty((m_total, 2), dtype=np.int64)
        slots[:, 0] = t.left
        slots[:, 1] = t.right
        slots += base[:, None]
        self.slots = slots
        self.defined = base + t.code
        self.ids = np.arange(m_total, dtype=np.int64)
        n_fresh = int(t.n_fresh.sum())
        self.is_fresh: npt.NDArray[np.bool_] | None = None  # None: all merges are fresh
        if n_fresh != m_total:
            first_recycled = t.n_merges.cumsum() - t.n_merges + t.n_fresh
            self.is_fresh = self.ids < first_recycled[self.block_of_merge]
        self.final: npt.NDArray[np.int32] | None = None
        # a table of 256 entries per block, unless blocks are so small and so many
        # that it would outweigh the data (then a search per operand and per byte):
        # at most 4 bytes per symbol or merge, as a frame may hold millions of blocks
        if nb * 256 <= len(t.payload) + m_total + 65536:
            self.ops = self._by_table(t, nb, n_fresh)
        else:
            self.ops = self._by_search(t)

    def _fresh_error(self, t: PairTables, ahead: npt.NDArray[np.bool_]) -> CorruptDataError:
        """The error for the first merge (left operands first) that uses a fresh code before its merge."""
        side = 0 if ahead[:, 0].any() else 1
        m = int(np.argmax(ahead[:, side]))
        block = int(self.block_of_merge[m])
        rank = m - int(t.n_merges[:block].sum())
        operand = (t.left, t.right)[side]
        return faults.forward_reference(t.first_block + block, int(t.code[m]), rank, int(operand[m]))

    def _by_table(self, t: PairTables, nb: int, n_fresh: int) -> npt.NDArray[np.int64]:
        """Operand nodes through a table of each block's fresh codes, then a search among recycled ones."""
        table = np.arange(nb * 256, dtype=np.int32)  # node ids: at most 256 + 255 per block
        table &= 255
        fresh = self.is_fresh
        if fresh is None:
            table[self.defined] = 256 + self.ids
        else:
            table[self.defined[fresh]] = 256 + self.ids[fresh]
        if np.count_nonzero(table >= 256) != n_fresh:
            raise faults.fresh_code_twice()
        ops = table[self.slots].astype(np.int64)
        # a fresh code defined by this merge or a later one: a self-reference or a cycle
        if np.count_nonzero(np.maximum(ops[:, 0], ops[:, 1]) >= 256 + self.ids):
            raise self._fresh_error(t, ops >= (256 + self.ids)[:, None])
        if fresh is not None:
            # recycled codes come after all fresh ones in a block: the latest earlier
            # recycled definition of an operand, if any, overrides the fresh one
            recycled = (~fresh).nonzero()[0]
            r_slot = self.defined[recycled]
            order = r_slot.argsort(kind="stable")
            recycled = recycled[order]
            r_slot = r_slot[order]
            span = self.m_total + 1
            keys = r_slot * span + recycled
            touched = np.zeros(nb * 256, dtype=np.bool_)
            touched[r_slot] = True
            flat_slots = self.slots.ravel()
            hit = touched[flat_slots].nonzero()[0]
            q_slot = flat_slots[hit]
            at = np.searchsorted(keys, q_slot * span + (hit >> 1)) - 1
            at_ok = np.maximum(at, 0)
            found = (at >= 0) & (r_slot[at_ok] == q_slot)
            ops.ravel()[hit[found]] = 256 + recycled[at[found]]
            latest = (r_slot[1:] != r_slot[:-1]).nonzero()[0]
            latest = np.append(latest, len(r_slot) - 1)
            table[r_slot[latest]] = 256 + recycled[latest]
        self.final = table
        return ops

    def _by_search(self, t: PairTables) -> npt.NDArray[np.int64]:
        """Operand nodes by searching every merge as a sorted key (block, code, rank)."""
        first_merge = np.cumsum(t.n_merges) - t.n_merges
        self.rank = self.ids - first_merge[self.block_of_merge]
        # resolving an operand of rank r is a search for the last key below (block, value, r)
        span = int(t.n_merges.max()) + 1
        self.span = span
        defined = self.defined * span + self.rank
        self.order = np.argsort(defined, kind="stable")
        self.sorted_keys = defined[self.order]
        self._check_forward_refs(t)
        return self.resolve(self.slots, self.rank[:, None])

    def _check_forward_refs(self, t: PairTables) -> None:
        """A fresh code may be an operand only after its own merge (rules out cycles)."""
        is_fresh = self.is_fresh if self.is_fresh is not None else np.ones(self.m_total, dtype=np.bool_)
        order = np.argsort(self.defined[is_fresh], kind="stable")
        fresh_slot = self.defined[is_fresh][order]
        fresh_id = self.ids[is_fresh][order]
        if not len(fresh_slot):
            return
        if (fresh_slot[1:] == fresh_slot[:-1]).any():
            raise faults.fresh_code_twice()
        at = np.minimum(np.searchsorted(fresh_slot, self.slots), len(fresh_slot) - 1)
        ahead = (fresh_slot[at] == self.slots) & (fresh_id[at] >= self.ids[:, None])
        if ahead.any():
            raise self._fresh_error(t, ahead)

    def resolve(self, slots: npt.NDArray[np.int64], before_rank: npt.NDArray[np.int64] | int) -> npt.NDArray[np.int64]:
        """Node id of each ``block * 256 + byte value`` in *slots* as defined before *before_rank* (search path)."""
        if not len(self.sorted_keys):
            return slots & 255
        at = np.searchsorted(self.sorted_keys, slots * self.span + before_rank, side="left") - 1
        at_ok = np.maximum(at, 0)
        found = (at >= 0) & (self.sorted_keys[at_ok] // self.span == slots)
        return np.where(found, 256 + self.order[at_ok], slots & 255)

    def final_nodes(
        self, slots: npt.NDArray[np.int64] | npt.NDArray[np.uint8]
    ) -> npt.NDArray[np.int32] | npt.NDArray[np.int64]:
        """What each ``block * 256 + byte value`` in *slots* means at the end of its block."""
        if self.final is not None:
            return self.final[slots]
        return self.resolve(slots.astype(np.int64), self.span)


class _MeaningsInPython:
    """What every byte value of every block means at the end of its block, as bytes,
    built merge by merge in Python (``meanings[block][value]``).

    For runs of few merges this beats ``_Resolved``, ``_node_lengths`` and ``_lay_out``,
    whose numpy calls per depth level cost more than a Python loop over so few
    merges. The checks are theirs, made as the bytes are built: a fresh code is
    ``None`` until its merge (an operand that is one fails to join), and every
    expansion is measured against its block and the frame's budget. As a table for
    ``_Payloads``, node ``block * 256 + value`` is that value's final meaning.
    """

    def __init__(self, t: PairTables, budget: _Budget) -> None:
        self.meanings: list[list[bytes]] = []
        room = budget.limit - budget.used
        spent = 0
        codes, lefts, rights = t.code.tobytes(), t.left.tobytes(), t.right.tobytes()
        merge_at = 0
        for b, (n_merges, n_fresh, size) in enumerate(
            zip(t.n_merges.tolist(), t.n_fresh.tolist(), t.orig_len.tolist(), strict=True)
        ):
            meaning: list[bytes | None] = list(_LITERALS)
            fresh = codes[merge_at : merge_at + n_fresh]
            if len(set(fresh)) != n_fresh:
                raise faults.fresh_code_twice()
            for code in fresh:
                meaning[code] = None
            merge_end = merge_at + n_merges
            merges = codes[merge_at:merge_end], lefts[merge_at:merge_end], rights[merge_at:merge_end]
            for code, lv, rv in zip(*merges, strict=True):
                try:
                    pair = meaning[lv] + meaning[rv]  # type: ignore[operator]
                except TypeError:
                    raise _undefined_operand(t.first_block + b, fresh, *merges) from None
                n = len(pair)
                if n > size:
                    raise faults.too_long(t.first_block + b, code, size)
                spent += n
                if spent > room:
                    budget.spend(spent)  # raises
                meaning[code] = pair
            self.meanings.append(meaning)  # type: ignore[arg-type]  # every fresh code is defined now
            merge_at = merge_end
        budget.spend(spent)

    @functools.cached_property
    def final(self) -> npt.NDArray[np.int32]:
        """Node ids for ``_Payloads``: each ``block * 256 + value`` is its own."""
        return np.arange(256 * len(self.meanings), dtype=np.int32)

    def final_nodes(self, slots: npt.NDArray[np.int64] | npt.NDArray[np.uint8]) -> npt.NDArray[np.int32]:
        return self.final[slots]

    def lay_out(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """Every node's length, their bytes back to back (padded for whole words), and where each starts."""
        every = list(itertools.chain.from_iterable(self.meanings))
        length = np.fromiter(map(len, every), dtype=np.int64, count=len(every))
        joined = b"".join(every)
        buf = np.empty(len(joined) + _W, dtype=np.uint8)
        buf[: len(joined)] = np.frombuffer(joined, dtype=np.uint8)
        offset = length.cumsum()
        offset -= length
        return length, buf, offset


def _undefined_operand(block: int, fresh: bytes, codes: bytes, lefts: bytes, rights: bytes) -> CorruptDataError:
    """The error for the first merge of a block that uses a fresh code before that code's merge."""
    undefined = set(fresh)
    for k, (code, lv, rv) in enumerate(zip(codes, lefts, rights, strict=True)):
        for v in (lv, rv):
            if v in undefined:
                return faults.forward_reference(block, code, k, v)
        undefined.discard(code)
    raise AssertionError("no merge uses an undefined code")


def _node_lengths(t: PairTables, res: _Resolved) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.signedinteger[Any]]]:
    """Expansion length and depth of every node.

    Relaxation over all nodes at once: after pass d every node of depth <= d is
    final, so real tables (depth 5-25) take a few passes whatever their size.
    Lengths only grow, and a node's length changes in passes 1 to its depth
    and never after, so the passes that change it count its depth.
    Operands always come from earlier merges, so it ends after at most
    ``n_merges`` passes; lengths are clamped so a doubling chain cannot overflow
    (a clamped length is over its block's and is rejected below).
    """
    m_total = res.m_total
    ops = res.ops
    span = int(t.n_merges.max()) + 1
    block_len = t.orig_len[res.block_of_merge]
    # narrow types halve the memory each pass touches: a depth is at most the
    # number of merges in a block, a clamped length at most twice a block
    narrow = span < 1 << 15 and int(block_len.max()) < 1 << 29
    length: npt.NDArray[np.signedinteger[Any]] = np.ones(256 + m_total, dtype=np.int32 if narrow else np.int64)
    depth: npt.NDArray[np.signedinteger[Any]] = np.zeros(256 + m_total, dtype=np.int16 if narrow else np.int64)
    cap = (block_len + 1).astype(length.dtype)
    merge_len, merge_depth = length[256:], depth[256:]
    new_len = np.empty_like(merge_len)
    changed = np.empty(m_total, dtype=np.bool_)
    left, right = np.ascontiguousarray(ops[:, 0]), np.ascontiguousarray(ops[:, 1])
    for _ in range(span):
        np.add(length.take(left), length.take(right), out=new_len)
        np.minimum(new_len, cap, out=new_len)
        np.not_equal(new_len, merge_len, out=changed)
        if not np.count_nonzero(changed):
            break
        # the nodes that change in a pass are among those that changed in the one
        # before (every merge changes in the first), so counting gives the depth
        merge_depth += changed
        merge_len[...] = new_len
    too_long = length[256:] > block_len
    if np.count_nonzero(too_long):
        m = int(np.argmax(too_long))
        raise faults.too_long(t.first_block + int(res.block_of_merge[m]), int(t.code[m]), int(block_len[m]))
    return length.astype(np.int64), depth


def _lay_out(
    ops: npt.NDArray[np.int64],
    length: npt.NDArray[np.int64],
    depth: npt.NDArray[np.signedinteger[Any]],
    node_bytes: int,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Every node's expansion, back to back (literals first), and where each starts.

    Nodes are laid out by depth; each one's bytes are its operands' bytes, so one
    copy per depth level fills that level from the finished ones before it.
    """
    m_total = len(ops)
    by_depth = depth[256:].argsort(kind="stable")  # a radix sort for 16-bit depths
    sizes = length[256:][by_depth]
    starts = cumulative_sum(sizes)
    starts += 256 - sizes
    offset = np.arange(256 + m_total, dtype=np.int64)
    offset[256 + by_depth] = starts
    buf = np.empty(256 + node_bytes + _W, dtype=np.uint8)
    buf[:256] = np.arange(256, dtype=np.uint8)
    # each node is two copies, its left operand's bytes then its right one's
    operands = ops.take(by_depth, axis=0)  # much faster than ops[by_depth] for rows
    piece_len = length[operands]
    piece_src = offset[operands].ravel()
    piece_dst = np.empty_like(piece_len)
    piece_dst[:, 0] = starts
    piece_dst[:, 1] = starts
    piece_dst[:, 1] += piece_len[:, 0]
    piece_len = piece_len.ravel()
    # where each depth level's pieces start (merges have depth 1 or more)
    level_at = 2 * np.bincount(depth[256:])[1:-1].cumsum()
    if not ordered_writes():  # byte by byte: the pieces are back to back from byte 256
        byte_src = concat_ranges(piece_src, piece_len)
        level_end = piece_dst.ravel()[level_at] - 256
        for a, b in itertools.pairwise([0, *level_end.tolist(), len(byte_src)]):
            buf[256 + a : 256 + b] = buf[byte_src[a:b]]
        return buf, offset
    if int(piece_len.max()) <= _W:  # one word per copy
        src, dst = piece_src, piece_dst.ravel()
    else:
        src, dst, first = _chunks(piece_src, piece_dst.ravel(), piece_len, skip_first=False)
        level_at = first[level_at]
    words = _words(buf)
    for a, b in itertools.pairwise([0, *level_at.tolist(), len(src)]):
        _copy_words(words, dst[a:b], words, src[a:b])
    return buf, offset


class _Scratch(Buffers):
    """The decoder's per-thread scratch arrays."""


def expand_numpy(t: PairTables) -> npt.NDArray[np.uint8]:
    """Decode a run of blocks with numpy (the reference): in Python when it is small (``SMALL_RUN``), else with a fixed
    number of numpy calls per ~64K payload bytes, and per depth level unless its code
    expansions are built in Python (``PYTHON_NODES``), about ``MERGES_PER_RUN`` merges at a time."""
    if np.count_nonzero(t.payload_len < 1) or np.count_nonzero(t.payload_len > t.orig_len):
        raise faults.bad_payload_length()
    if not len(t.code):  # stored blocks only: the payload is the data
        wrong = t.payload_len != t.orig_len
        if wrong.any():
            b = int(np.argmax(wrong))
            raise faults.wrong_total(t.first_block + b, int(t.payload_len[b]), int(t.orig_len[b]))
        out = t.payload.copy()
        if t.escapes is not None:
            restore_escapes(out, t.orig_len, t.escapes, t.first_block)
        return out
    if len(t.payload) <= SMALL_RUN and _few_merges(t):
        return _expand_small(t)
    budget = _Budget(t)
    if len(t.code) <= MERGES_PER_RUN:
        return _expand_run(t, budget)
    # a frame may hold a merge for every two bytes of its output, and each takes
    # some 200 bytes while its run is decoded: runs of blocks bound that
    out = np.empty(int(t.orig_len.sum()), dtype=np.uint8)
    at = 0
    for lo, hi in itertools.pairwise(run_edges(t.n_merges, MERGES_PER_RUN)):
        part = _expand_run(t.blocks(lo, hi), budget)
        out[at : at + len(part)] = part
        at += len(part)
    return out


MERGES_PER_RUN = 1 << 15
"""Frames with more merges than this are decoded in runs of blocks with about this many,
which bounds the per-merge arrays (a few MB)."""

PYTHON_NODES = 1100
"""Runs of blocks with at most this many merges (blocks weighing ``_BLOCK_WEIGHT`` each)
build their code expansions in Python (``_MeaningsInPython``): the numpy passes per depth
level cost more than a Python loop over so few merges. Python costs about 0.2 us a merge,
numpy about 0.1 ms fixed and less per merge: one or two blocks of text (200-400 merges)
are built in 0.45-0.7x the time, and the two cross at a weight of about 1,000-1,300
(every level-5 frame of both corpora timed both ways; benchmarks/HISTORY.md, "Small frames")."""
_BLOCK_WEIGHT = 64

SMALL_RUN = 3000
"""Runs of blocks with few merges and at most this many payload symbols are decoded all in
Python (``_expand_small``): joining each symbol's bytes (about 30 ns a symbol) beats the
numpy calls' fixed cost for so few."""


def _few_merges(t: PairTables) -> bool:
    return len(t.code) + _BLOCK_WEIGHT * len(t.orig_len) <= PYTHON_NODES


class _Budget:
    """What the merges of a frame may expand to, in all (``NODE_BUDGET`` times its size
    plus ``NODE_SLACK``), whether it is decoded as one run of blocks or several."""

    def __init__(self, t: PairTables) -> None:
        self.frame = t
        self.limit = node_budget(int(t.orig_len.sum()))
        self.used = 0

    def spend(self, node_bytes: int) -> None:
        """Charge a run's code expansions, before they are allocated."""
        self.used += node_bytes
        if self.used > self.limit:
            t = self.frame
            raise faults.over_budget(t.first_block, t.first_block + len(t.orig_len) - 1, self.used, NODE_BUDGET)


def _expand_run(t: PairTables, budget: _Budget) -> npt.NDArray[np.uint8]:
    """The vector decoder on one run of blocks, charging its code expansions to *budget*."""
    with held(_Scratch) as scratch:
        if _few_merges(t):
            meanings = _MeaningsInPython(t, budget)
            payloads = _Payloads(t, meanings, scratch)
            length, buf, offset = meanings.lay_out()
            payloads.check_totals(length)
            return payloads.write(length, buf, offset)
        res = _Resolved(t)
        length, depth = _node_lengths(t, res)
        payloads = _Payloads(t, res, scratch)
        payloads.check_totals(length)
        node_bytes = int(length[256:].sum())
        budget.spend(node_bytes)
        buf, offset = _lay_out(res.ops, length, depth, node_bytes)
        return payloads.write(length, buf, offset)


class _Payloads:
    """The payloads, symbol by symbol, through tables of what each symbol means.

    Blocks of many symbols are decoded one by one through tables of 256 entries
    per block (what each byte value means at the end of the block), indexed by
    the payload bytes themselves; the per-symbol arrays are scratch buffers
    (fresh large arrays cost a page fault per 4 KiB). Many small blocks instead
    resolve every symbol to its node once and go by groups of ``_GROUP`` symbols,
    keeping only each symbol's node (4 bytes) for the whole run, so that a large
    frame of small blocks stays within a small multiple of its size. Either way
    the bytes of symbols longer than a word, and the escaped bytes, go in
    afterwards for the whole frame at once.
    """

    def __init__(self, t: PairTables, res: _Resolved | _MeaningsInPython, scratch: _Scratch) -> None:
        nb = len(t.orig_len)
        self.t = t
        self.res = res
        self.payload_at = np.zeros(nb + 1, dtype=np.int64)
        t.payload_len.cumsum(out=self.payload_at[1:])
        n_syms = int(self.payload_at[-1])
        self.nodes: npt.NDArray[np.int32] | None = None
        self.lengths = np.zeros(0, dtype=np.uint32)
        if res.final is None or nb * _SYMBOLS_PER_TABLE > n_syms:
            # node ids fit in 32 bits: at most 256 + 255 merges per block
            self.nodes = np.empty(n_syms, dtype=np.int32)
            for lo, hi, blocks, _ in self._groups():
                key = np.arange(blocks.start * 256, blocks.stop * 256, 256).repeat(self._shares(lo, hi, blocks))
                key += t.payload[lo:hi]  # (block, byte value): what the byte means at the end of its block
                self.nodes[lo:hi] = res.final_nodes(key)
        self.scratch = scratch  # this call's (held)

    def _groups(self) -> Iterator[tuple[int, int, slice, npt.NDArray[np.int64]]]:
        """Runs of ``_GROUP`` payload symbols: their bounds, the blocks they overlap (a
        slice), and where in the run each of those blocks' symbols start."""
        at = self.payload_at
        for lo in range(0, int(at[-1]), _GROUP):
            hi = min(lo + _GROUP, int(at[-1]))
            first, last = (np.searchsorted(at, [lo, hi - 1], side="right") - 1).tolist()
            blocks = slice(first, last + 1)
            yield lo, hi, blocks, np.maximum(at[blocks], lo) - lo

    def _shares(self, lo: int, hi: int, blocks: slice) -> npt.NDArray[np.int64]:
        """How many of symbols *lo* to *hi* each of *blocks* holds."""
        at = self.payload_at
        share: npt.NDArray[np.int64] = np.minimum(at[blocks.start + 1 : blocks.stop + 1], hi) - np.maximum(
            at[blocks], lo
        )
        return share

    def check_totals(self, length: npt.NDArray[np.int64]) -> None:
        """Each block must expand to exactly its declared length.

        Blocks decoded one by one are checked as they are written, from the
        symbol lengths the writing needs anyway (before any byte of the block).
        Blocks decoded together are checked group by group first, keeping no
        per-symbol length (a large frame of small blocks would need 4 bytes more
        per symbol).
        """
        if self.nodes is None:
            return
        # a clamped length is at most 65536 and a block at most 65535 symbols, so a
        # block's sum fits in 32 unsigned bits (a wider sum would copy every length)
        self.lengths = length.astype(np.uint32)
        totals = np.zeros(len(self.t.orig_len), dtype=np.int64)
        for lo, hi, blocks, starts in self._groups():
            group_len = self.lengths.take(self.nodes[lo:hi])
            totals[blocks] += np.add.reduceat(group_len, starts, dtype=np.uint32)
        wrong = totals != self.t.orig_len
        if wrong.any():
            b = int(np.argmax(wrong))
            raise self._length_error(b, int(totals[b]))

    def _length_error(self, b: int, total: int) -> CorruptDataError:
        return faults.wrong_total(self.t.first_block + b, total, int(self.t.orig_len[b]))

    def write(
        self, length: npt.NDArray[np.int64], buf: npt.NDArray[np.uint8], offset: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.uint8]:
        """The expanded blocks, escapes restored: every symbol's first word at its
        place, in order, then the rest of the symbols longer than a word."""
        t = self.t
        block_at = np.zeros(len(t.orig_len) + 1, dtype=np.int64)
        t.orig_len.cumsum(out=block_at[1:])
        n = int(block_at[-1])
        out_buf = np.empty(n + _W, dtype=np.uint8)
        node_words = _words(buf)[offset]  # the first 16 bytes of every node's expansion
        if self.nodes is None:
            self._by_block(out_buf, block_at, length, buf, node_words, offset)
        else:
            self._by_group(out_buf, block_at, buf, node_words, offset)
        return out_buf[:n]

    def _by_block(
        self,
        out_buf: npt.NDArray[np.uint8],
        block_at: npt.NDArray[np.int64],
        length: npt.NDArray[np.int64],
        buf: npt.NDArray[np.uint8],
        node_words: npt.NDArray[np.void],
        offset: npt.NDArray[np.int64],
    ) -> None:
        t, final = self.t, self.res.final
        assert final is not None
        nb = len(t.orig_len)
        lengths, words, starts = length[final], node_words[final], offset[final]
        long_ones = (lengths.reshape(nb, 256).max(axis=1) > _W).tolist()
        most = int(t.payload_len.max())
        sym_len = self.scratch.buffer("length", most, np.int64)
        at = for_sums(self.scratch.buffer("at", most, np.int64))
        word = self.scratch.buffer("word", most * _W, np.uint8).view(_WORD)
        payload_at = self.payload_at.tolist()
        orig_len = t.orig_len.tolist()
        bounds = block_at.tolist()
        ordered = ordered_writes()
        # symbols longer than a word: their sources, destinations and lengths, block by block
        long_src: list[npt.NDArray[np.int64]] = []
        long_dst: list[npt.NDArray[np.int64]] = []
        long_len: list[npt.NDArray[np.int64]] = []
        for b in range(nb):
            lo, hi = payload_at[b], payload_at[b + 1]
            m = hi - lo
            symbols = t.payload[lo:hi]
            tables = slice(256 * b, 256 * b + 256)
            # this block's output, as words starting at each of its bytes
            block = out_buf[bounds[b] : bounds[b + 1] + _W]
            lengths[tables].take(symbols, out=sym_len[:m], mode="clip")
            at[0] = 0
            cumulative_sum(sym_len[: m - 1], out=at[1:m])
            total = int(at[m - 1] + sym_len[m - 1])
            if total != orig_len[b]:
                raise self._length_error(b, total)
            if not ordered:
                block[:-_W] = buf[concat_ranges(starts[tables][symbols], sym_len[:m])]
                continue
            _words(block)[at[:m]] = words[tables].take(symbols, out=word[:m], mode="clip")
            if long_ones[b]:
                long = (sym_len[:m] > _W).nonzero()[0]
                long_src.append(starts[tables][symbols[long]])
                long_dst.append(at[long] + bounds[b])
                long_len.append(sym_len[long])
        # the rest of every long symbol, for all blocks at once (a few numpy calls per
        # frame, not per block: most blocks have only a few such symbols)
        if long_src:
            src, dst, _ = _chunks(
                np.concatenate(long_src), np.concatenate(long_dst), np.concatenate(long_len), skip_first=True
            )
            _copy_words(_words(out_buf), dst, _words(buf), src)
        if t.escapes is not None:
            restore_escapes(out_buf[: bounds[-1]], t.orig_len, t.escapes, t.first_block)

    def _by_group(
        self,
        out_buf: npt.NDArray[np.uint8],
        block_at: npt.NDArray[np.int64],
        buf: npt.NDArray[np.uint8],
        node_words: npt.NDArray[np.void],
        offset: npt.NDArray[np.int64],
    ) -> None:
        t, nodes = self.t, self.nodes
        assert nodes is not None
        out_words = _words(out_buf)
        long_ones = int(self.lengths.max()) > _W
        ordered = ordered_writes()
        written = 0
        for lo in range(0, len(nodes), _GROUP):
            group_nodes = nodes[lo : lo + _GROUP]
            group_len = self.lengths.take(group_nodes)
            at = cumulative_sum(group_len)
            at -= group_len
            at += written
            written = int(at[-1] + group_len[-1])
            if not ordered:
                out_buf[at[0] : written] = buf[concat_ranges(offset[group_nodes], group_len.astype(np.int64))]
                continue
            out_words[at] = node_words[group_nodes]
            if long_ones:
                long = (group_len > _W).nonzero()[0]
                src, dst, _ = _chunks(offset[group_nodes[long]], at[long], group_len[long].astype(np.int64), True)
                _copy_words(out_words, dst, _words(buf), src)
        if t.escapes is not None:
            restore_escapes(out_buf[: block_at[-1]], t.orig_len, t.escapes, t.first_block)


class _BlockNodes:
    """One block's merges as nodes, resolved and checked in Python, merge by merge.

    Node ``k`` is merge ``k`` of the block: ``left[k]``/``right[k]`` are its operands
    (0..255 a literal, ``256 + j`` merge ``j``) and ``length[k]`` its expansion's.
    ``final[v]`` is what byte value ``v`` means at the end of the block. The checks
    are the fast decoder's: fresh codes listed once and used only after their merge,
    no code longer than the block, the payload expanding to the declared length.
    """

    def __init__(self, t: PairTables, b: int, merge_at: int, payload: bytes) -> None:
        n_merges = int(t.n_merges[b])
        n_fresh = int(t.n_fresh[b])
        orig_len = int(t.orig_len[b])
        block = t.first_block + b
        final = list(range(256))
        self.left: list[int] = []
        self.right: list[int] = []
        self.length: list[int] = []
        codes = t.code[merge_at : merge_at + n_merges].tolist()
        lefts = t.left[merge_at : merge_at + n_merges].tolist()
        rights = t.right[merge_at : merge_at + n_merges].tolist()
        undefined = set(codes[:n_fresh])  # fresh codes whose merge has not come yet
        if len(undefined) != n_fresh:
            raise faults.fresh_code_twice()
        node_len = [1] * 256  # what each byte value expands to, as things stand
        for k, (code, lv, rv) in enumerate(zip(codes, lefts, rights, strict=True)):
            if undefined and (lv in undefined or rv in undefined):
                v = lv if lv in undefined else rv
                raise faults.forward_reference(block, code, k, v)
            size = node_len[lv] + node_len[rv]
            if size > orig_len:
                raise faults.too_long(block, code, orig_len)
            self.left.append(final[lv])
            self.right.append(final[rv])
            self.length.append(size)
            final[code] = 256 + k
            node_len[code] = size
            undefined.discard(code)
        self.final = final
        total = sum(map(node_len.__getitem__, payload))
        if total != orig_len:
            raise faults.wrong_total(block, total, orig_len)


def _blocks_in_python(t: PairTables) -> Iterator[tuple[int, bytes, _BlockNodes]]:
    """Each block's index, payload and checked nodes."""
    merge_at = 0
    payload_at = 0
    for b in range(len(t.orig_len)):
        payload = t.payload[payload_at : payload_at + int(t.payload_len[b])].tobytes()
        yield b, payload, _BlockNodes(t, b, merge_at, payload)
        merge_at += int(t.n_merges[b])
        payload_at += len(payload)


def _expand_small(t: PairTables) -> npt.NDArray[np.uint8]:
    """Decode a small run of blocks in Python: what each byte value means, merge by merge
    (``_MeaningsInPython``), then each block as the join of its symbols' meanings."""
    meanings = _MeaningsInPython(t, _Budget(t)).meanings
    out = bytearray()
    payload = t.payload.tobytes()
    payload_at = 0
    for b, (size, n_symbols) in enumerate(zip(t.orig_len.tolist(), t.payload_len.tolist(), strict=True)):
        meaning = meanings[b]
        block_start = len(out)
        limit = block_start + size
        # a slice of symbols at a time, so that a damaged block is caught early
        payload_end = hi = payload_at + n_symbols
        for lo in range(payload_at, payload_end, _SYMBOLS_PER_JOIN):
            hi = min(lo + _SYMBOLS_PER_JOIN, payload_end)
            out += b"".join(map(meaning.__getitem__, payload[lo:hi]))
            if len(out) > limit:
                break
        if len(out) != limit:  # the whole block's length, as the compiled decoder reports it
            total = len(out) - block_start + sum(len(meaning[symbol]) for symbol in payload[hi:payload_end])
            raise faults.wrong_total(t.first_block + b, total, size)
        payload_at += n_symbols
    expanded = np.frombuffer(out, dtype=np.uint8)
    if t.escapes is not None:  # numpy's few calls beat a search per escaped byte
        restore_escapes(expanded, t.orig_len, t.escapes, t.first_block)
    return expanded


_SYMBOLS_PER_JOIN = 256
"""Symbols ``_expand_small`` joins at once: a damaged block builds at most this many
times its length before its length is checked."""


_LITERALS = tuple(bytes((v,)) for v in range(256))


class _EscapesInPython:
    """Each block's escaped bytes put back over its marks, for the reference decoder."""

    def __init__(self, t: PairTables) -> None:
        esc = t.escapes
        self.first_block = t.first_block
        self.count = esc.count.tolist() if esc is not None else [0] * len(t.orig_len)
        self.mark = esc.mark.tolist() if esc is not None else []
        self.literals = esc.literals.tolist() if esc is not None else []
        self.used = 0

    def restore(self, out: bytearray, start: int, b: int) -> None:
        """Replace block *b*'s marks in ``out[start:]``, which must number its escape count."""
        count = self.count[b]
        if not count:
            return
        mark = self.mark[b]
        found: list[int] = []
        at = out.find(mark, start)
        while at >= 0 and len(found) <= count:
            found.append(at)
            at = out.find(mark, at + 1)
        if len(found) != count:
            held = len(found) + out.count(mark, at) if at >= 0 else len(found)
            raise faults.escape_count(self.first_block + b, held, count)
        for k, value in zip(found, self.literals[self.used : self.used + count], strict=True):
            out[k] = value
        self.used += count


def expand_reference(t: PairTables) -> bytes:
    """Decode block by block with an explicit stack, as Gage's expander does; no recursion.

    Slow (pure Python per output byte); it exists to check the fast decoder.
    """
    out = bytearray()
    escapes = _EscapesInPython(t)
    for b, payload, nodes in _blocks_in_python(t):
        lefts, rights = nodes.left, nodes.right
        # depth of a node is at most its merge index + 1, so this stack never overflows
        stack = [0] * (len(lefts) + 2)
        block_start = len(out)
        for sym in payload:
            top = 0
            stack[0] = nodes.final[sym]
            while top >= 0:
                node = stack[top]
                if node < 256:
                    out.append(node)
                    top -= 1
                else:
                    stack[top] = rights[node - 256]
                    top += 1
                    stack[top] = lefts[node - 256]
        escapes.restore(out, block_start, b)
    return bytes(out)
