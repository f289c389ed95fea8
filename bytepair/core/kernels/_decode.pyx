"""The compiled decoder: a frame body, a run of blocks, or a whole stream, back to bytes.

The same contract as the numpy path (``container.format.unpack_frame_body`` then
``core.expand.expand_numpy``), which stays the portable path and the reference
this one is tested against: the same output, and for bad input the same fault
reported (``decode._error`` makes the numpy decoder's exception from it).
``decode.py`` and ``stream.py`` are the Python side.

:func:`decode_body` reads the body's columns, checking them in the order
``unpack_frame_body`` does, then the blocks go through two passes:

1. **Validate the merges** (``check_blocks`` without the payloads), writing
   nothing: per block, the fresh codes are distinct; each merge, in creation
   order, uses only literals and codes already defined (a fresh code before its
   merge is a forward reference, or a cycle); no merge expands to more than its
   block holds; all merges of the run together stay within the frame's budget
   (``node_budget``). Lengths are checked as they are computed, so none can grow
   past a block (a 255-deep doubling chain stops at its first long code).
2. **Write** (``write_blocks``), block by block: each merge's expansion, in
   creation order, into a table (an operand means what it means at that moment,
   so a recycled code is simply redefined); then each payload symbol's
   expansion, copied 32 bytes at a time into the output, which has 32 spare
   bytes at its end. A short expansion writes past its end; the next symbol
   overwrites that. The escaped bytes go back in once a block is written
   (``restore``). Each symbol's length is checked against what is left
   of its block before its copy, and its escape marks against the block's
   escaped bytes left; at the block's end, both must be used up exactly.

When the writing meets a fault, ``check_blocks`` runs in full (payloads too) to
name the first fault as the numpy decoder does. The table and the output are
made between the two passes, once the merges passed (their size is known then):
a frame that claims a large size in a few bytes gets nothing before.

The stream kernels (:func:`stream_size`, :func:`plan_stream`,
:func:`decode_whole`; see ``stream.py``) take a whole stream in one call.

A kernel cannot raise a useful exception, so it fills a status (what went
wrong, in which block, with which values) and the Python caller raises from it.
The format's constants are read from ``container.format`` and ``core.expand``
at import, into the globals below: one copy of each.
"""

from cpython.bytes cimport PyBytes_AS_STRING
from cpython.exc cimport PyErr_Clear
from cpython.ref cimport Py_DECREF, PyObject
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from bytepair.core.kernels._crc cimport crc32_combine, crc32_update
from bytepair.core.kernels.common cimport CHECKED

import threading

import numpy

