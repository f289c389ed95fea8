"""The compiled encoder: cutting a frame into blocks and escapes, the engine, packing the frame.

Each ``def`` entry returns exactly what its numpy counterpart returns (the wrappers
``encode.py``, ``prepare.py`` and ``frame.py`` say which); tests hold them to each
other. The rules that fix the output are docs/kernels.md's ("The rules that fix the
output"); the data structures are described there and in ``encode.py``.

Every ``def`` entry allocates its arrays with numpy, then runs its loops in ``cdef
noexcept nogil`` functions with the GIL released. Arguments are checked by the
wrappers; what the loops rely on is checked here again, so no argument can make
them read or write out of bounds.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy, memset

from bytepair.core.kernels._crc cimport crc32_update

from bytepair.core.kernels.common cimport CHECKED

import threading

import numpy as np

from bytepair.container import format as _format
from bytepair.core import engine as _engine
from bytepair.core import escape as _escape
from bytepair.core import params as _params

# The constants of the Python modules, read once at import (never a second copy).
cdef int64_t MAX_RECYCLED = _engine.MAX_RECYCLED
cdef int64_t MAX_COMPILED_BLOCK = _engine.MAX_COMPILED_BLOCK
cdef int64_t BYTES_PER_FREE_CODE = _escape.BYTES_PER_FREE_CODE
cdef int64_t BLOCK_HEADER_SIZE = _format.BLOCK_HEADER_SIZE
cdef int64_t CODE_SET_BITMAP = _format.CODE_SET_BITMAP
cdef int64_t MAX_RUNS = _format.MAX_RUNS
cdef int64_t MAX_BLOCK_SIZE = _params.MAX_BLOCK_SIZE
cdef bytes FRAMED_HEADER = _format.pack_stream_header()
cdef bytes COMPACT_HEADER = _format.pack_stream_header(_format.COMPACT)
cdef int64_t STREAM_HEADER_SIZE = _format.STREAM_HEADER_SIZE
cdef int64_t FRAME_HEADER_SIZE = _format.FRAME_HEADER_SIZE
cdef int64_t END_SIZE = _format.END_SIZE
cdef uint8_t KIND_FRAME = _format.KIND_FRAME
cdef uint8_t KIND_END = _format.KIND_END
cdef uint8_t COMPACT_STORED = _format.COMPACT_STORED
cdef uint8_t COMPACT_ENCODED = _format.COMPACT_ENCODED
cdef int64_t MAX_FRAME_SIZE = _format.MAX_FRAME_SIZE
cdef Py_ssize_t KEPT_SCRATCH = 1 << 16  # inputs up to this size are encoded in a thread's kept scratch

cdef enum:
    END = 256  # val at the end of the list: no pair holds it
    DEAD = 257  # val at a position a merge removed
    MOST_CANDIDATES = 258  # a step's candidates: merges_per_step + 2, at most 256 + 2 (see _workspace)
    STEP_SHIFT = 9  # born: step << STEP_SHIFT | place in the step (a step makes at most 256 merges)
    # which list holds a chosen pair's places
    PLACES_INDEX = 0
    PLACES_BEFORE = 1
    PLACES_SCRATCH = 2
    # made_at's columns: where a code's made pairs lie, per side
    BEFORE_LO = 0
    BEFORE_HI = 1
    AFTER_LO = 2
    AFTER_HI = 3


cdef extern from *:
    """
    /* The engine's vector loops. The first two, over 256 cells each: the largest of the row keys
       (_largest_key) and a row's largest count with its lowest column (_rescan). Plain loops,
       each running maximum kept in 16 or 32 lanes so that the compiler vectorises them: SSE2,
       all an x86-64 build may assume, has no 32-bit maximum, and one running maximum waits
       on its three-instruction stand-in at every step (a maximum of the keys: 22 ns this way,
       70-130 ns with one). Where the compiler can, the loops are built twice, for the
       baseline and for AVX2, and the AVX2 ones run on a CPU that has it (7 ns a maximum,
       12 ns a row against 32 ns: level 5 in about 0.92x the time). Same results either way.

       The third, _select's filter (bp_select): the places whose other symbol is the one wanted,
       in order. Plain C copies every place and moves on past the kept ones; the vector one
       takes 8 entries at a time: a 16-bit compare gives a byte mask of the kept lanes, a
       table of 256 byte shuffles (bp_select_shuffle, filled at import) moves them to the
       front, and one 16-byte store writes them (k <= e: it never writes beyond out[n - 1],
       the same room as the plain loop). Built for AVX2 with POPCNT, which every AVX2 CPU has. */
    #include <stdint.h>

    static inline __attribute__((always_inline)) int32_t bp_largest_key_loop(const int32_t *keys) {
        int32_t lane[16] = {0}, best = 0;
        for (int row = 0; row < 256; row += 16)
            for (int i = 0; i < 16; i++)
                lane[i] = lane[i] > keys[row + i] ? lane[i] : keys[row + i];
        for (int i = 0; i < 16; i++)
            best = best > lane[i] ? best : lane[i];
        return best;
    }

    /* The largest of the row's 256 counts into *most; returns the lowest column holding it
       (the largest 255 - column among those cells, without a branch). */
    static inline __attribute__((always_inline)) int32_t bp_row_max_loop(const uint16_t *cells, uint16_t *most) {
        uint16_t lane[32] = {0}, top = 0, first = 0;
        for (int c = 0; c < 256; c += 32)
            for (int i = 0; i < 32; i++)
                lane[i] = lane[i] > cells[c + i] ? lane[i] : cells[c + i];
        for (int i = 0; i < 32; i++) {
            top = top > lane[i] ? top : lane[i];
            lane[i] = 0;
        }
        for (int c = 0; c < 256; c += 32)
            for (int i = 0; i < 32; i++) {
                uint16_t v = (uint16_t)((cells[c + i] == top) * (255 - c - i));
                lane[i] = lane[i] > v ? lane[i] : v;
            }
        for (int i = 0; i < 32; i++)
            first = first > lane[i] ? first : lane[i];
        *most = top;
        return 255 - first;
    }

    /* The places[e] (e < n) whose others[e] is want, in order, into out (room for n);
       returns how many. Without a branch, which would guess wrong for about every other entry. */
    static int64_t bp_select_base(const uint16_t *places, const uint16_t *others, int64_t n, uint16_t want,
                                  uint16_t *out) {
        int64_t k = 0;
        for (int64_t e = 0; e < n; e++) {
            out[k] = places[e];
            k += others[e] == want;
        }
        return k;
    }

    static int32_t bp_largest_key_base(const int32_t *keys) { return bp_largest_key_loop(keys); }
    static int32_t bp_row_max_base(const uint16_t *cells, uint16_t *most) { return bp_row_max_loop(cells, most); }
    static int32_t (*bp_largest_key)(const int32_t *) = bp_largest_key_base;
    static int32_t (*bp_row_max)(const uint16_t *, uint16_t *) = bp_row_max_base;
    static int64_t (*bp_select)(const uint16_t *, const uint16_t *, int64_t, uint16_t, uint16_t *) = bp_select_base;

    /* Take the AVX2 loops if *avx2* asks and the CPU has them, else the baseline ones;
       returns which. */
    #if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    __attribute__((target("avx2"))) static int32_t bp_largest_key_avx2(const int32_t *keys) {
        return bp_largest_key_loop(keys);
    }
    __attribute__((target("avx2"))) static int32_t bp_row_max_avx2(const uint16_t *cells, uint16_t *most) {
        return bp_row_max_loop(cells, most);
    }

    #include <immintrin.h>
    /* per mask of kept lanes: the byte shuffle that moves those lanes' 16-bit places to the front */
    static uint8_t bp_select_shuffle[256][16] __attribute__((aligned(16)));

    __attribute__((target("avx2,popcnt"))) static int64_t bp_select_avx2(
        const uint16_t *places, const uint16_t *others, int64_t n, uint16_t want, uint16_t *out
    ) {
        const __m128i wanted = _mm_set1_epi16((short)want);
        int64_t e = 0, k = 0;
        for (; e + 8 <= n; e += 8) {
            __m128i same = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(others + e)), wanted);
            unsigned mask = (unsigned)_mm_movemask_epi8(_mm_packs_epi16(same, same)) & 0xFF;
            __m128i kept = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(places + e)),
                                            _mm_load_si128((const __m128i *)bp_select_shuffle[mask]));
            _mm_storeu_si128((__m128i *)(out + k), kept);
            k += __builtin_popcount(mask);
        }
        for (; e < n; e++) {
            out[k] = places[e];
            k += others[e] == want;
        }
        return k;
    }

    static const char *bp_choose_vector_loops(int avx2) {
        __builtin_cpu_init();
        if (avx2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt")) {
            for (int mask = 0; mask < 256; mask++) {
                int to = 0;
                memset(bp_select_shuffle[mask], 0x80, 16);  /* lanes beyond the kept ones: zero */
                for (int lane = 0; lane < 8; lane++)
                    if (mask >> lane & 1) {
                        bp_select_shuffle[mask][to++] = (uint8_t)(2 * lane);
                        bp_select_shuffle[mask][to++] = (uint8_t)(2 * lane + 1);
                    }
            }
            bp_largest_key = bp_largest_key_avx2;
            bp_row_max = bp_row_max_avx2;
            bp_select = bp_select_avx2;
            return "avx2";
        }
        bp_largest_key = bp_largest_key_base;
        bp_row_max = bp_row_max_base;
        bp_select = bp_select_base;
        return "baseline";
    }
    #else
    static const char *bp_choose_vector_loops(int avx2) { (void)avx2; return "baseline"; }
    #endif
    """
    int32_t bp_largest_key(const int32_t *keys) noexcept nogil
    int32_t bp_row_max(const uint16_t *cells, uint16_t *most) noexcept nogil
    int64_t bp_select(
        const uint16_t *places, const uint16_t *others, int64_t n, uint16_t want, uint16_t *out
    ) noexcept nogil
    const char *bp_choose_vector_loops(int avx2) noexcept


VECTOR_LOOPS = bp_choose_vector_loops(True).decode()
"""Which build of the engine's three vector loops this CPU runs: ``avx2`` or ``baseline``."""


