"""Whole files through the stream objects, in pieces, so memory stays bounded.

Neither direction ever holds a whole file, in either format: input is read in 1 MiB chunks, and
the decompressor is fed 4 KiB slices because it decodes every frame its input
completes at once, and a highly compressible frame of 2 MiB can be a few
kilobytes (a 1 MiB feed could mean a gigabyte of output in memory). Smaller
feeds cost nothing measurable. This is also where concatenated streams are
followed, as gzip follows members.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from .._errors import BytePairError, CorruptDataError, TruncatedDataError, UnsupportedFormatError
from ..container.format import FRAME_HEADER_SIZE, KIND_FRAME, MAGIC, STREAM_HEADER_SIZE, unpack_frame_header
from .stream import BytePairCompressor, BytePairDecompressor

__all__ = [
    "FEED_SIZE",
    "READ_SIZE",
    "Write",
    "compress_file",
    "decompress_file",
    "gage_compress_file",
    "gage_decompress_file",
]

READ_SIZE = 1 << 20
FEED_SIZE = 1 << 12

Write = Callable[[bytes | memoryview], object]
OnProgress = Callable[[int, int, int], None]
"""Called after each chunk with (input bytes read, original bytes, compressed bytes) so far."""


def compress_file(src: BinaryIO, write: Write, compressor: BytePairCompressor, progress: OnProgress) -> tuple[int, int]:
    """Compress all of *src* into one stream; returns (original, compressed) sizes."""
    read = written = covered = 0
    while chunk := src.read(READ_SIZE):
        read += len(chunk)
        out = compressor.compress(chunk)
        if out:
            write(out)
            written += len(out)
            covered += _original_size(out)
        progress(read, covered, written)
    tail = compressor.flush()
    write(tail)
    return read, written + len(tail)


def _original_size(out: bytes) -> int:
    """Input bytes the frames in *out* (whole ones, as ``compress()`` returns) stand for.

    Read from their headers: how much input the compressor holds back (a frame's
    worth) is its business, and bytes read over bytes written would be wrong by it.
    """
    pos = STREAM_HEADER_SIZE if out.startswith(MAGIC) else 0
    size = 0
    while pos < len(out) and out[pos] == KIND_FRAME:
        header = unpack_frame_header(out, pos, 0)
        size += header.orig_size
        pos += FRAME_HEADER_SIZE + header.body_size
    return size


class _Streams:
    """Decodes one or more concatenated streams; anything else after a stream is an error."""

    def __init__(self, write: Write) -> None:
        self._write = write
        self._decoder: BytePairDecompressor | None = None
        self._head = b""  # start of the next stream, held until its magic number can be checked
        self._count = 0  # streams started
        self._start = 0  # offset of the current stream in the input
        self._offset = 0  # input bytes taken so far
        self.written = 0

    def feed(self, data: bytes) -> None:
        while data:
            if self._decoder is None:
                self._head += data
                data = b""
                if len(self._head) < len(MAGIC):
                    return
                self._check_magic()
                data, self._head = self._head, b""
                self._decoder = BytePairDecompressor()
                self._count += 1
                self._start = self._offset
            self._offset += len(data)
            try:
                out = self._decoder.decompress(data)
            except BytePairError as exc:
                raise self._located(exc) from None
            if out:
                self._write(out)
                self.written += len(out)
            data = b""
            if self._decoder.eof:
                data = self._decoder.unused_data
                self._offset -= len(data)
                self._decoder = None

    def finish(self) -> None:
        """Raise unless the input ended exactly at the end of a stream."""
        if self._decoder is not None:
            raise self._located(TruncatedDataError("compressed data ends before the end of the stream"))
        if self._head or not self._count:
            self._check_magic()
            raise TruncatedDataError(f"data ends inside the stream header at byte {self._offset}")

    def _check_magic(self) -> None:
        if self._head[: len(MAGIC)] == MAGIC[: len(self._head)] and (self._head or self._count):
            return
        if not self._count:
            raise UnsupportedFormatError("not a bytepair file" + ("" if self._head else " (it is empty)"))
        raise CorruptDataError(f"data after the end of the stream at byte {self._offset} is not a bytepair stream")

    def _located(self, exc: BytePairError) -> BytePairError:
        """Say which stream failed when there are several (the decoder counts bytes from its stream's start)."""
        if self._count < 2:
            return exc
        return type(exc)(f"stream {self._count} (at byte {self._start}): {exc}")


def decompress_file(src: BinaryIO, write: Write, progress: OnProgress) -> tuple[int, int]:
    """Decompress all the streams in *src*; returns (compressed, original) sizes."""
    streams = _Streams(write)
    read = 0
    while chunk := src.read(READ_SIZE):
        read += len(chunk)
        for lo in range(0, len(chunk), FEED_SIZE):
            streams.feed(chunk[lo : lo + FEED_SIZE])
        progress(read, streams.written, read)
    streams.finish()
    return read, streams.written


def gage_compress_file(src: BinaryIO, write: Write, progress: OnProgress) -> tuple[int, int]:
    """Compress *src* to Gage's format, 4 MiB at a time (his blocks are independent,
    so the pieces concatenate into one valid file); returns (original, compressed)."""
    from .. import gage

    read = written = 0
    while True:
        chunk = src.read(4 * READ_SIZE)
        if not chunk and read:
            break
        out = gage.compress(chunk)
        write(out)
        read += len(chunk)
        written += len(out)
        progress(read, read, written)
        if not chunk:
            break
    return read, written


def gage_decompress_file(src: BinaryIO, write: Write, progress: OnProgress) -> tuple[int, int]:
    """Decompress a Gage-format file block by block; returns (compressed, original) sizes.

    His format has no lengths, so blocks are found by parsing them as the input
    arrives (``gage.iter_decompress``); output goes out as it is made. Memory is
    bounded whatever the output's size: a few kilobytes of his tables can
    describe gigabytes.
    """
    from .. import gage

    read = written = 0

    def pieces() -> Iterator[bytes]:
        nonlocal read
        while chunk := src.read(READ_SIZE):
            read += len(chunk)
            yield chunk

    for out in gage.iter_decompress(pieces()):
        write(out)
        written += len(out)
        progress(read, written, read)
    return read, written
