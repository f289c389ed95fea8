"""bytepair: byte pair encoding compression in the line of Philip Gage's 1994 algorithm.

The interface follows the standard library's ``lzma`` module::

    import bytepair
    packed = bytepair.compress(data, level=5)
    assert bytepair.decompress(packed) == data

Each public name is imported on first use (PEP 562), so that ``import bytepair``,
and the command line before it knows what it will do, cost almost nothing.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # (not typing's: importing typing is long enough for a Ctrl-C at start-up to land in it)
if TYPE_CHECKING:
    from ._core import compress, decompress
    from ._errors import (
        BytePairError,
        CorruptDataError,
        OutputLimitError,
        TruncatedDataError,
        UnsupportedFormatError,
    )
    from .cli.explain import explain
    from .core.params import DEFAULT_LEVEL, LEVELS, MAX_BLOCK_SIZE, Params
    from .io.file import BytePairFile, decompress_range, open
    from .io.stream import BytePairCompressor, BytePairDecompressor

__version__ = "0.1.0"

_WHERE = {
    "compress": "._core",
    "decompress": "._core",
    "BytePairError": "._errors",
    "CorruptDataError": "._errors",
    "OutputLimitError": "._errors",
    "TruncatedDataError": "._errors",
    "UnsupportedFormatError": "._errors",
    "explain": ".cli.explain",
    "DEFAULT_LEVEL": ".core.params",
    "LEVELS": ".core.params",
    "MAX_BLOCK_SIZE": ".core.params",
    "Params": ".core.params",
    "BytePairFile": ".io.file",
    "decompress_range": ".io.file",
    "open": ".io.file",
    "BytePairCompressor": ".io.stream",
    "BytePairDecompressor": ".io.stream",
}
"""Where each public name lives."""


def __getattr__(name: str) -> object:
    """A public name, imported now; or a subpackage (``bytepair.container``), as a package's
    attribute is once imported."""
    where = _WHERE.get(name)
    if where is not None:
        value = getattr(importlib.import_module(where, __name__), name)
        globals()[name] = value  # asked once
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module 'bytepair' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


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