def use_vector_loops(name):
    """Run the engine's vector loops built for *name* (``avx2`` where the CPU has it, or
    ``baseline``) from now on, in every thread; returns the name taken. For tests: both
    builds give the same results."""
    global VECTOR_LOOPS
    if name not in ("avx2", "baseline"):
        raise ValueError(f"no vector loops named {name!r}")
    VECTOR_LOOPS = bp_choose_vector_loops(name == "avx2").decode()
    return VECTOR_LOOPS


def constants():
    """The constants compiled in, by name (for the test that holds them to the Python ones)."""
    return {
        "MAX_RECYCLED": MAX_RECYCLED,
        "MAX_COMPILED_BLOCK": MAX_COMPILED_BLOCK,
        "BYTES_PER_FREE_CODE": BYTES_PER_FREE_CODE,
        "BLOCK_HEADER_SIZE": BLOCK_HEADER_SIZE,
        "CODE_SET_BITMAP": CODE_SET_BITMAP,
        "MAX_RUNS": MAX_RUNS,
        "MAX_BLOCK_SIZE": MAX_BLOCK_SIZE,
    }


# ---------------------------------------------------------------------------------------------
# Cutting into blocks, and escapes


cdef class _Cut:
    """A frame cut into blocks, and its escapes: ``starts`` (the blocks' starts, then the
    end), per block ``count`` and ``mark``, the escaped bytes ``literals`` in position
    order, and ``changed``, the data with the escaped bytes replaced (once a block escapes)."""

    cdef int64_t[::1] starts
    cdef int64_t[::1] count
    cdef uint8_t[::1] mark
    cdef uint8_t[::1] literals
    cdef uint8_t[::1] changed
    cdef Py_ssize_t n_blocks
    cdef Py_ssize_t n_literals
    cdef bint escaped  # changed holds the data with escapes; else it holds nothing yet

    def __init__(self, Py_ssize_t room, Py_ssize_t n):
        self.starts = np.empty(room + 1, dtype=np.int64)
        self.count = np.zeros(room, dtype=np.int64)
        self.mark = np.zeros(room, dtype=np.uint8)
        self.literals = np.empty(n, dtype=np.uint8)
        self.changed = np.empty(n, dtype=np.uint8)  # untouched pages cost nothing
        self.n_blocks = 0
        self.n_literals = 0
        self.escaped = False

    cdef bint holds(self, Py_ssize_t room, Py_ssize_t n):
        """Whether this cutting has room for *room* blocks of *n* bytes in all; if so, it is
        made as new (what a fresh one holds as zeros is zeroed)."""
        cdef Py_ssize_t b
        if self.count.shape[0] < room or self.literals.shape[0] < n:
            return False
        for b in range(room):
            self.count[b] = 0
            self.mark[b] = 0
        self.n_blocks = 0
        self.n_literals = 0
        self.escaped = False
        return True


cdef Py_ssize_t _block_room(Py_ssize_t n, Py_ssize_t block_size, Py_ssize_t max_distinct):
    """Most blocks Gage's cutting can make of *n* bytes (each is *block_size* long or holds
    *max_distinct* values: the second kind ends at a value new to it)."""
    return n // block_size + n // max_distinct + 2


cdef void _split(const uint8_t[::1] data, Py_ssize_t block_size, Py_ssize_t max_distinct, _Cut cut) noexcept nogil:
    """Gage's cutting: a block ends after *block_size* bytes, or at the byte that brings its
    distinct values to *max_distinct* (that byte included)."""
    cdef Py_ssize_t n = data.shape[0]
    cdef int64_t seen[256]  # the block that last saw each value, plus one
    cdef Py_ssize_t lo = 0, i, end, distinct, n_starts = 1
    cdef int64_t block = 1
    memset(seen, 0, sizeof(seen))
    cut.starts[0] = 0
    while lo < n:  # one block: its bytes up to the size limit, counting new values without a branch
        end = min(lo + block_size, n)
        distinct = 0
        i = lo
        while i < end:
            distinct += seen[data[i]] != block
            seen[data[i]] = block
            i += 1
            if distinct == max_distinct:
                break
        if i < n:
            cut.starts[n_starts] = i
            n_starts += 1
        block += 1
        lo = i
    cut.starts[n_starts] = n
    cut.n_blocks = n_starts if n > 0 else 0


cdef int _escape_mark(const int64_t *counts, Py_ssize_t distinct, Py_ssize_t length, int64_t limit) noexcept nogil:
    """The mark of a block whose values occur *counts* times, or -1 if it does not escape:
    it needs two rare values, and enough bytes per free code to run out of codes."""
    cdef int n_rare = 0, smallest = -1, v
    for v in range(255, -1, -1):
        if 0 < counts[v] <= limit:
            n_rare += 1
            smallest = v
    if n_rare < 2 or length < BYTES_PER_FREE_CODE * (256 - distinct):
        return -1
    return smallest


cdef void _escape_block(
    const uint8_t[::1] data, Py_ssize_t b, Py_ssize_t lo, Py_ssize_t hi, const int64_t *counts, int64_t limit,
    int mark, _Cut cut
) noexcept nogil:
    """Escape the rare values of ``data[lo:hi]`` (block *b*) into ``cut.changed``, their
    originals appended to ``cut.literals``. The first block to escape copies the data."""
    cdef Py_ssize_t i, end = cut.n_literals
    cdef uint8_t v
    if not cut.escaped:
        if CHECKED:
            for i in range(data.shape[0]):
                cut.changed[i] = data[i]
        elif data.shape[0] > 0:
            memcpy(&cut.changed[0], &data[0], data.shape[0])
        cut.escaped = True
    cut.mark[b] = <uint8_t>mark
    for i in range(lo, hi):
        v = data[i]
        if counts[v] <= limit:
            cut.literals[end] = v
            end += 1
            cut.changed[i] = <uint8_t>mark
    cut.count[b] = end - cut.n_literals
    cut.n_literals = end


cdef void _escapes(const uint8_t[::1] data, const int64_t[::1] bounds, int64_t limit, _Cut cut) noexcept nogil:
    """Per block of *bounds*: count its values; if at least two occur at most *limit* times
    and the block is long enough to run out of codes, replace each of them by the smallest
    one (the mark), keeping the originals in position order."""
    cdef int32_t lanes[4][256]  # four tables: a run of one value is not one chain of adds
    cdef int64_t counts[256]
    cdef Py_ssize_t b, i, lo, hi, distinct
    cdef int v, mark
    for b in range(bounds.shape[0] - 1):
        lo = bounds[b]
        hi = bounds[b + 1]
        memset(lanes, 0, sizeof(lanes))
        i = lo
        while i + 4 <= hi:
            lanes[0][data[i]] += 1
            lanes[1][data[i + 1]] += 1
            lanes[2][data[i + 2]] += 1
            lanes[3][data[i + 3]] += 1
            i += 4
        while i < hi:
            lanes[0][data[i]] += 1
            i += 1
        distinct = 0
        for v in range(256):
            counts[v] = lanes[0][v] + lanes[1][v] + lanes[2][v] + lanes[3][v]
            distinct += counts[v] > 0
        mark = _escape_mark(counts, distinct, hi - lo, limit)
        if mark >= 0:
            _escape_block(data, b, lo, hi, counts, limit, mark, cut)
    cut.n_blocks = bounds.shape[0] - 1


cdef void _split_escapes(
    const uint8_t[::1] data, Py_ssize_t block_size, Py_ssize_t max_distinct, int64_t limit, _Cut cut
) noexcept nogil:
    """``_split`` and ``_escapes`` at once. The cutting loop counts each block's values (a
    value not seen before is a new one), which is all the escapes need, so the frame is read
    once, and a second time only where a block escapes. While 64 more bytes cannot reach
    *max_distinct* values, it takes them without testing for the limit at each byte."""
    cdef Py_ssize_t n = data.shape[0]
    cdef int32_t lanes[4 * 256]  # bytes counted in four lanes in turn: in a run one count would wait for its own store
    cdef uint8_t seen[256]
    cdef int64_t counts[256]
    cdef Py_ssize_t lo = 0, i, k, u, end, distinct, n_blocks = 0
    cdef int v, mark
    cdef uint8_t byte
    cut.starts[0] = 0
    while lo < n:  # one block: its bytes up to the size limit, or to its max_distinct-th value
        end = min(lo + block_size, n)
        memset(lanes, 0, sizeof(lanes))
        memset(seen, 0, sizeof(seen))
        distinct = 0
        i = lo
        while i < end:
            if distinct + 64 < max_distinct and i + 64 <= end:  # 64 bytes cannot reach the limit
                for k in range(i, i + 64, 4):  # four bytes, one to a lane (the inner loop unrolls)
                    for u in range(4):
                        byte = data[k + u]
                        distinct += not seen[byte]
                        seen[byte] = 1
                        lanes[(u << 8) | byte] += 1
                i += 64
                continue
            byte = data[i]
            distinct += not seen[byte]
            seen[byte] = 1
            lanes[((i & 3) << 8) | byte] += 1
            i += 1
            if distinct == max_distinct:
                break
        for v in range(256):
            counts[v] = lanes[v] + lanes[256 + v] + lanes[512 + v] + lanes[768 + v]
        cut.starts[n_blocks + 1] = i
        mark = _escape_mark(counts, distinct, i - lo, limit)
        if mark >= 0:
            _escape_block(data, n_blocks, lo, i, counts, limit, mark, cut)
        n_blocks += 1
        lo = i
    cut.n_blocks = n_blocks


cdef _Cut _cutting(Py_ssize_t n, Py_ssize_t block_size, Py_ssize_t max_distinct):
    if block_size < 1 or max_distinct < 1:
        raise ValueError(f"block_size and max_distinct must be at least 1, got {block_size} and {max_distinct}")
    return _Cut(_block_room(n, block_size, max_distinct), n)


def split_blocks(const uint8_t[::1] data, Py_ssize_t block_size, Py_ssize_t max_distinct):
    """The blocks' start offsets, then ``len(data)`` (int64)."""
    cdef _Cut cut = _cutting(data.shape[0], block_size, max_distinct)
    with nogil:
        _split(data, block_size, max_distinct, cut)
    return np.asarray(cut.starts)[: cut.n_blocks + 1].copy()


