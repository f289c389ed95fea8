"""Summaries of bytepair files from their headers alone, for ``bytepair -l``.

Listing must stay fast on large files, so frame bodies are skipped (a seek when
the file allows it, else read and discarded) and nothing is decoded. The header
checks of ``_format`` still run, and each end record is compared with the frames
before it, so a damaged container is reported rather than summarised.
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Callable
from functools import partial
from typing import BinaryIO, TypeVar

from .._errors import BytePairError, CorruptDataError, TruncatedDataError, UnsupportedFormatError
from .crc import crc32_combine
from .format import (
    COMPACT,
    END_SIZE,
    FRAME_HEADER_SIZE,
    KIND_END,
    KIND_FRAME,
    MAGIC,
    STREAM_HEADER_SIZE,
    StreamTally,
    read_compact_head,
    unpack_end,
    unpack_frame_header,
    unpack_stream_header,
)

__all__ = ["FrameEntry", "Listing", "list_frames", "list_streams"]

_DISCARD_CHUNK = 1 << 20

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Listing:
    """What ``-l`` shows of one file: all its concatenated streams together."""

    frames: int
    blocks: int
    compressed_size: int
    original_size: int
    crc32: int  # of the whole original content, as zlib.crc32

    @property
    def ratio(self) -> float:
        """Compressed size over original size, as everywhere in bytepair (lower is better)."""
        return self.compressed_size / self.original_size if self.original_size else 0.0


@dataclasses.dataclass(frozen=True)
class FrameEntry:
    """Where one frame lies, from its header: enough to read and decode it alone, as a parallel reader does."""

    offset: int  # of its record (header, then body) in the file, from where the listing began
    size: int  # of the whole record
    original_offset: int  # of its first original byte in the file's content (every stream counted)
    original_size: int
    index: int  # its number within its stream, as error messages name it
    first_block: int  # the number of its first block within its stream (for messages too)
    compact: bool = False  # the record is a compact stream's (``format.compact_record``), not a frame


class _Reader:
    """Reads forward through a file, keeping count of its offset, and skips cheaply."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self.offset = 0
        self._left: int | None = None  # bytes up to the end of the file, when it can seek
        if f.seekable():
            start = f.tell()
            self._left = f.seek(0, io.SEEK_END) - start
            f.seek(start)

    def read(self, n: int) -> bytes:
        """Up to *n* bytes, short only at the end of the file."""
        parts = []
        got = 0
        while got < n:
            part = self._f.read(n - got)
            if not part:
                break
            parts.append(part)
            got += len(part)
        data = b"".join(parts)
        self._advance(len(data))
        return data

    def exact(self, n: int, what: str) -> bytes:
        start = self.offset
        data = self.read(n)
        if len(data) < n:
            raise _short(what, start, n, len(data))
        return data

    def skip(self, n: int, what: str) -> None:
        start = self.offset
        if self._left is not None:
            if n > self._left:
                raise _short(what, start, n, self._left)
            self._f.seek(n, io.SEEK_CUR)
            self._advance(n)
            return
        left = n
        while left:
            part = self._f.read(min(left, _DISCARD_CHUNK))
            if not part:
                raise _short(what, start, n, n - left)
            left -= len(part)
            self._advance(len(part))

    def _advance(self, n: int) -> None:
        self.offset += n
        if self._left is not None:
            self._left -= n


def _short(what: str, start: int, needed: int, present: int) -> TruncatedDataError:
    return TruncatedDataError(f"data ends inside the {what} at byte {start} (needs {needed} bytes, has {present})")


def _at(offset: int, read: Callable[[], T]) -> T:
    """Run a ``_format`` reader on a record held alone in a small buffer.

    The readers name positions relative to the buffer they are given, which is
    byte 0 here; the error is re-raised with the record's offset in the file.
    """
    try:
        return read()
    except BytePairError as exc:
        raise type(exc)(re.sub(r"\bbyte 0\b", f"byte {offset}", str(exc))) from None


def list_frames(f: BinaryIO) -> list[FrameEntry]:
    """Every frame of every stream of *f*, with the checks of ``list_streams`` (which it runs)."""
    frames: list[FrameEntry] = []
    list_streams(f, frames.append)
    return frames


def list_streams(f: BinaryIO, on_frame: Callable[[FrameEntry], object] | None = None) -> Listing:
    """Walk every stream of *f* from its current position to its end, reading headers only.

    *on_frame* is called with each frame's entry as its header is read.
    """
    r = _Reader(f)
    frames = blocks = size = crc = 0
    while True:
        start = r.offset
        head = r.read(STREAM_HEADER_SIZE)
        if not head and start:
            break
        if not head:
            raise UnsupportedFormatError("not a bytepair file (it is empty)")
        if head[: len(MAGIC)] != MAGIC[: len(head)]:
            if not start:
                raise UnsupportedFormatError("not a bytepair file")
            raise CorruptDataError(f"data after the end of the stream at byte {start} is not a bytepair stream")
        if len(head) < STREAM_HEADER_SIZE:
            raise TruncatedDataError(f"data ends inside the stream header at byte {start}")
        compact = _at(start, partial(unpack_stream_header, head)) == COMPACT
        stream = _compact_record(r, on_frame, size) if compact else _walk_records(r, on_frame, size)
        frames += stream.n_frames
        blocks += stream.n_blocks
        crc = crc32_combine(crc, stream.crc, stream.size)
        size += stream.size
    return Listing(frames, blocks, r.offset, size, crc)


def _walk_records(r: _Reader, on_frame: Callable[[FrameEntry], object] | None, before: int) -> StreamTally:
    """The frames of one stream, up to and including its end record; *before* original bytes precede it."""
    tally = StreamTally()
    while True:
        pos = r.offset
        kind_byte = r.read(1)
        frames = tally.n_frames
        if not kind_byte:
            after = f" (after frame {frames - 1})" if frames else ""
            raise TruncatedDataError(f"compressed data ends before the end of the stream at byte {pos}{after}")
        kind = kind_byte[0]
        if kind == KIND_FRAME:
            raw = kind_byte + r.exact(FRAME_HEADER_SIZE - 1, f"header of frame {frames}")
            header = _at(pos, partial(unpack_frame_header, raw, 0, frames))
            r.skip(header.body_size, f"body of frame {frames}")
            if on_frame is not None:
                size = FRAME_HEADER_SIZE + header.body_size
                on_frame(FrameEntry(pos, size, before + tally.size, header.orig_size, frames, tally.n_blocks))
            tally.add_header(header)
        elif kind == KIND_END:
            raw = kind_byte + r.exact(END_SIZE - 1, "end of stream")
            tally.check_end(_at(pos, partial(unpack_end, raw, 0)), pos)
            return tally
        else:
            raise CorruptDataError(f"unknown record kind {kind:#04x} at byte {pos} (after frame {frames - 1})")


def _compact_record(r: _Reader, on_frame: Callable[[FrameEntry], object] | None, before: int) -> StreamTally:
    """A compact stream's record, as one frame of one block; *before* original bytes precede it."""
    pos = r.offset
    rec, head = read_compact_head(r.read, pos)
    r.skip(rec.end - len(head), "compact record")
    tally = StreamTally()
    if rec.orig_size:  # an empty compact stream, as an empty framed one, has no frame
        if on_frame is not None:
            on_frame(FrameEntry(pos, rec.end, before, rec.orig_size, 0, 0, compact=True))
        tally.add(rec.orig_size, rec.content_crc, 1)
    return tally
