"""The subword tokenizer's compiled loops: learning merges, and applying them to words.

:func:`learn` makes the merges :func:`bytepair.subword.learn.learn_python` makes, in
the same order, with the same counts and the same new symbol ids. The layout is
the Python engine's, in C arrays:

* words: every distinct word's symbol ids (int32) back to back, each word in its
  own slot (``start``, current ``length``), merged in place;
* pairs: an open-addressing table from ``left << 32 | right`` to a slot, whose
  count and list of holder words (a linked list of nodes; stale members
  allowed: a merge checks that the word still holds the pair) live in arrays
  grown by doubling;
* the choice: a binary heap of ``(count, pair)`` with lazy deletion, ordered by
  count and then by the pair's *strings*, compared code point by code point
  (left symbol first, then right): subword-nmt's ``max((count, pair))``. Ids
  carry no order, so the strings are kept (``text``), and a merge whose string
  already exists reuses that id, found through a table keyed by a hash of the
  string and checked character by character.

:class:`MergeRanks` and its ``apply`` are the encoder's loop: GPT-2's and
subword-nmt's rule, the pair merged earliest first.
"""

from libc.stdint cimport int32_t, int64_t, uint64_t, INT64_MAX
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

from bytepair.core.kernels.common cimport CHECKED

import numpy

cdef enum:
    OK = 0
    NO_MEMORY = 1  # a malloc/realloc failed: MemoryError
    BROKEN = 2  # an internal index out of range (looked for only in the checked build): a bug

cdef enum:
    FIRST_TABLE = 1 << 16  # places of the first pair table
    FIRST_ROOM = 1024  # slots, nodes, heap entries before the first doubling

cdef extern from *:
    """
    #define BP_SUBWORD_BASE 1000003ULL
    #define BP_SUBWORD_LOW62 ((1ULL << 62) - 1)
    #define BP_SUBWORD_GOLDEN 0x9E3779B97F4A7C15ULL
    #define BP_SUBWORD_LOW32 0xFFFFFFFFLL
    """
    const uint64_t BASE "BP_SUBWORD_BASE"  # the strings' polynomial hash
    const uint64_t LOW62 "BP_SUBWORD_LOW62"  # a hash's bits that make a table key (non-negative)
    const uint64_t GOLDEN "BP_SUBWORD_GOLDEN"  # the tables' multiplicative mix
    const int64_t LOW32 "BP_SUBWORD_LOW32"  # a pair key's right id


cdef struct Learner:
    # the symbols: their strings (code points, back to back in text), each one's hash, and a
    # table from string to id (open addressing by hash; ids, -1 empty; never more than half full)
    int32_t *text
    int64_t text_used
    int64_t text_room
    int64_t *sym_start
    int64_t *sym_length
    uint64_t *sym_hash
    int64_t nsymbols
    int64_t *spelt
    int64_t spelt_mask
    # the pairs: a table from left << 32 | right to a slot (keys -1 empty; at most half full)
    int64_t *pair_keys
    int64_t *pair_slots
    int64_t pair_mask
    # per slot: its pair, its count, the first node of its holder list, the last merge that grew it
    int64_t *slot_key
    int64_t *slot_count
    int64_t *slot_head
    int64_t *slot_stamp
    int64_t nslots
    int64_t slot_room
    # the holder lists' nodes: a word and the next node (-1 ends a list)
    int64_t *node_word
    int64_t *node_next
    int64_t nnodes
    int64_t node_room
    # the heap of (count, pair), best at 0
    int64_t *heap_count
    int64_t *heap_key
    int64_t heap_size
    int64_t heap_room
    # one merge's scratch: a word before it, where the made symbols went, the pairs that grew
    int32_t *old
    int64_t *made
    int64_t *grown
    int64_t ngrown
    int64_t grown_room


