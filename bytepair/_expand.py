"""Turning (pair table, payload) back into blocks: a fast decoder and a reference one.

Both take the same columns (no file format here) and validate before they
allocate: every operand is a literal or an earlier code, no code expands to more
than its block holds, and every block expands to exactly its declared length.

A code's meaning is the definition current when it is used: with code recycling
one byte value can stand for several pairs over a block's life. Each merge is a
*node*; an operand ``v`` of merge ``m`` resolves to the latest earlier merge of
the same block whose code is ``v``, or to the literal ``v`` if there is none.
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from ._buffers import Buffers, per_thread
from ._errors import CorruptDataError
from ._escape import restore_escapes
from ._tables import PairTables, concat_ranges

__all__ = ["NODE_BUDGET", "expand", "expand_reference"]

NODE_BUDGET = 4
"""The expansions of all codes of a run of blocks may hold at most this many times
its original size (plus ``NODE_SLACK``); the encoder never writes more (docs/FORMAT.md)."""

NODE_SLACK = 65536
"""... plus this many bytes, so that small blocks with long codes stay within budget."""

_GROUP_BYTES = 1 << 18  # payload expansion works on ~256 KiB of output at a time


class _Resolved:
    """Operands and payload symbols of a run of blocks, resolved to node ids.

    Nodes 0..255 are the literals; node ``256 + m`` is merge ``m``.
    """

    def __init__(self, t: PairTables) -> None:
        nb = len(t.orig_len)
        m_total = len(t.code)
        self.block_of_merge = np.repeat(np.arange(nb, dtype=np.int64), t.n_merges)
        first_merge = np.cumsum(t.n_merges) - t.n_merges
        self.rank = np.arange(m_total, dtype=np.int64) - first_merge[self.block_of_merge]
        # every merge as a sortable key (block, code, rank); resolving an operand
        # of rank r is a search for the last key below (block, value, r)
        span = int(t.n_merges.max()) + 1 if nb else 1
        self.span = span
        defined = (self.block_of_merge * 256 + t.code) * span + self.rank
        self.order = np.argsort(defined, kind="stable")
        self.sorted_keys = defined[self.order]
        # what each byte value means at the end of its block (its latest merge, else
        # itself) as a table of 256 entries per block, unless blocks are so small and
        # so many that the table would outweigh the data (then a search per byte)
        self.final: npt.NDArray[np.int64] | None = None
        if nb * 256 <= 4 * (len(t.payload) + m_total) + 65536:
            self.final = np.tile(np.arange(256, dtype=np.int64), nb)
            if m_total:
                slot = self.sorted_keys // span
                latest = np.flatnonzero(np.diff(slot, append=-1))
                self.final[slot[latest]] = 256 + self.order[latest]

    def resolve(self, slots: npt.NDArray[np.int64], before_rank: npt.NDArray[np.int64] | int) -> npt.NDArray[np.int64]:
        """Node id of each ``block * 256 + byte value`` in *slots* as defined before *before_rank*."""
        values = slots & 255
        if not len(self.sorted_keys):
            return values
        at = np.searchsorted(self.sorted_keys, slots * self.span + before_rank, side="left") - 1
        at_ok = np.maximum(at, 0)
        found = (at >= 0) & (self.sorted_keys[at_ok] // self.span == slots)
        return np.where(found, 256 + self.order[at_ok], values)

    def final_lookup(self, table: npt.NDArray[np.int64], slots: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """``table[node]`` for the final meaning of each slot."""
        if self.final is not None:
            return table[self.final][slots]
        return table[self.resolve(slots, self.span)]


def _check_forward_refs(t: PairTables, res: _Resolved) -> None:
    """A fresh code may be an operand only after its own merge (rules out cycles)."""
    if not len(t.code):
        return
    is_fresh = res.rank < t.n_fresh[res.block_of_merge]
    fresh_slot = res.block_of_merge[is_fresh] * 256 + t.code[is_fresh]
    order = np.argsort(fresh_slot, kind="stable")
    fresh_slot = fresh_slot[order]
    fresh_rank = res.rank[is_fresh][order]
    if not len(fresh_slot):
        return
    if (fresh_slot[1:] == fresh_slot[:-1]).any():
        raise CorruptDataError("pair table lists a fresh code twice")
    slot_base = res.block_of_merge * 256
    for side in (t.left, t.right):
        slots = slot_base + side
        at = np.minimum(np.searchsorted(fresh_slot, slots), len(fresh_slot) - 1)
        bad = (fresh_slot[at] == slots) & (fresh_rank[at] >= res.rank)
        if bad.any():
            m = int(np.argmax(bad))
            raise CorruptDataError(
                f"block {t.first_block + int(res.block_of_merge[m])}: pair code {int(t.code[m])} "
                f"(merge {int(res.rank[m])}) uses code {int(side[m])} before it is defined"
            )


def _node_lengths(
    t: PairTables, res: _Resolved, left_node: npt.NDArray[np.int64], right_node: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Expansion length and depth of every node.

    Relaxation over all nodes at once: after pass d every node of depth <= d is
    final, so real tables (depth 10-20) take a few passes whatever their size.
    Operands always come from earlier merges, so it ends after at most
    ``n_merges`` passes; lengths are clamped so a doubling chain cannot overflow.
    """
    m_total = len(t.code)
    length = np.ones(256 + m_total, dtype=np.int64)
    depth = np.zeros(256 + m_total, dtype=np.int64)
    cap = t.orig_len[res.block_of_merge] + 1
    for _ in range(res.span):
        new_depth = np.maximum(depth[left_node], depth[right_node]) + 1
        np.minimum(length[left_node] + length[right_node], cap, out=length[256:])
        if np.array_equal(new_depth, depth[256:]):
            break
        depth[256:] = new_depth
    too_long = length[256:] > t.orig_len[res.block_of_merge]
    if too_long.any():
        m = int(np.argmax(too_long))
        raise CorruptDataError(
            f"block {t.first_block + int(res.block_of_merge[m])}: pair code {int(t.code[m])} "
            f"expands to more than the block's {int(t.orig_len[res.block_of_merge[m]])} bytes"
        )
    return length, depth


