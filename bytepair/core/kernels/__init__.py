"""The compiled core: the engine's and the decoder's hot loops, in Cython (``_*.pyx``).

The extension modules are built when the package is installed; ``bytepair.backend``
checks they are there and takes them. The ``.py`` modules beside them are their
Python side: they turn the library's objects into the arrays the loops take, and a
kernel's status into the numpy path's exception. Each kernel writes exactly the bytes
of its numpy counterpart, which stays the reference (tests hold the two to each
other). docs/kernels.md describes how each works.
"""