from bytepair.container import format as _format
from bytepair.core import expand as _expand

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    /* BYTEPAIR_PORTABLE (a test build): the plain C of other CPUs, on x86-64 too */
    #if (defined(__SSE2__) || defined(_M_X64)) && !defined(BYTEPAIR_PORTABLE)
    #include <emmintrin.h>
    /* dst[0:32] = src[0:32]: two 16-byte loads, then two stores, so the ranges may overlap
       (a table copies into itself). */
    static inline void bp_copy32(unsigned char *dst, const unsigned char *src) {
        __m128i a = _mm_loadu_si128((const __m128i *)src);
        __m128i b = _mm_loadu_si128((const __m128i *)(src + 16));
        _mm_storeu_si128((__m128i *)dst, a);
        _mm_storeu_si128((__m128i *)(dst + 16), b);
    }

    /* Bit k set where p[k] == v, k < 64: four 16-byte compares (SSE2, every x86-64). */
    static inline uint64_t bp_equal_mask64(const unsigned char *p, unsigned char v) {
        const __m128i s = _mm_set1_epi8((char)v);
        uint64_t a = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)p), s));
        uint64_t b = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), s));
        uint64_t c = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), s));
        uint64_t d = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), s));
        return a | b << 16 | c << 32 | d << 48;
    }
    #else
    static inline void bp_copy32(unsigned char *dst, const unsigned char *src) {
        unsigned char word[32];
        memcpy(word, src, 32);  /* all loaded before any byte is stored */
        memcpy(dst, word, 32);
    }

    /* Bit k set where p[k] == v, k < 64: eight bytes at a time, a byte's high bit set
       where it is zero after the XOR, the eight high bits gathered by one multiply. */
    static inline uint64_t bp_equal_mask64(const unsigned char *p, unsigned char v) {
        const uint64_t low7 = 0x7F7F7F7F7F7F7F7Full;
        uint64_t m = 0;
        int w, k;
        for (w = 0; w < 8; w++) {
            uint64_t x = 0, zero;
            for (k = 0; k < 8; k++) x |= (uint64_t)p[8 * w + k] << (8 * k);
            x ^= 0x0101010101010101ull * v;
            zero = ~(((x & low7) + low7) | x | low7);
            m |= ((zero >> 7) * 0x0102040810204080ull) >> 56 << (8 * w);
        }
        return m;
    }
    #endif

    /* The index of the lowest set bit of a nonzero word; how many bits are set. */
    #if defined(__GNUC__) || defined(__clang__)
    #define bp_lowest_bit(x) ((int)__builtin_ctzll(x))
    #elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
    #include <intrin.h>
    static inline int bp_lowest_bit(uint64_t x) { unsigned long i; _BitScanForward64(&i, x); return (int)i; }
    #else
    static inline int bp_lowest_bit(uint64_t x) { int i = 0; while (!(x & 1)) { x >>= 1; i++; } return i; }
    #endif
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__POPCNT__)
    #define bp_bit_count(x) ((int)__builtin_popcountll(x))
    #else
    static inline int bp_bit_count(uint64_t x) {  /* without the instruction: no library call */
        x = x - ((x >> 1) & 0x5555555555555555ull);
        x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
        return (int)((x * 0x0101010101010101ull) >> 56);
    }
    #endif

    /* The payload loop (write_blocks): each symbol's expansion, found in packed (its start
       in the table, high 32 bits, and its length), copied to out[d:] 32 bytes at a time;
       returns where the block ends, or -1 when a symbol would pass end. Built twice: with
       bp_copy32, and where the compiler can, for AVX2, one 32-byte load and store a copy
       (half the memory operations), taken at import when the CPU has it. Two symbols a step,
       one test of both lengths and one of the room: 15-18% less time on text, 10% on binary
       files, than a symbol a step (warm, Calgary's book1, news, pic, geo, obj2). */
    #define BP_EXPAND_ONE(copy, i)                                                        \
        {                                                                                 \
            int64_t what = packed[payload[i]];                                            \
            int64_t n = (uint32_t)what;                                                   \
            if (d + n > end) return -1;                                                   \
            const unsigned char *src = table + (what >> 32);                              \
            copy(out + d, src);                                                           \
            for (int64_t k = 32; k < n; k += 32) copy(out + d + k, src + k); /* rare */   \
            d += n;                                                                       \
        }
    #define BP_EXPAND_LOOP(copy)                                                          \
        int64_t i = 0;                                                                    \
        for (; i + 2 <= n_symbols; i += 2) {                                              \
            int64_t what0 = packed[payload[i]], what1 = packed[payload[i + 1]];           \
            int64_t n0 = (uint32_t)what0, n1 = (uint32_t)what1;                           \
            if ((n0 | n1) > 32 || d + n0 + n1 > end) { /* rare: one at a time */          \
                BP_EXPAND_ONE(copy, i)                                                    \
                BP_EXPAND_ONE(copy, i + 1)                                                \
                continue;                                                                 \
            }                                                                             \
            copy(out + d, table + (what0 >> 32));                                         \
            copy(out + d + n0, table + (what1 >> 32));                                    \
            d += n0 + n1;                                                                 \
        }                                                                                 \
        if (i < n_symbols)                                                                \
            BP_EXPAND_ONE(copy, i)                                                        \
        return d;
    /* Each build of the loop starts a 64-byte line, so that where it falls does not move with the
       code before it: a change elsewhere in this module that moved it by 16 bytes made 1 MB blobs
       decode 15-25% slower in the blob benchmark's order (every codec in turn; not in a warm loop). */
    #if defined(__GNUC__) || defined(__clang__)
    #define BP_LINE_ALIGNED __attribute__((aligned(64)))
    #else
    #define BP_LINE_ALIGNED
    #endif
    BP_LINE_ALIGNED static int64_t bp_expand_base(unsigned char *out, int64_t d, int64_t end,
            const unsigned char *table, const unsigned char *payload, int64_t n_symbols, const int64_t *packed) {
        BP_EXPAND_LOOP(bp_copy32)
    }
    static int64_t (*bp_expand)(unsigned char *, int64_t, int64_t, const unsigned char *, const unsigned char *,
                                int64_t, const int64_t *) = bp_expand_base;
    #if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__)) \
        && !defined(BYTEPAIR_PORTABLE)
    #include <immintrin.h>
    __attribute__((target("avx2"))) static inline void bp_copy32_avx2(unsigned char *dst, const unsigned char *src) {
        _mm256_storeu_si256((__m256i *)dst, _mm256_loadu_si256((const __m256i *)src));
    }
    __attribute__((target("avx2"))) BP_LINE_ALIGNED static int64_t bp_expand_avx2(
            unsigned char *out, int64_t d, int64_t end, const unsigned char *table,
            const unsigned char *payload, int64_t n_symbols, const int64_t *packed) {
        BP_EXPAND_LOOP(bp_copy32_avx2)
    }
    static const char *bp_choose_payload_loop(int avx2) {
        __builtin_cpu_init();
        if (avx2 && __builtin_cpu_supports("avx2")) {
            bp_expand = bp_expand_avx2;
            return "avx2";
        }
        bp_expand = bp_expand_base;
        return "baseline";
    }
    #else
    static const char *bp_choose_payload_loop(int avx2) { (void)avx2; return "baseline"; }
    #endif

    /* The escapes' return (restore) where the CPU has AVX-512 VBMI2, 64 bytes a step without a
       branch per mark: a masked compare finds the marks, the next literals are loaded (as many as
       there are marks: a masked load reads no further), spread out to the marks' places (vpexpandb)
       and stored there (a masked store). Returns the next literal's index, or -1 when out[pos:end]
       holds the mark more often than literals are left; reads and writes nothing outside
       out[pos:end] and literals[lit:lit_end]. The plain loop's branch on each mark, mispredicted
       once a step, took a third of the decoding of Calgary's geo. */
    static int64_t (*bp_restore_wide)(unsigned char *, int64_t, int64_t, unsigned char, const unsigned char *,
                                      int64_t, int64_t) = NULL;
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(BYTEPAIR_PORTABLE)
    __attribute__((target("avx512f,avx512bw,avx512vbmi2,popcnt"))) static int64_t bp_restore_vbmi2(
            unsigned char *out, int64_t pos, int64_t end, unsigned char mark, const unsigned char *literals,
            int64_t lit, int64_t lit_end) {
        const __m512i marks = _mm512_set1_epi8((char)mark);
        while (pos < end) {
            int64_t left = end - pos;
            __mmask64 here = left >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << left) - 1);
            __mmask64 found = _mm512_mask_cmpeq_epi8_mask(here, _mm512_maskz_loadu_epi8(here, out + pos), marks);
            int64_t n = __builtin_popcountll(found);
            if (n > lit_end - lit)
                return -1;
            __mmask64 take = n >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << n) - 1);
            __m512i spread = _mm512_maskz_expand_epi8(found, _mm512_maskz_loadu_epi8(take, literals + lit));
            _mm512_mask_storeu_epi8(out + pos, found, spread);
            lit += n;
            pos += 64;
        }
        return lit;
    }
    static const char *bp_choose_escape_loop(int wide) {
        __builtin_cpu_init();
        if (wide && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                && __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("popcnt")) {
            bp_restore_wide = bp_restore_vbmi2;
            return "avx512vbmi2";
        }
        bp_restore_wide = NULL;
        return "baseline";
    }
    #else
    static const char *bp_choose_escape_loop(int wide) { (void)wide; return "baseline"; }
    #endif
    """
    int64_t bp_expand(unsigned char *out, int64_t d, int64_t end, const unsigned char *table,
                      const unsigned char *payload, int64_t n_symbols, const int64_t *packed) nogil
    const char *bp_choose_payload_loop(int avx2) noexcept
    const char *bp_choose_escape_loop(int wide) noexcept
    int64_t (*bp_restore_wide)(unsigned char *out, int64_t pos, int64_t end, unsigned char mark,
                               const unsigned char *literals, int64_t lit, int64_t lit_end) noexcept nogil
    void bp_copy32(unsigned char *dst, const unsigned char *src) nogil
    uint64_t bp_equal_mask64(const unsigned char *p, unsigned char v) nogil
    int bp_lowest_bit(uint64_t x) nogil
    int bp_bit_count(uint64_t x) nogil


cdef extern from *:
    """
    /* decode_whole's output for a framed stream: a new bytes object, its contents written by the decoder (its
       only reference is the caller's), then cut to its size (a smaller block, in place). */
    static PyObject *bp_new_bytes(Py_ssize_t n) { return PyBytes_FromStringAndSize(NULL, n); }
    static PyObject *bp_trimmed(PyObject *made, Py_ssize_t size) {
        if (_PyBytes_Resize(&made, size) < 0)
            return NULL;
        return made;
    }
    """
    PyObject *bp_new_bytes(Py_ssize_t n)
    object bp_trimmed(PyObject *made, Py_ssize_t size)  # takes the reference to *made*


cpdef enum:
    W = 32  # bytes per copy (bp_copy32): one 32-byte load and store, however short the expansion

# what went wrong: status[0]; the block: status[1]; details: status[2:]
cpdef enum:
    OK = 0
    BAD_PAYLOAD_LEN = 1  # a payload empty or longer than its block
    FRESH_TWICE = 2  # a fresh code listed twice in a block
    FORWARD_REF = 3  # (code, merge, operand): an operand that is a fresh code not defined yet
    TOO_LONG = 4  # (code, orig_len): a merge expands to more than its block
    OVER_BUDGET = 5  # (bytes,): the merges of the run expand to more than the budget
    WRONG_TOTAL = 6  # (total, orig_len): a block expands to another length than its header says
    ESCAPE_COUNT = 7  # (held, count): a block holds its escape mark another number of times than it has escaped bytes
    # the frame body's columns (bytepair.container.format.unpack_frame_body)
    SHORT_BODY = 10  # the body is shorter than its columns
    LONG_BODY = 11  # (extra,): bytes after the last payload
    BAD_LENGTHS = 12  # impossible lengths in a block header
    WRONG_SIZE = 13  # (sum, orig_size): the blocks hold another size than the frame header says
    BAD_SET_HEADER = 14  # impossible code-set header
    BAD_RUNS = 15  # fresh code runs that do not describe the block's codes
    BAD_BITMAP = 16  # a code bitmap that does not match the code count
    CONTENT_CRC = 17  # the frame's bytes fail their CRC-32
    DISAGREE = 20  # the writing met a fault that check_blocks does not see: a bug

cpdef enum:
    NO_CRC = -1  # a CRC argument that means: not checked here

# what stream_frames answers
cdef enum:
    DECODED = 0
    NOT_WHOLE = 1  # not one intact stream of exactly the size given: the caller reads it frame by frame
    NEED_TABLE = 2  # (stream_frames) a frame's merges need a larger table: make it, and call again

# the format's constants (container/format.py, core/expand.py), set once here
cdef int64_t CODES_PER_RUN = _format._CODES_PER_RUN  # fresh codes per run of blocks checked together
cdef int64_t CODE_SET_BITMAP = _format.CODE_SET_BITMAP  # the code-set kind of a bitmap
cdef int64_t MAX_RUNS = _format.MAX_RUNS  # fresh code runs a block's code set may have
cdef int64_t NODE_BUDGET = _expand.NODE_BUDGET  # a frame's merges expand to at most this times its size...
cdef int64_t NODE_SLACK = _expand.NODE_SLACK  # ... plus this many bytes
cdef bytes _MAGIC = _format.MAGIC
cdef const unsigned char *MAGIC = _MAGIC  # the stream header's first bytes
cdef Py_ssize_t MAGIC_SIZE = len(_MAGIC)
cdef int64_t VERSION = _format.VERSION
cdef int64_t KIND_FRAME = _format.KIND_FRAME
cdef int64_t KIND_END = _format.KIND_END
cdef int64_t MAX_FRAME_SIZE = _format.MAX_FRAME_SIZE
cdef Py_ssize_t STREAM_HEADER_SIZE = _format.STREAM_HEADER_SIZE
cdef Py_ssize_t FRAME_HEADER_SIZE = _format.FRAME_HEADER_SIZE  # where a frame's body starts
cdef Py_ssize_t FRAME_FIELDS = _format.FRAME_HEADER_SIZE - 4  # the header's bytes its frame CRC covers
cdef Py_ssize_t END_SIZE = _format.END_SIZE
cdef Py_ssize_t END_FIELDS = _format.END_SIZE - 4  # the end record's bytes its own check covers


PAYLOAD_LOOP = bp_choose_payload_loop(True).decode()
"""The payload loop taken at import: ``avx2`` where the CPU has it, else ``baseline``."""


def use_payload_loop(name):
    """Run the payload loop built for *name* (``avx2`` where the CPU has it, or ``baseline``)
    from now on, in every thread; returns the name taken. For tests: both give the same bytes."""
    global PAYLOAD_LOOP
    if name not in ("avx2", "baseline"):
        raise ValueError(f"no payload loop named {name!r}")
    PAYLOAD_LOOP = bp_choose_payload_loop(name == "avx2").decode()
    return PAYLOAD_LOOP


ESCAPE_LOOP = bp_choose_escape_loop(True).decode()
"""The loop that puts escaped bytes back, taken at import: ``avx512vbmi2`` where the CPU has
AVX-512 VBMI2, else ``baseline``."""


def use_escape_loop(name):
    """Put escaped bytes back with the loop built for *name* (``avx512vbmi2`` where the CPU has
    it, or ``baseline``) from now on, in every thread; returns the name taken. For tests: both
    give the same bytes."""
    global ESCAPE_LOOP
    if name not in ("avx512vbmi2", "baseline"):
        raise ValueError(f"no escape loop named {name!r}")
    ESCAPE_LOOP = bp_choose_escape_loop(name == "avx512vbmi2").decode()
    return ESCAPE_LOOP


def constants():
    """The format's constants as compiled in (tests hold them to the Python values)."""
    return {
        "_CODES_PER_RUN": CODES_PER_RUN, "CODE_SET_BITMAP": CODE_SET_BITMAP, "MAX_RUNS": MAX_RUNS,
        "NODE_BUDGET": NODE_BUDGET, "NODE_SLACK": NODE_SLACK, "MAGIC": MAGIC[:MAGIC_SIZE],
        "VERSION": VERSION, "KIND_FRAME": KIND_FRAME, "KIND_END": KIND_END, "MAX_FRAME_SIZE": MAX_FRAME_SIZE,
        "STREAM_HEADER_SIZE": STREAM_HEADER_SIZE, "FRAME_HEADER_SIZE": FRAME_HEADER_SIZE, "END_SIZE": END_SIZE,
    }


