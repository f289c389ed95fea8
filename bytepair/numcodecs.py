"""bytepair as a numcodecs codec, so Zarr (format 2), xarray and anything else built on numcodecs can use it.

numcodecs finds it through the ``numcodecs.codecs`` entry point that bytepair's
package metadata declares: ``numcodecs.get_codec({"id": "bytepair", "level": 9})``
works in a process that never imported bytepair. This module imports numcodecs;
``import bytepair`` does not import this module.
"""

from __future__ import annotations

from typing import Any

import numcodecs.abc
import numcodecs.registry
from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy

from . import DEFAULT_LEVEL, BytePairCompressor, compress, decompress

__all__ = ["BytePair"]

_TUNING = ("block_size", "max_distinct", "threshold", "escape_limit")
"""The parameters that override a level's preset; in the config only when set."""


class BytePair(numcodecs.abc.Codec):  # type: ignore[misc]
    """Byte pair encoding (Gage 1994) of each chunk into one bytepair stream.

    *level* and the other parameters are those of ``bytepair.compress`` and are
    checked here, so a bad config fails when the codec is made, not at the first
    chunk. *threads* is kept at 1 by default: Zarr and Dask already run chunks in
    parallel, and processes inside each chunk would compete with them.
    """

    codec_id = "bytepair"

    def __init__(
        self,
        level: int | None = DEFAULT_LEVEL,
        *,
        block_size: int | None = None,
        max_distinct: int | None = None,
        threshold: int | None = None,
        escape_limit: int | None = None,
        threads: int = 1,
    ) -> None:
        # a compressor validates every argument the way bytepair.compress would
        BytePairCompressor(
            level,
            block_size=block_size,
            max_distinct=max_distinct,
            threshold=threshold,
            escape_limit=escape_limit,
        )
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise ValueError(f"threads must be a non-negative integer, got {threads!r}")
        self.level = DEFAULT_LEVEL if level is None else level
        self.block_size = block_size
        self.max_distinct = max_distinct
        self.threshold = threshold
        self.escape_limit = escape_limit
        self.threads = threads

    def _settings(self) -> dict[str, int]:
        """The parameters given, level always: what the config and repr hold."""
        settings = {"level": self.level}
        settings.update({name: value for name in _TUNING if (value := getattr(self, name)) is not None})
        if self.threads != 1:
            settings["threads"] = self.threads
        return settings

    def get_config(self) -> dict[str, Any]:
        return {"id": self.codec_id, **self._settings()}

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={value!r}" for name, value in self._settings().items())
        return f"{type(self).__name__}({args})"

    def encode(self, buf: Any) -> bytes:
        """One bytepair stream of *buf*'s bytes (any contiguous buffer numcodecs accepts)."""
        data = ensure_contiguous_ndarray(buf)
        return compress(
            data.reshape(-1, order="A").view("u1"),
            level=self.level,
            block_size=self.block_size,
            max_distinct=self.max_distinct,
            threshold=self.threshold,
            escape_limit=self.escape_limit,
            threads=self.threads,
        )

    def decode(self, buf: Any, out: Any = None) -> Any:
        """The original bytes of *buf*, copied into *out* when given (then no more than *out* holds is decoded)."""
        data = ensure_contiguous_ndarray(buf)
        if out is not None:
            out = ensure_contiguous_ndarray(out)
            limit = out.nbytes
        else:
            limit = None
        decoded = decompress(data.reshape(-1, order="A").view("u1"), max_length=limit)
        return ndarray_copy(decoded, out)


# also known by id once imported, where the entry point is not installed (a source checkout)
numcodecs.registry.register_codec(BytePair)