def find_escapes(const uint8_t[::1] data, const int64_t[::1] bounds, int64_t limit):
    """The escapes of the blocks ``data[bounds[k]:bounds[k + 1]]``: (count, mark, literals,
    changed), changed None where no block escapes. *bounds* must rise within the data."""
    cdef Py_ssize_t b
    if bounds.shape[0] < 1 or bounds[0] < 0 or bounds[bounds.shape[0] - 1] > data.shape[0]:
        raise ValueError("find_escapes needs bounds within the data")
    for b in range(bounds.shape[0] - 1):
        if bounds[b + 1] < bounds[b]:
            raise ValueError("find_escapes needs bounds in order")
    cdef _Cut cut = _Cut(bounds.shape[0] - 1, data.shape[0])
    with nogil:
        _escapes(data, bounds, limit, cut)
    return _cut_escapes(cut)


def split_and_find_escapes(const uint8_t[::1] data, Py_ssize_t block_size, Py_ssize_t max_distinct, int64_t limit):
    """``split_blocks`` then ``find_escapes`` in one pass: (starts, count, mark, literals,
    changed), changed None where no block escapes."""
    cdef _Cut cut = _cutting(data.shape[0], block_size, max_distinct)
    with nogil:
        _split_escapes(data, block_size, max_distinct, limit, cut)
    return (np.asarray(cut.starts)[: cut.n_blocks + 1].copy(), *_cut_escapes(cut))


cdef tuple _cut_escapes(_Cut cut):
    nb = cut.n_blocks
    return (
        np.asarray(cut.count)[:nb].copy(),
        np.asarray(cut.mark)[:nb].copy(),
        np.asarray(cut.literals)[: cut.n_literals].copy(),
        np.asarray(cut.changed) if cut.escaped else None,
    )


# ---------------------------------------------------------------------------------------------
# The engine


cdef class _Workspace:
    """The engine's state, sized for the longest block it takes and reused by every block.

    (A C struct cannot hold memoryviews; an extension type is a C struct that can. It is
    passed by pointer, without reference counting, and its memoryviews are bounds-checked
    in the checked build.) Sizes: *longest* + 1 positions (position n ends the list).

    Each thread keeps one between calls (``_workspace``): allocating its tables afresh
    (half a megabyte, mapped and faulted in page by page) cost a small file more than its
    encoding. Between blocks, and so between calls, ``counts`` is all zeros
    (``_take_payload`` clears what a block left); everything else is set before it is read.
    """

    cdef Py_ssize_t longest
    # options
    cdef int64_t threshold
    cdef bint recycle
    cdef int64_t max_depth  # -1: none
    cdef int64_t merges_per_step
    cdef Py_ssize_t n_best  # candidates a step: merges_per_step + 2, or 1
    # the block's symbols and the links of a doubly linked list over the positions alive
    cdef uint16_t[::1] val
    cdef uint16_t[::1] nxt
    cdef uint16_t[::1] prv
    # the exact count of every pair (left * 256 + right); per row, an upper bound of its
    # counts, the lowest column holding it, and whether it may be too high
    cdef uint16_t[::1] counts
    cdef int32_t[::1] bound
    cdef int32_t[::1] arg
    cdef int32_t[::1] stale
    # the first pairs' runs [length, position, ...] and where each starts; the distinct pairs
    cdef uint16_t[::1] index
    cdef int32_t[::1] run_at
    cdef int32_t[::1] cells
    # the pairs the matches made: (prev, code) at prev's position, with prev's symbol
    # ("before", side 0), and (code, next) at the match's position, with next's ("after")
    cdef uint16_t[::1] before
    cdef uint16_t[::1] before_sym
    cdef uint16_t[::1] after
    cdef uint16_t[::1] after_sym
    cdef Py_ssize_t n_before
    cdef Py_ssize_t n_after
    cdef uint16_t[::1] scratch  # each pair's rank while counting; then a chosen pair's places
    # per block, by symbol: how often it occurs, bytes it stands for, stack slots its
    # expansion needs, when it became a code (0: a byte of the block), where its made pairs lie
    cdef int64_t[::1] symcount
    cdef int64_t[::1] explen
    cdef int64_t[::1] depth
    cdef int64_t[::1] born
    cdef int64_t[:, ::1] made_at
    cdef int64_t[::1] fresh  # values absent from the block, highest first
    cdef int64_t[::1] spare  # values no longer in it, highest first
    cdef int32_t[::1] keys  # the rows' keys (_row_keys, _next_row)
    # the step's best rows and their counts; its merges (_choose writes one candidate
    # more than it keeps)
    cdef int64_t[::1] top
    cdef int64_t[::1] top_count
    cdef int64_t[::1] step_left
    cdef int64_t[::1] step_right
    cdef int64_t[::1] step_code
    cdef int64_t[::1] step_count
    cdef int64_t[::1] step_fresh
    cdef int64_t[::1] step_made

    def __init__(self, Py_ssize_t longest):
        self.longest = longest
        self.val = np.empty(longest + 1, dtype=np.uint16)
        self.nxt = np.empty(longest + 1, dtype=np.uint16)
        self.prv = np.empty(longest + 1, dtype=np.uint16)
        self.counts = np.zeros(65536, dtype=np.uint16)  # bp_row_max reads rows of it, keys all 256
        self.bound = np.zeros(256, dtype=np.int32)
        self.arg = np.zeros(256, dtype=np.int32)
        self.stale = np.zeros(256, dtype=np.int32)
        self.index = np.empty(2 * longest + 16, dtype=np.uint16)
        self.run_at = np.empty(65536, dtype=np.int32)  # every pair of a block gets its run before it is read
        self.cells = np.empty(65536, dtype=np.int32)
        self.before = np.empty(longest + 1, dtype=np.uint16)
        self.before_sym = np.empty(longest + 1, dtype=np.uint16)
        self.after = np.empty(longest + 1, dtype=np.uint16)
        self.after_sym = np.empty(longest + 1, dtype=np.uint16)
        self.scratch = np.empty(longest + 1, dtype=np.uint16)
        self.symcount = np.zeros(256, dtype=np.int64)
        self.explen = np.zeros(256, dtype=np.int64)
        self.depth = np.zeros(256, dtype=np.int64)
        self.born = np.zeros(256, dtype=np.int64)
        self.made_at = np.zeros((256, 4), dtype=np.int64)
        self.fresh = np.zeros(256, dtype=np.int64)
        self.spare = np.zeros(256, dtype=np.int64)
        self.keys = np.zeros(256, dtype=np.int32)
        self.top = np.zeros(MOST_CANDIDATES, dtype=np.int64)
        self.top_count = np.zeros(MOST_CANDIDATES, dtype=np.int64)
        self.step_left = np.zeros(MOST_CANDIDATES, dtype=np.int64)
        self.step_right = np.zeros(MOST_CANDIDATES, dtype=np.int64)
        self.step_code = np.zeros(MOST_CANDIDATES, dtype=np.int64)
        self.step_count = np.zeros(MOST_CANDIDATES, dtype=np.int64)
        self.step_fresh = np.zeros(MOST_CANDIDATES, dtype=np.int64)
        self.step_made = np.zeros(MOST_CANDIDATES, dtype=np.int64)


cdef class _Encoded:
    """The engine's result, the columns of ``EncodedBlocks``: per block ``n_merges``,
    ``n_fresh``, ``payload_len``; per merge ``code``, ``left``, ``right``, ``count``,
    ``expansion`` (*n_done* written); the payloads (*p_done* bytes)."""

    cdef int64_t[::1] n_merges
    cdef int64_t[::1] n_fresh
    cdef uint8_t[::1] code
    cdef uint8_t[::1] left
    cdef uint8_t[::1] right
    cdef int64_t[::1] count
    cdef int64_t[::1] expansion
    cdef int64_t[::1] payload_len
    cdef uint8_t[::1] payload
    cdef Py_ssize_t n_done
    cdef Py_ssize_t p_done

    def __init__(self, Py_ssize_t n_blocks, Py_ssize_t n_bytes):
        # a merge removes at least one symbol, so a block makes fewer merges than its length,
        # and it has at most 255 fresh codes and MAX_RECYCLED recycled ones (this bound keeps
        # count and expansion, 16 bytes an entry, from taking 16 bytes a byte of the frame)
        cdef Py_ssize_t room = max(min(n_bytes - n_blocks, n_blocks * (255 + MAX_RECYCLED)), 0)
        self.n_merges = np.zeros(n_blocks, dtype=np.int64)
        self.n_fresh = np.zeros(n_blocks, dtype=np.int64)
        self.code = np.empty(room, dtype=np.uint8)
        self.left = np.empty(room, dtype=np.uint8)
        self.right = np.empty(room, dtype=np.uint8)
        self.count = np.empty(room, dtype=np.int64)
        self.expansion = np.empty(room, dtype=np.int64)
        self.payload_len = np.zeros(n_blocks, dtype=np.int64)
        self.payload = np.empty(n_bytes, dtype=np.uint8)
        self.n_done = 0
        self.p_done = 0

    cdef bint holds(self, Py_ssize_t n_blocks, Py_ssize_t n_bytes):
        """Whether these columns have room for *n_blocks* blocks of *n_bytes* in all; if so,
        they are made as new (the per-block counts zeroed)."""
        cdef Py_ssize_t room = max(min(n_bytes - n_blocks, n_blocks * (255 + MAX_RECYCLED)), 0), b
        if self.n_merges.shape[0] < n_blocks or self.code.shape[0] < room or self.payload.shape[0] < n_bytes:
            return False
        for b in range(n_blocks):
            self.n_merges[b] = 0
            self.n_fresh[b] = 0
            self.payload_len[b] = 0
        self.n_done = 0
        self.p_done = 0
        return True

    def columns(self):
        """The nine columns, trimmed (copies: the arrays above may be much longer)."""
        return (
            np.asarray(self.n_merges),
            np.asarray(self.n_fresh),
            np.asarray(self.code)[: self.n_done].copy(),
            np.asarray(self.left)[: self.n_done].copy(),
            np.asarray(self.right)[: self.n_done].copy(),
            np.asarray(self.count)[: self.n_done].copy(),
            np.asarray(self.expansion)[: self.n_done].copy(),
            np.asarray(self.payload_len),
            np.asarray(self.payload)[: self.p_done].copy(),
        )