cdef int _resize(void **data, int64_t items, size_t item) noexcept nogil:
    """Make *data* hold *items* items (realloc); NO_MEMORY leaves the old block as it was."""
    cdef void *block = realloc(data[0], <size_t> items * item)
    if block == NULL:
        return NO_MEMORY
    data[0] = block
    return OK


cdef void _free(Learner *L) noexcept nogil:
    free(L.text)
    free(L.sym_start)
    free(L.sym_length)
    free(L.sym_hash)
    free(L.spelt)
    free(L.pair_keys)
    free(L.pair_slots)
    free(L.slot_key)
    free(L.slot_count)
    free(L.slot_head)
    free(L.slot_stamp)
    free(L.node_word)
    free(L.node_next)
    free(L.heap_count)
    free(L.heap_key)
    free(L.old)
    free(L.made)
    free(L.grown)


cdef inline int64_t _place(int64_t key, int64_t mask) noexcept nogil:
    """Where *key* starts probing in a table of ``mask + 1`` places (a power of two)."""
    cdef uint64_t x = <uint64_t> key
    x = (x ^ (x >> 31)) * GOLDEN
    return <int64_t> (x >> 33) & mask


cdef inline int64_t _probe(const int64_t *keys, int64_t mask, int64_t key) noexcept nogil:
    """The place of *key* in an open-addressing table, or the empty place (-1) where it would go."""
    cdef int64_t i = _place(key, mask)
    while keys[i] != key and keys[i] != -1:
        i = (i + 1) & mask
    return i


# -- the symbols' strings ------------------------------------------------------------------------


cdef int _compare(const Learner *L, int64_t a, int64_t b) noexcept nogil:
    """-1, 0 or 1 as symbol *a*'s string is below, equal to or above *b*'s (code point order)."""
    if a == b:
        return 0
    cdef int64_t la = L.sym_length[a], lb = L.sym_length[b], i
    cdef const int32_t *sa = L.text + L.sym_start[a]
    cdef const int32_t *sb = L.text + L.sym_start[b]
    cdef int64_t n = la if la < lb else lb
    for i in range(n):
        if sa[i] != sb[i]:
            return 1 if sa[i] > sb[i] else -1
    if la == lb:
        return 0
    return 1 if la > lb else -1