class _Scratch(Buffers):
    """The decoder's per-thread scratch arrays."""


def expand(t: PairTables) -> npt.NDArray[np.uint8]:
    """Decode a run of blocks with a fixed number of numpy calls per rank and depth level."""
    out = _expand_pairs(t)
    if t.escapes is not None:
        restore_escapes(out, t.orig_len, t.escapes, t.first_block)
    return out


def _expand_pairs(t: PairTables) -> npt.NDArray[np.uint8]:
    """The blocks as their pair tables and payloads describe them, escapes not restored."""
    if np.any(t.payload_len < 1) or np.any(t.payload_len > t.orig_len):
        raise CorruptDataError("a block's payload is empty or longer than the block")
    if not len(t.code):  # stored blocks only: the payload is the data
        wrong = t.payload_len != t.orig_len
        if wrong.any():
            b = int(np.argmax(wrong))
            raise CorruptDataError(
                f"block {t.first_block + b}: expands to {int(t.payload_len[b])} bytes, header says {int(t.orig_len[b])}"
            )
        return t.payload.copy()
    res = _Resolved(t)
    _check_forward_refs(t, res)
    slot_base = res.block_of_merge * 256
    left_node = res.resolve(slot_base + t.left, res.rank)
    right_node = res.resolve(slot_base + t.right, res.rank)
    length, depth = _node_lengths(t, res, left_node, right_node)

    # payload symbols -> nodes; each block must expand to exactly its declared length
    nb = len(t.orig_len)
    sym_key = np.repeat(np.arange(0, 256 * nb, 256, dtype=np.int64), t.payload_len)
    sym_key += t.payload  # (block, byte value): what the byte means at the end of its block
    sym_len = res.final_lookup(length, sym_key)
    ends = np.cumsum(sym_len)
    block_total = np.diff(ends[np.cumsum(t.payload_len) - 1], prepend=0) if nb else ends
    wrong = block_total != t.orig_len
    if wrong.any():
        b = int(np.argmax(wrong))
        raise CorruptDataError(
            f"block {t.first_block + b}: expands to {int(block_total[b])} bytes, header says {int(t.orig_len[b])}"
        )

    # lay out every code's expansion, depth level by depth level
    budget = NODE_BUDGET * int(t.orig_len.sum()) + NODE_SLACK
    node_bytes = int(length[256:].sum())
    if node_bytes > budget:
        raise CorruptDataError(
            f"blocks {t.first_block}..{t.first_block + nb - 1}: pair tables expand to "
            f"{node_bytes} bytes, more than {NODE_BUDGET}x the data they describe"
        )
    by_depth = np.argsort(depth[256:], kind="stable")
    offset = np.arange(256 + len(t.code), dtype=np.int64)
    lengths_sorted = length[256 + by_depth]
    offset[256 + by_depth] = 256 + np.cumsum(lengths_sorted) - lengths_sorted
    buf = np.empty(256 + node_bytes, dtype=np.uint8)
    buf[:256] = np.arange(256, dtype=np.uint8)
    # each code's bytes are its operands' bytes; with codes laid out by depth, one
    # gather fills a run of codes of one depth from the (finished) levels below it;
    # runs of at most ~256 KiB keep the gather's index small whatever the tables
    depth_sorted = depth[256 + by_depth]
    filled = np.cumsum(lengths_sorted)
    cuts = np.unique(
        np.concatenate(
            (
                [0, len(by_depth)],
                np.flatnonzero(np.diff(depth_sorted)) + 1,
                np.searchsorted(filled, np.arange(_GROUP_BYTES, node_bytes, _GROUP_BYTES)),
            )
        )
    )
    for a, b in itertools.pairwise(cuts.tolist()):
        nodes = by_depth[a:b]
        src = np.stack((left_node[nodes], right_node[nodes]), axis=1).ravel()
        lo = int(offset[256 + nodes[0]])
        buf[lo : 256 + int(filled[b - 1])] = buf[concat_ranges(offset[src], length[src])]

    # expand the payloads: output byte k is buf[idx[k]], where idx steps by one
    # inside an expansion and jumps between them (built by a cumulative sum)
    out = np.empty(int(t.orig_len.sum()), dtype=np.uint8)
    sym_start = res.final_lookup(offset, sym_key)
    jump = sym_start[1:] - sym_start[:-1]
    jump -= sym_len[:-1]
    jump += 1
    n_syms = len(sym_key)
    # the index buffer is kept between calls: a fresh one costs a page fault per 4 KiB
    idx_buf = per_thread(_Scratch).buffer("idx", min(len(out), _GROUP_BYTES + int(length.max())), np.int64)
    done = 0
    first = 0
    while first < n_syms:  # ~256 KiB of output at a time, so the index fits in cache
        last = max(int(np.searchsorted(ends, done + _GROUP_BYTES, side="right")), first + 1)
        stop = int(ends[last - 1])
        idx = idx_buf[: stop - done]
        idx.fill(1)
        idx[0] = sym_start[first]
        idx[ends[first : last - 1] - done] = jump[first : last - 1]
        np.cumsum(idx, out=idx)
        np.take(buf, idx, out=out[done:stop])
        done, first = stop, last
    return out