cdef void _encode(const uint8_t[::1] data, const int64_t[::1] bounds, _Workspace ws, _Encoded out) noexcept nogil:
    """Every block in turn, into *out*."""
    cdef Py_ssize_t b, lo, n
    for b in range(bounds.shape[0] - 1):
        lo = bounds[b]
        n = bounds[b + 1] - lo
        _encode_block(data, lo, n, ws, out, b)
        out.n_done += out.n_merges[b]
        out.payload_len[b] = _take_payload(ws, n, out)
        out.p_done += out.payload_len[b]


cdef void _encode_block(
    const uint8_t[::1] data, Py_ssize_t lo, Py_ssize_t n, _Workspace ws, _Encoded out, Py_ssize_t b
) noexcept nogil:
    """Gage's loop over the block ``data[lo:lo + n]``: count the pairs, then repeat { choose
    the merges of a step; replace them, left to right } until no pair is worth a code.
    Writes its merges to *out* from ``out.n_done`` on, and its counts of merges."""
    cdef Py_ssize_t v, m, n_step, first = out.n_done, n_merges = 0, places_lo, places_hi
    cdef int64_t n_free = 0, n_used = 0, n_recycled = 0, n_spare, step = 0, a, z, c, made
    cdef int listed
    for v in range(256):
        ws.symcount[v] = 0
        ws.explen[v] = 1
        ws.depth[v] = 0
        ws.born[v] = 0
        ws.made_at[v, BEFORE_LO] = 0
        ws.made_at[v, BEFORE_HI] = 0
        ws.made_at[v, AFTER_LO] = 0
        ws.made_at[v, AFTER_HI] = 0
    ws.n_before = 0
    ws.n_after = 0
    _first_pairs(data, lo, n, ws)
    for v in range(255, -1, -1):
        if ws.symcount[v] == 0:
            ws.fresh[n_free] = v
            n_free += 1

    while True:
        _row_keys(ws)
        n_spare = 0  # once the fresh codes are used up: values no longer in the block
        if n_used == n_free and ws.recycle:
            n_spare = _spare_values(ws, MAX_RECYCLED - n_recycled)
        n_step = _choose(ws, n_free, n_used, n_spare)
        if n_step == 0:
            break
        step += 1
        for m in range(n_step):
            a = ws.step_left[m]
            z = ws.step_right[m]
            c = ws.step_code[m]
            # where the pair's occurrences are listed: a pair is made by the match of its
            # younger symbol (the later one of a step), on that symbol's side
            if ws.born[a] == 0 and ws.born[z] == 0:  # two bytes of the block: the first index
                listed = PLACES_INDEX
                places_lo = ws.run_at[a * 256 + z] + 1
                places_hi = places_lo + ws.index[places_lo - 1]
            elif ws.born[z] >= ws.born[a]:  # made as (prev, z): side 0 of z, where prev was a
                places_lo = ws.made_at[z, BEFORE_LO]
                places_hi = ws.made_at[z, BEFORE_HI]
                if a == z:  # unfiltered: _replace_runs tests each place anyway, and takes runs whole
                    listed = PLACES_BEFORE
                else:
                    listed = PLACES_SCRATCH
                    places_hi = _select(ws.before, ws.before_sym, places_lo, places_hi, a, ws.scratch)
                    places_lo = 0
            else:  # made as (a, next): side 1 of a, where next was z
                listed = PLACES_SCRATCH
                places_hi = _select(ws.after, ws.after_sym, ws.made_at[a, AFTER_LO], ws.made_at[a, AFTER_HI], z, ws.scratch)
                places_lo = 0
            ws.made_at[c, BEFORE_LO] = ws.n_before
            ws.made_at[c, AFTER_LO] = ws.n_after
            # (the list passed as it is: a memoryview variable would count references per merge)
            if listed == PLACES_INDEX:
                ws.step_made[m] = _merge(ws, a, z, c, n, ws.index, places_lo, places_hi)
            elif listed == PLACES_BEFORE:
                ws.step_made[m] = _merge(ws, a, z, c, n, ws.before, places_lo, places_hi)
            else:
                ws.step_made[m] = _merge(ws, a, z, c, n, ws.scratch, places_lo, places_hi)
            ws.made_at[c, BEFORE_HI] = ws.n_before
            ws.made_at[c, AFTER_HI] = ws.n_after
            ws.born[c] = (step << STEP_SHIFT) | m

        for m in range(n_step):
            a = ws.step_left[m]
            z = ws.step_right[m]
            c = ws.step_code[m]
            made = ws.step_made[m]
            ws.symcount[a] -= made
            ws.symcount[z] -= made
            ws.symcount[c] += made
            out.code[first + n_merges + m] = <uint8_t>c
            out.left[first + n_merges + m] = <uint8_t>a
            out.right[first + n_merges + m] = <uint8_t>z
            out.count[first + n_merges + m] = ws.step_count[m]
            out.expansion[first + n_merges + m] = ws.explen[a] + ws.explen[z]
            if ws.step_fresh[m]:
                n_used += 1
            else:
                n_recycled += 1
        for m in range(n_step):  # codes are never operands of their own step
            c = ws.step_code[m]
            ws.explen[c] = out.expansion[first + n_merges + m]
            ws.depth[c] = max(2, 1 + ws.depth[ws.step_left[m]], ws.depth[ws.step_right[m]])
        n_merges += n_step
    out.n_merges[b] = n_merges
    out.n_fresh[b] = n_used


cdef void _first_pairs(const uint8_t[::1] data, Py_ssize_t lo, Py_ssize_t n, _Workspace ws) noexcept nogil:
    """Link the block's positions, count its values and pairs, and list every pair's
    positions in order (a run of ``index`` each). Each pair's rank among its pair's
    occurrences, noted while counting (in ``scratch``), gives its place in the run, so the
    listing only reads ``run_at``."""
    cdef Py_ssize_t i, t, n_cells = 0, n_index = 0
    cdef int32_t cell, last = -1, row, col
    cdef int64_t c, last_c = 0
    cdef uint16_t link
    ws.val[n] = END
    ws.nxt[n] = <uint16_t>n
    ws.prv[n] = <uint16_t>n
    for i in range(n):  # plain loops, which vectorise
        ws.val[i] = data[lo + i]
    link = 1  # the links counted in 16 bits, eight to a vector (from i, 64-bit: two or three to one)
    for i in range(n):
        ws.nxt[i] = link
        link += 1
    link = 0
    for i in range(1, n):
        ws.prv[i] = link
        link += 1
    ws.prv[0] = <uint16_t>n
    for i in range(n - 1):  # distinct pairs listed in cells without a branch, which would guess wrong
        cell = (<int32_t>data[lo + i] << 8) | data[lo + i + 1]
        # in a run (aaaa) the count just stored: from a register, not from the store
        c = last_c if cell == last else ws.counts[cell]
        ws.cells[n_cells] = cell
        ws.scratch[i] = <uint16_t>c
        n_cells += c == 0
        ws.counts[cell] = <uint16_t>(c + 1)
        last = cell
        last_c = c + 1
    ws.symcount[data[lo + n - 1]] = 1  # a value's count: the pairs it starts, and the last byte

    for i in range(256):
        ws.bound[i] = 0
        ws.arg[i] = 0
        ws.stale[i] = 0
    for t in range(n_cells):
        cell = ws.cells[t]
        c = ws.counts[cell]
        row = cell >> 8
        col = cell & 255
        if c > ws.bound[row] or (c == ws.bound[row] and col < ws.arg[row]):
            ws.bound[row] = <int32_t>c
            ws.arg[row] = col
        ws.symcount[row] += c
        ws.index[n_index] = <uint16_t>c  # a run: its length, then its positions, filled below
        ws.run_at[cell] = <int32_t>n_index
        n_index += 1 + c
    for i in range(n - 1):  # every pair gets a run: no test, no branch
        cell = (<int32_t>data[lo + i] << 8) | data[lo + i + 1]
        ws.index[ws.run_at[cell] + 1 + ws.scratch[i]] = <uint16_t>i


cdef void _row_keys(_Workspace ws) noexcept nogil:
    """Every row's key, its bound then its place from the end (``bound << 8 | 255 - row``),
    so that the largest key is the best row by the tie rule, and one maximum over the 256
    keys (a loop that vectorises, without a branch) finds it; rows whose left symbol is at
    ``max_depth`` count 0."""
    cdef Py_ssize_t row
    for row in range(256):
        ws.keys[row] = (ws.bound[row] << 8) | <int32_t>(255 - row)
    if ws.max_depth >= 0:
        for row in range(256):
            if ws.depth[row] >= ws.max_depth:
                ws.keys[row] = <int32_t>(255 - row)  # a count of 0


cdef bint _next_row(_Workspace ws, Py_ssize_t t, int64_t floor) noexcept nogil:
    """The next best row by its maximum count (ties: the lower row) into ``top[t]`` with its
    count, unless no row is left above *floor*. Candidates are taken one at a time, as
    ``_choose`` asks for them: once a step has its merges, the rest need not be found.

    A stale best row is rescanned and its key made exact before it can be taken. Any exact
    top rows are the same rows, so which rows get rescanned on the way does not change the
    output."""
    cdef int32_t best, best_row
    cdef int64_t low = (floor + 1) << 8  # the least key that beats the floor
    while True:
        best = _largest_key(ws)
        if best < low:
            return False
        best_row = 255 - (best & 255)
        if not ws.stale[best_row]:
            break
        _rescan(ws, best_row)
        ws.keys[best_row] = (ws.bound[best_row] << 8) | (255 - best_row)
    ws.top[t] = best_row
    ws.top_count[t] = best >> 8
    ws.keys[best_row] = 0
    return True


cdef inline int32_t _largest_key(_Workspace ws) noexcept nogil:
    """The largest of the 256 keys (``bp_largest_key``, above)."""
    return bp_largest_key(&ws.keys[0])


cdef void _rescan(_Workspace ws, Py_ssize_t row) noexcept nogil:
    """The true maximum of *row* and its lowest column: the largest count, then the largest
    ``255 - column`` among the cells holding it (``bp_row_max``, above; two passes without a
    branch: a scan for the first column holding the maximum took twice as long)."""
    cdef uint16_t most
    ws.arg[row] = bp_row_max(&ws.counts[row * 256], &most)
    ws.bound[row] = most
    ws.stale[row] = 0