cdef inline bint _same(const int32_t *x, const int32_t *y, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        if x[i] != y[i]:
            return False
    return True


cdef int64_t _spelling(const Learner *L, uint64_t h, int64_t sa, int64_t la, int64_t sb, int64_t lb) noexcept nogil:
    """The place in the string table of the symbol spelt ``text[sa:sa+la] + text[sb:sb+lb]`` (hash *h*),
    or the empty place where it would go. Strings are compared whole, so a hash collision costs a probe."""
    cdef int64_t i = _place(<int64_t> (h & LOW62), L.spelt_mask), c
    cdef const int32_t *at
    while True:
        c = L.spelt[i]
        if c < 0:
            return i
        if L.sym_hash[c] == h and L.sym_length[c] == la + lb:
            at = L.text + L.sym_start[c]
            if _same(at, L.text + sa, la) and _same(at + la, L.text + sb, lb):
                return i
        i = (i + 1) & L.spelt_mask


cdef uint64_t _power(uint64_t base, int64_t exponent) noexcept nogil:
    cdef uint64_t result = 1
    while exponent:
        if exponent & 1:
            result = result * base
        base = base * base
        exponent >>= 1
    return result


# -- the heap ----------------------------------------------------------------------------------


cdef inline bint _better(const Learner *L, int64_t count1, int64_t key1, int64_t count2, int64_t key2) noexcept nogil:
    """Whether heap entry 1 comes before entry 2: the higher count, then the greater (left, right) strings."""
    if count1 != count2:
        return count1 > count2
    cdef int d = _compare(L, key1 >> 32, key2 >> 32)
    if d != 0:
        return d > 0
    return _compare(L, key1 & LOW32, key2 & LOW32) > 0


cdef int _push(Learner *L, int64_t count, int64_t key) noexcept nogil:
    """Push (count, key), growing the heap when full."""
    cdef int64_t i = L.heap_size, parent, room
    if i == L.heap_room:
        room = 2 * L.heap_room
        if (
            _resize(<void **> &L.heap_count, room, sizeof(int64_t))
            or _resize(<void **> &L.heap_key, room, sizeof(int64_t))
        ):
            return NO_MEMORY
        L.heap_room = room
    while i > 0:
        parent = (i - 1) >> 1
        if not _better(L, count, key, L.heap_count[parent], L.heap_key[parent]):
            break
        L.heap_count[i] = L.heap_count[parent]
        L.heap_key[i] = L.heap_key[parent]
        i = parent
    L.heap_count[i] = count
    L.heap_key[i] = key
    L.heap_size += 1
    return OK


cdef void _pop(Learner *L) noexcept nogil:
    """Drop the top: the last entry goes to the root and sifts down."""
    L.heap_size -= 1
    cdef int64_t size = L.heap_size, i = 0, child
    if size == 0:
        return
    cdef int64_t count = L.heap_count[size], key = L.heap_key[size]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _better(
            L, L.heap_count[child + 1], L.heap_key[child + 1], L.heap_count[child], L.heap_key[child]
        ):
            child += 1
        if not _better(L, L.heap_count[child], L.heap_key[child], count, key):
            break
        L.heap_count[i] = L.heap_count[child]
        L.heap_key[i] = L.heap_key[child]
        i = child
    L.heap_count[i] = count
    L.heap_key[i] = key


# -- the pairs ---------------------------------------------------------------------------------


cdef int _rehash(Learner *L, int64_t size) noexcept nogil:
    """A pair table of *size* places holding the keys of every slot."""
    cdef int64_t *keys = <int64_t *> malloc(<size_t> size * sizeof(int64_t))
    cdef int64_t *slots = <int64_t *> malloc(<size_t> size * sizeof(int64_t))
    cdef int64_t i, slot
    if keys == NULL or slots == NULL:
        free(keys)
        free(slots)
        return NO_MEMORY
    for i in range(size):
        keys[i] = -1
    for slot in range(L.nslots):
        i = _probe(keys, size - 1, L.slot_key[slot])
        keys[i] = L.slot_key[slot]
        slots[i] = slot
    free(L.pair_keys)
    free(L.pair_slots)
    L.pair_keys = keys
    L.pair_slots = slots
    L.pair_mask = size - 1
    return OK


cdef int _slot_of(Learner *L, int64_t key, int64_t *slot) noexcept nogil:
    """The slot of pair *key* in *slot*, made (count 0, no holders) if the pair is new."""
    cdef int64_t place = _probe(L.pair_keys, L.pair_mask, key), s, room
    if L.pair_keys[place] == key:
        slot[0] = L.pair_slots[place]
        return OK
    s = L.nslots
    if s == L.slot_room:
        room = 2 * L.slot_room
        if (
            _resize(<void **> &L.slot_key, room, sizeof(int64_t))
            or _resize(<void **> &L.slot_count, room, sizeof(int64_t))
            or _resize(<void **> &L.slot_head, room, sizeof(int64_t))
            or _resize(<void **> &L.slot_stamp, room, sizeof(int64_t))
        ):
            return NO_MEMORY
        L.slot_room = room
    L.slot_key[s] = key
    L.slot_count[s] = 0
    L.slot_head[s] = -1
    L.slot_stamp[s] = -1
    L.pair_keys[place] = key
    L.pair_slots[place] = s
    L.nslots += 1
    slot[0] = s
    if 2 * L.nslots > L.pair_mask + 1:
        return _rehash(L, 2 * (L.pair_mask + 1))
    return OK


cdef int _hold(Learner *L, int64_t slot, int64_t w) noexcept nogil:
    """Add word *w* to the holders of *slot*, unless it is already the list's head."""
    cdef int64_t head = L.slot_head[slot], room
    if head >= 0 and L.node_word[head] == w:
        return OK
    if L.nnodes == L.node_room:
        room = 2 * L.node_room
        if (
            _resize(<void **> &L.node_word, room, sizeof(int64_t))
            or _resize(<void **> &L.node_next, room, sizeof(int64_t))
        ):
            return NO_MEMORY
        L.node_room = room
    L.node_word[L.nnodes] = w
    L.node_next[L.nnodes] = head
    L.slot_head[slot] = L.nnodes
    L.nnodes += 1
    return OK


cdef inline int64_t _existing_slot(const Learner *L, int64_t key) noexcept nogil:
    """The slot of a pair known to be counted (-1 if it is not: only the checked build looks)."""
    cdef int64_t place = _probe(L.pair_keys, L.pair_mask, key)
    if CHECKED and L.pair_keys[place] != key:
        return -1
    return L.pair_slots[place]


# -- learning ----------------------------------------------------------------------------------


cdef int _setup(
    Learner *L, const int32_t[::1] chars, const int64_t[::1] cstart, const int64_t[::1] clen, int64_t merges
) noexcept nogil:
    """The symbols' strings, hashes and string table, with room for *merges* new symbols; empty pair
    table, slots, nodes and heap."""
    cdef int64_t nsymbols = clen.shape[0], nchars = chars.shape[0], capacity = nsymbols + merges + 1
    cdef int64_t size, s, i, place
    cdef uint64_t h
    L.text_room = 2 * nchars if nchars > 8 else 16
    L.text = <int32_t *> malloc(<size_t> L.text_room * sizeof(int32_t))
    L.sym_start = <int64_t *> malloc(<size_t> capacity * sizeof(int64_t))
    L.sym_length = <int64_t *> malloc(<size_t> capacity * sizeof(int64_t))
    L.sym_hash = <uint64_t *> malloc(<size_t> capacity * sizeof(uint64_t))
    size = 16
    while size < 2 * capacity:
        size *= 2
    L.spelt = <int64_t *> malloc(<size_t> size * sizeof(int64_t))
    L.spelt_mask = size - 1
    L.pair_keys = <int64_t *> malloc(FIRST_TABLE * sizeof(int64_t))
    L.pair_slots = <int64_t *> malloc(FIRST_TABLE * sizeof(int64_t))
    L.pair_mask = FIRST_TABLE - 1
    L.slot_room = L.node_room = L.heap_room = L.grown_room = FIRST_ROOM
    L.slot_key = <int64_t *> malloc(FIRST_ROOM * sizeof(int64_t))
    L.slot_count = <int64_t *> malloc(FIRST_ROOM * sizeof(int64_t))
    L.slot_head = <int64_t *> malloc(FIRST_ROOM * sizeof(int64_t))
    L.slot_stamp = <int64_t *> malloc(FIRST_ROOM * sizeof(int64_t))
    L.node_word = <int64_t *> malloc(FIRST_ROOM * sizeof(int64_t))
    L.node_next = <int64_t *> malloc(FIRST_ROOM * sizeof(int64_t))
    L.heap_count = <int64_t *> malloc(FIRST_ROOM * sizeof(int64_t))
    L.heap_key = <int64_t *> malloc(FIRST_ROOM * sizeof(int64_t))
    L.grown = <int64_t *> malloc(FIRST_ROOM * sizeof(int64_t))
    if (
        L.text == NULL or L.sym_start == NULL or L.sym_length == NULL or L.sym_hash == NULL or L.spelt == NULL
        or L.pair_keys == NULL or L.pair_slots == NULL or L.slot_key == NULL or L.slot_count == NULL
        or L.slot_head == NULL or L.slot_stamp == NULL or L.node_word == NULL or L.node_next == NULL
        or L.heap_count == NULL or L.heap_key == NULL or L.grown == NULL
    ):
        return NO_MEMORY
    if CHECKED:
        for i in range(nchars):
            L.text[i] = chars[i]
    elif nchars:
        memcpy(L.text, &chars[0], <size_t> nchars * sizeof(int32_t))
    L.text_used = nchars
    for i in range(size):
        L.spelt[i] = -1
    for i in range(FIRST_TABLE):
        L.pair_keys[i] = -1
    for s in range(nsymbols):
        L.sym_start[s] = cstart[s]
        L.sym_length[s] = clen[s]
        h = 0
        for i in range(clen[s]):
            h = h * BASE + <uint64_t> chars[cstart[s] + i]
        L.sym_hash[s] = h
        place = _spelling(L, h, cstart[s], clen[s], 0, 0)
        L.spelt[place] = s  # of two symbols spelt alike the later is found, as in a dict
    L.nsymbols = nsymbols
    return OK


cdef int _count(
    Learner *L, const int32_t[::1] sym, const int64_t[::1] start, const int64_t[::1] length, const int64_t[::1] freq
) noexcept nogil:
    """Count every adjacent pair (weighted), list its holders, and heap the pairs."""
    cdef int64_t w, i, s0, key, slot, longest = 2
    for w in range(start.shape[0]):
        if length[w] > longest:
            longest = length[w]
        s0 = start[w]
        for i in range(length[w] - 1):
            key = (<int64_t> sym[s0 + i] << 32) | sym[s0 + i + 1]
            if _slot_of(L, key, &slot) or _hold(L, slot, w):
                return NO_MEMORY
            L.slot_count[slot] += freq[w]
    L.old = <int32_t *> malloc(<size_t> longest * sizeof(int32_t))
    L.made = <int64_t *> malloc(<size_t> longest * sizeof(int64_t))
    if L.old == NULL or L.made == NULL:
        return NO_MEMORY
    for slot in range(L.nslots):
        if _push(L, L.slot_count[slot], L.slot_key[slot]):
            return NO_MEMORY
    return OK


cdef int _new_symbol(Learner *L, int64_t a, int64_t b, uint64_t h, int64_t place) noexcept nogil:
    """Symbol ``L.nsymbols``: *a*'s string then *b*'s, entered in the string table at *place*."""
    cdef int64_t la = L.sym_length[a], lb = L.sym_length[b], need = L.text_used + la + lb, c = L.nsymbols
    if need > L.text_room:
        if _resize(<void **> &L.text, 2 * need, sizeof(int32_t)):
            return NO_MEMORY
        L.text_room = 2 * need
    if CHECKED and (L.sym_start[a] + la > L.text_used or L.sym_start[b] + lb > L.text_used):
        return BROKEN
    # the strings are copied from text itself, after the realloc (no pointer kept across it)
    memcpy(L.text + L.text_used, L.text + L.sym_start[a], <size_t> la * sizeof(int32_t))
    memcpy(L.text + L.text_used + la, L.text + L.sym_start[b], <size_t> lb * sizeof(int32_t))
    L.sym_start[c] = L.text_used
    L.sym_length[c] = la + lb
    L.sym_hash[c] = h
    L.spelt[place] = c
    L.text_used = need
    L.nsymbols += 1
    return OK


cdef int _merge_word(
    Learner *L, int32_t[::1] sym, const int64_t[::1] start, int64_t[::1] length, const int64_t[::1] freq,
    int64_t w, int32_t a, int32_t b, int32_t c, int64_t done
) noexcept nogil:
    """Merge every (a, b) of word *w* into *c* (left to right, no overlaps) and update the counts:
    the pairs an occurrence overlapped lose the word's weight, the pairs beside a made symbol gain it
    (each pair once) and are noted in ``L.grown`` once per merge."""
    cdef int64_t s0 = start[w], n = length[w], f = freq[w], i, j, p, t, k, m, key, slot, room
    cdef int64_t nmade = 0, last_gone = -1, last_made = -1
    cdef bint found = False
    for i in range(n - 1):
        if sym[s0 + i] == a and sym[s0 + i + 1] == b:
            found = True
            break
    if not found:  # a stale holder: an earlier merge took the pair from this word
        return OK
    for i in range(n):
        L.old[i] = sym[s0 + i]
    j = 0
    i = 0
    while i < n:
        if i + 1 < n and L.old[i] == a and L.old[i + 1] == b:
            for t in range(2):  # the pairs left and right of the occurrence, each once
                p = i - 1 + 2 * t
                if 0 <= p < n - 1 and p > last_gone:
                    slot = _existing_slot(L, (<int64_t> L.old[p] << 32) | L.old[p + 1])
                    if CHECKED and slot < 0:
                        return BROKEN
                    L.slot_count[slot] -= f
                    last_gone = p
            L.made[nmade] = j
            nmade += 1
            sym[s0 + j] = c
            j += 1
            i += 2
        else:
            sym[s0 + j] = L.old[i]
            j += 1
            i += 1
    length[w] = j
    for m in range(nmade):
        k = L.made[m]
        for t in range(2):  # the pairs left and right of the made symbol, each once
            p = k - 1 + t
            if 0 <= p < j - 1 and p > last_made:
                key = (<int64_t> sym[s0 + p] << 32) | sym[s0 + p + 1]
                if _slot_of(L, key, &slot) or _hold(L, slot, w):
                    return NO_MEMORY
                L.slot_count[slot] += f
                if L.slot_stamp[slot] != done:
                    L.slot_stamp[slot] = done
                    if L.ngrown == L.grown_room:
                        room = 2 * L.grown_room
                        if _resize(<void **> &L.grown, room, sizeof(int64_t)):
                            return NO_MEMORY
                        L.grown_room = room
                    L.grown[L.ngrown] = key
                    L.ngrown += 1
                last_made = p
    return OK


cdef int _learn(
    Learner *L, int32_t[::1] sym, const int64_t[::1] start, int64_t[::1] length, const int64_t[::1] freq,
    int64_t merges, int64_t min_frequency, int64_t[::1] out_left, int64_t[::1] out_right, int64_t[::1] out_count,
    int64_t *done_out
) noexcept nogil:
    """The loop: take the best pair, merge it in the words that hold it, push the pairs that grew."""
    cdef int64_t done = 0, top_count, top_key, slot, count, node, w, g, key, place
    cdef int32_t a, b, c
    cdef uint64_t h
    cdef int status
    done_out[0] = 0
    while done < merges and L.heap_size > 0:
        top_count = L.heap_count[0]
        top_key = L.heap_key[0]
        slot = _existing_slot(L, top_key)
        if CHECKED and slot < 0:
            return BROKEN
        count = L.slot_count[slot]
        if count != top_count:  # stale: re-push with the count it has now, or drop it
            _pop(L)
            if 0 < count < top_count and _push(L, count, top_key):
                return NO_MEMORY
            continue
        if count < min_frequency:
            break
        _pop(L)
        a = <int32_t> (top_key >> 32)
        b = <int32_t> (top_key & LOW32)
        # the merged symbol: an existing one spelt the same, or a new one
        h = L.sym_hash[a] * _power(BASE, L.sym_length[b]) + L.sym_hash[b]
        place = _spelling(L, h, L.sym_start[a], L.sym_length[a], L.sym_start[b], L.sym_length[b])
        c = <int32_t> L.spelt[place]
        if c < 0:
            c = <int32_t> L.nsymbols
            if _new_symbol(L, a, b, h, place):
                return NO_MEMORY
        # visit the words holding the pair
        L.ngrown = 0
        node = L.slot_head[slot]
        L.slot_head[slot] = -1
        while node >= 0:
            if CHECKED and node >= L.nnodes:
                return BROKEN
            w = L.node_word[node]
            node = L.node_next[node]
            status = _merge_word(L, sym, start, length, freq, w, a, b, c, done)
            if status:
                return status
        L.slot_count[slot] = 0
        for g in range(L.ngrown):
            key = L.grown[g]
            if key != top_key:
                slot = _existing_slot(L, key)
                if CHECKED and slot < 0:
                    return BROKEN
                if _push(L, L.slot_count[slot], key):
                    return NO_MEMORY
        out_left[done] = a
        out_right[done] = b
        out_count[done] = count
        done += 1
        done_out[0] = done
    return OK


cdef int64_t _starts(const int64_t[::1] length, int64_t[::1] start, int64_t total) noexcept nogil:
    """Fill *start* (words back to back); -1 unless the lengths are non-negative and add up to *total*."""
    cdef int64_t w, at = 0
    for w in range(length.shape[0]):
        if length[w] < 0 or length[w] > total - at:
            return -1
        start[w] = at
        at += length[w]
    return 0 if at == total else -1


cdef bint _ids_below(const int32_t[::1] sym, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(sym.shape[0]):
        if sym[i] < 0 or sym[i] >= n:
            return False
    return True


def learn(
    int32_t[::1] sym, int64_t[::1] length, const int64_t[::1] freq, const int32_t[::1] chars,
    const int64_t[::1] clen, int64_t merges, int64_t min_frequency,
):
    """Learn up to *merges* merges from words weighted by *freq*, merging *sym* and *length* in place.

    *sym* holds the words' symbol ids back to back, *length* each word's length;
    *chars* the code points of the symbols' strings back to back, *clen* each
    string's length (the symbols are ``0 .. len(clen) - 1``). Returns the merges'
    left ids, right ids and counts (int64 arrays) and the number of symbols after
    them: a merge whose string is new makes the next id. *min_frequency* must be
    1 or more.
    """
    cdef int64_t nwords = length.shape[0], nsymbols = clen.shape[0], total = sym.shape[0], done = 0
    cdef int status = OK
    cdef bint known
    cdef Learner L
    if freq.shape[0] != nwords:
        raise ValueError(f"{nwords} word lengths but {freq.shape[0]} counts")
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be 1 or more, not {min_frequency}")
    start_array = numpy.empty(nwords, numpy.int64)
    cstart_array = numpy.empty(nsymbols, numpy.int64)
    cdef int64_t[::1] start = start_array, cstart = cstart_array
    with nogil:
        status = _starts(length, start, total)
    if status:
        raise ValueError(f"the word lengths do not add up to the {total} symbols")
    with nogil:
        status = _starts(clen, cstart, chars.shape[0])
    if status:
        raise ValueError(f"the symbols' string lengths do not add up to the {chars.shape[0]} characters")
    # each merge takes a symbol out of some word, so at most total - nwords merges happen
    if merges > total - nwords:
        merges = total - nwords
    if merges < 0:
        merges = 0
    if nsymbols + merges >= 1 << 31:
        raise ValueError(f"{nsymbols} symbols and {merges} merges: ids would pass 2**31")
    with nogil:
        known = _ids_below(sym, nsymbols)
    if not known:
        raise ValueError(f"a symbol id is outside 0 .. {nsymbols - 1}")
    out_left = numpy.empty(merges, numpy.int64)
    out_right = numpy.empty(merges, numpy.int64)
    out_count = numpy.empty(merges, numpy.int64)
    cdef int64_t[::1] left_view = out_left, right_view = out_right, count_view = out_count
    memset(&L, 0, sizeof(Learner))  # every pointer NULL, so _free is safe whatever _setup got to
    try:
        with nogil:
            status = _setup(&L, chars, cstart, clen, merges)
            if status == OK:
                status = _count(&L, sym, start, length, freq)
            if status == OK:
                status = _learn(
                    &L, sym, start, length, freq, merges, min_frequency, left_view, right_view, count_view, &done
                )
        if status == NO_MEMORY:
            raise MemoryError("the subword learner ran out of memory")
        if status == BROKEN:
            raise IndexError("the subword learner's tables are inconsistent (a bug)")
        return out_left[:done], out_right[:done], out_count[:done], L.nsymbols
    finally:
        _free(&L)



# -- applying merges (encoding) ----------------------------------------------------------------


cdef inline int64_t _pair_place(
    const int64_t *lefts, const int64_t *rights, int64_t mask, int64_t left, int64_t right
) noexcept nogil:
    """The place of (left, right) in a table keyed by two ids (lefts -1 empty), or the empty place."""
    cdef int64_t i = _place(<int64_t> ((<uint64_t> left * GOLDEN) ^ <uint64_t> right), mask)
    while lefts[i] != -1 and (lefts[i] != left or rights[i] != right):
        i = (i + 1) & mask
    return i


cdef class MergeRanks:
    """Merges as ids (left, right, made), ready to apply: a table from a pair to (rank, made id).

    The first rank of a pair wins (subword-nmt and GPT-2 keep a repeated merge's first rank).
    Ids are any non-negative int64.
    """

    cdef object _arrays  # the numpy arrays the views below look at
    cdef int64_t[::1] lefts, rights, ranks, mades
    cdef int64_t mask

    def __init__(self, const int64_t[::1] lefts, const int64_t[::1] rights, const int64_t[::1] mades):
        cdef int64_t n = lefts.shape[0], size = 16, rank, i
        if rights.shape[0] != n or mades.shape[0] != n:
            raise ValueError(f"{n} left ids but {rights.shape[0]} right and {mades.shape[0]} made ids")
        for rank in range(n):
            if lefts[rank] < 0 or rights[rank] < 0 or mades[rank] < 0:
                raise ValueError(f"merge {rank}: a negative id")
        while size < 2 * n:
            size *= 2
        self._arrays = (
            numpy.full(size, -1, numpy.int64), numpy.full(size, -1, numpy.int64),
            numpy.empty(size, numpy.int64), numpy.empty(size, numpy.int64),
        )
        self.lefts, self.rights, self.ranks, self.mades = self._arrays
        self.mask = size - 1
        with nogil:
            for rank in range(n):
                i = _pair_place(&self.lefts[0], &self.rights[0], self.mask, lefts[rank], rights[rank])
                if self.lefts[i] == -1:
                    self.lefts[i] = lefts[rank]
                    self.rights[i] = rights[rank]
                    self.ranks[i] = rank
                    self.mades[i] = mades[rank]

    def apply(self, int64_t[::1] sym, int64_t[::1] length):
        """Merge each word in place (ids in *sym*, back to back, *length* each): while some adjacent
        pair was ever merged, merge every occurrence (left to right) of the one merged earliest.
        *length* becomes the merged lengths; returns each word's start (int64), where it still begins."""
        cdef int64_t nwords = length.shape[0], status
        if self._arrays is None:
            raise ValueError("MergeRanks.__init__ was not called")
        start_array = numpy.empty(nwords, numpy.int64)
        cdef int64_t[::1] start = start_array
        with nogil:
            status = _starts(length, start, sym.shape[0])
        if status:
            raise ValueError(f"the word lengths do not add up to the {sym.shape[0]} symbols")
        with nogil:
            self._apply(sym, start, length)
        return start_array

    cdef void _apply(self, int64_t[::1] sym, const int64_t[::1] start, int64_t[::1] length) noexcept nogil:
        cdef const int64_t *lefts = &self.lefts[0]
        cdef const int64_t *rights = &self.rights[0]
        cdef int64_t w, s0, n, i, j, place, best, best_rank, left, right
        for w in range(start.shape[0]):
            s0 = start[w]
            n = length[w]
            while n > 1:
                best = -1
                best_rank = INT64_MAX
                left = right = 0
                for i in range(n - 1):
                    if sym[s0 + i] < 0 or sym[s0 + i + 1] < 0:  # no merge has it (-1 is the empty key)
                        continue
                    place = _pair_place(lefts, rights, self.mask, sym[s0 + i], sym[s0 + i + 1])
                    if lefts[place] != -1 and self.ranks[place] < best_rank:
                        best_rank = self.ranks[place]
                        best = self.mades[place]
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
