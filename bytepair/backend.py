"""Which kernels run: the compiled core or the numpy reference, chosen once per process.

The compiled core is a set of Cython extension modules built when the package is
installed (``setup.py``). Where they were not built (no C compiler, a failed
build) or ``BYTEPAIR_KERNELS=numpy`` says so, the numpy path runs; both write
the same bytes and raise the same errors, and the tests hold them to each other.

``BYTEPAIR_KERNELS`` is read once, at the first operation: ``auto`` (the default)
and ``compiled`` take the compiled core when it is built (``compiled`` warns when
it is not), ``numpy`` never does. There is no size rule and no warm-up: the
compiled core serves every input from the first call.

The operations with two implementations are here and nowhere else: callers
(``container``, ``io``, ``gage``, ``subword``) call them with no gate of their own,
and the numpy modules in ``core`` know nothing of the compiled ones. The frame
packers and decoders, which need the container's own numpy code for their
reference side, ask :func:`compiled` and take :func:`kernel`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from .core.engine import EncodedBlocks
    from .core.escape import Escapes
    from .core.tables import PairTables

    read_whole: Callable[[object, int, int], bytes | None] | None

__all__ = [
    "EXTENSIONS",
    "KERNELS_ENV",
    "Choice",
    "KernelWarning",
    "choice",
    "compiled",
    "crc32",
    "describe",
    "encode_blocks",
    "expand",
    "find_escapes",
    "kernel",
    "split_and_find_escapes",
    "split_blocks",
    "use",
]

KERNELS_ENV = "BYTEPAIR_KERNELS"
CHOICES = ("auto", "compiled", "numpy")

EXTENSIONS = (
    "bytepair.core.kernels._crc",
    "bytepair.core.kernels._decode",
    "bytepair.core.kernels._encode",
    "bytepair.subword._compiled",
)
"""The compiled modules ``setup.py`` builds; the compiled path needs every one of them."""


class KernelWarning(RuntimeWarning):
    """``BYTEPAIR_KERNELS=compiled`` (or an unknown value) asked for what cannot be had: numpy runs."""


@dataclass(frozen=True)
class Choice:
    """The path this process takes, and why."""

    name: str  # "compiled" or "numpy"
    reason: str  # why numpy runs ("" on the compiled path)

    def __str__(self) -> str:
        return f"{self.name} ({self.reason})" if self.reason else self.name


_choice: Choice | None = None
_compiled = False


def choice() -> Choice:
    """The path chosen for this process (chosen now, on the first call)."""
    if _choice is None:
        _set(_choose())
    assert _choice is not None
    return _choice


def compiled() -> bool:
    """Whether the compiled core runs."""
    if _choice is None:
        choice()
    return _compiled


def describe() -> str:
    """``compiled`` or ``numpy (the reason)``, as ``bytepair -V`` says it."""
    return str(choice())


@contextlib.contextmanager
def use(name: str) -> Iterator[Choice]:
    """Take path *name* (``compiled`` or ``numpy``) inside the block (tests); ``compiled``
    raises ``RuntimeError`` where the compiled core is not built."""
    if name not in ("compiled", "numpy"):
        raise ValueError(f"no kernels named {name!r}")
    before = choice()
    wanted = Choice("numpy", "asked for") if name == "numpy" else _compiled_choice()
    if wanted.name != name:
        raise RuntimeError(f"the compiled kernels are not available: {wanted.reason}")
    _set(wanted)
    try:
        yield wanted
    finally:
        _set(before)


def _set(chosen: Choice) -> None:
    global _choice, _compiled
    _choice, _compiled = chosen, chosen.name == "compiled"
    globals().pop("read_whole", None)  # looked up again, on the path now taken


def __getattr__(name: str) -> Any:
    """``read_whole``: the compiled reader of one whole stream (``core.kernels.stream.decode_whole``),
    or None on the numpy path; looked up on first use (which loads the decoder) and kept as a
    module attribute until the path changes (PEP 562, as the package's public names).

    ``bytepair.decompress`` reads it as an attribute, with no call on the way: with the
    interpreter's code cold, as after other work, each Python call between the public
    function and the kernel cost a small input some 2 us, and the three there were a fifth
    of decoding a 13 KB file (``benchmarks/README.md``, "Decoding in one call")."""
    if name == "read_whole":
        reader = kernel("stream").decode_whole if compiled() else None
        globals()[name] = reader
        return reader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _choose() -> Choice:
    value = os.environ.get(KERNELS_ENV, "auto").strip().lower() or "auto"
    if value not in CHOICES:
        warnings.warn(f"{KERNELS_ENV}={value!r} is not one of {', '.join(CHOICES)}; using auto", KernelWarning, 3)
        value = "auto"
    if value == "numpy":
        return Choice("numpy", f"{KERNELS_ENV}=numpy")
    chosen = _compiled_choice()
    if value == "compiled" and chosen.name != "compiled":
        warnings.warn(f"{KERNELS_ENV}=compiled, but {chosen.reason}; using numpy", KernelWarning, 3)
    return chosen


def _compiled_choice() -> Choice:
    """The compiled path when every extension is built, else numpy with the first one
    missing. The first (CRC-32, which every command uses) is loaded now, so that a build
    that cannot load says so here; the others are only found, and loaded when first used:
    a decompression never pays for the encoder's (start-up)."""
    for name in EXTENSIONS:
        try:
            if name == EXTENSIONS[0]:
                importlib.import_module(name)
            elif importlib.util.find_spec(name) is None:
                raise ModuleNotFoundError(name=name)
        except ImportError as exc:
            if isinstance(exc, ModuleNotFoundError) and exc.name == name:
                why = f"{name} was not built: reinstall with a C compiler (pip install .)"
            else:
                why = f"{name} does not import ({type(exc).__name__}: {exc})"
            return Choice("numpy", why)
    return Choice("compiled", "")


# The operations. Each compiled module is imported once, on its first use.

_modules: dict[str, ModuleType] = {}


def kernel(name: str) -> Any:
    """The compiled module ``core.kernels.NAME`` (``frame``, ``decode``, ``stream``, ...),
    imported on first use; only where :func:`compiled` is true."""
    module = _modules.get(name)
    if module is None:
        module = _modules[name] = importlib.import_module(f"bytepair.core.kernels.{name}")
    return module


def crc32(data: Any, value: int = 0) -> int:
    """``zlib.crc32(data, value)`` of a bytes-like object (or a uint8 array)."""
    if _compiled or (_choice is None and compiled()):
        return int(kernel("_crc").crc32(data, value))
    return zlib.crc32(data, value)


def crc32_combine(crc1: int, crc2: int, len2: int) -> int | None:
    """zlib's ``crc32_combine`` by the compiled core; None on the numpy path (the caller's
    pure Python one then: ``container.crc``)."""
    if _compiled or (_choice is None and compiled()):
        return int(kernel("_crc").crc32_combine(crc1, crc2, len2))
    return None


def encode_blocks(
    data: npt.NDArray[np.uint8],
    bounds: npt.NDArray[np.int64],
    *,
    threshold: int,
    recycle: bool,
    merges_per_step: int,
    max_depth: int | None = None,
) -> EncodedBlocks:
    """``core.engine.encode_blocks`` (without its observer and count check); blocks longer
    than the format's 65,535 bytes, which the package never makes, take the numpy engine."""
    from .core.engine import MAX_COMPILED_BLOCK
    from .core.engine import encode_blocks as numpy_encode_blocks

    if compiled() and (len(bounds) < 2 or int((bounds[1:] - bounds[:-1]).max()) <= MAX_COMPILED_BLOCK):
        return kernel("encode").encode_blocks(  # type: ignore[no-any-return]
            data, bounds, threshold=threshold, recycle=recycle, max_depth=max_depth, merges_per_step=merges_per_step
        )
    return numpy_encode_blocks(
        data, bounds, threshold=threshold, recycle=recycle, max_depth=max_depth, merges_per_step=merges_per_step
    )


def split_blocks(data: npt.NDArray[np.uint8], block_size: int, max_distinct: int) -> npt.NDArray[np.int64]:
    """``core.blocks.split_blocks``: the blocks' start offsets, then ``len(data)``."""
    if compiled():
        return kernel("prepare").split_blocks(data, block_size, max_distinct)  # type: ignore[no-any-return]
    from .core.blocks import split_blocks as numpy_split_blocks

    return numpy_split_blocks(data, block_size, max_distinct)


def find_escapes(
    data: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64], limit: int
) -> tuple[npt.NDArray[np.uint8], Escapes]:
    """``core.escape.find_escapes``: the changed data and the escapes."""
    if compiled():
        return kernel("prepare").find_escapes(data, bounds, limit)  # type: ignore[no-any-return]
    from .core.escape import find_escapes as numpy_find_escapes

    return numpy_find_escapes(data, bounds, limit)


def split_and_find_escapes(
    data: npt.NDArray[np.uint8], block_size: int, max_distinct: int, limit: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8], Escapes]:
    """:func:`split_blocks` then :func:`find_escapes` (one pass over the data when compiled)."""
    if compiled():
        return kernel("prepare").split_and_find_escapes(data, block_size, max_distinct, limit)  # type: ignore[no-any-return]
    bounds = split_blocks(data, block_size, max_distinct)
    return (bounds, *find_escapes(data, bounds, limit))


def expand(t: PairTables) -> npt.NDArray[np.uint8]:
    """``core.expand.expand_numpy``: a run of blocks decoded (the same bytes and errors)."""
    if compiled():
        return kernel("decode").expand(t)  # type: ignore[no-any-return]
    from .core.expand import expand_numpy

    return expand_numpy(t)