cdef Py_ssize_t _spare_values(_Workspace ws, int64_t most) noexcept nogil:
    """The values no longer in the block, highest first, into ``spare``; returns how many,
    at most *most*."""
    cdef Py_ssize_t n_spare = 0, v
    for v in range(255, -1, -1):
        if ws.symcount[v] == 0:
            ws.spare[n_spare] = v
            n_spare += 1
    return min(n_spare, most)


cdef inline bint _passes(_Workspace ws, Py_ssize_t t, bint has_fresh) noexcept nogil:
    """Whether candidate *t* is frequent enough for its code (a recycled one needs one more)."""
    cdef int64_t c = ws.top_count[t]
    return (c >= ws.threshold) & (has_fresh | (c > ws.threshold))


cdef Py_ssize_t _choose(_Workspace ws, int64_t n_free, int64_t n_used, int64_t n_spare) noexcept nogil:
    """The merges of this step (left, right, code, count, fresh) into the ``step_`` arrays;
    returns how many (0: the block is done). See docs/kernels.md for the rules. ``spare``
    holds the *n_spare* values a recycled code may take."""
    cdef bint has_fresh = n_used < n_free
    cdef int64_t limit, a, z
    cdef Py_ssize_t t, u, n = 0
    cdef bint clash, take
    # further merges: fresh codes only while plenty are left; spare values while one is left over
    if has_fresh:
        limit = ws.merges_per_step if n_free - n_used > ws.merges_per_step else 1
    else:
        limit = min(max(n_spare - 1, 1), ws.merges_per_step) if n_spare > 0 else 0
    # no branch on the tests, whose outcomes no predictor learns: every candidate is written
    # at n and kept by n += take. Candidates come best first, up to n_best of them; once n
    # reaches limit no later one is taken, so none is looked for (rows below the threshold
    # are never merged: they need not be exact, and are not candidates)
    for t in range(ws.n_best):
        if n == limit or not _next_row(ws, t, ws.threshold - 1):
            break
        a = ws.top[t]
        z = ws.arg[a]
        clash = False
        for u in range(t):  # a better candidate that passed, taken or not
            clash |= _passes(ws, u, has_fresh) & ((a == ws.arg[ws.top[u]]) | (z == ws.top[u]))
        take = _passes(ws, t, has_fresh) & (not clash) & (n < limit)
        if ws.max_depth >= 0:  # only with one merge a step
            take &= max(2, 1 + ws.depth[a], ws.depth[z]) <= ws.max_depth
        ws.step_left[n] = a
        ws.step_right[n] = z
        ws.step_code[n] = ws.fresh[min(n_used + n, 255)] if has_fresh else ws.spare[n]
        ws.step_count[n] = ws.top_count[t]
        ws.step_fresh[n] = has_fresh
        n += take
    return n


cdef inline int64_t _merge(
    _Workspace ws, size_t a, size_t z, size_t code, size_t n, const uint16_t[::1] places, Py_ssize_t lo,
    Py_ssize_t hi
) noexcept nogil:
    """Replace (*a*, *z*) by *code* at ``places[lo:hi]``; returns how many matches."""
    if a == z:  # runs (aaaa): each run's counts changed once, not once per match
        return _replace_runs(ws, a, code, n, places, lo, hi)
    return _replace(ws, a, z, code, n, places, lo, hi)


cdef Py_ssize_t _select(
    const uint16_t[::1] places, const uint16_t[::1] others, Py_ssize_t lo, Py_ssize_t hi, int64_t want,
    uint16_t[::1] out
) noexcept nogil:
    """The ``places[lo:hi]`` whose entry in *others* is *want*, in order, copied into *out*
    (room for ``hi - lo``); returns how many. ``bp_select`` (above), or in the checked build
    its plain loop through the memoryviews."""
    cdef Py_ssize_t e, k = 0
    if CHECKED or hi <= lo:
        for e in range(lo, hi):
            out[k] = places[e]
            k += others[e] == want
        return k
    return bp_select(&places[lo], &others[lo], hi - lo, <uint16_t>want, &out[0])


cdef int64_t _replace(
    _Workspace ws, size_t a, size_t z, size_t code, size_t n, const uint16_t[::1] places, Py_ssize_t lo,
    Py_ssize_t hi
) noexcept nogil:
    """Replace the pair (*a*, *z*) by *code*, left to right, at the positions
    ``places[lo:hi]`` that still hold it; returns how many.

    Each match takes one off the counts of (prev, a), (a, z) and (z, next) and adds one to
    (prev, code) and (code, next): a count falling from its row's bound makes the row stale,
    a count rising above it raises it. The pairs made are appended to the made lists.

    (a, z) is taken off once, after the loop, by the number of matches: no update in the
    loop reads its cell (the others hold *code*, or *a* or *z* on the other side), and its
    row's stale mark comes out the same (a rise in the loop that clears it leaves the bound
    above the cell's count)."""
    cdef size_t i, j, p, q, x, y
    cdef int64_t matches = 0
    cdef Py_ssize_t e, n_before = ws.n_before, n_after = ws.n_after
    for e in range(lo, hi):
        i = places[e]
        if ws.val[i] != a:
            continue  # merged away, or the right half of the match before (aaa)
        j = ws.nxt[i]
        if ws.val[j] != z:
            continue
        p = ws.prv[i]
        q = ws.nxt[j]

        if p != n:  # (prev, a) becomes (prev, code)
            x = ws.val[p]
            _fall(ws, x, a, 1)
            _rise(ws, x, code, 1)
            ws.before[n_before] = <uint16_t>p
            ws.before_sym[n_before] = <uint16_t>x
            n_before += 1
        if q != n:  # (z, next) becomes (code, next)
            y = ws.val[q]
            _fall(ws, z, y, 1)
            _rise(ws, code, y, 1)
            ws.after[n_after] = <uint16_t>i
            ws.after_sym[n_after] = <uint16_t>y
            n_after += 1
        ws.val[i] = <uint16_t>code
        ws.val[j] = DEAD
        ws.nxt[i] = <uint16_t>q
        ws.prv[q] = <uint16_t>i
        matches += 1
    if matches > 0:  # (a, z) taken off once for all the matches
        _fall(ws, a, z, matches)
    ws.n_before = n_before
    ws.n_after = n_after
    return matches


cdef inline void _rise(_Workspace ws, size_t row, size_t col, int64_t by) noexcept nogil:
    """Add *by* to the count of (*row*, *col*): a count rising above its row's bound raises
    it (exact again, in this column), one equal to it may lower the bound's column."""
    cdef int64_t c = ws.counts[(row << 8) | col] + by
    ws.counts[(row << 8) | col] = <uint16_t>c
    if c > ws.bound[row]:
        ws.bound[row] = <int32_t>c
        ws.arg[row] = <int32_t>col
        ws.stale[row] = 0
    elif c == ws.bound[row] and <int32_t>col < ws.arg[row]:
        ws.arg[row] = <int32_t>col


cdef inline void _fall(_Workspace ws, size_t row, size_t col, int64_t by) noexcept nogil:
    """Take *by* off the count of (*row*, *col*): one falling from its row's bound makes the
    row stale (its bound may now be too high)."""
    cdef int64_t c = ws.counts[(row << 8) | col]
    if c == ws.bound[row]:
        ws.stale[row] = 1
    ws.counts[(row << 8) | col] = <uint16_t>(c - by)


cdef int64_t _replace_runs(
    _Workspace ws, size_t a, size_t code, size_t n, const uint16_t[::1] places, Py_ssize_t lo, Py_ssize_t hi
) noexcept nogil:
    """``_replace`` for a pair of one symbol (*a*, *a*): the same matches, links and made
    pairs, but a run (``aaaa``) is matched along its links from its first listed place, and
    the counts inside it change once per merge, not once per match.

    Left to right, a run of *a* after x is matched at every other symbol: the first match
    turns (x, a) into (x, code), each next one (code, a) into (code, code), and each (a, a)
    after a match becomes (code, a); the last match's (a, y) becomes (code, y). The counts
    of (a, a), (code, a) and (code, code) are kept in three counters and added at the end,
    the others updated as in ``_replace``. A row's bound stays an upper bound, exact with its
    lowest column unless marked stale, as match by match: only the stale marks can differ,
    and they decide rescans, not the output. The places listed inside a run are then skipped
    by the test on ``val``."""
    cdef size_t i, j, p, q, x, y
    cdef int64_t taken = 0, code_a = 0, code_code = 0, matches = 0
    # taken: (a, a) taken off (the matches, and the pairs after them that held a);
    # code_a: (code, a) made, less those turned into (code, code)
    cdef Py_ssize_t e, n_before = ws.n_before, n_after = ws.n_after
    for e in range(lo, hi):
        i = places[e]
        if ws.val[i] != a:
            continue  # merged away, or the right half of the match before
        j = ws.nxt[i]
        if ws.val[j] != a:
            continue
        p = ws.prv[i]
        if p != n:  # (x, a) becomes (x, code), as in _replace
            x = ws.val[p]
            _fall(ws, x, a, 1)
            _rise(ws, x, code, 1)
            ws.before[n_before] = <uint16_t>p
            ws.before_sym[n_before] = <uint16_t>x
            n_before += 1
        while True:  # match (i, j), then on along the run
            q = ws.nxt[j]
            taken += 1
            ws.val[i] = <uint16_t>code
            ws.val[j] = DEAD
            ws.nxt[i] = <uint16_t>q
            ws.prv[q] = <uint16_t>i
            matches += 1
            if q == n:
                break
            y = ws.val[q]
            ws.after[n_after] = <uint16_t>i
            ws.after_sym[n_after] = <uint16_t>y
            n_after += 1
            if y != a:  # (a, y) becomes (code, y), as in _replace
                _fall(ws, a, y, 1)
                _rise(ws, code, y, 1)
                break
            taken += 1  # (a, a) after the match becomes (code, a)
            code_a += 1
            j = ws.nxt[q]
            if ws.val[j] != a:
                break  # q holds the run's last a
            code_a -= 1  # the next match's (code, a) becomes (code, code)
            code_code += 1
            ws.before[n_before] = <uint16_t>i
            ws.before_sym[n_before] = <uint16_t>code
            n_before += 1
            i = q

    # the counters: the fall first, then the rises, each by the rules above
    if taken > 0:
        _fall(ws, a, a, taken)
    if code_code > 0:
        _rise(ws, code, code, code_code)
    if code_a > 0:
        _rise(ws, code, a, code_a)
    ws.n_before = n_before
    ws.n_after = n_after
    return matches


