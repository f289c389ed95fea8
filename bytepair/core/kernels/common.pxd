# Declarations every kernel shares (cimported, no code of its own).

cdef extern from *:
    """
    #ifdef BYTEPAIR_CHECKED
    #define BYTEPAIR_CHECKED_FLAG 1
    #else
    #define BYTEPAIR_CHECKED_FLAG 0
    #endif
    """
    # True in a bounds-checked build (BYTEPAIR_CHECKED=1 at build time): copies that a
    # normal build does with memcpy past a memoryview's checks go element by element
    const bint CHECKED "BYTEPAIR_CHECKED_FLAG"
