"""The compiled learn loop (numba): the same merges as :func:`.learn.learn_python`, in one call.

Import this module only after ``bytepair.core.jit.use_numba`` returned True: it
imports numba at its top.

The layout is the Python engine's, in arrays:

* words: every distinct word's symbol ids (int32) back to back, each word in
  its own slot (``start``, current ``length``), merged in place;
* pairs: a typed dict from ``left << 32 | right`` to a slot, whose ``count``
  and list of holder words (a linked list in ``node_word``/``node_next``, stale
  members allowed) live in growing arrays;
* the choice: a binary heap of ``(count, pair)`` with lazy deletion, ordered by
  count and then by the pair's *strings*, compared code point by code point
  (left symbol first, then right): subword-nmt's ``max((count, pair))``. Ids
  carry no order, so the strings themselves are kept (``chars``), and a merge
  whose string already exists reuses that id, found through a 64-bit hash of
  the string and checked character by character.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from .learn import IntArray, MergeObserver

__all__ = ["learn"]


@numba.njit(cache=True, nogil=True)
def _compare(
    a: int, b: int, chars: npt.NDArray[np.int32], cstart: npt.NDArray[np.int64], clen: npt.NDArray[np.int64]
) -> int:
    """-1, 0 or 1 as symbol *a*'s string is below, equal to or above *b*'s (code point order)."""
    if a == b:
        return 0
    la = clen[a]
    lb = clen[b]
    sa = cstart[a]
    sb = cstart[b]
    n = la if la < lb else lb
    for i in range(n):
        ca = chars[sa + i]
        cb = chars[sb + i]
        if ca != cb:
            return 1 if ca > cb else -1
    if la == lb:
        return 0
    return 1 if la > lb else -1


@numba.njit(cache=True, nogil=True)
def _better(count1, key1, count2, key2, chars, cstart, clen):  # type: ignore[no-untyped-def]
    """Whether heap entry 1 comes before entry 2: the higher count, then the greater (left, right) strings."""
    if count1 != count2:
        return count1 > count2
    d = _compare(key1 >> 32, key2 >> 32, chars, cstart, clen)
    if d != 0:
        return d > 0
    return _compare(key1 & 0xFFFFFFFF, key2 & 0xFFFFFFFF, chars, cstart, clen) > 0


@numba.njit(cache=True, nogil=True)
def _push(heap_count, heap_key, size, count, key, chars, cstart, clen):  # type: ignore[no-untyped-def]
    """Push (count, key); returns the heap arrays (grown when full) and the new size."""
    if size == heap_count.shape[0]:
        grown_count = np.empty(2 * size, np.int64)
        grown_key = np.empty(2 * size, np.int64)
        grown_count[:size] = heap_count
        grown_key[:size] = heap_key
        heap_count = grown_count
        heap_key = grown_key
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if not _better(count, key, heap_count[parent], heap_key[parent], chars, cstart, clen):
            break
        heap_count[i] = heap_count[parent]
        heap_key[i] = heap_key[parent]
        i = parent
    heap_count[i] = count
    heap_key[i] = key
    return heap_count, heap_key, size + 1


@numba.njit(cache=True, nogil=True)
def _sift_down(heap_count, heap_key, size, count, key, chars, cstart, clen):  # type: ignore[no-untyped-def]
    """Put (count, key) at the root of a heap of *size* entries and sift it down."""
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _better(
            heap_count[child + 1], heap_key[child + 1], heap_count[child], heap_key[child], chars, cstart, clen
        ):
            child += 1
        if not _better(heap_count[child], heap_key[child], count, key, chars, cstart, clen):
            break
        heap_count[i] = heap_count[child]
        heap_key[i] = heap_key[child]
        i = child
    heap_count[i] = count
    heap_key[i] = key


@numba.njit(cache=True, nogil=True)
def _power(base: np.uint64, exponent: int) -> np.uint64:
    result = np.uint64(1)
    while exponent:
        if exponent & 1:
            result = result * base
        base = base * base
        exponent >>= 1
    return result


@numba.njit(cache=True, nogil=True)
def _probe(table_keys, key):  # type: ignore[no-untyped-def]
    """The index in the open-addressing table where *key* is, or the empty place where it would go."""
    mask = table_keys.shape[0] - 1
    x = np.uint64(key)
    x = (x ^ (x >> np.uint64(31))) * np.uint64(0x9E3779B97F4A7C15)
    i = np.int64(x >> np.uint64(33)) & mask
    while table_keys[i] != key and table_keys[i] != -1:
        i = (i + 1) & mask
    return i


@numba.njit(cache=True, nogil=True)
def _rehash(slot_key, nslots, size):  # type: ignore[no-untyped-def]
    """A table of *size* places holding the keys of slots 0 to *nslots* - 1."""
    table_keys = np.full(size, -1, np.int64)
    table_vals = np.empty(size, np.int64)
    for slot in range(nslots):
        i = _probe(table_keys, slot_key[slot])
        table_keys[i] = slot_key[slot]
        table_vals[i] = slot
    return table_keys, table_vals


@numba.njit(cache=True, nogil=True)
def learn_kernel(  # type: ignore[no-untyped-def]
    sym, start, length, freq, chars, cstart, clen, nsymbols, merges, min_frequency, out_left, out_right, out_count
):
    """Merge in place; fills ``out_*`` and returns the number of merges made.

    *sym*/*start*/*length*/*freq* are the words; *chars*/*cstart*/*clen* the
    strings of the first *nsymbols* symbols (room is made here for the new ones).
    """
    nwords = start.shape[0]
    base = np.uint64(1_000_003)
    # -- the symbols' strings, hashes and a hash -> id map (to find a merge that spells an existing symbol)
    capacity = nsymbols + merges + 1
    cs = np.empty(capacity, np.int64)
    cl = np.empty(capacity, np.int64)
    hs = np.empty(capacity, np.uint64)
    cs[:nsymbols] = cstart[:nsymbols]
    cl[:nsymbols] = clen[:nsymbols]
    text = np.empty(max(16, 2 * chars.shape[0]), np.int32)
    text[: chars.shape[0]] = chars
    used = chars.shape[0]
    # strings by hash (62 bits, so a hash is a non-negative int64 key of an open-addressing table)
    hash_size = 16
    while hash_size < 2 * capacity:
        hash_size *= 2
    hash_keys = np.full(hash_size, -1, np.int64)
    hash_ids = np.empty(hash_size, np.int64)
    low62 = np.uint64((1 << 62) - 1)
    for s in range(nsymbols):
        h = np.uint64(0)
        for i in range(cl[s]):
            h = h * base + np.uint64(text[cs[s] + i])
        hs[s] = h
        place = _probe(hash_keys, np.int64(h & low62))
        hash_keys[place] = np.int64(h & low62)
        hash_ids[place] = s
    n = nsymbols
    # -- pair slots: counts and holder lists
    table_keys = np.full(1 << 16, -1, np.int64)
    table_vals = np.empty(1 << 16, np.int64)
    slot_key = np.empty(1024, np.int64)
    slot_count = np.zeros(1024, np.int64)
    slot_head = np.full(1024, -1, np.int64)
    slot_stamp = np.full(1024, -1, np.int64)
    nslots = 0
    node_word = np.empty(1024, np.int64)
    node_next = np.empty(1024, np.int64)
    nnodes = 0
    longest = 2
    for w in range(nwords):
        if length[w] > longest:
            longest = length[w]
        s0 = start[w]
        for i in range(length[w] - 1):
            key = (np.int64(sym[s0 + i]) << 32) | np.int64(sym[s0 + i + 1])
            place = _probe(table_keys, key)
            if table_keys[place] == key:
                slot = table_vals[place]
            else:
                slot = nslots
                if slot == slot_count.shape[0]:
                    slot_key = np.concatenate((slot_key, np.empty(slot, np.int64)))
                    slot_count = np.concatenate((slot_count, np.zeros(slot, np.int64)))
                    slot_head = np.concatenate((slot_head, np.full(slot, -1, np.int64)))
                    slot_stamp = np.concatenate((slot_stamp, np.full(slot, -1, np.int64)))
                slot_key[slot] = key
                table_keys[place] = key
                table_vals[place] = slot
                nslots += 1
                if 2 * nslots > table_keys.shape[0]:
                    table_keys, table_vals = _rehash(slot_key, nslots, 2 * table_keys.shape[0])
            slot_count[slot] += freq[w]
            head = slot_head[slot]
            if head < 0 or node_word[head] != w:
                if nnodes == node_word.shape[0]:
                    node_word = np.concatenate((node_word, np.empty(nnodes, np.int64)))
                    node_next = np.concatenate((node_next, np.empty(nnodes, np.int64)))
                node_word[nnodes] = w
                node_next[nnodes] = head
                slot_head[slot] = nnodes
                nnodes += 1
    # -- the heap of (count, pair)
    heap_count = np.empty(max(16, nslots), np.int64)
    heap_key = np.empty(max(16, nslots), np.int64)
    size = 0
    for slot in range(nslots):
        heap_count, heap_key, size = _push(heap_count, heap_key, size, slot_count[slot], slot_key[slot], text, cs, cl)
    old = np.empty(longest, np.int32)
    made = np.empty(longest, np.int64)
    grown = np.empty(16, np.int64)
    done = 0
    while done < merges and size > 0:
        top_count = heap_count[0]
        top_key = heap_key[0]
        slot = table_vals[_probe(table_keys, top_key)]
        count = slot_count[slot]
        if count != top_count:  # stale: re-push with the count it has now, or drop it
            size -= 1
            if size > 0:
                _sift_down(heap_count, heap_key, size, heap_count[size], heap_key[size], text, cs, cl)
            if 0 < count < top_count:
                heap_count, heap_key, size = _push(heap_count, heap_key, size, count, top_key, text, cs, cl)
            continue
        if count < min_frequency:
            break
        size -= 1
        if size > 0:
            _sift_down(heap_count, heap_key, size, heap_count[size], heap_key[size], text, cs, cl)
        a = top_key >> 32
        b = top_key & 0xFFFFFFFF
        # the merged symbol: an existing one with the same string, or a new one
        h = hs[a] * _power(base, cl[b]) + hs[b]
        hash_place = _probe(hash_keys, np.int64(h & low62))
        c = hash_ids[hash_place] if hash_keys[hash_place] >= 0 else -1
        if c >= 0 and cl[c] == cl[a] + cl[b]:
            for i in range(cl[a]):
                if text[cs[c] + i] != text[cs[a] + i]:
                    c = -1
                    break
            if c >= 0:
                for i in range(cl[b]):
                    if text[cs[c] + cl[a] + i] != text[cs[b] + i]:
                        c = -1
                        break
        elif c >= 0:
            c = -1
        if c < 0:
            c = n
            n += 1
            need = used + cl[a] + cl[b]
            if need > text.shape[0]:
                bigger = np.empty(2 * need, np.int32)
                bigger[:used] = text[:used]
                text = bigger
            text[used : used + cl[a]] = text[cs[a] : cs[a] + cl[a]]
            text[used + cl[a] : need] = text[cs[b] : cs[b] + cl[b]]
            cs[c] = used
            cl[c] = cl[a] + cl[b]
            hs[c] = h
            hash_keys[hash_place] = np.int64(h & low62)
            hash_ids[hash_place] = c
            used = need
        # visit the words holding the pair
        ngrown = 0
        node = slot_head[slot]
        slot_head[slot] = -1
        while node >= 0:
            w = node_word[node]
            node = node_next[node]
            s0 = start[w]
            length_old = length[w]
            found = False
            for i in range(length_old - 1):
                if sym[s0 + i] == a and sym[s0 + i + 1] == b:
                    found = True
                    break
            if not found:
                continue
            f = freq[w]
            for i in range(length_old):
                old[i] = sym[s0 + i]
            # write the merged word in place; subtract the pairs an occurrence overlapped
            j = 0
            i = 0
            nmade = 0
            last_gone = -1
            while i < length_old:
                if i + 1 < length_old and old[i] == a and old[i + 1] == b:
                    for p in (i - 1, i + 1):
                        if 0 <= p < length_old - 1 and p > last_gone:
                            gone_key = (np.int64(old[p]) << 32) | np.int64(old[p + 1])
                            slot_count[table_vals[_probe(table_keys, gone_key)]] -= f
                            last_gone = p
                    made[nmade] = j
                    nmade += 1
                    sym[s0 + j] = c
                    j += 1
                    i += 2
                else:
                    sym[s0 + j] = old[i]
                    j += 1
                    i += 1
            length[w] = j
            # add the pairs beside each symbol this merge made (each pair once; an older symbol
            # spelling the same string is not one of them)
            last_made = -1
            for m in range(nmade):
                k = made[m]
                for p in (k - 1, k):
                    if 0 <= p < j - 1 and p > last_made:
                        made_key = (np.int64(sym[s0 + p]) << 32) | np.int64(sym[s0 + p + 1])
                        place = _probe(table_keys, made_key)
                        if table_keys[place] == made_key:
                            made_slot = table_vals[place]
                        else:
                            made_slot = nslots
                            if made_slot == slot_count.shape[0]:
                                slot_key = np.concatenate((slot_key, np.empty(made_slot, np.int64)))
                                slot_count = np.concatenate((slot_count, np.zeros(made_slot, np.int64)))
                                slot_head = np.concatenate((slot_head, np.full(made_slot, -1, np.int64)))
                                slot_stamp = np.concatenate((slot_stamp, np.full(made_slot, -1, np.int64)))
                            slot_key[made_slot] = made_key
                            table_keys[place] = made_key
                            table_vals[place] = made_slot
                            nslots += 1
                            if 2 * nslots > table_keys.shape[0]:
                                table_keys, table_vals = _rehash(slot_key, nslots, 2 * table_keys.shape[0])
                        slot_count[made_slot] += f
                        head = slot_head[made_slot]
                        if head < 0 or node_word[head] != w:
                            if nnodes == node_word.shape[0]:
                                node_word = np.concatenate((node_word, np.empty(nnodes, np.int64)))
                                node_next = np.concatenate((node_next, np.empty(nnodes, np.int64)))
                            node_word[nnodes] = w
                            node_next[nnodes] = head
                            slot_head[made_slot] = nnodes
                            nnodes += 1
                        if slot_stamp[made_slot] != done:
                            slot_stamp[made_slot] = done
                            if ngrown == grown.shape[0]:
                                grown = np.concatenate((grown, np.empty(ngrown, np.int64)))
                            grown[ngrown] = made_key
                            ngrown += 1
                        last_made = p
        slot_count[slot] = 0
        for g in range(ngrown):
            key = grown[g]
            if key != top_key:
                heap_count, heap_key, size = _push(
                    heap_count, heap_key, size, slot_count[table_vals[_probe(table_keys, key)]], key, text, cs, cl
                )
        out_left[done] = a
        out_right[done] = b
        out_count[done] = count
        done += 1
    return done, n


def learn(
    flat: IntArray,
    lengths: IntArray,
    freqs: IntArray,
    symbols: list[str],
    merges: int,
    min_frequency: int,
    observer: MergeObserver | None = None,
) -> tuple[list[tuple[int, int]], list[int]]:
    """The compiled counterpart of :func:`.learn.learn_python`, with the same arguments and result.

    *observer* is told of every merge after the loop (the compiled loop cannot
    call back into Python).
    """
    lengths = np.ascontiguousarray(lengths, np.int64)
    start = np.zeros(len(lengths), np.int64)
    if len(lengths):
        np.cumsum(lengths[:-1], out=start[1:])
    sym = np.array(flat, np.int32)  # merged in place: a copy
    freq = np.ascontiguousarray(freqs, np.int64)
    clen = np.fromiter(map(len, symbols), np.int64, len(symbols))
    cstart = np.zeros(len(symbols), np.int64)
    if symbols:
        np.cumsum(clen[:-1], out=cstart[1:])
    chars = np.frombuffer("".join(symbols).encode("utf-32-le", "surrogatepass"), np.uint32).astype(np.int32)
    out_left = np.empty(merges, np.int64)
    out_right = np.empty(merges, np.int64)
    out_count = np.empty(merges, np.int64)
    done, _ = learn_kernel(
        sym, start, lengths.copy(), freq, chars, cstart, clen, len(symbols), merges, min_frequency,
        out_left, out_right, out_count,
    )  # fmt: skip
    ids = {symbol: i for i, symbol in enumerate(symbols)}
    pairs: list[tuple[int, int]] = []
    counts = out_count[:done].tolist()
    for a, b in zip(out_left[:done].tolist(), out_right[:done].tolist(), strict=True):
        merged = symbols[a] + symbols[b]
        if merged not in ids:  # the kernel numbered new symbols in this same order
            ids[merged] = len(symbols)
            symbols.append(merged)
        pairs.append((a, b))
    if observer is not None:
        for number, count in enumerate(counts, start=1):
            observer(number, count)
    return pairs, counts


# -- applying merges to words (encoding) ---------------------------------------------------------------------


@numba.njit(cache=True, nogil=True)
def build_merge_table(lefts, rights, mades):  # type: ignore[no-untyped-def]
    """An open-addressing table from ``left << 32 | right`` to (rank, made id); the first rank of a pair wins."""
    size = 16
    while size < 2 * lefts.shape[0]:
        size *= 2
    table_keys = np.full(size, -1, np.int64)
    table_rank = np.empty(size, np.int64)
    table_made = np.empty(size, np.int64)
    for rank in range(lefts.shape[0]):
        key = (lefts[rank] << 32) | rights[rank]
        place = _probe(table_keys, key)
        if table_keys[place] != key:
            table_keys[place] = key
            table_rank[place] = rank
            table_made[place] = mades[rank]
    return table_keys, table_rank, table_made


@numba.njit(cache=True, nogil=True)
def apply_kernel(sym, start, length, table_keys, table_rank, table_made):  # type: ignore[no-untyped-def]
    """Merge each word in place, GPT-2's and subword-nmt's way: while some adjacent pair was ever merged,
    merge every occurrence (left to right) of the one merged earliest. *length* is updated."""
    for w in range(start.shape[0]):
        s0 = start[w]
        n = length[w]
        while n > 1:
            best = -1
            best_rank = table_keys.shape[0] + (1 << 62)
            left = 0
            right = 0
            for i in range(n - 1):
                key = (np.int64(sym[s0 + i]) << 32) | np.int64(sym[s0 + i + 1])
                place = _probe(table_keys, key)
                if table_keys[place] == key and table_rank[place] < best_rank:
                    best_rank = table_rank[place]
                    best = table_made[place]
                    left = sym[s0 + i]
                    right = sym[s0 + i + 1]
            if best < 0:
                break
            j = 0
            i = 0
            while i < n:
                if i + 1 < n and sym[s0 + i] == left and sym[s0 + i + 1] == right:
                    sym[s0 + j] = best
                    i += 2
                else:
                    sym[s0 + j] = sym[s0 + i]
                    i += 1
                j += 1
            n = j
        length[w] = n


class MergeTable:
    """A tokenizer's merges as the compiled encoder's table (ids of the vocabulary)."""

    def __init__(self, merges: list[tuple[str, str]], vocab: dict[str, int]) -> None:
        lefts = np.array([vocab[a] for a, _ in merges], np.int64)
        rights = np.array([vocab[b] for _, b in merges], np.int64)
        mades = np.array([vocab[a + b] for a, b in merges], np.int64)
        self.keys, self.ranks, self.mades = build_merge_table(lefts, rights, mades)

    def apply(self, flat: IntArray, lengths: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        """Merge words (initial symbol ids *flat*, *lengths*): the merged ids (each word where it
        started, a gap after it), each word's start and its merged length."""
        lengths = np.array(lengths, np.int64)
        start = np.zeros(len(lengths), np.int64)
        if len(lengths):
            np.cumsum(lengths[:-1], out=start[1:])
        sym = np.array(flat, np.int32)
        apply_kernel(sym, start, lengths, self.keys, self.ranks, self.mades)
        return sym.astype(np.int64), start, lengths