cdef Py_ssize_t _take_payload(_Workspace ws, size_t n, _Encoded out) noexcept nogil:
    """Write the block's symbols left, in order, to the payload; returns how many. Zeroes
    the counts of the pairs left on the way (no other count is non-zero) for the next block."""
    cdef Py_ssize_t size = 0, at = out.p_done
    cdef size_t i = 0, j
    while i != n:
        out.payload[at + size] = <uint8_t>ws.val[i]
        size += 1
        j = ws.nxt[i]
        if j != n:
            ws.counts[(<size_t>ws.val[i] << 8) | ws.val[j]] = 0
        i = j
    return size


cdef Py_ssize_t _longest(const int64_t[::1] bounds) noexcept nogil:
    cdef Py_ssize_t b, longest = 1
    for b in range(bounds.shape[0] - 1):
        longest = max(longest, bounds[b + 1] - bounds[b])
    return longest


_per_thread = threading.local()


cdef class _Room:
    """A thread's room, kept between calls: the engine's workspace and a small frame's scratch.

    A call taking it marks it busy until it is done. Python code can run inside a call: an
    allocation may start a collection, which runs the collector's callbacks and finalisers
    (a file object closed by the collector writes its last frame). A call made from there
    finds the room busy and gets room of its own, which it does not keep: sharing it
    mixed two calls' arrays (a crash, found by a test that compresses from a callback)."""

    cdef _Workspace workspace
    cdef _Scratch scratch
    cdef bint busy


cdef _Room _take_room():
    """This thread's room, marked busy; or fresh room when it is busy (give it back with
    ``room.busy = False`` when done)."""
    cdef _Room room = getattr(_per_thread, "room", None)
    if room is None:
        room = _per_thread.room = _Room()
    elif room.busy:
        room = _Room()
    room.busy = True
    return room


cdef _Workspace _workspace(
    _Room room, const int64_t[::1] bounds, int64_t threshold, bint recycle, int64_t max_depth,
    int64_t merges_per_step
):
    """The room's workspace, made large enough for the blocks of *bounds*, with these options."""
    if threshold < 1:
        raise ValueError(f"the compiled engine needs a threshold of at least 1, got {threshold}")
    if merges_per_step < 1 or (merges_per_step > 1 and max_depth >= 0):
        raise ValueError("merges_per_step must be 1 with max_depth, and at least 1")
    cdef Py_ssize_t longest = _longest(bounds)
    cdef _Workspace ws = room.workspace
    if ws is None or ws.longest < longest:
        ws = room.workspace = _Workspace(longest)
    ws.threshold = threshold
    ws.recycle = recycle
    ws.max_depth = max_depth
    # merges_per_step above 256 changes nothing (a block has at most 255 free codes and 256
    # rows), and this bounds the step's arrays
    ws.merges_per_step = min(merges_per_step, 256)
    ws.n_best = ws.merges_per_step + 2 if ws.merges_per_step > 1 else 1
    return ws


def encode_blocks(
    const uint8_t[::1] data, const int64_t[::1] bounds, int64_t threshold, bint recycle, int64_t max_depth,
    int64_t merges_per_step
):
    """The columns of ``EncodedBlocks`` for the blocks ``data[bounds[k]:bounds[k + 1]]``
    (*max_depth* -1: none). The blocks must be non-empty, within the data, and at most
    ``MAX_COMPILED_BLOCK`` bytes long."""
    cdef Py_ssize_t b
    if bounds.shape[0] < 1 or bounds[0] < 0 or bounds[bounds.shape[0] - 1] > data.shape[0]:
        raise ValueError("encode_blocks needs bounds within the data")
    for b in range(bounds.shape[0] - 1):
        if bounds[b + 1] <= bounds[b]:
            raise ValueError("encode_blocks needs non-empty blocks")
        if bounds[b + 1] - bounds[b] > MAX_COMPILED_BLOCK:
            raise ValueError(f"the compiled engine takes blocks of at most {MAX_COMPILED_BLOCK} bytes")
    cdef _Room room = _take_room()
    cdef _Workspace ws
    cdef _Encoded out
    try:
        ws = _workspace(room, bounds, threshold, recycle, max_depth, merges_per_step)
        out = _Encoded(bounds.shape[0] - 1, data.shape[0])
        with nogil:
            _encode(data, bounds, ws, out)
    finally:
        room.busy = False
    return out.columns()


# ---------------------------------------------------------------------------------------------
# Packing the frame


cdef class _Packing:
    """A frame's blocks as the engine encoded them and their escapes (the inputs), and the
    frame's layout: per block whether it is stored and where its merges, payload and escaped
    bytes start; per frame block an encoded block's index, or -1 and the bytes [lo, hi)
    stored (a run of stored blocks becomes as few blocks of at most MAX_BLOCK_SIZE as it can)."""

    cdef const uint8_t[::1] data
    cdef const int64_t[::1] bounds
    cdef const int64_t[::1] n_merges
    cdef const int64_t[::1] n_fresh
    cdef const uint8_t[::1] code
    cdef const uint8_t[::1] left
    cdef const uint8_t[::1] right
    cdef const int64_t[::1] expansion
    cdef const int64_t[::1] payload_len
    cdef const uint8_t[::1] payload
    cdef const int64_t[::1] esc_count
    cdef const uint8_t[::1] esc_mark
    cdef const uint8_t[::1] literals
    cdef Py_ssize_t nb
    # the layout
    cdef int64_t[::1] costs
    cdef uint8_t[::1] stored
    cdef int64_t[::1] node_bytes
    cdef int64_t[::1] order  # blocks by most expansion bytes first, ties by block order
    cdef int64_t[::1] sorting  # merge sort's other half
    cdef int64_t[::1] merge_at
    cdef int64_t[::1] payload_at
    cdef int64_t[::1] literal_at
    cdef int64_t[::1] n_runs
    cdef int64_t[::1] source
    cdef int64_t[::1] lo
    cdef int64_t[::1] hi
    cdef Py_ssize_t n_out
    cdef Py_ssize_t size
    cdef Py_ssize_t nb_room

    def __init__(self, Py_ssize_t nb):
        """Room for the layout of *nb* blocks; :meth:`begin` gives the inputs."""
        self.nb = 0
        self.nb_room = nb
        self.costs = np.empty(nb, dtype=np.int64)
        self.stored = np.zeros(nb, dtype=np.uint8)
        self.node_bytes = np.zeros(nb, dtype=np.int64)
        self.order = np.empty(nb, dtype=np.int64)
        self.sorting = np.empty(nb, dtype=np.int64)
        self.merge_at = np.empty(nb, dtype=np.int64)
        self.payload_at = np.empty(nb, dtype=np.int64)
        self.literal_at = np.empty(nb, dtype=np.int64)
        self.n_runs = np.zeros(nb, dtype=np.int64)
        self.source = np.empty(nb, dtype=np.int64)
        self.lo = np.empty(nb, dtype=np.int64)
        self.hi = np.empty(nb, dtype=np.int64)
        self.n_out = 0
        self.size = 0

    cdef void begin(
        self, const uint8_t[::1] data, const int64_t[::1] bounds, const int64_t[::1] n_merges,
        const int64_t[::1] n_fresh, const uint8_t[::1] code, const uint8_t[::1] left, const uint8_t[::1] right,
        const int64_t[::1] expansion, const int64_t[::1] payload_len, const uint8_t[::1] payload,
        const int64_t[::1] esc_count, const uint8_t[::1] esc_mark, const uint8_t[::1] literals
    ):
        """The inputs, for the blocks of *bounds* (no more than the room made for); typed
        memoryviews in a C call, where a Python call took a Python object for each."""
        self.data = data
        self.bounds = bounds
        self.n_merges = n_merges
        self.n_fresh = n_fresh
        self.code = code
        self.left = left
        self.right = right
        self.expansion = expansion
        self.payload_len = payload_len
        self.payload = payload
        self.esc_count = esc_count
        self.esc_mark = esc_mark
        self.literals = literals
        self.nb = bounds.shape[0] - 1
        self.n_out = 0
        self.size = 0

    cdef void end(self):
        """Let go of the inputs: a kept view would hold the caller's buffer (a bytearray
        could not be resized) until the next call."""
        self.data = None
        self.bounds = None
        self.n_merges = None
        self.n_fresh = None
        self.code = None
        self.left = None
        self.right = None
        self.expansion = None
        self.payload_len = None
        self.payload = None
        self.esc_count = None
        self.esc_mark = None
        self.literals = None

    cdef void check(self) except *:
        """The columns agree with each other: the packing reads no further than they reach."""
        cdef Py_ssize_t b, nb = self.nb, merges = 0, pay = 0, lit = 0
        if (
            self.n_merges.shape[0] != nb or self.n_fresh.shape[0] != nb or self.payload_len.shape[0] != nb
            or self.esc_count.shape[0] != nb or self.esc_mark.shape[0] != nb
        ):
            raise ValueError("pack_frame_body needs one entry per block in every per-block column")
        if self.bounds[0] < 0 or self.bounds[nb] > self.data.shape[0]:
            raise ValueError("pack_frame_body needs bounds within the data")
        for b in range(nb):
            if (
                self.bounds[b + 1] < self.bounds[b] or not 0 <= self.n_fresh[b] <= self.n_merges[b]
                or self.payload_len[b] < 0 or self.esc_count[b] < 0
            ):
                raise ValueError("pack_frame_body needs bounds in order and counts that are not negative")
            merges += self.n_merges[b]
            pay += self.payload_len[b]
            lit += self.esc_count[b]
        if (
            merges > self.code.shape[0] or merges > self.left.shape[0] or merges > self.right.shape[0]
            or merges > self.expansion.shape[0] or pay > self.payload.shape[0] or lit > self.literals.shape[0]
        ):
            raise ValueError("pack_frame_body needs the merges, payloads and escaped bytes its counts say")


