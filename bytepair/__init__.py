"""bytepair: byte pair encoding compression in the line of Philip Gage's 1994 algorithm.

The interface follows the standard library's ``lzma`` module::

    import bytepair
    packed = bytepair.compress(data, level=5)
    assert bytepair.decompress(packed) == data
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core import compress, decompress
from ._errors import (
    BytePairError,
    CorruptDataError,
    OutputLimitError,
    TruncatedDataError,
    UnsupportedFormatError,
)
from .core.params import DEFAULT_LEVEL, LEVELS, MAX_BLOCK_SIZE, Params
from .io.file import BytePairFile, decompress_range, open
from .io.stream import BytePairCompressor, BytePairDecompressor

if TYPE_CHECKING:
    from .cli.explain import explain

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # imported on first use, so that `python -m bytepair._explain` does not find it loaded already
    if name == "explain":
        from .cli.explain import explain

        return explain
    raise AttributeError(f"module 'bytepair' has no attribute {name!r}")


__all__ = [
    "DEFAULT_LEVEL",
    "LEVELS",
    "MAX_BLOCK_SIZE",
    "BytePairCompressor",
    "BytePairDecompressor",
    "BytePairError",
    "BytePairFile",
    "CorruptDataError",
    "OutputLimitError",
    "Params",
    "TruncatedDataError",
    "UnsupportedFormatError",
    "compress",
    "decompress",
    "decompress_range",
    "explain",
    "open",
]
