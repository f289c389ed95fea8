"""The one error hierarchy of bytepair.

Every failure caused by the *data* a caller hands us is a :class:`BytePairError`
subclass, so ``except bytepair.BytePairError`` is enough to survive hostile input.
Bad *arguments* (a level out of range, a negative size) raise ``ValueError`` or
``TypeError`` as the standard library's compression modules do.
"""

from __future__ import annotations

__all__ = [
    "BytePairError",
    "CorruptDataError",
    "OutputLimitError",
    "TruncatedDataError",
    "UnsupportedFormatError",
]


class BytePairError(Exception):
    """Base class of every error bytepair raises for bad compressed data."""


class CorruptDataError(BytePairError):
    """The data is not a valid stream: a field is out of range or a checksum fails."""


class TruncatedDataError(CorruptDataError, EOFError):
    """The data ends before the stream does.

    Also an ``EOFError``, as ``lzma``, ``bz2`` and ``gzip`` report truncated input,
    so code written for them catches it unchanged.
    """


class OutputLimitError(BytePairError):
    """Decompressing would produce more than the caller's ``max_length`` bytes."""


class UnsupportedFormatError(BytePairError):
    """The data is not a bytepair stream, or is one of a version we cannot read."""
