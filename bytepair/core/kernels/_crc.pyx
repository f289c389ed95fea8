"""CRC-32 (the value of ``zlib.crc32``) with the CPU's carry-less multiply, and ``crc32_combine``.

Every frame is checked twice with CRC-32 (its body, and the content it decodes
to), and zlib's table-driven CRC reads about 2-5 bytes a nanosecond: a fifth of
the compiled decoder's time. x86-64 processors since 2010 multiply polynomials
over GF(2) in one instruction (PCLMULQDQ), which folds 16 bytes at a time
instead of one; see Gopal et al., "Fast CRC Computation for Generic Polynomials
Using PCLMULQDQ Instruction" (Intel, 2009). How it works:

* CRC-32 is the remainder of the message, as a polynomial, times ``x^32``,
  modulo ``P`` (with the register's start value added to its first 4 bytes).
  Any polynomial congruent to the message modulo ``P`` has the same CRC.
* Read 16 bytes as ``(lo, hi)``, two little-endian 64-bit words. In CRC-32's
  bit order (least significant bit first = highest power of x) they stand for
  ``LO * x^64 + HI``. A chunk followed by ``d`` more bits stands for
  ``LO * x^(64+d) + HI * x^d``, congruent to ``LO * k1 + HI * k2`` with the
  32-bit constants ``k1 = x^(64+d) mod P``, ``k2 = x^d mod P``: two carry-less
  multiplies give 96 bits that fit in the next chunk's place, and are added to
  it (XOR). That is a fold.
* Four lanes fold in parallel, each over the chunk 64 bytes on (``d = 512``),
  since each multiply takes a few cycles; at the end the lanes fold into one
  another (``d = 128``). The 16 bytes left are congruent to the message: the
  table-driven CRC of them, then of the bytes after the last whole 64, is the
  CRC of the whole.
* The multiply of two reflected 64-bit words gives the product times ``x``
  (its 127 bits sit one place low in 128), so each constant is ``x^(e-1) mod P``.
* Where the CPU has AVX-512 and VPCLMULQDQ, buffers of 256 bytes or more fold
  512 bits at a time: four lanes of 64 bytes step 256 bytes (``d = 2048``), then
  fold into one (``d = 512``), and its four 16-byte parts into the last
  (``d = 128``). 1 MB: 27.6 -> 91.7 GB/s when numba ran this (docs/kernels.md).

The path is chosen once, at import, from what the CPU says it has
(``__builtin_cpu_supports``); on any other CPU, or compiler, a table-driven
loop reading 16 bytes a step (slicing-by-16) gives the same value (to the
kernels, which call it without the GIL; :func:`crc32` calls ``zlib.crc32`` there).
:func:`crc32_combine` is zlib's: the CRC of ``a + b`` from those of ``a`` and
``b`` and ``len(b)``, by polynomial arithmetic modulo ``P``.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint32_t, uint64_t

import zlib

from bytepair.core.kernels.common cimport CHECKED

BUILT_CHECKED = CHECKED
"""Whether this build has bounds checks (``BYTEPAIR_CHECKED=1`` when it was built)."""

cdef extern from *:
    """
    #include <stddef.h>
    #include <stdint.h>

    /* BYTEPAIR_PORTABLE (a test build): the table loop of other CPUs, on x86-64 too */
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(BYTEPAIR_PORTABLE)
    #define BP_CRC_X86 1
    #include <immintrin.h>
    #else
    #define BP_CRC_X86 0
    #endif
    #ifdef BYTEPAIR_PORTABLE
    #define BP_CRC_PORTABLE 1
    #else
    #define BP_CRC_PORTABLE 0
    #endif

    enum { BP_CRC_TABLE = 0, BP_CRC_PCLMUL = 1, BP_CRC_VPCLMUL = 2 };

    static uint32_t bp_crc_table[16][256];  /* [k][v]: the register after byte v then k zero bytes */
    static uint32_t bp_crc_x2n[32];  /* x^(2^k) mod P (zlib's x2n_table) */
    static uint64_t bp_fold_128[2], bp_fold_512[2], bp_fold_2048[2];  /* (k1, k2) for each d */
    static int bp_crc_best = BP_CRC_TABLE;  /* the fastest path this CPU has */

    /* The product of two polynomials modulo P, reflected bit order (zlib's multmodp). */
    static uint32_t bp_multmodp(uint32_t a, uint32_t b) {
        uint32_t m = (uint32_t)1 << 31, p = 0;
        while (m) {
            if (a & m) p ^= b;
            m >>= 1;
            b = (b & 1) ? (b >> 1) ^ 0xEDB88320u : b >> 1;
        }
        return p;
    }

    /* x^e mod P (normal bit order, bit d the coefficient of x^d) as CRC-32 reads a
       64-bit word: x^d at bit 63 - d. */
    static uint64_t bp_x_pow_reflected(unsigned e) {
        uint64_t r = 1, out = 0;
        unsigned i, d;
        for (i = 0; i < e; i++) {
            r <<= 1;
            if (r >> 32) r ^= 0x104C11DB7ull;
        }
        for (d = 0; d < 32; d++)
            if (r >> d & 1) out |= (uint64_t)1 << (63 - d);
        return out;
    }

    static void bp_crc_init(void) {
        unsigned i, k;
        for (i = 0; i < 256; i++) {
            uint32_t c = i;
            for (k = 0; k < 8; k++) c = (c >> 1) ^ ((c & 1) ? 0xEDB88320u : 0);
            bp_crc_table[0][i] = c;
        }
        for (k = 1; k < 16; k++)
            for (i = 0; i < 256; i++) {
                uint32_t c = bp_crc_table[k - 1][i];
                bp_crc_table[k][i] = (c >> 8) ^ bp_crc_table[0][c & 0xFF];
            }
        bp_crc_x2n[0] = (uint32_t)1 << 30;  /* x^1 */
        for (k = 1; k < 32; k++) bp_crc_x2n[k] = bp_multmodp(bp_crc_x2n[k - 1], bp_crc_x2n[k - 1]);
        bp_fold_128[0] = bp_x_pow_reflected(64 + 128 - 1);
        bp_fold_128[1] = bp_x_pow_reflected(128 - 1);
        bp_fold_512[0] = bp_x_pow_reflected(64 + 512 - 1);
        bp_fold_512[1] = bp_x_pow_reflected(512 - 1);
        bp_fold_2048[0] = bp_x_pow_reflected(64 + 2048 - 1);
        bp_fold_2048[1] = bp_x_pow_reflected(2048 - 1);
    #if BP_CRC_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) {
            bp_crc_best = BP_CRC_PCLMUL;
            if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq"))
                bp_crc_best = BP_CRC_VPCLMUL;
        }
    #endif
    }

    /* The register (the CRC inverted) after p[0:n], 16 bytes a step (slicing-by-16),
       the bytes left one at a time as zlib's loop. Any CPU, any byte order. */
    static uint32_t bp_crc_bytes(uint32_t c, const unsigned char *p, size_t n) {
        while (n >= 16) {
            uint32_t a = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
            uint32_t b = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
            uint32_t d = (uint32_t)p[8] | (uint32_t)p[9] << 8 | (uint32_t)p[10] << 16 | (uint32_t)p[11] << 24;
            uint32_t e = (uint32_t)p[12] | (uint32_t)p[13] << 8 | (uint32_t)p[14] << 16 | (uint32_t)p[15] << 24;
            c = bp_crc_table[15][a & 0xFF] ^ bp_crc_table[14][(a >> 8) & 0xFF]
                ^ bp_crc_table[13][(a >> 16) & 0xFF] ^ bp_crc_table[12][a >> 24]
                ^ bp_crc_table[11][b & 0xFF] ^ bp_crc_table[10][(b >> 8) & 0xFF]
                ^ bp_crc_table[9][(b >> 16) & 0xFF] ^ bp_crc_table[8][b >> 24]
                ^ bp_crc_table[7][d & 0xFF] ^ bp_crc_table[6][(d >> 8) & 0xFF]
                ^ bp_crc_table[5][(d >> 16) & 0xFF] ^ bp_crc_table[4][d >> 24]
                ^ bp_crc_table[3][e & 0xFF] ^ bp_crc_table[2][(e >> 8) & 0xFF]
                ^ bp_crc_table[1][(e >> 16) & 0xFF] ^ bp_crc_table[0][e >> 24];
            p += 16;
            n -= 16;
        }
        while (n--) c = bp_crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
        return c;
    }

    #if BP_CRC_X86
    /* lo * k[0] + hi * k[1]: 16 bytes folded over d bits */
    #define BP_FOLD(x, k) _mm_xor_si128(_mm_clmulepi64_si128((x), (k), 0x00), _mm_clmulepi64_si128((x), (k), 0x11))

    /* Fold p[0 : 64 * groups] (groups >= 1), *reg* added to its first 4 bytes, into
       16 bytes congruent to it, written to *rest*. */
    __attribute__((target("pclmul,sse4.1")))
    static void bp_fold(const unsigned char *p, size_t groups, uint32_t reg, unsigned char *rest) {
        const __m128i k512 = _mm_set_epi64x((long long)bp_fold_512[1], (long long)bp_fold_512[0]);
        const __m128i k128 = _mm_set_epi64x((long long)bp_fold_128[1], (long long)bp_fold_128[0]);
        __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)reg));
        __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
        __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
        __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
        size_t g;
        for (g = 1; g < groups; g++) {
            const unsigned char *q = p + 64 * g;
            x0 = _mm_xor_si128(BP_FOLD(x0, k512), _mm_loadu_si128((const __m128i *)q));
            x1 = _mm_xor_si128(BP_FOLD(x1, k512), _mm_loadu_si128((const __m128i *)(q + 16)));
            x2 = _mm_xor_si128(BP_FOLD(x2, k512), _mm_loadu_si128((const __m128i *)(q + 32)));
            x3 = _mm_xor_si128(BP_FOLD(x3, k512), _mm_loadu_si128((const __m128i *)(q + 48)));
        }
        x0 = _mm_xor_si128(BP_FOLD(x0, k128), x1);
        x0 = _mm_xor_si128(BP_FOLD(x0, k128), x2);
        x0 = _mm_xor_si128(BP_FOLD(x0, k128), x3);
        _mm_storeu_si128((__m128i *)rest, x0);
    }

    /* bp_fold 512 bits wide, for chunks >= 4 (64 bytes each): four lanes of 64 bytes
       (each four 16-byte folds in one VPCLMULQDQ pair) step 256 bytes; then the lanes
       fold into one, the chunks left fold into it 64 bytes at a time, and its four
       16-byte parts fold into the last. */
    #define BP_FOLD_WIDE(x, k) _mm512_xor_si512(_mm512_clmulepi64_epi128((x), (k), 0x00), _mm512_clmulepi64_epi128((x), (k), 0x11))

    __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.1")))
    static void bp_fold_wide(const unsigned char *p, size_t chunks, uint32_t reg, unsigned char *rest) {
        const __m512i k2048 = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)bp_fold_2048[1], (long long)bp_fold_2048[0]));
        const __m512i k512 = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)bp_fold_512[1], (long long)bp_fold_512[0]));
        const __m128i k128 = _mm_set_epi64x((long long)bp_fold_128[1], (long long)bp_fold_128[0]);
        __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)p), _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, (long long)reg));
        __m512i x1 = _mm512_loadu_si512((const void *)(p + 64));
        __m512i x2 = _mm512_loadu_si512((const void *)(p + 128));
        __m512i x3 = _mm512_loadu_si512((const void *)(p + 192));
        size_t c, done = chunks / 4 * 4;
        __m128i acc;
        for (c = 4; c < done; c += 4) {
            const unsigned char *q = p + 64 * c;
            x0 = _mm512_xor_si512(BP_FOLD_WIDE(x0, k2048), _mm512_loadu_si512((const void *)q));
            x1 = _mm512_xor_si512(BP_FOLD_WIDE(x1, k2048), _mm512_loadu_si512((const void *)(q + 64)));
            x2 = _mm512_xor_si512(BP_FOLD_WIDE(x2, k2048), _mm512_loadu_si512((const void *)(q + 128)));
            x3 = _mm512_xor_si512(BP_FOLD_WIDE(x3, k2048), _mm512_loadu_si512((const void *)(q + 192)));
        }
        x0 = _mm512_xor_si512(BP_FOLD_WIDE(x0, k512), x1);
        x0 = _mm512_xor_si512(BP_FOLD_WIDE(x0, k512), x2);
        x0 = _mm512_xor_si512(BP_FOLD_WIDE(x0, k512), x3);
        for (c = done; c < chunks; c++)
            x0 = _mm512_xor_si512(BP_FOLD_WIDE(x0, k512), _mm512_loadu_si512((const void *)(p + 64 * c)));
        acc = _mm512_extracti32x4_epi32(x0, 0);
        acc = _mm_xor_si128(BP_FOLD(acc, k128), _mm512_extracti32x4_epi32(x0, 1));
        acc = _mm_xor_si128(BP_FOLD(acc, k128), _mm512_extracti32x4_epi32(x0, 2));
        acc = _mm_xor_si128(BP_FOLD(acc, k128), _mm512_extracti32x4_epi32(x0, 3));
        _mm_storeu_si128((__m128i *)rest, acc);
    }
    #endif

    /* zlib.crc32(p[0:n], crc) by *path* (one this CPU has: at most bp_crc_best). */
    static uint32_t bp_crc32(uint32_t crc, const unsigned char *p, size_t n, int path) {
        uint32_t reg = crc ^ 0xFFFFFFFFu;
    #if BP_CRC_X86
        size_t groups = n / 64;
        if (path != BP_CRC_TABLE && groups) {
            unsigned char rest[16];
            if (path == BP_CRC_VPCLMUL && groups >= 4)
                bp_fold_wide(p, groups, reg, rest);
            else
                bp_fold(p, groups, reg, rest);
            reg = bp_crc_bytes(0, rest, 16);  /* the 16 bytes left, from a register of 0 */
            p += 64 * groups;
            n -= 64 * groups;
        }
    #else
        (void)path;
    #endif
        return bp_crc_bytes(reg, p, n) ^ 0xFFFFFFFFu;
    }

    /* The CRC of a + b from crc1 = crc32(a), crc2 = crc32(b) and len2 = len(b): crc1
       times x^(8 len2), plus crc2 (zlib's crc32_combine). */
    static uint32_t bp_crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2) {
        uint32_t power = (uint32_t)1 << 31;  /* x^0 */
        unsigned k = 3;  /* x^8 = x^(2^3): one byte */
        while (len2) {
            if (len2 & 1) power = bp_multmodp(bp_crc_x2n[k & 31], power);
            len2 >>= 1;
            k++;
        }
        return bp_multmodp(power, crc1) ^ crc2;
    }
    """
    const bint PORTABLE_BUILD "BP_CRC_PORTABLE"
    int TABLE "BP_CRC_TABLE"
    int PCLMUL "BP_CRC_PCLMUL"
    int VPCLMUL "BP_CRC_VPCLMUL"
    int bp_crc_best
    uint32_t bp_crc_x2n[32]
    void bp_crc_init()
    uint32_t bp_crc32(uint32_t crc, const unsigned char *p, size_t n, int path) nogil
    uint32_t bp_crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2) nogil

bp_crc_init()

PATHS = ("slicing-by-16", "pclmulqdq", "vpclmulqdq")[: bp_crc_best + 1]
"""The ways to compute it this CPU has, the fastest (the one :func:`crc32` takes) last."""
PORTABLE = bool(PORTABLE_BUILD)
"""Built with ``BYTEPAIR_PORTABLE`` defined (``CFLAGS=-DBYTEPAIR_PORTABLE``, a test build):
the portable C only, as on a CPU other than x86-64."""

cdef size_t NOGIL_FROM = 1 << 16  # shorter buffers keep the GIL: releasing it costs more than they take


cdef uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n) noexcept nogil:
    """``zlib.crc32(p[:n], crc)``, by the fastest path this CPU has."""
    return bp_crc32(crc, p, n, bp_crc_best)


cpdef uint32_t crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2) noexcept nogil:
    """``zlib.crc32(a + b)`` from ``crc32(a)``, ``crc32(b)`` and ``len(b)``."""
    return bp_crc32_combine(crc1, crc2, len2)


cdef uint32_t _crc32_of(data, value, int path) except? 0:
    cdef Py_buffer view
    cdef uint32_t crc = <uint32_t>(value & 0xFFFFFFFF)  # zlib's: any int, its low 32 bits
    cdef uint32_t result
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)  # what zlib.crc32 accepts: any contiguous buffer
    try:
        if <size_t>view.len >= NOGIL_FROM:
            with nogil:
                result = bp_crc32(crc, <const unsigned char *>view.buf, <size_t>view.len, path)
        else:
            result = bp_crc32(crc, <const unsigned char *>view.buf, <size_t>view.len, path)
    finally:
        PyBuffer_Release(&view)
    return result


def crc32(data, value=0):
    """``zlib.crc32(data, value)``: *data* any contiguous buffer (bytes, memoryview, a uint8 array).
    On a CPU without the carry-less multiply, ``zlib.crc32`` itself: faster than the table loop."""
    if bp_crc_best == TABLE:
        return zlib.crc32(data, value)
    return _crc32_of(data, value, bp_crc_best)


def crc32_by(data, value, str path):
    """``zlib.crc32(data, value)`` by one of :data:`PATHS` (tests: each path this CPU has)."""
    if path not in PATHS:
        raise ValueError(f"{path!r} is not one of this CPU's CRC-32 paths {PATHS}")
    return _crc32_of(data, value, PATHS.index(path))


def x2n_table():
    """``x^(2^k) mod P`` for k = 0..31, as :func:`crc32_combine` uses it (tests hold it to
    ``container.crc.X2N``)."""
    return [bp_crc_x2n[k] for k in range(32)]