cdef int64_t _code_set_runs(const uint8_t[::1] code, Py_ssize_t first, Py_ssize_t n_fresh) noexcept nogil:
    """How many descending runs the fresh codes ``code[first:first + n_fresh]`` form."""
    cdef int64_t runs = 0, previous = 256
    cdef Py_ssize_t m
    for m in range(first, first + n_fresh):
        if m == first or previous - code[m] != 1:  # a block's first code always starts a run
            runs += 1
        previous = code[m]
    return runs


cdef void _block_costs(
    const int64_t[::1] n_merges, const int64_t[::1] n_fresh, const uint8_t[::1] code,
    const int64_t[::1] payload_len, int64_t[::1] costs
) noexcept nogil:
    """Body bytes each block costs beyond its header and escapes: ``codec.block_costs``."""
    cdef Py_ssize_t b, first = 0
    cdef int64_t runs, code_set
    for b in range(n_merges.shape[0]):
        runs = _code_set_runs(code, first, n_fresh[b])
        code_set = 32 if runs > MAX_RUNS else 2 * runs
        costs[b] = payload_len[b] + 2 * n_fresh[b] + 3 * (n_merges[b] - n_fresh[b]) + code_set
        first += n_merges[b]


cdef void _by_node_bytes(_Packing f) noexcept nogil:
    """``order``: the blocks, most expansion bytes first, ties in block order (numpy's
    stable ``argsort(-node_bytes)``): a bottom-up merge sort, which is stable, its passes
    going from ``order`` to ``sorting`` and back."""
    cdef Py_ssize_t i, width = 1
    cdef bint in_sorting = False
    for i in range(f.nb):
        f.order[i] = i
    while width < f.nb:  # (the arrays may be longer than nb: kept from a larger frame)
        if in_sorting:
            _merge_pass(f.node_bytes, f.sorting[: f.nb], f.order[: f.nb], width)
        else:
            _merge_pass(f.node_bytes, f.order[: f.nb], f.sorting[: f.nb], width)
        in_sorting = not in_sorting
        width *= 2
    if in_sorting:
        for i in range(f.nb):
            f.order[i] = f.sorting[i]


cdef void _merge_pass(
    const int64_t[::1] node_bytes, const int64_t[::1] src, int64_t[::1] dst, Py_ssize_t width
) noexcept nogil:
    """Merge each two neighbouring runs of *width* blocks of *src* into *dst*: the left
    run's block first unless the right one's has more bytes."""
    cdef Py_ssize_t nb = src.shape[0], start = 0, mid, end, i, j, k
    while start < nb:
        mid = min(start + width, nb)
        end = min(start + 2 * width, nb)
        i = start
        j = mid
        for k in range(start, end):
            if j >= end or (i < mid and node_bytes[src[i]] >= node_bytes[src[j]]):
                dst[k] = src[i]
                i += 1
            else:
                dst[k] = src[j]
                j += 1
        start = end


cdef void _stored(_Packing f, int64_t budget) noexcept nogil:
    """``codec._stored_blocks``: the blocks to store as they are. Those encoding does not
    shrink, and enough others (most expansion bytes first) to keep the frame's code
    expansions within *budget* bytes."""
    cdef Py_ssize_t b, k, m, first = 0
    cdef int64_t kept_bytes = 0, escape_cost
    _block_costs(f.n_merges, f.n_fresh, f.code, f.payload_len, f.costs)
    for b in range(f.nb):
        escape_cost = f.esc_count[b] + (1 if f.esc_count[b] > 0 else 0)
        f.stored[b] = f.costs[b] + escape_cost + BLOCK_HEADER_SIZE >= f.bounds[b + 1] - f.bounds[b]
        f.node_bytes[b] = 0
        for m in range(first, first + f.n_merges[b]):
            f.node_bytes[b] += f.expansion[m]
        first += f.n_merges[b]
        if not f.stored[b]:
            kept_bytes += f.node_bytes[b]
    if kept_bytes > budget:
        _by_node_bytes(f)
        for k in range(f.nb):
            b = f.order[k]
            if not f.stored[b]:
                f.stored[b] = 1
                kept_bytes -= f.node_bytes[b]
            if kept_bytes <= budget:
                break


cdef void _plan(_Packing f, int64_t budget) noexcept nogil:
    """The frame's blocks and the body's size (``n_out``, ``size``)."""
    cdef Py_ssize_t b, end, nb = f.nb, out = 0
    cdef int64_t size = 0, merge = 0, pay = 0, lit = 0, start, code_set, n_recycled, mark
    _stored(f, budget)
    for b in range(nb):
        f.merge_at[b] = merge
        f.payload_at[b] = pay
        f.literal_at[b] = lit
        merge += f.n_merges[b]
        pay += f.payload_len[b]
        lit += f.esc_count[b]
    b = 0
    while b < nb:
        if not f.stored[b]:
            f.source[out] = b
            f.n_runs[b] = _code_set_runs(f.code, f.merge_at[b], f.n_fresh[b])
            code_set = 32 if f.n_runs[b] > MAX_RUNS else 2 * f.n_runs[b]
            n_recycled = f.n_merges[b] - f.n_fresh[b]
            mark = 1 if f.esc_count[b] > 0 else 0
            size += BLOCK_HEADER_SIZE + code_set + mark + 2 * f.n_fresh[b] + 3 * n_recycled
            size += f.esc_count[b] + f.payload_len[b]
            out += 1
            b += 1
            continue
        end = b
        while end < nb and f.stored[end]:
            end += 1
        start = f.bounds[b]
        while start < f.bounds[end]:  # never more blocks than the run holds: each is at most 64 KiB
            f.source[out] = -1
            f.lo[out] = start
            f.hi[out] = min(start + MAX_BLOCK_SIZE, f.bounds[end])
            size += BLOCK_HEADER_SIZE + f.hi[out] - f.lo[out]
            start = f.hi[out]
            out += 1
        b = end
    f.n_out = out
    f.size = size


cdef void _copy(uint8_t[::1] body, Py_ssize_t at, const uint8_t[::1] src, Py_ssize_t lo, Py_ssize_t n) noexcept nogil:
    """``body[at:at + n] = src[lo:lo + n]``."""
    cdef Py_ssize_t i
    if CHECKED:
        for i in range(n):
            body[at + i] = src[lo + i]
    elif n > 0:
        memcpy(&body[at], &src[lo], n)


cdef void _write(_Packing f, uint8_t[::1] body) noexcept nogil:
    """The body, column by column (docs/FORMAT.md): every block's header fields (orig_len
    u16, payload_len u16, n_fresh u8, n_recycled u8, code-set kind u8, n_escaped u16), the
    code sets, the escape marks, the fresh pairs (left, right), the recycled merges (code,
    left, right), the escaped bytes, the payloads."""
    cdef Py_ssize_t k, m, first, out = f.n_out, at = 0
    cdef int64_t b, length, previous, bit
    for k in range(out):  # orig_len, then payload_len, u16 little-endian
        b = f.source[k]
        length = f.bounds[b + 1] - f.bounds[b] if b >= 0 else f.hi[k] - f.lo[k]
        body[at + 2 * k] = length & 0xFF
        body[at + 2 * k + 1] = (length >> 8) & 0xFF
    at += 2 * out
    for k in range(out):
        b = f.source[k]
        length = f.payload_len[b] if b >= 0 else f.hi[k] - f.lo[k]
        body[at + 2 * k] = length & 0xFF
        body[at + 2 * k + 1] = (length >> 8) & 0xFF
    at += 2 * out
    for k in range(out):  # n_fresh, n_recycled, code-set kind: u8
        b = f.source[k]
        if b >= 0:
            body[at + k] = f.n_fresh[b] & 0xFF
            body[at + out + k] = (f.n_merges[b] - f.n_fresh[b]) & 0xFF
            body[at + 2 * out + k] = CODE_SET_BITMAP if f.n_runs[b] > MAX_RUNS else f.n_runs[b]
    at += 3 * out
    for k in range(out):  # n_escaped, u16
        b = f.source[k]
        if b >= 0:
            body[at + 2 * k] = f.esc_count[b] & 0xFF
            body[at + 2 * k + 1] = (f.esc_count[b] >> 8) & 0xFF
    at += 2 * out
    for k in range(out):  # code sets: (skip, take) per descending run, or a bitmap of 255 - code
        b = f.source[k]
        if b < 0 or f.n_fresh[b] == 0:
            continue
        first = f.merge_at[b]
        if f.n_runs[b] > MAX_RUNS:
            for m in range(first, first + f.n_fresh[b]):
                bit = 255 - f.code[m]
                body[at + (bit >> 3)] |= 0x80 >> (bit & 7)
            at += 32
            continue
        previous = 256
        for m in range(first, first + f.n_fresh[b]):
            if m == first or previous - f.code[m] != 1:
                body[at] = (previous - f.code[m] - 1) & 0xFF
                body[at + 1] = 1
                at += 2
            else:
                body[at - 1] += 1
            previous = f.code[m]
    for k in range(out):  # escape marks
        b = f.source[k]
        if b >= 0 and f.esc_count[b] > 0:
            body[at] = f.esc_mark[b]
            at += 1
    for k in range(out):  # fresh merges: left, right
        b = f.source[k]
        if b >= 0:
            for m in range(f.merge_at[b], f.merge_at[b] + f.n_fresh[b]):
                body[at] = f.left[m]
                body[at + 1] = f.right[m]
                at += 2
    for k in range(out):  # recycled merges: code, left, right
        b = f.source[k]
        if b >= 0:
            for m in range(f.merge_at[b] + f.n_fresh[b], f.merge_at[b] + f.n_merges[b]):
                body[at] = f.code[m]
                body[at + 1] = f.left[m]
                body[at + 2] = f.right[m]
                at += 3
    for k in range(out):  # escaped bytes
        b = f.source[k]
        if b >= 0:
            _copy(body, at, f.literals, f.literal_at[b], f.esc_count[b])
            at += f.esc_count[b]
    for k in range(out):  # payloads: the encoded symbols, or the stored bytes
        b = f.source[k]
        if b >= 0:
            _copy(body, at, f.payload, f.payload_at[b], f.payload_len[b])
            at += f.payload_len[b]
        else:
            _copy(body, at, f.data, f.lo[k], f.hi[k] - f.lo[k])
            at += f.hi[k] - f.lo[k]


