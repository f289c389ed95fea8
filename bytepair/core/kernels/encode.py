"""The compiled encoder: ``engine.encode_blocks`` as numba loops, one block at a time.

Import only after :func:`bytepair.core.jit.use_numba` returned True (numba is
imported here). :func:`encode_blocks` returns exactly the ``EncodedBlocks`` of
the numpy engine, field for field; tests hold the two to each other. Blocks are
independent, so where numpy advances a batch of blocks together, these loops
finish one block before starting the next, reusing one workspace.

Each block, as in Gage's program: count the pairs, then repeat { choose the
merges of a step; replace them, left to right } until no pair is worth a code;
the symbols left are the payload.

Data structures, one set per call, reused for every block:

* ``val``: the symbol at each position of the block, and ``nxt``/``prv``, a
  doubly linked list over the positions still alive. A merge keeps the left
  position (now holding the code) and unlinks the right one (``DEAD``).
  Position ``n`` (the block's length) is the end of the list; ``val[n]`` is
  ``END``, which no pair holds.
* ``counts``: the exact count of every pair, a dense 256x256 table
  (``left * 256 + right``), updated as each match destroys and makes pairs.
* ``bound``/``arg``/``stale``: per row (left symbol), an upper bound of its
  counts, the lowest column holding it, and whether it may be too high. A count
  rising above the bound raises it (and makes it exact again); a count falling
  from the bound marks the row stale. Only a stale row whose bound would enter
  the best rows is rescanned, so choosing a step's pairs is one pass over 256
  bounds and a few rows.
* Where a chosen pair occurs. A pair of two bytes of the block: ``index``, one
  run ``[length, position, ...]`` per pair of the block,
  ``run_at[pair]`` its start. A pair holding a code: a merge makes only pairs
  that hold its own code, and a code is a value absent from the block (fresh,
  or recycled once it no longer occurs), so every occurrence of such a pair was
  made by the matches of its younger symbol (of two codes made in one step, the
  one replaced later), and its count only falls from then on. Each match lists
  the pairs it makes in ``made``, per side: ``(prev, code)`` at prev's position
  and ``(code, next)`` at its own, with the other symbol in ``made_sym``;
  ``made_at[code]`` says where the code's lists lie. The occurrences of
  ``(a, Z)``, Z younger, are Z's side 0 entries whose other symbol is ``a``; of
  ``(A, z)``, A's side 1 entries with ``z``: in position order, and read only
  for the few pairs ever chosen. Entries go stale (a neighbour merged first), so
  a candidate is checked against ``val`` before it is replaced.

Rules that fix the output (the numpy engine's, so the bytes never depend on luck):

* The best pair is the highest count; ties go to the lowest left symbol, then
  the lowest right symbol. With ``merges_per_step > 1`` the candidates are the
  ``merges_per_step + 2`` best rows in that order (each row's best column).
* Codes: first the values absent from the block at its start, highest first
  ("fresh"); once they are used up (and ``recycle``), values that no longer
  occur, highest first, at most ``MAX_RECYCLED`` of them per block. A pair
  needs ``threshold`` occurrences for a fresh code and ``threshold + 1`` for a
  recycled one (it costs a table byte more).
* More merges in a step (``merges_per_step > 1``): a candidate is dropped when
  its left symbol is a better candidate's right one or its right symbol a
  better one's left (they could overlap), counting every better candidate that
  passed the count test, dropped or not. Extra merges take fresh codes only
  while more than ``merges_per_step`` are left ("plenty"), else the step makes
  one merge; a recycling block makes at most ``spare - 1`` (at least 1).
* ``max_depth``: rows whose left symbol is at the limit are skipped; a pair
  whose expansion needs more than ``max_depth`` of Gage's stack ends the block.
* Replacement is one pass, left to right: in a run (``aaaa``) every other
  match, and each match changes the counts of the sequence as it is at that
  moment, so the pair between two adjacent matches is taken off once.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from ..engine import MAX_COMPILED_BLOCK, MAX_RECYCLED, EncodedBlocks

__all__ = ["encode_blocks"]

END = 256  # val at the end of the list: no pair holds it
DEAD = 257  # val at a position a merge removed


def encode_blocks(
    data: npt.NDArray[np.uint8],
    bounds: npt.NDArray[np.int64],
    *,
    threshold: int,
    recycle: bool = True,
    max_depth: int | None = None,
    merges_per_step: int = 1,
) -> EncodedBlocks:
    """``engine.encode_blocks`` for the blocks ``data[bounds[k]:bounds[k + 1]]``, compiled."""
    if merges_per_step < 1 or (merges_per_step > 1 and max_depth is not None):
        raise ValueError("merges_per_step must be 1 with max_depth, and at least 1")
    data = np.ascontiguousarray(data, dtype=np.uint8)
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    if np.any(bounds[1:] <= bounds[:-1]):
        raise ValueError("encode_blocks needs non-empty blocks")
    if len(bounds) > 1 and np.max(bounds[1:] - bounds[:-1]) > MAX_COMPILED_BLOCK:
        raise ValueError(f"the compiled engine takes blocks of at most {MAX_COMPILED_BLOCK} bytes")
    depth = -1 if max_depth is None else int(max_depth)
    fields = _encode(data, bounds, int(threshold), bool(recycle), depth, int(merges_per_step))
    return EncodedBlocks(*fields)


@numba.njit(cache=True, nogil=True)
def _encode(data, bounds, threshold, recycle, max_depth, merges_per_step):  # type: ignore[no-untyped-def]
    """Every block in turn; returns the columns of ``EncodedBlocks``."""
    n_blocks = len(bounds) - 1
    longest = 1
    for b in range(n_blocks):
        longest = max(longest, bounds[b + 1] - bounds[b])

    # the result; a merge removes at least one symbol, so a block makes fewer merges than its
    # length, and it has at most 255 fresh codes and MAX_RECYCLED recycled ones (this bound
    # keeps count and expansion, 16 bytes an entry, from taking 16 bytes a byte of the frame)
    room = max(min(len(data) - n_blocks, n_blocks * (255 + MAX_RECYCLED)), 0)
    n_merges = np.zeros(n_blocks, dtype=np.int64)
    n_fresh = np.zeros(n_blocks, dtype=np.int64)
    code = np.empty(room, dtype=np.uint8)
    left = np.empty(room, dtype=np.uint8)
    right = np.empty(room, dtype=np.uint8)
    count = np.empty(room, dtype=np.int64)
    expansion = np.empty(room, dtype=np.int64)
    payload_len = np.zeros(n_blocks, dtype=np.int64)
    payload = np.empty(len(data), dtype=np.uint8)

    # the workspace, sized for the longest block and reused by every block
    val = np.empty(longest + 1, dtype=np.uint16)
    nxt = np.empty(longest + 1, dtype=np.uint16)
    prv = np.empty(longest + 1, dtype=np.uint16)
    counts = np.zeros(65536, dtype=np.uint16)
    bound = np.zeros(256, dtype=np.int64)
    arg = np.zeros(256, dtype=np.int64)
    stale = np.zeros(256, dtype=np.bool_)
    run_at = np.empty(65536, dtype=np.int32)  # every pair of a block gets its run before it is read
    # runs of the first pairs (< longest positions), each with a header
    index = np.empty(2 * longest + 16, dtype=np.uint16)
    # the pairs the matches made, per side: where each starts, and its other symbol
    made = np.empty((2, longest + 1), dtype=np.uint16)
    made_sym = np.empty((2, longest + 1), dtype=np.uint16)
    scratch = np.empty(longest + 1, dtype=np.uint16)  # the occurrences of a chosen pair
    cells = np.empty(65536, dtype=np.int32)

    n_done = 0  # merges written
    p_done = 0  # payload bytes written
    for b in range(n_blocks):
        block = data[bounds[b] : bounds[b + 1]]
        n_merges[b], n_fresh[b] = _encode_block(
            block,
            threshold,
            recycle,
            max_depth,
            merges_per_step,
            val,
            nxt,
            prv,
            counts,
            bound,
            arg,
            stale,
            run_at,
            index,
            made,
            made_sym,
            scratch,
            cells,
            code[n_done:],
            left[n_done:],
            right[n_done:],
            count[n_done:],
            expansion[n_done:],
        )
        n_done += n_merges[b]
        payload_len[b] = _take_payload(val, nxt, counts, len(block), payload[p_done:])
        p_done += payload_len[b]
    return (
        n_merges,
        n_fresh,
        code[:n_done].copy(),
        left[:n_done].copy(),
        right[:n_done].copy(),
        count[:n_done].copy(),
        expansion[:n_done].copy(),
        payload_len,
        payload[:p_done].copy(),
    )


@numba.njit(cache=True, nogil=True)
def _encode_block(  # type: ignore[no-untyped-def]
    block,
    threshold,
    recycle,
    max_depth,
    merges_per_step,
    val,
    nxt,
    prv,
    counts,
    bound,
    arg,
    stale,
    run_at,
    index,
    made,
    made_sym,
    scratch,
    cells,
    out_code,
    out_left,
    out_right,
    out_count,
    out_expansion,
):
    """Gage's loop over one block; writes its merges to the ``out_`` arrays, returns
    (merges, fresh ones)."""
    n = len(block)
    symcount = np.zeros(256, dtype=np.int64)  # how often each value occurs now
    # scratch holds the occurrences of a chosen pair later: until then, each pair's rank
    _first_pairs(block, val, nxt, prv, counts, bound, arg, stale, symcount, run_at, index, cells, scratch)
    fresh = np.empty(256, dtype=np.int64)  # values absent from the block, highest first
    n_free = 0
    for v in range(255, -1, -1):
        if symcount[v] == 0:
            fresh[n_free] = v
            n_free += 1
    explen = np.ones(256, dtype=np.int64)  # bytes each symbol stands for
    depth = np.zeros(256, dtype=np.int64)  # stack slots Gage's expander needs for it

    n_best = merges_per_step + 2 if merges_per_step > 1 else 1
    top = np.empty(n_best, dtype=np.int64)
    top_count = np.empty(n_best, dtype=np.int64)
    keys = np.empty(256, dtype=np.int32)  # _best_rows' workspace
    spare = np.empty(256, dtype=np.int64)
    # the step's merges; _choose writes one candidate more than it keeps
    step_left = np.empty(n_best, dtype=np.int64)
    step_right = np.empty(n_best, dtype=np.int64)
    step_code = np.empty(n_best, dtype=np.int64)
    step_count = np.empty(n_best, dtype=np.int64)
    step_fresh = np.empty(n_best, dtype=np.bool_)
    step_made = np.empty(n_best, dtype=np.int64)
    # when each symbol became a code (step * 64 + its place in the step; 0: a byte of the
    # block), and where the pairs its matches made lie in made, per side
    born = np.zeros(256, dtype=np.int64)
    made_at = np.zeros((256, 2, 2), dtype=np.int64)
    made_end = np.zeros(2, dtype=np.int64)
    step = 0

    n_used = 0  # fresh codes used
    n_recycled = 0
    n_merges = 0
    while True:
        # rows below the threshold are never merged: they need not be exact
        _best_rows(counts, bound, arg, stale, depth, max_depth, threshold - 1, top, top_count, keys)
        n_spare = 0  # once the fresh codes are used up: values no longer in the block
        if n_used == n_free and recycle:
            n_spare = _spare_values(symcount, spare, MAX_RECYCLED - n_recycled)
        n_step = _choose(
            top,
            top_count,
            arg,
            depth,
            fresh,
            n_free,
            n_used,
            threshold,
            max_depth,
            merges_per_step,
            spare,
            n_spare,
            step_left,
            step_right,
            step_code,
            step_count,
            step_fresh,
        )
        if n_step == 0:
            break
        step += 1
        for m in range(n_step):
            a, z, c = step_left[m], step_right[m], step_code[m]
            # where the pair's occurrences are listed: a pair is made by the match of its
            # younger symbol (the later one of a step), on that symbol's side
            if born[a] == 0 and born[z] == 0:  # two bytes of the block: the first index
                start = run_at[a * 256 + z] + 1
                places = index[start : start + index[start - 1]]
            elif born[z] >= born[a]:  # made as (prev, z): side 0 of z, where prev was a
                lo, hi = made_at[z, 0, 0], made_at[z, 0, 1]
                # unfiltered for (a, a): _replace_runs tests each place anyway, and takes runs whole
                same = a == z
                places = made[0, lo:hi] if same else _select(made[0, lo:hi], made_sym[0, lo:hi], a, scratch)
            else:  # made as (a, next): side 1 of a, where next was z
                lo, hi = made_at[a, 1, 0], made_at[a, 1, 1]
                places = _select(made[1, lo:hi], made_sym[1, lo:hi], z, scratch)
            made_at[c, 0, 0] = made_end[0]  # scalars: a slice assignment here cost 1.5%
            made_at[c, 1, 0] = made_end[1]
            if a == z:  # runs (aaaa): each run's counts changed once, not once per match
                step_made[m] = _replace_runs(
                    a, c, n, val, nxt, prv, counts, bound, arg, stale, places, made, made_sym, made_end
                )
            else:
                step_made[m] = _replace(
                    a, z, c, n, val, nxt, prv, counts, bound, arg, stale, places, made, made_sym, made_end
                )
            made_at[c, 0, 1] = made_end[0]
            made_at[c, 1, 1] = made_end[1]
            born[c] = step * 64 + m

        for m in range(n_step):
            a, z, c = step_left[m], step_right[m], step_code[m]
            symcount[a] -= step_made[m]
            symcount[z] -= step_made[m]
            symcount[c] += step_made[m]
            out_code[n_merges + m] = c
            out_left[n_merges + m] = a
            out_right[n_merges + m] = z
            out_count[n_merges + m] = step_count[m]
            out_expansion[n_merges + m] = explen[a] + explen[z]
            if step_fresh[m]:
                n_used += 1
            else:
                n_recycled += 1
        for m in range(n_step):  # codes are never operands of their own step
            c = step_code[m]
            explen[c] = out_expansion[n_merges + m]
            depth[c] = max(2, 1 + depth[step_left[m]], depth[step_right[m]])
        n_merges += n_step
    return n_merges, n_used


@numba.njit(cache=True, nogil=True)
def _first_pairs(block, val, nxt, prv, counts, bound, arg, stale, symcount, run_at, index, cells, rank):  # type: ignore[no-untyped-def]
    """Link the block's positions, count its values and pairs, and list every pair's
    positions in order (a run of *index* each). Each pair's *rank* among its pair's
    occurrences, noted while counting, gives its place in the run, so the listing only
    reads *run_at* (a running end per run, read and written per pair, was slower)."""
    n = len(block)
    val[n] = END
    nxt[n] = n
    prv[n] = n
    for i in range(n):  # plain loops, which vectorise
        val[i] = block[i]
    for i in range(n):
        nxt[i] = i + 1
    for i in range(1, n):
        prv[i] = i - 1
    prv[0] = n
    n_cells = 0  # distinct pairs, listed in cells: without a branch, which would guess wrong
    last = -1  # the cell of the pair before, and its count after it
    last_c = 0
    for i in range(n - 1):
        cell = int(block[i]) * 256 + int(block[i + 1])
        # in a run (aaaa) the count just stored: from a register, not from the store
        c = last_c if cell == last else int(counts[cell])
        cells[n_cells] = cell
        rank[i] = c
        n_cells += c == 0
        counts[cell] = c + 1
        last = cell
        last_c = c + 1
    symcount[block[n - 1]] = 1  # a value's count: the pairs it starts, and the last byte

    bound[:] = 0
    arg[:] = 0
    stale[:] = False
    n_index = 0
    for t in range(n_cells):
        cell = cells[t]
        c = int(counts[cell])
        row = cell >> 8
        col = cell & 255
        if c > bound[row] or (c == bound[row] and col < arg[row]):
            bound[row] = c
            arg[row] = col
        symcount[row] += c
        index[n_index] = c  # a run: its length, then its positions, filled below
        run_at[cell] = n_index
        n_index += 1 + c
    for i in range(n - 1):  # every pair gets a run: no test, no branch
        cell = int(block[i]) * 256 + int(block[i + 1])
        index[run_at[cell] + 1 + rank[i]] = i


@numba.njit(cache=True, nogil=True)
def _best_rows(counts, bound, arg, stale, depth, max_depth, floor, top, top_count, keys):  # type: ignore[no-untyped-def]
    """The ``len(top)`` best rows by their maximum count (ties: the lower row) into *top*,
    best first, with their counts; rows whose left symbol is at *max_depth* count 0.
    Only rows above *floor* count: the places no such row fills keep *floor*, and row 0.

    Each row gets a key, its bound then its place from the end (``bound << 8 | 255 - row``),
    so the largest key is the best row by the tie rule, and one maximum over the 256 keys
    (a loop that vectorises, without a branch) finds it. A stale best row is rescanned and
    its key made exact before it can be taken. (Keeping the best so far in order while
    passing over the rows guessed wrong at every row that entered them: twice the time.)
    Any exact top rows are the same rows, so which rows get rescanned on the way does not
    change the output."""
    n_best = len(top)
    top[:] = 0
    top_count[:] = floor
    for row in range(256):
        keys[row] = (np.int32(bound[row]) << 8) | (255 - row)
    if max_depth >= 0:
        for row in range(256):
            if depth[row] >= max_depth:
                keys[row] = 255 - row  # a count of 0
    low = (floor + 1) << 8  # the least key that beats the floor
    t = 0
    while t < n_best:
        best = np.int32(0)
        for row in range(256):
            best = max(best, keys[row])
        if best < low:
            break
        best_row = 255 - (best & 255)
        if stale[best_row]:
            _rescan(counts, bound, arg, stale, best_row)
            keys[best_row] = (np.int32(bound[best_row]) << 8) | (255 - best_row)
            continue
        top[t] = best_row
        top_count[t] = best >> 8
        keys[best_row] = 0
        t += 1


@numba.njit(cache=True, nogil=True)
def _rescan(counts, bound, arg, stale, row):  # type: ignore[no-untyped-def]
    """The true maximum of *row* and its lowest column: the largest count, then the
    largest ``255 - column`` among the cells holding it, two loops over 16-bit lanes that
    vectorise (one maximum over 64-bit keys ``count << 8 | 255 - column`` took 3x as long)."""
    cells = counts[row * 256 : row * 256 + 256]
    most = np.uint16(0)
    for c in range(256):
        most = max(most, cells[c])
    first = np.uint16(0)  # 255 - the lowest column holding most
    for c in range(256):
        first = max(first, np.uint16(255 - c) if cells[c] == most else np.uint16(0))
    bound[row] = most
    arg[row] = 255 - first
    stale[row] = False


@numba.njit(cache=True, nogil=True)
def _choose(  # type: ignore[no-untyped-def]
    top,
    top_count,
    arg,
    depth,
    fresh,
    n_free,
    n_used,
    threshold,
    max_depth,
    merges_per_step,
    spare,
    n_spare,
    step_left,
    step_right,
    step_code,
    step_count,
    step_fresh,
):
    """The merges of this step (left, right, code, count, fresh) into the ``step_`` arrays;
    returns how many (0: the block is done). See the module docstring for the rules.
    *spare* holds the *n_spare* values a recycled code may take (listed by the caller: an
    array released here on one path only kept numba from pruning the reference counts of
    all twelve, 24 atomic operations a step)."""
    has_fresh = n_used < n_free
    # further merges: fresh codes only while plenty are left; spare values while one is left over
    if has_fresh:
        limit = merges_per_step if n_free - n_used > merges_per_step else 1
    else:
        limit = min(max(n_spare - 1, 1), merges_per_step) if n_spare > 0 else 0
    # no branch on the tests, whose outcomes no predictor learns (540 cycles a step on
    # kennedy.xls): every candidate is written at n (the step_ arrays have room for one
    # more) and kept by n += take; once n reaches limit, take stays false
    n = 0
    for t in range(len(top)):
        a = top[t]
        z = arg[a]
        clash = False
        for u in range(t):  # a better candidate that passed, taken or not
            clash |= _passes(u, top_count, has_fresh, threshold) & ((a == arg[top[u]]) | (z == top[u]))
        take = _passes(t, top_count, has_fresh, threshold) & (not clash) & (n < limit)
        if max_depth >= 0:  # only with one merge a step
            take &= max(2, 1 + depth[a], depth[z]) <= max_depth
        step_left[n] = a
        step_right[n] = z
        step_code[n] = fresh[min(n_used + n, 255)] if has_fresh else spare[n]
        step_count[n] = top_count[t]
        step_fresh[n] = has_fresh
        n += take
    return n


@numba.njit(cache=True, nogil=True)
def _spare_values(symcount, spare, most):  # type: ignore[no-untyped-def]
    """The values no longer in the block, highest first, into *spare*; returns how many,
    at most *most*."""
    n_spare = 0
    for v in range(255, -1, -1):
        if symcount[v] == 0:
            spare[n_spare] = v
            n_spare += 1
    return min(n_spare, most)


@numba.njit(cache=True, nogil=True)
def _passes(t, top_count, has_fresh, threshold):  # type: ignore[no-untyped-def]
    """Whether candidate *t* is frequent enough for its code (a recycled one needs one more)."""
    c = top_count[t]
    return (c >= threshold) & (has_fresh | (c > threshold))


@numba.njit(cache=True, nogil=True)
def _select(places, others, want, scratch):  # type: ignore[no-untyped-def]
    """The *places* whose entry in *others* is *want*, in order, copied into *scratch*;
    without a branch (which would guess wrong for about every other entry)."""
    k = 0
    for e in range(len(places)):
        scratch[k] = places[e]
        k += others[e] == want
    return scratch[:k]


@numba.njit(cache=True, nogil=True)
def _replace(  # type: ignore[no-untyped-def]
    a, z, code, n, val, nxt, prv, counts, bound, arg, stale, places, made, made_sym, made_end
):
    """Replace the pair (*a*, *z*) by *code*, left to right, at the positions in *places*
    that still hold it; returns how many.

    Each match takes one off the counts of (prev, a), (a, z) and (z, next) and adds one
    to (prev, code) and (code, next): a count falling from its row's bound makes the row
    stale, a count rising above it raises it. The pairs made are appended to *made*
    (``made_end`` says where each side ends): side 0 (prev, code) by prev's position,
    side 1 (code, next) by the match's, with the other symbol in *made_sym*.

    Every index is unsigned and every array one-dimensional: numba then checks no index
    for wrap-around and multiplies no runtime stride, which left the loop short of
    registers (it reloaded them from the stack all along)."""
    a = np.uint64(a)
    z = np.uint64(z)
    code = np.uint64(code)
    n = np.uint64(n)
    az = (a << 8) | z
    before, before_sym, after, after_sym = made[0], made_sym[0], made[1], made_sym[1]
    n_before = np.uint64(made_end[0])
    n_after = np.uint64(made_end[1])
    matches = 0
    for e in range(len(places)):
        i = np.uint64(places[e])
        if val[i] != a:
            continue  # merged away, or the right half of the match before (aaa)
        j = np.uint64(nxt[i])
        if val[j] != z:
            continue
        p = np.uint64(prv[i])
        q = np.uint64(nxt[j])

        c = counts[az]
        if c == bound[a]:
            stale[a] = True
        counts[az] = c - 1

        if p != n:  # (prev, a) becomes (prev, code)
            x = np.uint64(val[p])
            c = counts[(x << 8) | a]
            if c == bound[x]:
                stale[x] = True
            counts[(x << 8) | a] = c - 1
            c = np.int64(counts[(x << 8) | code]) + 1
            counts[(x << 8) | code] = c
            if c > bound[x]:  # the row's true maximum, in this column alone
                bound[x] = c
                arg[x] = code
                stale[x] = False
            elif c == bound[x] and np.int64(code) < arg[x]:  # signed against signed: no float
                arg[x] = code
            before[n_before] = p
            before_sym[n_before] = x
            n_before += np.uint64(1)

        if q != n:  # (z, next) becomes (code, next)
            y = np.uint64(val[q])
            c = counts[(z << 8) | y]
            if c == bound[z]:
                stale[z] = True
            counts[(z << 8) | y] = c - 1
            c = np.int64(counts[(code << 8) | y]) + 1
            counts[(code << 8) | y] = c
            if c > bound[code]:
                bound[code] = c
                arg[code] = y
                stale[code] = False
            elif c == bound[code] and np.int64(y) < arg[code]:
                arg[code] = y
            after[n_after] = i
            after_sym[n_after] = y
            n_after += np.uint64(1)

        val[i] = code
        val[j] = DEAD
        nxt[i] = q
        prv[q] = i
        matches += 1
    made_end[0] = n_before
    made_end[1] = n_after
    return matches


@numba.njit(cache=True, nogil=True)
def _replace_runs(a, code, n, val, nxt, prv, counts, bound, arg, stale, places, made, made_sym, made_end):  # type: ignore[no-untyped-def]
    """``_replace`` for a pair of one symbol (*a*, *a*): the same matches, links and made
    pairs, but a run (``aaaa``) is matched along its links from its first listed place,
    and the counts inside it change once per merge, not once per match.

    Left to right, a run of *a* after x is matched at every other symbol: the first match
    turns (x, a) into (x, code), each next one (code, a) into (code, code), and each (a, a)
    after a match becomes (code, a); the last match's (a, y) becomes (code, y). The counts
    of (a, a), (code, a) and (code, code) are kept in three counters and added at the end,
    the others updated as in ``_replace``. A row's bound stays an upper bound, exact with
    its lowest column unless marked stale, as match by match: only the stale marks can
    differ, and they decide rescans, not the output. The places listed inside a run are
    then skipped by the test on ``val``. (Matching at the listed places with the counters:
    1.18x on ptt5; along the links: 1.25x. The updates are written out: a call to a helper
    increfs every array it is given, which made it 1.6x slower.)"""
    a = np.uint64(a)
    code = np.uint64(code)
    n = np.uint64(n)
    aa = (a << 8) | a
    before, before_sym, after, after_sym = made[0], made_sym[0], made[1], made_sym[1]
    n_before = np.uint64(made_end[0])
    n_after = np.uint64(made_end[1])
    taken = 0  # (a, a) taken off: the matches, and the pairs after them that held a
    code_a = 0  # (code, a) made, less those turned into (code, code)
    code_code = 0
    matches = 0
    for e in range(len(places)):
        i = np.uint64(places[e])
        if val[i] != a:
            continue  # merged away, or the right half of the match before
        j = np.uint64(nxt[i])
        if val[j] != a:
            continue
        p = np.uint64(prv[i])
        if p != n:  # (x, a) becomes (x, code), as in _replace
            x = np.uint64(val[p])
            c = counts[(x << 8) | a]
            if c == bound[x]:
                stale[x] = True
            counts[(x << 8) | a] = c - 1
            c = np.int64(counts[(x << 8) | code]) + 1
            counts[(x << 8) | code] = c
            if c > bound[x]:
                bound[x] = c
                arg[x] = code
                stale[x] = False
            elif c == bound[x] and np.int64(code) < arg[x]:
                arg[x] = code
            before[n_before] = p
            before_sym[n_before] = x
            n_before += np.uint64(1)
        while True:  # match (i, j), then on along the run
            q = np.uint64(nxt[j])
            taken += 1
            val[i] = code
            val[j] = DEAD
            nxt[i] = q
            prv[q] = i
            matches += 1
            if q == n:
                break
            y = np.uint64(val[q])
            after[n_after] = i
            after_sym[n_after] = y
            n_after += np.uint64(1)
            if y != a:  # (a, y) becomes (code, y), as in _replace
                c = counts[(a << 8) | y]
                if c == bound[a]:
                    stale[a] = True
                counts[(a << 8) | y] = c - 1
                c = np.int64(counts[(code << 8) | y]) + 1
                counts[(code << 8) | y] = c
                if c > bound[code]:
                    bound[code] = c
                    arg[code] = y
                    stale[code] = False
                elif c == bound[code] and np.int64(y) < arg[code]:
                    arg[code] = y
                break
            taken += 1  # (a, a) after the match becomes (code, a)
            code_a += 1
            j = np.uint64(nxt[q])
            if val[j] != a:
                break  # q holds the run's last a
            code_a -= 1  # the next match's (code, a) becomes (code, code)
            code_code += 1
            before[n_before] = i
            before_sym[n_before] = code
            n_before += np.uint64(1)
            i = q

    # the counters: the fall first, then the rises, each by the rules above
    if taken > 0:
        c = np.int64(counts[aa])
        if c == bound[a]:
            stale[a] = True
        counts[aa] = c - taken
    for y, rise in ((code, code_code), (a, code_a)):
        if rise > 0:
            c = np.int64(counts[(code << 8) | y]) + rise
            counts[(code << 8) | y] = c
            if c > bound[code]:
                bound[code] = c
                arg[code] = y
                stale[code] = False
            elif c == bound[code] and np.int64(y) < arg[code]:
                arg[code] = y
    made_end[0] = n_before
    made_end[1] = n_after
    return matches


@numba.njit(cache=True, nogil=True)
def _take_payload(val, nxt, counts, n, payload):  # type: ignore[no-untyped-def]
    """Write the block's symbols left, in order, to *payload*; returns how many. Zeroes the
    counts of the pairs left on the way (no other count is non-zero) for the next block."""
    size = 0
    i = 0
    while i != n:
        payload[size] = val[i]
        size += 1
        j = nxt[i]
        if j != n:
            counts[val[i] * 256 + val[j]] = 0
        i = j
    return size
