# The C-level CRC-32 of _crc.pyx, for the other kernels to cimport (called without the GIL).

from libc.stdint cimport uint32_t, uint64_t

# zlib.crc32(p[:n], crc), by the fastest path this CPU has
cdef uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n) noexcept nogil
# zlib.crc32(a + b) from crc1 = crc32(a), crc2 = crc32(b) and len2 = len(b)
cpdef uint32_t crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2) noexcept nogil
