"""Streams of frames: incremental compression and decompression.

``BytePairCompressor`` and ``BytePairDecompressor`` mirror ``lzma.LZMACompressor``
and ``lzma.LZMADecompressor``. The one-shot functions in ``_core`` use the same
``StreamParser``, which walks the container with ``container.walk.Walker``, as the
file reader and the listing do: one reader of the container's stream structure.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn

import numpy as np
import numpy.typing as npt

from .._errors import OutputLimitError
from ..container.codec import FRAME_SIZE
from ..container.format import StreamTally, one_frame_stream, pack_stream_header
from ..container.walk import MemorySource, Walker, decode_entry
from ..core.params import resolve_params
from .parallel import Finished, FramePipeline

__all__ = ["BytePairCompressor", "BytePairDecompressor", "StreamParser", "as_byte_view", "check_limit", "one_frame"]

_STREAM_HEADER = pack_stream_header()
"""Every stream's first bytes: packed once (about 10 us a stream, cold)."""


def as_byte_view(data: object) -> memoryview:
    """A flat byte view of any C-contiguous buffer (bytes, bytearray, memoryview, numpy array)."""
    try:
        view = memoryview(data)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"a bytes-like object is required, not {type(data).__name__!r}") from None
    if not view.c_contiguous:
        raise ValueError("data must be a C-contiguous buffer")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def one_frame(size: int) -> bool:
    """Whether *size* input bytes make one of the compressor's frames (or none)."""
    return size <= FRAME_SIZE


def refuse_pickling(obj: object) -> NoReturn:
    """What ``__reduce_ex__`` does for objects holding a stream in progress, as the stdlib's (de)compressors.

    A copy would share the original's buffers and parser (feeding one corrupts the
    other), and a pickle could not carry an open file or a pool of processes.
    """
    name = type(obj).__name__
    raise TypeError(f"cannot pickle or copy {name!r} object: it holds a stream in progress; make a new one")


class _Busy:
    """Refuses concurrent use of one object from several threads, rather than corrupting it."""

    def __init__(self, what: str) -> None:
        self._lock = threading.Lock()
        self._what = what

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            raise RuntimeError(f"{self._what} is being used by another thread; use one object per thread")

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def check_limit(max_length: int | None, before: int, orig_size: int, frame: int) -> None:
    """Raise ``OutputLimitError`` before frame number *frame*, of *orig_size* bytes, takes the
    output past *max_length* (with *before* bytes out already)."""
    if max_length is not None and before + orig_size > max_length:
        raise OutputLimitError(
            f"output would exceed max_length={max_length} bytes "
            f"(frame {frame} declares {orig_size} more after {before})"
        )


class StreamParser:
    """Reads one stream from a growing buffer, decoding each frame as soon as it is whole:
    the container's walker (``container.walk.Walker``) over the bytes there so far.

    ``frames(buf, pos)`` yields ``(new_pos, decoded_frame)`` for every complete frame
    from *pos* on (and the position reached, with nothing, at the stream's end);
    ``done`` is set once the end has been read and checked. Incomplete input simply
    stops the iteration: the caller decides whether that is truncation (one-shot) or a
    wait for more (streaming). *at*: the stream's offset in the caller's data, which
    positions in messages count from.
    """

    def __init__(self, max_length: int | None = None, *, at: int = 0) -> None:
        self.max_length = max_length
        self.produced_before = 0  # output of earlier streams, counted against max_length
        self._walker = Walker(
            MemorySource(memoryview(b""), at), at=at, whole=True, waiting=True, one_stream=True, on_frame=self._check
        )

    @property
    def done(self) -> bool:
        """Whether the stream's end has been read and checked."""
        return self._walker.complete

    @property
    def frames_read(self) -> int:
        return self._walker.n_frames

    def _check(self, orig_size: int) -> None:
        check_limit(self.max_length, self.produced_before + self._walker.size, orig_size, self._walker.n_frames)

    def frames(
        self, buf: memoryview, pos: int, into: Callable[[int], npt.NDArray[np.uint8]] | None = None
    ) -> Iterator[tuple[int, npt.NDArray[np.uint8]]]:
        """With *into*, each frame is decoded in ``into(orig_size)`` (``orig_size + codec.SPARE``
        writable bytes; ``codec.decode_frame`` asks once the frame is whole, within limits
        and past its first checks)."""
        walker = self._walker
        base = walker.at - pos  # the offset in the caller's data of buf's first byte
        walker.source = MemorySource(buf, base)
        try:
            while (entry := walker.next()) is not None:
                start = entry.offset + len(entry.head) - base
                out = decode_entry(entry, buf[start : entry.offset + entry.size - base], into)
                yield entry.offset + entry.size - base, out
                del out  # may be a view of the caller's buffer, which must be free to grow
            if walker.at - base > pos:  # headers read past the last frame (or the end): taken too
                yield walker.at - base, _NOTHING
        finally:
            walker.source = _NO_SOURCE  # no view of the caller's buffer is kept