def expand_reference(t: PairTables) -> bytes:
    """Decode block by block with an explicit stack, as Gage's expander does; no recursion.

    Slow (pure Python per output byte); it exists to check the fast decoder.
    """
    out = bytearray()
    merge_at = 0
    payload_at = 0
    escaped_at = 0
    for b in range(len(t.orig_len)):
        n_merges = int(t.n_merges[b])
        n_fresh = int(t.n_fresh[b])
        orig_len = int(t.orig_len[b])
        where = f"block {t.first_block + b}"
        # nodes[k] = (left node, right node, length); literals are 0..255
        current = list(range(256))
        lefts: list[int] = []
        rights: list[int] = []
        lengths: list[int] = []
        fresh_codes = {int(c) for c in t.code[merge_at : merge_at + n_fresh]}
        if len(fresh_codes) != n_fresh:
            raise CorruptDataError("pair table lists a fresh code twice")
        defined: set[int] = set()
        for k in range(n_merges):
            code = int(t.code[merge_at + k])
            operands = (int(t.left[merge_at + k]), int(t.right[merge_at + k]))
            for v in operands:
                if v in fresh_codes and v not in defined:
                    raise CorruptDataError(f"{where}: pair code {code} (merge {k}) uses code {v} before it is defined")
            ln, rn = current[operands[0]], current[operands[1]]
            size = (1 if ln < 256 else lengths[ln - 256]) + (1 if rn < 256 else lengths[rn - 256])
            if size > orig_len:
                raise CorruptDataError(f"{where}: pair code {code} expands to more than the block's {orig_len} bytes")
            lefts.append(ln)
            rights.append(rn)
            lengths.append(size)
            current[code] = 256 + k
            if k < n_fresh:
                defined.add(code)
        payload = t.payload[payload_at : payload_at + int(t.payload_len[b])].tobytes()
        total = sum(1 if current[sym] < 256 else lengths[current[sym] - 256] for sym in payload)
        if total != orig_len:
            raise CorruptDataError(f"{where}: expands to {total} bytes, header says {orig_len}")
        # depth of a node is at most its merge index + 1, so this stack never overflows
        stack = [0] * (n_merges + 2)
        block_start = len(out)
        for sym in payload:
            top = 0
            stack[0] = current[sym]
            while top >= 0:
                node = stack[top]
                if node < 256:
                    out.append(node)
                    top -= 1
                else:
                    stack[top] = rights[node - 256]
                    top += 1
                    stack[top] = lefts[node - 256]
        if t.escapes is not None and t.escapes.count[b]:
            count = int(t.escapes.count[b])
            literals = t.escapes.literals[escaped_at : escaped_at + count].tolist()
            _restore_block(out, block_start, int(t.escapes.mark[b]), literals, where)
            escaped_at += count
        merge_at += n_merges
        payload_at += int(t.payload_len[b])
    return bytes(out)


def _restore_block(out: bytearray, start: int, mark: int, literals: list[int], where: str) -> None:
    """Replace a block's escape marks in ``out[start:]`` by its escaped bytes, one by one."""
    found = [k for k in range(start, len(out)) if out[k] == mark]
    if len(found) != len(literals):
        raise CorruptDataError(f"{where}: holds its escape mark {len(found)} times, header says {len(literals)}")
    for k, value in zip(found, literals, strict=True):
        out[k] = value
