"""bytepair as a Zarr (format 3) bytes-to-bytes codec, and a codec pipeline that names the chunk in errors.

Zarr finds the codec by the name ``bytepair`` in an array's metadata through the
``zarr.codecs`` entry point that bytepair's package metadata declares, so an
array written with it opens in a process that never imported bytepair. For
format 2 arrays use ``bytepair.numcodecs.BytePair`` as the compressor.

A codec is handed a chunk's bytes, never its key. ``ChunkKeyPipeline``, zarr's
default pipeline with one change, puts the key into a ``BytePairError`` raised
while reading; select it with
``zarr.config.set({"codec_pipeline.path": "bytepair.zarr.ChunkKeyPipeline"})``
(this module must have been imported: importing it registers the pipeline).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from zarr.abc.codec import BytesBytesCodec
from zarr.core.buffer.cpu import as_numpy_array_wrapper
from zarr.core.codec_pipeline import BatchedCodecPipeline
from zarr.core.common import JSON, parse_named_configuration
from zarr.registry import register_codec, register_pipeline

from . import DEFAULT_LEVEL, BytePairError
from .numcodecs import BytePair as _Numcodec

if TYPE_CHECKING:
    from typing import Self

    from zarr.abc.store import ByteGetter, ByteSetter
    from zarr.core.array_spec import ArraySpec
    from zarr.core.buffer import Buffer, NDBuffer
    from zarr.core.indexing import SelectorTuple

__all__ = ["BytePair", "ChunkKeyPipeline"]

NAME = "bytepair"
"""The codec's name in array metadata, and its entry point's."""


@dataclass(frozen=True)
class BytePair(BytesBytesCodec):
    """Each chunk's bytes as one bytepair stream; parameters as ``bytepair.compress`` takes them.

    Only the parameters given go into the array's metadata (with the level), so
    a reader needs none of them: the stream describes itself.
    """

    is_fixed_size = False

    level: int = DEFAULT_LEVEL
    block_size: int | None = None
    max_distinct: int | None = None
    threshold: int | None = None
    escape_limit: int | None = None

    def __post_init__(self) -> None:
        self._numcodec  # noqa: B018 - checks every parameter now, not at the first chunk

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> Self:
        _, configuration = parse_named_configuration(data, NAME, require_configuration=False)
        return cls(**(configuration or {}))  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, JSON]:
        config = self._numcodec.get_config()
        del config["id"]
        return {"name": NAME, "configuration": config}

    @cached_property
    def _numcodec(self) -> _Numcodec:
        return _Numcodec(
            self.level,
            block_size=self.block_size,
            max_distinct=self.max_distinct,
            threshold=self.threshold,
            escape_limit=self.escape_limit,
        )

    def _decode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        return as_numpy_array_wrapper(self._numcodec.decode, chunk_bytes, chunk_spec.prototype)

    async def _decode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer:
        return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

    def _encode_sync(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        return as_numpy_array_wrapper(self._numcodec.encode, chunk_bytes, chunk_spec.prototype)

    async def _encode_single(self, chunk_bytes: Buffer, chunk_spec: ArraySpec) -> Buffer | None:
        return await asyncio.to_thread(self._encode_sync, chunk_bytes, chunk_spec)

    def compute_encoded_size(self, _input_byte_length: int, _chunk_spec: ArraySpec) -> int:
        raise NotImplementedError  # as zarr's own compressors: the size depends on the data


@dataclass(frozen=True)
class ChunkKeyPipeline(BatchedCodecPipeline):
    """zarr's ``BatchedCodecPipeline`` that re-raises a ``BytePairError`` with the chunk's key.

    The error keeps its class; its message starts with the chunk's path in the
    store. Reads, and writes of part of a chunk (which read the chunk first),
    are covered. When a batch holds several chunks, each is processed again
    alone to find the damaged one: this costs time only once it has failed,
    and a write may then have stored the other chunks of the batch.
    """

    async def read_batch(
        self,
        batch_info: Iterable[tuple[ByteGetter, ArraySpec, SelectorTuple, SelectorTuple, bool]],
        out: NDBuffer,
        drop_axes: tuple[int, ...] = (),
    ) -> None:
        batch = list(batch_info)
        await _naming_the_chunk(batch, lambda part: super(ChunkKeyPipeline, self).read_batch(part, out, drop_axes))

    async def write_batch(
        self,
        batch_info: Iterable[tuple[ByteSetter, ArraySpec, SelectorTuple, SelectorTuple, bool]],
        value: NDBuffer,
        drop_axes: tuple[int, ...] = (),
    ) -> None:
        batch = list(batch_info)
        await _naming_the_chunk(batch, lambda part: super(ChunkKeyPipeline, self).write_batch(part, value, drop_axes))


async def _naming_the_chunk(batch: list[Any], run: Callable[[list[Any]], Awaitable[None]]) -> None:
    """``await run(batch)``; a ``BytePairError`` comes out with the key of its chunk (the first of each item)."""
    try:
        await run(batch)
    except BytePairError as exc:
        if len(batch) == 1:
            raise _with_key(exc, batch[0][0]) from None
        for item in batch:
            try:
                await run([item])
            except BytePairError as single:
                raise _with_key(single, item[0]) from None
        raise


def _with_key(exc: BytePairError, chunk: Any) -> BytePairError:
    """*exc* again, its message led by the chunk's key (a ``StorePath`` prints as store URL and key)."""
    return type(exc)(f"zarr chunk {str(chunk)!r}: {exc}")


register_codec(NAME, BytePair)
register_pipeline(ChunkKeyPipeline)