cdef class Blocks:
    """A run of blocks (the columns of ``PairTables``) as the kernels read them; for a
    frame body, also the room its columns are read into."""

    cdef Py_ssize_t nb
    cdef int64_t[::1] orig_len, n_merges, n_fresh, payload_len, esc_count
    cdef uint8_t[::1] code, left, right, esc_mark
    cdef const uint8_t[::1] payload, esc_literals
    # reading a frame body: each block's code-set kind, where its set starts in the body,
    # and the fresh codes of the blocks before it; the fresh codes, block by block
    cdef int64_t[::1] set_kind, set_at, fresh_before
    cdef uint8_t[::1] codes


cdef Blocks room_for_bodies(Py_ssize_t nb, Py_ssize_t body_size):
    """Room for the columns of a frame body of at most *nb* blocks and *body_size* bytes.

    A fresh merge takes 2 bytes of the body, a recycled one 3, and a block has at most
    255 of each: the merges fit in ``min(body_size // 2, 510 nb)``."""
    cdef Blocks bl = Blocks()
    cdef Py_ssize_t merges = min(body_size // 2, 510 * nb) + 1
    ints = numpy.empty(8 * nb + 2, dtype=numpy.int64)
    small = numpy.empty(4 * merges + nb, dtype=numpy.uint8)
    bl.orig_len, bl.payload_len, bl.n_fresh, bl.n_merges, bl.set_kind, bl.esc_count = (
        ints[k * nb : (k + 1) * nb] for k in range(6)
    )
    bl.set_at = ints[6 * nb : 7 * nb + 1]
    bl.fresh_before = ints[7 * nb + 1 : 8 * nb + 2]
    bl.codes, bl.code, bl.left, bl.right = (small[k * merges : (k + 1) * merges] for k in range(4))
    bl.esc_mark = small[4 * merges :]
    return bl


cdef inline int64_t fail(int64_t[::1] status, int64_t kind, int64_t block, int64_t x=0, int64_t y=0,
                         int64_t z=0) noexcept nogil:
    """Record what went wrong in *status*; returns -1, for ``return fail(...)``."""
    status[0] = kind
    status[1] = block
    status[2] = x
    status[3] = y
    status[4] = z
    return -1


cdef inline void copy_word(uint8_t[::1] dst, Py_ssize_t d, const uint8_t[::1] src, Py_ssize_t s) noexcept nogil:
    """``dst[d : d + W] = src[s : s + W]``, both ranges inside their arrays: one 32-byte move."""
    cdef Py_ssize_t i
    if CHECKED:  # every byte through the memoryviews, so that an overrun raises
        for i in range(W):
            dst[d + i] = src[s + i]
    else:
        bp_copy32(&dst[d], &src[s])


cdef inline void copy_over(uint8_t[::1] dst, Py_ssize_t d, const uint8_t[::1] src, Py_ssize_t s,
                           Py_ssize_t n) noexcept nogil:
    """Copy *n* bytes in W-byte pieces: writes up to W - 1 bytes past ``d + n``."""
    cdef Py_ssize_t k
    copy_word(dst, d, src, s)
    k = W
    while k < n:  # rare: most expansions are short
        copy_word(dst, d + k, src, s + k)
        k += W


cdef inline uint64_t equal_mask64(const uint8_t[::1] arr, Py_ssize_t at, uint8_t value) noexcept nogil:
    """Bit k set where ``arr[at + k] == value``, for k < 64 (``arr[at : at + 64]`` inside *arr*)."""
    cdef uint64_t mask = 0
    cdef Py_ssize_t k
    if CHECKED:
        for k in range(64):
            if arr[at + k] == value:
                mask |= (<uint64_t>1) << k
        return mask
    return bp_equal_mask64(&arr[at], value)


cdef Py_ssize_t restore(uint8_t[::1] out, Py_ssize_t start, Py_ssize_t end, uint8_t mark,
                        const uint8_t[::1] literals, Py_ssize_t lit, Py_ssize_t lit_end) noexcept nogil:
    """Put ``literals[lit:lit_end]`` back where ``out[start:end]`` holds *mark*, in order;
    returns the next literal's index, or -1 when the block holds the mark more often.

    Every mark in a block's expansion is an escape (the format counts them so), so a
    scan 64 bytes at a time finds them: cheaper than noting each expansion's mark
    offsets as its table is built and testing each payload symbol for them."""
    cdef Py_ssize_t pos = start
    cdef Py_ssize_t limit = out.shape[0] - 64  # a compare may read past the block, not past out
    cdef uint64_t mask
    if not CHECKED and bp_restore_wide != NULL and lit <= lit_end <= literals.shape[0]:
        return bp_restore_wide(&out[0], start, end, mark, &literals[0] if literals.shape[0] else NULL, lit, lit_end)
    while pos < end:
        if pos <= limit:
            mask = equal_mask64(out, pos, mark)
            if end - pos < 64:
                mask &= ((<uint64_t>1) << (end - pos)) - 1
            if mask:
                # more marks than literals left? (counted only when that can be: near the end)
                if lit + 64 > lit_end and lit + bp_bit_count(mask) > lit_end:
                    return -1
                while mask:
                    out[pos + bp_lowest_bit(mask)] = literals[lit]
                    lit += 1
                    mask &= mask - 1
            pos += 64
        else:
            if out[pos] == mark:
                if lit == lit_end:
                    return -1
                out[pos] = literals[lit]
                lit += 1
            pos += 1
    return lit


cdef Py_ssize_t check_blocks(Blocks bl, int64_t budget, int64_t[::1] status, bint payloads) noexcept nogil:
    """Validate every block, writing nothing but *status*; with *payloads* false,
    only the block headers and merges (``write_blocks`` checks the payloads).

    Returns the most bytes one block's merges expand to (the size of pass 2's
    table), or -1 with *status* saying what is wrong.
    """
    cdef Py_ssize_t nb = bl.nb
    cdef int64_t length[256]  # what each byte value expands to, as things stand
    cdef int64_t marks[256]  # how many escape marks that expansion holds
    cdef bint pending[256]  # a fresh code whose merge has not come yet
    cdef int64_t spent = 0  # bytes all merges so far expand to
    cdef int64_t most = 0
    cdef Py_ssize_t m0 = 0, p0 = 0, b, m, i, v
    cdef int64_t size, n, block_nodes, total, held
    cdef uint8_t lv, rv, c
    for b in range(nb):
        if bl.payload_len[b] < 1 or bl.payload_len[b] > bl.orig_len[b]:
            return fail(status, BAD_PAYLOAD_LEN, b)
    for v in range(256):  # each byte value a literal (set back after each block: the few it changed)
        length[v] = 1
        marks[v] = 0
        pending[v] = False
    for b in range(nb):
        size = bl.orig_len[b]
        if bl.esc_count[b]:
            marks[bl.esc_mark[b]] = 1
        for m in range(m0, m0 + bl.n_fresh[b]):
            if pending[bl.code[m]]:
                return fail(status, FRESH_TWICE, b)
            pending[bl.code[m]] = True
        block_nodes = 0
        for m in range(m0, m0 + bl.n_merges[b]):
            lv = bl.left[m]
            rv = bl.right[m]
            c = bl.code[m]
            if pending[lv] or pending[rv]:
                return fail(status, FORWARD_REF, b, c, m - m0, lv if pending[lv] else rv)
            n = length[lv] + length[rv]
            if n > size:
                return fail(status, TOO_LONG, b, c, size)
            spent += n
            if spent > budget:
                return fail(status, OVER_BUDGET, b, spent)
            length[c] = n
            marks[c] = marks[lv] + marks[rv]
            pending[c] = False
            block_nodes += n
        most = max(most, block_nodes)
        if payloads:
            total = 0
            held = 0
            if bl.esc_count[b]:
                for i in range(p0, p0 + bl.payload_len[b]):
                    total += length[bl.payload[i]]
                    held += marks[bl.payload[i]]
            else:
                for i in range(p0, p0 + bl.payload_len[b]):
                    total += length[bl.payload[i]]
            if total != size:
                return fail(status, WRONG_TOTAL, b, total, size)
            if held != bl.esc_count[b]:
                return fail(status, ESCAPE_COUNT, b, held, bl.esc_count[b])
            p0 += bl.payload_len[b]
        # the byte values this block redefined (all its fresh codes among them) are literals again
        for m in range(m0, m0 + bl.n_merges[b]):
            c = bl.code[m]
            length[c] = 1
            marks[c] = 0
            pending[c] = False
        marks[bl.esc_mark[b]] = 0
        m0 += bl.n_merges[b]
    return most


cdef bint write_blocks(Blocks bl, uint8_t[::1] table, uint8_t[::1] out) noexcept nogil:
    """Pass 2: write every block into *out* (its length plus W spare bytes), escapes
    restored, using *table* (256 + the most bytes a block's merges expand to + 2 W);
    only after ``check_blocks`` passed on the merges, which makes every table copy fit.
    Each payload copy is checked to fit its block before it is made; returns False at
    the first payload that does not expand to its block's length and escaped bytes
    exactly (what was written is then junk).

    (Checking here rather than in a payload pass of its own made the decoding of
    text a third faster: each symbol is read once.)"""
    # table[0:256] holds the literals, then a block's merges' expansions back to back;
    # what each byte value means, as things stand: the literal itself at first
    cdef int64_t start[256]  # where its expansion starts in table
    cdef int64_t length[256]
    # the same in one number, for one load per payload symbol: where the expansion
    # starts (high 32 bits) and its length
    cdef int64_t packed[256]
    cdef const uint8_t[::1] payload = bl.payload
    cdef const uint8_t[::1] literals = bl.esc_literals
    cdef Py_ssize_t m0 = 0, p0 = 0, d = 0, lit = 0, lit_end, b, m, i, v, at, end
    cdef int64_t ls, ln, rs, rn, what, n
    cdef uint8_t lv, rv, c
    cdef bint escaping
    for v in range(256):
        table[v] = v
        start[v] = v
        length[v] = 1
        packed[v] = (v << 32) | 1
    for b in range(bl.nb):
        escaping = bl.esc_count[b] > 0
        if bl.n_merges[b] == 0 and not escaping:  # a stored block: its payload is its data
            if bl.payload_len[b] != bl.orig_len[b]:
                return False
            if CHECKED:
                for i in range(bl.payload_len[b]):
                    out[d + i] = payload[p0 + i]
            else:
                memcpy(&out[d], &payload[p0], bl.payload_len[b])
            d += bl.payload_len[b]
            p0 += bl.payload_len[b]
            continue
        at = 256
        for m in range(m0, m0 + bl.n_merges[b]):
            lv = bl.left[m]
            rv = bl.right[m]
            # read both operands before redefining the code (it may be one of them)
            ls = start[lv]
            ln = length[lv]
            rs = start[rv]
            rn = length[rv]
            copy_over(table, at, table, ls, ln)
            copy_over(table, at + ln, table, rs, rn)
            c = bl.code[m]
            start[c] = at
            length[c] = ln + rn
            packed[c] = (at << 32) | (ln + rn)
            at += ln + rn
        end = d + bl.orig_len[b]
        if CHECKED:  # every byte through the memoryviews, so that an overrun raises
            for i in range(p0, p0 + bl.payload_len[b]):
                what = packed[payload[i]]
                n = <uint32_t>what  # its low 32 bits
                if d + n > end:
                    return False
                copy_over(out, d, table, what >> 32, n)
                d += n
        elif bl.payload_len[b]:  # with plain pointers: through memoryviews, each store made the compiler
            d = bp_expand(&out[0], d, end, &table[0], &payload[p0], bl.payload_len[b], packed)  # reload them
        if d != end:
            return False
        if escaping:
            lit_end = lit + bl.esc_count[b]
            lit = restore(out, end - bl.orig_len[b], end, bl.esc_mark[b], literals, lit, lit_end)
            if lit != lit_end:
                return False
        # the byte values this block redefined are literals again for the next
        for m in range(m0, m0 + bl.n_merges[b]):
            c = bl.code[m]
            start[c] = c
            length[c] = 1
            packed[c] = ((<int64_t>c) << 32) | 1
        m0 += bl.n_merges[b]
        p0 += bl.payload_len[b]
    return True


cdef void write_checked(Blocks bl, int64_t budget, uint8_t[::1] table, uint8_t[::1] out,
                        int64_t[::1] status) noexcept nogil:
    """``write_blocks``; where it meets a fault, ``check_blocks`` in full names the first
    one, so the report is the numpy decoder's whatever the order the passes meet faults in."""
    if not write_blocks(bl, table, out):
        check_blocks(bl, budget, status, True)
        if status[0] == OK:
            fail(status, DISAGREE, 0)


cdef inline int64_t u16(const uint8_t[::1] raw, Py_ssize_t at) noexcept nogil:
    """The little-endian 16-bit number at *at*."""
    return <int64_t>raw[at] | (<int64_t>raw[at + 1]) << 8


cdef inline int64_t u32(const uint8_t[::1] raw, Py_ssize_t at) noexcept nogil:
    """The little-endian 32-bit number at *at*."""
    return (<int64_t>raw[at] | (<int64_t>raw[at + 1]) << 8 | (<int64_t>raw[at + 2]) << 16
            | (<int64_t>raw[at + 3]) << 24)


cdef int64_t read_columns(const uint8_t[::1] raw, Py_ssize_t nb, int64_t orig_size, int64_t[::1] status,
                          Blocks bl) noexcept nogil:
    """Read a frame body's columns (docs/FORMAT.md, "Frame body: columns") into *bl*
    (room for *nb* blocks and the body's merges), checked as ``unpack_frame_body``
    checks them, in the same order; 0, or -1 with *status* saying what is wrong.
    The payloads and escaped bytes are views of *raw*."""
    cdef Py_ssize_t b, i, j, r, k, m, lo, hi, fresh, recycled, mark
    cdef int64_t n_marks = 0, fresh_total = 0, recycled_total = 0, escaped_total = 0, payload_total = 0
    cdef int64_t marks_at, fresh_at, recycled_at, literals_at, payload_at, end, total, kind, n_runs
    cdef int64_t took, span, counted, value, skip, take
    cdef bint zero_take
    cdef uint8_t byte
    if raw.shape[0] < 9 * nb:
        return fail(status, SHORT_BODY, 0)
    bl.nb = nb
    # the block headers: 9 bytes a block, column by column
    bl.set_at[0] = 9 * nb  # where each block's code set starts
    for b in range(nb):
        bl.orig_len[b] = u16(raw, 2 * b)
        bl.payload_len[b] = u16(raw, 2 * nb + 2 * b)
        bl.n_fresh[b] = raw[4 * nb + b]
        bl.n_merges[b] = bl.n_fresh[b] + raw[5 * nb + b]
        bl.set_kind[b] = raw[6 * nb + b]
        bl.esc_count[b] = u16(raw, 7 * nb + 2 * b)
        bl.set_at[b + 1] = bl.set_at[b] + (32 if bl.set_kind[b] == CODE_SET_BITMAP else 2 * bl.set_kind[b])
        n_marks += bl.esc_count[b] > 0
        fresh_total += bl.n_fresh[b]
        recycled_total += raw[5 * nb + b]
        escaped_total += bl.esc_count[b]
        payload_total += bl.payload_len[b]
    marks_at = bl.set_at[nb]
    fresh_at = marks_at + n_marks
    recycled_at = fresh_at + 2 * fresh_total
    literals_at = recycled_at + 3 * recycled_total
    payload_at = literals_at + escaped_total
    end = payload_at + payload_total
    if end > raw.shape[0]:
        return fail(status, SHORT_BODY, 0)
    if end != raw.shape[0]:
        return fail(status, LONG_BODY, 0, raw.shape[0] - end)
    total = 0
    for b in range(nb):
        if (bl.orig_len[b] < 1 or bl.payload_len[b] < 1 or bl.payload_len[b] > bl.orig_len[b]
                or bl.esc_count[b] > bl.orig_len[b]):
            return fail(status, BAD_LENGTHS, b)
        total += bl.orig_len[b]
    if total != orig_size:
        return fail(status, WRONG_SIZE, 0, total, orig_size)

    # fresh codes, checked run of blocks by run of blocks as the numpy path does
    # (runs of about CODES_PER_RUN codes), then listed block by block, descending
    bl.fresh_before[0] = 0  # fresh codes of the blocks before each
    for b in range(nb):
        bl.fresh_before[b + 1] = bl.fresh_before[b] + bl.n_fresh[b]
    lo = 0
    while lo < nb:
        hi = lo + 1
        while hi < nb and bl.fresh_before[hi + 1] // CODES_PER_RUN == bl.fresh_before[lo + 1] // CODES_PER_RUN:
            hi += 1
        for b in range(lo, hi):
            kind = bl.set_kind[b]
            n_runs = 0 if kind == CODE_SET_BITMAP else kind
            if n_runs > MAX_RUNS or (kind == 0) == (bl.n_fresh[b] > 0):
                return fail(status, BAD_SET_HEADER, b)
        for b in range(lo, hi):
            if bl.set_kind[b] == CODE_SET_BITMAP:
                continue
            took = 0
            span = 0
            zero_take = False
            for r in range(bl.set_kind[b]):
                skip = raw[bl.set_at[b] + 2 * r]
                take = raw[bl.set_at[b] + 2 * r + 1]
                took += take
                span += skip + take
                zero_take |= take < 1
            if took != bl.n_fresh[b] or span > 256 or zero_take:
                return fail(status, BAD_RUNS, b)
        for b in range(lo, hi):
            if bl.set_kind[b] != CODE_SET_BITMAP:
                continue
            counted = 0
            for i in range(32):
                byte = raw[bl.set_at[b] + i]
                for j in range(8):
                    counted += (byte >> (7 - j)) & 1
            if counted != bl.n_fresh[b]:
                return fail(status, BAD_BITMAP, b)
        for b in range(lo, hi):
            k = bl.fresh_before[b]
            if bl.set_kind[b] == CODE_SET_BITMAP:  # bit 7 - j of byte i: value 255 - (8i + j)
                for i in range(32):
                    byte = raw[bl.set_at[b] + i]
                    for j in range(8):
                        if (byte >> (7 - j)) & 1:
                            bl.codes[k] = 255 - (8 * i + j)
                            k += 1
            else:  # walking down from 255: skip `skip` values, take `take`
                value = 255
                for r in range(bl.set_kind[b]):
                    value -= raw[bl.set_at[b] + 2 * r]
                    for j in range(raw[bl.set_at[b] + 2 * r + 1]):
                        bl.codes[k] = <uint8_t>value
                        value -= 1
                        k += 1
        lo = hi

    # each block's merges: its fresh ones (the k-th fresh code gets the k-th pair), then its recycled ones
    m = 0
    fresh = 0
    recycled = 0
    mark = 0
    for b in range(nb):
        for j in range(bl.n_fresh[b]):
            bl.code[m] = bl.codes[fresh]
            bl.left[m] = raw[fresh_at + 2 * fresh]
            bl.right[m] = raw[fresh_at + 2 * fresh + 1]
            fresh += 1
            m += 1
        for j in range(bl.n_merges[b] - bl.n_fresh[b]):
            bl.code[m] = raw[recycled_at + 3 * recycled]
            bl.left[m] = raw[recycled_at + 3 * recycled + 1]
            bl.right[m] = raw[recycled_at + 3 * recycled + 2]
            recycled += 1
            m += 1
        bl.esc_mark[b] = 0
        if bl.esc_count[b]:
            bl.esc_mark[b] = raw[marks_at + mark]
            mark += 1
    bl.payload = raw[payload_at:end]
    bl.esc_literals = raw[literals_at:payload_at]
    return 0


cdef inline void check_content(uint8_t[::1] out, int64_t orig_size, int64_t content_crc,
                               int64_t[::1] status) noexcept nogil:
    """The decoded bytes' CRC-32 must be *content_crc* (unless that is ``NO_CRC``)."""
    if status[0] == OK and content_crc != NO_CRC and crc32_update(0, &out[0], orig_size) != content_crc:
        fail(status, CONTENT_CRC, 0)


cdef int status_room(int64_t[::1] status) except -1:
    """A status must hold what ``fail`` writes."""
    if status.shape[0] < 5:
        raise ValueError("status needs 5 items")
    return 0


def frame_check(const uint8_t[::1] raw, uint32_t start, int64_t frame_crc, Py_ssize_t nb):
    """What the *nb* block headers at the start of the body *raw* add up to, once its CRC-32
    (continued from *start*, the header's) is *frame_crc* (``NO_CRC``: not checked);
    -1 when it is not, -2 when the body is too short to hold the block lengths."""
    cdef int64_t total = 0
    cdef Py_ssize_t b
    with nogil:
        if frame_crc != NO_CRC and crc32_update(start, &raw[0] if raw.shape[0] else NULL, raw.shape[0]) != frame_crc:
            total = -1
        elif nb < 0 or raw.shape[0] < 2 * nb:
            total = -2
        else:
            for b in range(nb):
                total += u16(raw, 2 * b)
    return total


def decode_body(const uint8_t[::1] raw, Py_ssize_t nb, int64_t orig_size, int64_t budget, int64_t[::1] status,
                out, int64_t content_crc):
    """A frame body of *nb* blocks to its *orig_size* bytes, plus W spare (which hold junk
    after): written to *out* when it is that long, else to an array made once the columns
    and merges passed their checks; returns the array written.

    The columns are read and checked as ``unpack_frame_body`` does, in the same order,
    then the blocks go through their two passes, then the bytes' CRC-32 must be
    *content_crc* (unless that is ``NO_CRC``). On damage, *status* says what is wrong
    (and the array returned may hold anything)."""
    cdef Blocks bl
    cdef int64_t most
    cdef uint8_t[::1] written = out
    cdef uint8_t[::1] table
    status_room(status)
    if nb < 0 or raw.shape[0] < 9 * nb:  # before any room is made for nb blocks
        fail(status, SHORT_BODY, 0)
        return out
    bl = room_for_bodies(nb, raw.shape[0])
    with nogil:
        most = read_columns(raw, nb, orig_size, status, bl)
        if most == 0:
            most = check_blocks(bl, budget, status, False)
    if most < 0:
        return out
    if written.shape[0] < orig_size + W:
        out = numpy.empty(orig_size + W, dtype=numpy.uint8)
        written = out
    table = numpy.empty(256 + most + 2 * W, dtype=numpy.uint8)
    with nogil:
        write_checked(bl, budget, table, written, status)
        check_content(written, orig_size, content_crc, status)
    return out


def decode_blocks(int64_t[::1] orig_len, int64_t[::1] n_merges, int64_t[::1] n_fresh, uint8_t[::1] code,
                  uint8_t[::1] left, uint8_t[::1] right, int64_t[::1] payload_len, const uint8_t[::1] payload,
                  int64_t[::1] esc_count, uint8_t[::1] esc_mark, const uint8_t[::1] esc_literals, int64_t budget,
                  int64_t[::1] status):
    """A run of blocks (``PairTables``' columns, of agreeing lengths) into an array of their
    length plus W spare bytes, made once the merges passed their checks; returns it (on
    damage, with *status* saying what is wrong, and holding anything)."""
    cdef Blocks bl = Blocks()
    cdef Py_ssize_t nb = orig_len.shape[0], b
    cdef int64_t most, total = 0, merges = 0, symbols = 0, escaped = 0
    cdef uint8_t[::1] table, written
    status_room(status)
    for b in range(nb):  # what the kernels rely on (``decode._check_columns`` says the same)
        merges += n_merges[b]
        symbols += payload_len[b]
        escaped += esc_count[b]
        total += orig_len[b]
        if not (0 <= n_fresh[b] <= n_merges[b] and esc_count[b] >= 0 and orig_len[b] < (1 << 30)):
            raise ValueError("PairTables columns disagree in length")
    if not (n_merges.shape[0] == n_fresh.shape[0] == payload_len.shape[0] == esc_count.shape[0]
            == esc_mark.shape[0] == nb and code.shape[0] == left.shape[0] == right.shape[0] == merges
            and payload.shape[0] == symbols and esc_literals.shape[0] == escaped):
        raise ValueError("PairTables columns disagree in length")
    bl.nb = nb
    bl.orig_len, bl.n_merges, bl.n_fresh, bl.payload_len, bl.esc_count = (
        orig_len, n_merges, n_fresh, payload_len, esc_count
    )
    bl.code, bl.left, bl.right, bl.esc_mark = code, left, right, esc_mark
    bl.payload, bl.esc_literals = payload, esc_literals
    with nogil:
        most = check_blocks(bl, budget, status, False)
    if most < 0:
        return numpy.empty(W, dtype=numpy.uint8)
    out = numpy.empty(total + W, dtype=numpy.uint8)
    written = out
    table = numpy.empty(256 + most + 2 * W, dtype=numpy.uint8)
    with nogil:
        write_checked(bl, budget, table, written, status)
    return out


def restore_escapes(uint8_t[::1] out, Py_ssize_t start, Py_ssize_t end, uint8_t mark,
                    const uint8_t[::1] literals, Py_ssize_t lit, Py_ssize_t lit_end):
    """Put ``literals[lit:lit_end]`` back where ``out[start:end]`` holds *mark*, in order;
    returns the next literal's index, or -1 when the block holds the mark more often."""
    cdef Py_ssize_t got
    if not (0 <= start <= end <= out.shape[0] and 0 <= lit <= lit_end <= literals.shape[0]):
        raise ValueError("restore_escapes: ranges outside their arrays")
    with nogil:
        got = restore(out, start, end, mark, literals, lit, lit_end)
    return got


# -- the whole stream ---------------------------------------------------------------


cdef inline bint frame_size_ok(int64_t n_blocks, int64_t orig_size, int64_t body_size) noexcept nogil:
    """The ranges ``format.unpack_frame_header`` checks: sizes a frame can have."""
    return (
        1 <= orig_size <= MAX_FRAME_SIZE
        and 1 <= n_blocks <= orig_size
        and 9 * n_blocks <= body_size <= 9 * n_blocks + orig_size
    )


cdef int64_t walk_stream(const uint8_t[::1] raw, Py_ssize_t *most_blocks, Py_ssize_t *longest_body) noexcept nogil:
    """The bytes the frames of *raw* hold, when *raw* is one stream whose structure is
    intact: its header, frame headers in range whose bodies are all there, then an end
    record that passes its check, counts these frames and sizes, and ends *raw*; else -1.
    Reads the headers only; notes the most blocks and the longest body of a frame."""
    cdef Py_ssize_t n = raw.shape[0], pos, i
    cdef int64_t total = 0, n_frames = 0, orig_size, body_size, n_blocks, declared_size
    if n < STREAM_HEADER_SIZE + END_SIZE:
        return -1
    for i in range(MAGIC_SIZE):
        if raw[i] != MAGIC[i]:
            return -1
    if raw[4] != VERSION or raw[5] != 0:
        return -1
    if (crc32_update(0, &raw[0], 6) & 0xFFFF) != <uint32_t>u16(raw, 6):
        return -1
    pos = STREAM_HEADER_SIZE
    while n - pos >= FRAME_HEADER_SIZE and raw[pos] == KIND_FRAME:
        n_blocks = u32(raw, pos + 1)
        orig_size = u32(raw, pos + 5)
        body_size = u32(raw, pos + 9)
        if not frame_size_ok(n_blocks, orig_size, body_size):
            return -1
        most_blocks[0] = max(most_blocks[0], n_blocks)
        longest_body[0] = max(longest_body[0], body_size)
        total += orig_size
        n_frames += 1
        pos += FRAME_HEADER_SIZE + body_size
    if pos != n - END_SIZE or raw[pos] != KIND_END:
        return -1
    if crc32_update(0, &raw[pos], END_FIELDS) != u32(raw, pos + END_FIELDS):
        return -1
    declared_size = u32(raw, pos + 5) | u32(raw, pos + 9) << 32
    if u32(raw, pos + 1) != n_frames or declared_size != total:
        return -1
    return total


cdef inline bint frame_crc_ok(const uint8_t[::1] raw, Py_ssize_t pos, Py_ssize_t body_size) noexcept nogil:
    """The CRC-32 of the frame at *pos*, its header's fields then its body, is the one it holds."""
    cdef uint32_t crc = crc32_update(0, &raw[pos], FRAME_FIELDS)
    return crc32_update(crc, &raw[pos + FRAME_HEADER_SIZE], body_size) == u32(raw, pos + FRAME_FIELDS)


def stream_size(const uint8_t[::1] raw):
    """The bytes the frames of *raw* hold, when *raw* is one stream whose structure is
    intact (its header, frame headers in range whose bodies are all there, then an end
    record that passes its check, counts these frames and sizes, and ends *raw*); else -1.
    Reads the headers only: the frames' CRCs and bodies are :func:`decode_whole`'s."""
    cdef Py_ssize_t most_blocks = 0, longest_body = 0
    cdef int64_t total
    with nogil:
        total = walk_stream(raw, &most_blocks, &longest_body)
    return total


cdef int64_t plan(const uint8_t[::1] raw, Py_ssize_t *most_blocks, Py_ssize_t *longest_body) noexcept nogil:
    """:func:`plan_stream`, noting the most blocks and the longest body of a frame."""
    cdef Py_ssize_t pos, b, body
    cdef int64_t total, held, n_blocks, body_size
    total = walk_stream(raw, most_blocks, longest_body)
    pos = STREAM_HEADER_SIZE
    while total >= 0 and raw[pos] == KIND_FRAME:
        n_blocks = u32(raw, pos + 1)
        body_size = u32(raw, pos + 9)
        if not frame_crc_ok(raw, pos, body_size):
            return -1
        body = pos + FRAME_HEADER_SIZE
        held = 0
        for b in range(n_blocks):  # 9 bytes a block header: the lengths are there
            held += u16(raw, body + 2 * b)
        if held != u32(raw, pos + 5):
            return -1
        pos = body + body_size
    return total


def plan_stream(const uint8_t[::1] raw):
    """:func:`stream_size`, once every frame's CRC is right and its block headers add up
    to its size; else -1. The Python reader gives a frame room only once it passed these
    checks; :func:`decode_whole` makes its output only then, so its room is no more than
    the reader would give."""
    cdef Py_ssize_t most_blocks = 0, longest_body = 0
    cdef int64_t total
    with nogil:
        total = plan(raw, &most_blocks, &longest_body)
    return total


cdef struct Progress:
    # how far stream_frames went: the next frame's place in the stream and in the output,
    # the CRC of the bytes before it, and the size of the table it needs (-1: not read yet)
    Py_ssize_t pos
    Py_ssize_t at
    uint32_t whole_crc
    int64_t most
    bint planned  # every frame's CRC was checked (plan): not again


cdef int stream_frames(const uint8_t[::1] raw, uint8_t[::1] out, int64_t[::1] status, Blocks bl,
                       uint8_t[::1] table, Progress *go) noexcept nogil:
    """The frames of *raw* from ``go.pos`` on, decoded into *out* at ``go.at``: frame by
    frame as the Python reader, the frame CRC over its header's fields and body, then
    the body's columns, merges, payloads and content CRC, writing straight into *out*
    at the frame's place (a frame's spare bytes fall on the next frame's place, written
    after). Then the end record's CRC of the whole. ``DECODED``, ``NOT_WHOLE``,
    or ``NEED_TABLE`` (``go.most`` says how large; *bl* holds the frame read)."""
    cdef Py_ssize_t pos
    cdef int64_t n_blocks, orig_size, body_size, content_crc, budget, most
    cdef const uint8_t[::1] body
    while raw[go.pos] == KIND_FRAME:
        pos = go.pos
        n_blocks = u32(raw, pos + 1)
        orig_size = u32(raw, pos + 5)
        body_size = u32(raw, pos + 9)
        content_crc = u32(raw, pos + 13)
        budget = NODE_BUDGET * orig_size + NODE_SLACK
        most = go.most
        if most < 0:  # this frame is not read yet
            if not go.planned and not frame_crc_ok(raw, pos, body_size):
                return NOT_WHOLE
            body = raw[pos + FRAME_HEADER_SIZE : pos + FRAME_HEADER_SIZE + body_size]
            if read_columns(body, n_blocks, orig_size, status, bl) < 0:
                return NOT_WHOLE
            most = check_blocks(bl, budget, status, False)
            if most < 0:
                return NOT_WHOLE
            if 256 + most + 2 * W > table.shape[0]:
                go.most = most
                return NEED_TABLE
        go.most = -1
        write_checked(bl, budget, table, out[go.at :], status)
        check_content(out[go.at :], orig_size, content_crc, status)
        if status[0] != OK:
            return NOT_WHOLE
        go.whole_crc = crc32_combine(go.whole_crc, <uint32_t>content_crc, <uint64_t>orig_size)
        go.at += orig_size
        go.pos += FRAME_HEADER_SIZE + body_size
    if go.whole_crc != u32(raw, go.pos + 13):
        return NOT_WHOLE
    return DECODED


cdef Py_ssize_t KEPT_ROOM = 1 << 18  # a thread keeps the columns' room for frames needing up to this many bytes of it


cdef class _KeptStream:
    """One thread's room for a framed stream (``_stream``), kept between calls (as ``_Kept`` for
    compact records): the columns of its frames, up to ``KEPT_ROOM`` bytes, and a table for
    64 KiB of merges; their arrays made afresh cost as much as decoding a small file."""

    cdef Blocks bl
    cdef Py_ssize_t most_blocks, longest_body
    cdef uint8_t[::1] table
    cdef int64_t[::1] status
    cdef bint busy  # in use by a call (see ``kept_stream``)

    def __init__(self):
        self.bl = None
        self.busy = False
        self.most_blocks = self.longest_body = 0
        self.table = numpy.empty(256 + (1 << 16) + 2 * W, dtype=numpy.uint8)
        self.status = numpy.zeros(5, dtype=numpy.int64)


cdef Py_ssize_t room_bytes(Py_ssize_t nb, Py_ssize_t body_size) noexcept nogil:
    """The bytes ``room_for_bodies`` takes."""
    return 8 * (8 * nb + 2) + 4 * (min(body_size // 2, 510 * nb) + 1) + nb


cdef _KeptStream kept_stream(Py_ssize_t most_blocks, Py_ssize_t longest_body):
    """This thread's room, its columns made for *most_blocks* blocks of a frame and a body of
    *longest_body* bytes, marked busy (the caller clears it when done). A larger need gets room
    of its own, not kept; so does a call made while the thread's room is busy: Python code
    can run inside a call (an allocation may start a collection, which runs the collector's
    callbacks and finalisers), and a call from there must not take the columns and table of
    the call it interrupted."""
    cdef _KeptStream kept = getattr(_per_thread, "stream", None)
    if kept is None:
        kept = _per_thread.stream = _KeptStream()
    if kept.busy or room_bytes(most_blocks, longest_body) > KEPT_ROOM:
        kept = _KeptStream()
        kept.bl = room_for_bodies(most_blocks, longest_body)
    elif kept.bl is None or kept.most_blocks < most_blocks or kept.longest_body < longest_body:
        kept.bl = room_for_bodies(most_blocks, longest_body)
        kept.most_blocks = most_blocks
        kept.longest_body = longest_body
    kept.busy = True
    return kept


cdef object _stream(const uint8_t[::1] raw, int64_t limit):
    """The bytes of *raw* when it is one intact stream of at most *limit* bytes, in one call;
    else None (with nothing kept), and the caller reads it frame by frame (see
    ``stream_frames``). The output is made only once every frame passed :func:`plan_stream`'s
    checks, as a ``bytes`` object the frames are decoded straight into (with W spare bytes,
    then cut to its size): no buffer to copy from.

    The GIL is released for the whole stream, except where a frame needs a larger table
    than the frames before it: the call makes it, and goes on from that frame."""
    cdef Py_ssize_t most_blocks = 0, longest_body = 0
    cdef int64_t size
    cdef int answer
    cdef Progress go
    cdef PyObject *made
    cdef uint8_t[::1] out
    with nogil:
        size = plan(raw, &most_blocks, &longest_body)
    if size <= 0 or size > limit:
        return None
    cdef _KeptStream kept = kept_stream(most_blocks, longest_body)
    cdef uint8_t[::1] table = kept.table
    made = bp_new_bytes(size + W)
    if made == NULL:  # no room: the reader, frame by frame, says so
        kept.busy = False
        PyErr_Clear()
        return None
    try:
        out = <uint8_t[: size + W]> <uint8_t *> PyBytes_AS_STRING(<object> made)
        kept.status[0] = OK
        go.pos = STREAM_HEADER_SIZE
        go.at = 0
        go.whole_crc = 0
        go.most = -1
        go.planned = True
        while True:
            with nogil:
                answer = stream_frames(raw, out, kept.status, kept.bl, table, &go)
            if answer != NEED_TABLE:
                break
            table = numpy.empty(256 + go.most + 2 * W, dtype=numpy.uint8)
        if kept.status[0] == DISAGREE:
            raise AssertionError("write_blocks met a fault that check_blocks does not see")
    except BaseException:
        Py_DECREF(<object> made)
        raise
    finally:
        out = None  # (the view of the output's buffer goes before the buffer is cut)
        kept.bl.payload = None  # views of the caller's buffer: not to be held past the call
        kept.bl.esc_literals = None
        kept.busy = False
    if answer != DECODED:
        Py_DECREF(<object> made)
        return None
    return bp_trimmed(made, size)


# ---------------------------------------------------------------------------------------------
# A compact stream (docs/FORMAT.md, "Compact record"): one call for a small blob

cdef int64_t COMPACT = _format.COMPACT
cdef int64_t COMPACT_STORED = _format.COMPACT_STORED
cdef int64_t COMPACT_ENCODED = _format.COMPACT_ENCODED
cdef int64_t MAX_COMPACT_SIZE = _format.MAX_COMPACT_SIZE
cdef Py_ssize_t BLOCK_HEADER_SIZE = _format.BLOCK_HEADER_SIZE
_EMPTY = numpy.empty(0, dtype=numpy.uint8)


cdef bint compact_header_ok(const uint8_t[::1] raw) noexcept nogil:
    """*raw* starts with an intact stream header that says "compact" and the record's first 6 bytes."""
    cdef Py_ssize_t i
    if raw.shape[0] < STREAM_HEADER_SIZE + 6:
        return False
    for i in range(MAGIC_SIZE):
        if raw[i] != MAGIC[i]:
            return False
    return (
        raw[4] == VERSION and raw[5] == COMPACT
        and (crc32_update(0, &raw[0], 6) & 0xFFFF) == <uint32_t>u16(raw, 6)
    )


cdef object _compact(const uint8_t[::1] raw, int64_t max_length):
    """The bytes of *raw* when it is exactly one intact compact stream of at most
    *max_length* bytes (-1: any), in one call; else None, and the caller's reader, which
    makes the same checks, says what is wrong (so the errors come from one place)."""
    cdef Py_ssize_t n = raw.shape[0], at = STREAM_HEADER_SIZE + 5, i, start, size = 0, body
    cdef uint32_t content_crc
    cdef int64_t kind, set_kind, set_size, n_escaped
    cdef uint8_t byte = 0
    if not compact_header_ok(raw):
        return None
    content_crc = <uint32_t>u32(raw, STREAM_HEADER_SIZE)
    kind = raw[STREAM_HEADER_SIZE + 4]
    if kind == COMPACT_STORED:
        for i in range(3):  # LEB128, shortest form
            if at + i >= n:
                return None
            byte = raw[at + i]
            size |= <Py_ssize_t>(byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                break
        if byte & 0x80 or (i and not byte) or size > MAX_COMPACT_SIZE:
            return None
        start = at + i + 1
        if start + size != n or (max_length >= 0 and size > max_length):
            return None
        if crc32_update(0, &raw[start] if size else NULL, size) != content_crc:
            return None
        return bytes(raw[start:n])
    if kind != COMPACT_ENCODED or n - at < BLOCK_HEADER_SIZE:
        return None
    size = u16(raw, at)
    set_kind = raw[at + 6]
    n_escaped = u16(raw, at + 7)
    set_size = 32 if set_kind == CODE_SET_BITMAP else 2 * set_kind
    body = (BLOCK_HEADER_SIZE + set_size + (1 if n_escaped else 0) + 2 * raw[at + 4] + 3 * raw[at + 5] + n_escaped
            + u16(raw, at + 2))
    if at + body != n or size == 0 or (max_length >= 0 and size > max_length):
        return None
    return _decode_one_block(raw[at:], size, content_crc)


cdef class _Kept:
    """One thread's room for decoding a compact record, kept between calls: the columns of
    one block, the expansion table and the output grow as needed. Made afresh, their arrays
    cost a small blob more than its decoding."""

    cdef Blocks bl
    cdef uint8_t[::1] table
    cdef uint8_t[::1] out
    cdef int64_t[::1] status
    cdef bint busy  # in use by a call: a call made inside it gets room of its own (see kept_stream)

    def __init__(self):
        self.busy = False
        self.bl = room_for_bodies(1, 2 * 510)  # a block's 255 fresh and 255 recycled merges
        self.table = numpy.empty(0, dtype=numpy.uint8)
        self.out = numpy.empty(0, dtype=numpy.uint8)
        self.status = numpy.zeros(5, dtype=numpy.int64)


_per_thread = threading.local()


cdef object _decode_one_block(const uint8_t[::1] body, int64_t size, uint32_t content_crc):
    """The *size* bytes of the one-block frame *body* (its CRC-32 *content_crc*), or None.
    (Decoded into kept room, then copied: a record holds at most 64 KiB, and the copy cost
    less than making a bytes object to decode into, as ``_stream`` does.)"""
    cdef _Kept kept = getattr(_per_thread, "kept", None)
    if kept is None:
        kept = _per_thread.kept = _Kept()
    elif kept.busy:
        kept = _Kept()
    kept.busy = True
    try:
        return _decode_one_block_in(kept, body, size, content_crc)
    finally:
        kept.bl.payload = None  # views of the caller's buffer: not to be held past the call
        kept.bl.esc_literals = None
        kept.busy = False


cdef object _decode_one_block_in(_Kept kept, const uint8_t[::1] body, int64_t size, uint32_t content_crc):
    """``_decode_one_block`` in *kept*."""
    cdef Blocks bl = kept.bl
    cdef int64_t budget = NODE_BUDGET * size + NODE_SLACK, most
    kept.status[0] = OK
    with nogil:
        most = read_columns(body, 1, size, kept.status, bl)
        if most == 0:
            most = check_blocks(bl, budget, kept.status, False)
    if most >= 0:
        if kept.table.shape[0] < 256 + most + 2 * W:
            kept.table = numpy.empty(256 + most + 2 * W, dtype=numpy.uint8)
        if kept.out.shape[0] < size + W:
            kept.out = numpy.empty(max(size + W, 4096), dtype=numpy.uint8)
        with nogil:
            write_checked(bl, budget, kept.table, kept.out, kept.status)
            check_content(kept.out, size, content_crc, kept.status)
    if most < 0 or kept.status[0] != OK:
        return None
    return bytes(kept.out[:size])


# ---------------------------------------------------------------------------------------------
# The front door: any buffer, compact or framed


def decode_whole(data, int64_t max_length, int64_t most_per_byte):
    """The bytes of *data* (a flat buffer of bytes) when it is exactly one intact stream of at
    most *max_length* bytes (-1: any), compact or framed, in one call from Python; else None,
    and the caller's reader says what is wrong. A framed stream's end record may claim at most
    *most_per_byte* bytes for each of the stream's.

    One call, not a Python function per form: with the interpreter's code cold, as after
    other work, each Python call on the way cost a 12 KB file some microseconds more than
    decoding it."""
    cdef const uint8_t[::1] raw
    try:
        raw = data
    except (TypeError, ValueError, BufferError):  # not a flat buffer of bytes: for the caller's view of it
        return None
    cdef Py_ssize_t n = raw.shape[0]
    if n > 5 and raw[5] == COMPACT:
        return _compact(raw, min(max_length, MAX_COMPACT_SIZE) if max_length >= 0 else -1)  # a record holds no more
    cdef int64_t limit = most_per_byte * n
    if max_length >= 0:
        limit = min(limit, max_length)
    return _stream(raw, limit)