cdef tuple _pack(_Packing f, int64_t budget):
    """The frame's body (uint8) and its number of blocks."""
    with nogil:
        _plan(f, budget)
    body = np.zeros(f.size, dtype=np.uint8)
    cdef uint8_t[::1] view = body
    with nogil:
        _write(f, view)
    return body, f.n_out


def block_costs(const int64_t[::1] n_merges, const int64_t[::1] n_fresh, const uint8_t[::1] code, const int64_t[::1] payload_len):
    """``codec.block_costs``: body bytes each block costs beyond its header and escapes."""
    cdef Py_ssize_t b, nb = n_merges.shape[0], merges = 0
    if n_fresh.shape[0] != nb or payload_len.shape[0] != nb:
        raise ValueError("block_costs needs one entry per block in every per-block column")
    for b in range(nb):
        if not 0 <= n_fresh[b] <= n_merges[b]:
            raise ValueError("block_costs needs 0 <= n_fresh <= n_merges")
        merges += n_merges[b]
    if merges > code.shape[0]:
        raise ValueError("block_costs needs the codes its counts say")
    costs = np.empty(nb, dtype=np.int64)
    cdef int64_t[::1] view = costs
    with nogil:
        _block_costs(n_merges, n_fresh, code, payload_len, view)
    return costs


def pack_frame_body(
    data, bounds, n_merges, n_fresh, code, left, right, expansion, payload_len, payload, esc_count, esc_mark,
    literals, int64_t budget
):
    """``format.pack_frame(codec._assemble(...))``'s body and its number of blocks."""
    cdef const int64_t[::1] starts = bounds
    cdef _Packing f = _Packing(max(starts.shape[0] - 1, 0))
    f.begin(
        data, bounds, n_merges, n_fresh, code, left, right, expansion, payload_len, payload, esc_count, esc_mark,
        literals
    )
    f.check()
    return _pack(f, budget)


cdef class _Scratch:
    """A frame's cutting, engine columns and packing layout: kept by each thread between
    calls for inputs of up to ``KEPT_SCRATCH`` bytes (as its workspace is), where making
    their two dozen arrays afresh cost a small input more than its encoding."""

    cdef _Cut cut
    cdef _Encoded enc
    cdef _Packing pack


cdef _Scratch _scratch(_Room room, Py_ssize_t n, Py_ssize_t block_size, Py_ssize_t max_distinct):
    """Scratch for a frame of *n* bytes: the room's for a small frame (made anew when it is
    too small), else a new one. Its engine columns are made by ``_columns``."""
    if block_size < 1 or max_distinct < 1:
        raise ValueError(f"block_size and max_distinct must be at least 1, got {block_size} and {max_distinct}")
    cdef Py_ssize_t size = _block_room(n, block_size, max_distinct)
    cdef _Scratch scratch
    if n <= KEPT_SCRATCH:
        scratch = room.scratch
        if scratch is not None and scratch.pack.nb_room >= size and scratch.cut.holds(size, n):
            return scratch
        scratch = room.scratch = _Scratch()
    else:
        scratch = _Scratch()
    scratch.cut = _Cut(size, n)
    scratch.pack = _Packing(size)
    return scratch


cdef _Encoded _columns(_Scratch scratch, Py_ssize_t n_blocks, Py_ssize_t n):
    """The scratch's engine columns, made anew unless they have room for *n_blocks* blocks of *n* bytes."""
    if scratch.enc is None or not scratch.enc.holds(n_blocks, n):
        scratch.enc = _Encoded(n_blocks, n)
    return scratch.enc


cdef _Packing _encode_frame(
    _Room room, const uint8_t[::1] data, Py_ssize_t block_size, Py_ssize_t max_distinct,
    int64_t escape_limit, int64_t threshold, bint recycle, int64_t merges_per_step, int64_t budget
):
    """Cut, escape and encode *data* in *room*, and plan its frame's body: the packing, ready
    for ``_write`` (its inputs to be let go by ``end()``; the room is in use until then)."""
    if block_size > MAX_COMPILED_BLOCK:
        raise ValueError(f"the compiled engine takes blocks of at most {MAX_COMPILED_BLOCK} bytes")
    cdef _Scratch scratch = _scratch(room, data.shape[0], block_size, max_distinct)
    cdef _Cut cut = scratch.cut
    with nogil:
        _split_escapes(data, block_size, max_distinct, escape_limit, cut)
    cdef const int64_t[::1] bounds = cut.starts[: cut.n_blocks + 1]
    cdef const uint8_t[::1] source = cut.changed if cut.escaped else data
    cdef _Workspace ws = _workspace(room, bounds, threshold, recycle, -1, merges_per_step)
    cdef _Encoded enc = _columns(scratch, cut.n_blocks, data.shape[0])
    with nogil:
        _encode(source, bounds, ws, enc)
    cdef Py_ssize_t nb = cut.n_blocks
    cdef _Packing f = scratch.pack
    f.begin(
        data, bounds, enc.n_merges[:nb], enc.n_fresh[:nb], enc.code, enc.left, enc.right, enc.expansion,
        enc.payload_len[:nb], enc.payload, cut.count[:nb], cut.mark[:nb], cut.literals
    )
    with nogil:
        _plan(f, budget)
    return f


def encode_frame_body(
    const uint8_t[::1] data, Py_ssize_t block_size, Py_ssize_t max_distinct, int64_t escape_limit,
    int64_t threshold, bint recycle, int64_t merges_per_step, int64_t budget
):
    """Cut *data* into blocks and escape them, encode them, pack the frame's body: the body
    and its number of blocks, as ``split_and_find_escapes``, ``encode_blocks`` and
    ``pack_frame_body`` give them."""
    cdef _Room room = _take_room()
    cdef _Packing f
    cdef uint8_t[::1] view
    try:
        f = _encode_frame(room, data, block_size, max_distinct, escape_limit, threshold, recycle, merges_per_step, budget)
        body = np.zeros(f.size, dtype=np.uint8)
        view = body
        with nogil:
            _write(f, view)
        f.end()
    finally:
        room.busy = False
    return body, f.n_out


cdef inline void _put32(uint8_t[::1] out, Py_ssize_t at, uint32_t value) noexcept nogil:
    out[at] = value & 255
    out[at + 1] = (value >> 8) & 255
    out[at + 2] = (value >> 16) & 255
    out[at + 3] = value >> 24


cdef void _put_bytes(uint8_t[::1] out, Py_ssize_t at, const uint8_t[::1] src) noexcept nogil:
    _copy(out, at, src, 0, src.shape[0])


def encode_stream(
    const uint8_t[::1] data, Py_ssize_t block_size, Py_ssize_t max_distinct, int64_t escape_limit,
    int64_t threshold, bint recycle, int64_t merges_per_step, int64_t budget
):
    """The whole stream of *data* (at most one frame's bytes, not empty) as bytes, in one call:
    compact when its frame is one block, else its header, the frame and the end record
    (docs/FORMAT.md). The bytes ``format.one_frame_stream`` makes of ``encode_frame_body``'s."""
    if not 0 < data.shape[0] <= MAX_FRAME_SIZE:
        raise ValueError(f"encode_stream takes 1 to {MAX_FRAME_SIZE} bytes, got {data.shape[0]}")
    cdef _Room room = _take_room()
    try:
        return _stream_of(room, data, block_size, max_distinct, escape_limit, threshold, recycle, merges_per_step, budget)
    finally:
        room.busy = False


cdef bytes _stream_of(
    _Room room, const uint8_t[::1] data, Py_ssize_t block_size, Py_ssize_t max_distinct, int64_t escape_limit,
    int64_t threshold, bint recycle, int64_t merges_per_step, int64_t budget
):
    """``encode_stream``, in *room*."""
    cdef Py_ssize_t n = data.shape[0], at, size, total, lead
    cdef uint32_t content_crc, frame_crc
    cdef const uint8_t[::1] framed = FRAMED_HEADER
    cdef const uint8_t[::1] compact = COMPACT_HEADER
    cdef _Packing f = _encode_frame(
        room, data, block_size, max_distinct, escape_limit, threshold, recycle, merges_per_step, budget
    )
    with nogil:
        content_crc = crc32_update(0, &data[0], n)
    cdef bint stored = f.n_out == 1 and f.source[0] == -1
    if f.n_out != 1:
        lead = STREAM_HEADER_SIZE + FRAME_HEADER_SIZE
        total = lead + f.size + END_SIZE
    elif stored:
        lead = STREAM_HEADER_SIZE + 5 + (1 if n < 1 << 7 else 2 if n < 1 << 14 else 3)
        total = lead + n
    else:
        lead = STREAM_HEADER_SIZE + 5
        total = lead + f.size
    out = np.zeros(total, dtype=np.uint8)  # _write leaves zero fields as they are
    cdef uint8_t[::1] o = out
    with nogil:
        if f.n_out != 1:
            _put_bytes(o, 0, framed)
            at = STREAM_HEADER_SIZE
            o[at] = KIND_FRAME
            _put32(o, at + 1, <uint32_t>f.n_out)
            _put32(o, at + 5, <uint32_t>n)
            _put32(o, at + 9, <uint32_t>f.size)
            _put32(o, at + 13, content_crc)
            _write(f, o[lead : lead + f.size])
            frame_crc = crc32_update(crc32_update(0, &o[at], 17), &o[lead], f.size)
            _put32(o, at + 17, frame_crc)
            at = lead + f.size
            o[at] = KIND_END
            _put32(o, at + 1, 1)
            _put32(o, at + 5, <uint32_t>n)
            _put32(o, at + 9, 0)  # the high half of the 64-bit total size
            _put32(o, at + 13, content_crc)
            _put32(o, at + 17, crc32_update(0, &o[at], 17))
        else:
            _put_bytes(o, 0, compact)
            at = STREAM_HEADER_SIZE
            _put32(o, at, content_crc)
            if stored:
                o[at + 4] = COMPACT_STORED
                at += 5
                size = n
                while size >= 0x80:  # LEB128
                    o[at] = (size & 0x7F) | 0x80
                    size >>= 7
                    at += 1
                o[at] = <uint8_t>size
                _copy(o, lead, data, 0, n)
            else:
                o[at + 4] = COMPACT_ENCODED
                _write(f, o[lead:])
    f.end()
    return out.tobytes()
