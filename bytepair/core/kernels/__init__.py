"""The compiled core: the engine's and the decoder's hot loops as numba functions.

Every module here imports numba at its top; import one only after
:func:`bytepair.core.jit.use_numba` returned True. Each kernel is a plain loop
that writes exactly the bytes of its numpy counterpart, which stays the
reference (tests hold the two to each other).
"""