_NOTHING = np.zeros(0, dtype=np.uint8)
_NO_SOURCE = MemorySource(memoryview(b""))


class BytePairCompressor:
    """Compress data incrementally, as ``lzma.LZMACompressor`` does.

    Input is buffered until a frame's worth (2 MiB) is there; ``flush()`` ends
    the stream. With ``threads`` other than 1, frames are encoded by that many
    workers at once (0 = one per core; threads on the compiled path, processes on
    the numpy path), and the last one block by block by all
    of them; a frame's output then comes one call later than without threads,
    and the output is the same. One object must not be used by several
    threads at once: a second concurrent call raises ``RuntimeError``.
    """

    def __init__(
        self,
        level: int | None = None,
        *,
        block_size: int | None = None,
        max_distinct: int | None = None,
        threshold: int | None = None,
        escape_limit: int | None = None,
        threads: int = 1,
    ) -> None:
        params = resolve_params(
            level, block_size=block_size, max_distinct=max_distinct, threshold=threshold, escape_limit=escape_limit
        )
        self._frames = FramePipeline(params, threads)
        self._pending = bytearray()
        self._started = False
        self._finished = False
        self._failed: BaseException | None = None  # an error in a call whose output was lost with it
        self._tally = StreamTally()
        self._busy = _Busy("BytePairCompressor")

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        refuse_pickling(self)

    def _counted(self, finished: list[Finished]) -> list[bytes]:
        for _, crc, length in finished:
            self._tally.add(length, crc, 0)  # the end record does not count blocks
        return [frame for frame, _, _ in finished]

    def _header(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        return _STREAM_HEADER

    def compress(self, data: object) -> bytes:
        """Feed *data*; returns whatever compressed bytes are ready (often ``b""``)."""
        view = as_byte_view(data)
        with self._busy:
            self._refuse_if_failed()
            if self._finished:
                raise ValueError("compressor has been flushed")
            try:
                return self._compress(view)
            except BaseException as exc:
                self._failed = exc
                raise

    def _has_failed(self) -> bool:
        """A call raised: output it had computed was lost with it, so the stream cannot go on."""
        return self._failed is not None

    def _refuse_if_failed(self) -> None:
        if self._failed is not None:
            raise ValueError(
                f"compressor failed earlier ({type(self._failed).__name__}: {self._failed}); "
                "its stream is incomplete, start a new one"
            ) from self._failed

    def _compress(self, view: memoryview) -> bytes:
        if not self._started and len(self._pending) + len(view) <= FRAME_SIZE:
            self._pending += view  # all of it may yet be one frame, or one compact block: wait and see
            return b""
        parts: list[bytes] = []
        if self._pending or len(view) < FRAME_SIZE:
            self._pending += view
            view = memoryview(b"")
        whole = len(self._pending) - len(self._pending) % FRAME_SIZE
        for lo in range(0, whole, FRAME_SIZE):
            parts += self._counted(self._frames.add(self._pending[lo : lo + FRAME_SIZE]))
        del self._pending[:whole]
        # a large input is encoded straight from the caller's buffer
        whole = len(view) - len(view) % FRAME_SIZE
        for lo in range(0, whole, FRAME_SIZE):
            parts += self._counted(self._frames.add(view[lo : lo + FRAME_SIZE]))
        self._pending += view[whole:]
        if parts:  # the header goes out with the first frame: a stream of one block may yet be compact
            parts.insert(0, self._header())
        return b"".join(parts)

    def _compress_once(self, data: object) -> bytes:
        """``compress(data) + flush()`` on a new compressor (``bytepair.compress``): the same
        bytes, with every frame, the last one too, encoded straight from the caller's buffer
        (no copy of the input into the pending buffer and out again, no joining twice)."""
        view = as_byte_view(data)
        with self._busy:
            if self._started or self._finished:
                raise ValueError("_compress_once needs a new compressor")
            return self._end([view[lo : lo + FRAME_SIZE] for lo in range(0, len(view), FRAME_SIZE)])

    def flush(self) -> bytes:
        """Compress what is left and end the stream; the compressor cannot be used after."""
        with self._busy:
            self._refuse_if_failed()
            if self._finished:
                raise ValueError("repeated call to flush()")
            last = [bytes(self._pending)] if self._pending else []
            self._pending.clear()
            return self._end(last)

    def _end(self, pieces: Sequence[bytes | memoryview]) -> bytes:
        """What is still to come of the stream: *pieces* (at most a frame each) as its last
        frames, then its end. A failure is kept: the compressor is unusable after it."""
        self._finished = True
        try:
            parts = []
            for piece in pieces[:-1]:  # views of the input, or bytes of our own: alive until finish returns
                parts += self._counted(self._frames.add(piece, borrowed=True))
            parts += self._counted(self._frames.finish(pieces[-1] if pieces else None))
            if not self._started and len(parts) <= 1:  # the whole stream is at most one frame: maybe compact
                self._started = True
                return one_frame_stream(parts[0] if parts else None)
            parts.insert(0, self._header())
            parts.append(self._tally.pack_end())
            return b"".join(parts)
        except BaseException as exc:
            self._failed = exc
            raise


class BytePairDecompressor:
    """Decompress one stream incrementally, as ``lzma.LZMADecompressor`` does.

    Memory is bounded by one frame (at most 64 MiB of output, 2 MiB as written
    by bytepair) plus output not yet returned because of ``max_length``. One
    object must not be used by several threads at once: a second concurrent call
    raises ``RuntimeError``.
    """

    def __init__(self) -> None:
        self._parser = StreamParser()
        self._input = bytearray()
        self._output = bytearray()
        self._consumed = 0
        self._unused = b""
        self._busy = _Busy("BytePairDecompressor")

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        refuse_pickling(self)

    @property
    def eof(self) -> bool:
        """True once the end of the stream has been read and all output returned."""
        return self._parser.done and not self._output

    @property
    def unused_data(self) -> bytes:
        """Bytes found after the end of the stream."""
        return self._unused

    @property
    def needs_input(self) -> bool:
        """False while decoded output is waiting to be returned (a ``max_length`` cut it short)."""
        return not self._output and not self._parser.done

    def decompress(self, data: object, max_length: int | None = -1) -> bytes:
        """Feed *data*; return at most *max_length* bytes of output (all if negative).

        Both arguments are checked before anything is taken in, so a call that
        raises ``TypeError`` or ``ValueError`` leaves the object as it was.
        """
        if max_length is None:  # lzma refuses None; accepted here, as "all"
            max_length = -1
        else:
            try:
                max_length = operator.index(max_length)
            except TypeError:
                raise TypeError(f"max_length must be an integer, not {type(max_length).__name__}") from None
        view = as_byte_view(data)
        with self._busy:
            if self.eof:
                raise EOFError("already at end of stream")
            if self._parser.done:
                self._unused += bytes(view)
            else:
                self._input += view
                self._parse()
            if max_length < 0:
                max_length = len(self._output)
            out = bytes(self._output[:max_length])
            del self._output[:max_length]
            return out

    def _parse(self) -> None:
        buf = memoryview(self._input)
        pos = 0
        try:
            for end, frame in self._parser.frames(buf, 0):
                self._output += frame.data
                pos = end
        finally:
            buf.release()
        self._consumed += pos
        if self._parser.done:
            self._unused += bytes(self._input[pos:])
            self._input.clear()
        else:
            del self._input[:pos]
