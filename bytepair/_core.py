"""One-shot ``compress`` and ``decompress``, as ``lzma.compress``/``lzma.decompress``."""

from __future__ import annotations

import io

import numpy as np
import numpy.typing as npt

from . import backend
from .container.codec import MOST_PER_BYTE, SPARE, encode_stream
from .container.walk import MemorySource, Walker, decode_entry
from .core.params import resolve_params
from .io.stream import BytePairCompressor, as_byte_view, check_limit, one_frame

__all__ = ["compress", "decompress"]


def compress(
    data: object,
    *,
    level: int | None = None,
    block_size: int | None = None,
    max_distinct: int | None = None,
    threshold: int | None = None,
    escape_limit: int | None = None,
    threads: int = 1,
) -> bytes:
    """Compress a bytes-like object into one bytepair stream.

    *level* (1-9) picks a preset; *block_size*, *max_distinct*, *threshold* and
    *escape_limit* override the preset's values (see ``bytepair.LEVELS``). *threads* other than
    1 encodes frames on that many workers, this thread included (0 = one per core): threads
    on the compiled path, worker processes on the numpy one (see docs/threads.md). The
    output is the same for every *threads*, and callers need no ``__main__`` guard.
    """
    if threads == 1:
        view = as_byte_view(data)
        if one_frame(len(view)):  # the stream in one call (one kernel call on the compiled path)
            params = resolve_params(
                level, block_size=block_size, max_distinct=max_distinct, threshold=threshold, escape_limit=escape_limit
            )
            return encode_stream(view, params)
    compressor = BytePairCompressor(
        level,
        block_size=block_size,
        max_distinct=max_distinct,
        threshold=threshold,
        escape_limit=escape_limit,
        threads=threads,
    )
    return compressor._compress_once(data)


def decompress(data: object, *, max_length: int | None = None) -> bytes:
    """Decompress one or more concatenated bytepair streams.

    Raises ``OutputLimitError`` before decoding a frame that would take the output
    past *max_length*, and another ``BytePairError`` for damaged or foreign data.
    """
    if max_length is not None and max_length < 0:
        raise ValueError(f"max_length must be non-negative or None, got {max_length}")
    # One intact stream, compact or framed, of at most max_length bytes: in one compiled call
    # (none on the numpy path). It makes every check the reader below makes and returns None
    # for anything else (a buffer that is not flat bytes, several streams, damage of any
    # kind, a limit it would pass), and the reader decodes it frame by frame or says what is
    # wrong. This saves the reader's calls per frame and the buffer it decodes into; see
    # core.kernels.stream. A framed stream's output is made only once its structure, every
    # frame's CRC and block lengths passed, and never for more than MOST_PER_BYTE bytes a byte.
    read_whole = backend.read_whole
    if read_whole is not None:
        whole = read_whole(data, -1 if max_length is None else min(max_length, 1 << 62), MOST_PER_BYTE)
        if whole is not None:
            return whole
    buf = as_byte_view(data)
    out = _Output()
    frames = 0

    def limit(orig_size: int) -> None:  # (no reference to the walker: no cycle keeps *buf* exported)
        check_limit(max_length, out.size, orig_size, frames)

    walker = Walker(MemorySource(buf), whole=True, on_frame=limit)
    while (entry := walker.next()) is not None:  # frame by frame: what the kernels hand back, and the numpy path
        rest = buf[entry.offset + len(entry.head) : entry.offset + entry.size]
        out.size += len(decode_entry(entry, rest, out.room))  # (a view of the output's buffer: dropped at once)
        frames += 1
    return out.value()


class _Output:
    """The output of ``decompress``: frames are decoded straight into the buffer of
    an ``io.BytesIO``, whose ``getvalue()`` then hands that buffer over as the
    result without a copy (writing each decoded frame in cost a copy of the whole
    output, into freshly faulted pages).

    A view of the buffer that outlives its frame (held by a reference cycle until
    the garbage collector runs, say) keeps the buffer from being resized: then the
    output goes on in a new buffer, or is copied out, at the cost of one copy."""

    def __init__(self) -> None:
        self._buffer = io.BytesIO()
        self.size = 0  # bytes of output so far

    def room(self, n: int) -> npt.NDArray[np.uint8]:
        """Where the next frame, of *n* bytes, is decoded: the buffer grown to hold it and
        the decoder's spare bytes, as an array (to be dropped before the next call)."""
        end = self.size + n + SPARE
        try:
            self._grow(end)
        except BufferError:  # a view of the buffer is still alive: go on in a copy
            fresh = io.BytesIO()
            fresh.write(self._buffer.getbuffer()[: self.size])
            self._buffer = fresh
            self._grow(end)
        return np.frombuffer(self._buffer.getbuffer(), dtype=np.uint8)[self.size :]

    def _grow(self, size: int) -> None:
        self._buffer.seek(size - 1)
        self._buffer.write(b"\0")  # zero-fills what it adds

    def value(self) -> bytes:
        """The output so far, as bytes (the buffer itself where it can be)."""
        try:
            self._buffer.truncate(self.size)  # the spare bytes go
        except BufferError:
            return bytes(self._buffer.getbuffer()[: self.size])
        return self._buffer.getvalue()
