"""Walking a file of bytepair streams by its headers: the one reader of the container's
structure, which every reader of bytepair data takes.

The grammar is docs/FORMAT.md's: a stream header, then frames and an end record, or one
compact record; then another stream, or the end of the data. :class:`Walker` reads headers
only, checks each as it comes (ranges and checks, and an end record against the frames
before it), and hands out where each frame lies (:class:`FrameEntry`); bodies are the
caller's to read, check and decode (:func:`decode_entry`). It walks a file that seeks
(``io.file.BytePairFile``) or not (a listing: ``bytepair -l``, Dask's partitions), a
buffer (``bytepair.decompress`` frame by frame), and a buffer that grows as bytes arrive
(``io.stream.StreamParser``, *waiting*). The compiled readers of a whole stream and of a
compact one (``core.kernels.stream``) only accelerate it: they hand anything but an intact
stream back, and the errors a caller sees are the walker's.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from .._errors import BytePairError, CorruptDataError, TruncatedDataError, UnsupportedFormatError
from ..core import faults
from .codec import decode_compact, decode_frame
from .crc import crc32_combine
from .format import (
    COMPACT,
    END_SIZE,
    FRAME_HEADER_SIZE,
    KIND_END,
    KIND_FRAME,
    MAGIC,
    STREAM_HEADER_SIZE,
    CompactRecord,
    FrameHeader,
    StreamTally,
    read_compact_head,
    unpack_end,
    unpack_frame_header,
    unpack_stream_header,
)

__all__ = ["FileSource", "FrameEntry", "MemorySource", "Source", "Walker", "decode_entry", "read_entry"]

READ_CHUNK = 1 << 20
"""Most bytes asked of the underlying file at once: a damaged header may claim a
body of up to 64 MiB, and a buffered file object allocates what it is asked for
before reading, so a 68-byte file could cost 16 MiB (found by the fuzzer). Reads
of 1 MiB keep memory within what the file really holds, at no measurable cost
for 2 MiB frames."""

_BYTE_ZERO = re.compile(r"\bbyte 0\b")


def moved(exc: BytePairError, at: int) -> BytePairError:
    """*exc* with its position made absolute: the ``format`` parsers see a copy of the record at offset 0."""
    return type(exc)(_BYTE_ZERO.sub(f"byte {at}", str(exc), count=1))


class Source(Protocol):
    """Compressed data read at absolute offsets; a short result means it ends there."""

    @property
    def seekable(self) -> bool: ...

    def read(self, at: int, size: int) -> bytes | memoryview: ...

    def available(self, at: int, size: int) -> int:
        """How many of the *size* bytes at *at* are there (a source that cannot seek reads
        and drops them)."""
        ...


class MemorySource:
    """An in-memory blob whose first byte is at offset *base*: reading is slicing, without copies."""

    seekable = True

    def __init__(self, view: memoryview, base: int = 0) -> None:
        self._view = view
        self._base = base

    def read(self, at: int, size: int) -> memoryview:
        return self._view[at - self._base : at - self._base + size]

    def available(self, at: int, size: int) -> int:
        return max(0, min(size, len(self._view) + self._base - at))


class FileSource:
    """A file object read at offsets from where it stood when handed over.

    A seekable file seeks; any other one reads forward, discarding what is
    skipped, and refuses to go back (its bytes are gone).
    """

    def __init__(self, fp: Any, seekable: bool) -> None:
        self._fp = fp
        self.seekable = seekable
        self._base = fp.tell() if seekable else 0
        self._pos = 0
        self._size: int | None = None  # of what follows the base, once asked (a seekable file)

    def _go(self, at: int) -> None:
        if at == self._pos:
            return
        if self.seekable:
            self._fp.seek(self._base + at)
            self._pos = at
            return
        if at < self._pos:
            raise io.UnsupportedOperation("the underlying file is not seekable, so bytes passed cannot be read again")
        while self._pos < at:
            chunk = self._fp.read(min(at - self._pos, READ_CHUNK))
            if not chunk:
                return
            self._pos += len(chunk)

    def read(self, at: int, size: int) -> bytes:
        self._go(at)
        if self._pos != at:  # the file ended before *at*
            return b""
        parts = []
        left = size
        while left > 0:
            chunk = self._fp.read(min(left, READ_CHUNK))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
            self._pos += len(chunk)  # kept exact, should a later read fail
        return b"".join(parts)

    def available(self, at: int, size: int) -> int:
        if self.seekable:
            if self._size is None:
                self._size = self._fp.seek(0, io.SEEK_END) - self._base
                self._fp.seek(self._base + self._pos)
            return max(0, min(size, self._size - at))
        self._go(at + size)  # read and dropped: the bytes a pipe gave up to there
        return max(0, min(size, self._pos - at))


class FrameEntry(NamedTuple):
    """Where one frame lies, from its header: enough to read and decode it alone, as a
    parallel reader does. A compact stream's record is one frame (frame 0 of its stream).
    (A named tuple: one is made per frame, and a frozen dataclass cost 1-2 us each.)"""

    offset: int  # of its record (header, then body) in the data, from where the walk began
    size: int  # of the whole record
    original_offset: int  # of its first original byte in the data's content (every stream counted)
    original_size: int
    number: int  # its number within its stream, as error messages name it
    first_block: int  # the number of its first block within its stream (for messages too)
    head: bytes = b""  # its header as read (a compact record: its first bytes)
    record: CompactRecord | None = None  # a compact stream's record (offsets from its start), not a frame
    header: FrameHeader | None = None  # a frame's header, as read

    @property
    def compact(self) -> bool:
        """Whether the record is a compact stream's (``format.compact_record``), not a frame."""
        return self.record is not None


class Walker:
    """The frames of *source*, one at a time, from the headers (:meth:`next`), from offset *at*.

    With *whole*, each frame's body must be there too (a listing, which reads nothing
    else; a reader that decodes as it goes); without it, a body is checked when it is
    read. With *waiting*, data that ends inside a record may yet go on (bytes arriving):
    :meth:`next` then returns None with ``needs_more`` set, and takes up at the same
    record once *source* holds more. *one_stream* stops after the first stream's end.
    *on_frame* is called with each frame's original size as soon as its header is read,
    before its body is asked for (a limit on the output).

    ``size``, ``n_frames`` and ``n_blocks`` count the frames walked, ``crc`` the content of
    the streams ended; ``at`` is the offset reached, and ``complete`` is true once the data
    (or the one stream) has ended and its end has been checked.
    """

    def __init__(
        self,
        source: Source,
        *,
        at: int = 0,
        whole: bool = False,
        waiting: bool = False,
        one_stream: bool = False,
        on_frame: Callable[[int], object] | None = None,
    ) -> None:
        self.source = source
        self._whole = whole
        self._waiting = waiting
        self._one_stream = one_stream
        self._on_frame = on_frame
        self.needs_more = False
        self.at = at
        self.complete = False
        self.size = 0
        self.crc = 0
        self.n_frames = 0
        self.n_blocks = 0
        self.streams = 0
        self.starts_as_bytepair = False
        """Whether the data's first bytes are (the start of) a stream's magic number."""
        self.empty = False
        """Whether the data turned out to hold nothing at all."""
        self._in_stream = False
        self._compact = False
        self._stream_at = 0
        self._before = 0  # original bytes of the streams before this one
        self._tally = StreamTally()

    @property
    def in_stream(self) -> bool:
        """True while inside a stream; False between streams (or before the first)."""
        return self._in_stream

    def next(self) -> FrameEntry | None:
        """The next frame; None once the data has ended (its end checked), or, *waiting*, when
        it ends inside a record (``needs_more``)."""
        self.needs_more = False
        if not self._waiting:
            return self._next()
        try:
            return self._next()
        except TruncatedDataError:  # nothing of the record was taken: it is read again once there
            self.needs_more = True
            return None

    def _next(self) -> FrameEntry | None:
        while not self.complete:
            if not self._in_stream:
                self._begin_stream()
                continue
            if self._compact:
                entry = self._compact_record()
                if entry is not None:
                    return entry
                continue
            kind = bytes(self.source.read(self.at, 1))
            if not kind:
                raise TruncatedDataError(
                    f"data ends at byte {self.at}, before the end of the stream that begins at byte {self._stream_at}"
                )
            if kind[0] == KIND_FRAME:
                return self._frame(kind)
            if kind[0] != KIND_END:
                raise CorruptDataError(
                    f"unknown record kind {kind[0]:#04x} at byte {self.at} "
                    f"(after frame {self._tally.n_frames - 1} of the stream at byte {self._stream_at})"
                )
            self._end(kind)
        return None

    def _begin_stream(self) -> None:
        at = self.at
        head = bytes(self.source.read(at, STREAM_HEADER_SIZE))
        first = self.streams == 0
        if not head and not first:
            self.complete = True
            return
        k = min(len(head), len(MAGIC))
        if first:
            self.starts_as_bytepair = k > 0 and head[:k] == MAGIC[:k]
            self.empty = not head
        if head[:k] != MAGIC[:k]:
            if first:
                raise UnsupportedFormatError(f"not a bytepair stream (bad magic number at byte {at})")
            raise CorruptDataError(f"data after the end of the stream at byte {at} is not a bytepair stream")
        if len(head) < STREAM_HEADER_SIZE:
            raise TruncatedDataError(
                f"data ends inside the stream header at byte {at} (needs {STREAM_HEADER_SIZE} bytes, has {len(head)})"
            )
        try:
            self._compact = unpack_stream_header(head, 0) == COMPACT
        except BytePairError as exc:
            raise moved(exc, at) from None
        self.streams += 1
        self._stream_at = at
        self.at = at + STREAM_HEADER_SIZE
        self._in_stream = True
        self._before = self.size
        self._tally = StreamTally()

    def _record(self, kind: bytes, size: int, what: str) -> bytes:
        raw = kind + bytes(self.source.read(self.at + 1, size - 1))
        if len(raw) < size:
            raise TruncatedDataError(
                f"data ends inside the {what} at byte {self.at} (needs {size} bytes, has {len(raw)})"
            )
        return raw

    def _need(self, at: int, size: int, what: str) -> None:
        """With *whole*: raise unless the *size* bytes of *what* at *at* are there."""
        if self._whole and (present := self.source.available(at, size)) < size:
            raise TruncatedDataError(f"data ends inside the {what} at byte {at} (needs {size} bytes, has {present})")

    def _frame(self, kind: bytes) -> FrameEntry:
        tally, at = self._tally, self.at
        raw = self._record(kind, FRAME_HEADER_SIZE, f"header of frame {tally.n_frames}")
        try:
            header = unpack_frame_header(raw, 0, tally.n_frames)
        except BytePairError as exc:
            raise moved(exc, at) from None
        if self._on_frame is not None:
            self._on_frame(header.orig_size)
        self._need(at + FRAME_HEADER_SIZE, header.body_size, f"body of frame {tally.n_frames}")
        entry = FrameEntry(
            at, FRAME_HEADER_SIZE + header.body_size, self.size, header.orig_size, tally.n_frames, tally.n_blocks,
            head=raw, header=header,
        )  # fmt: skip
        self._count(header.orig_size, header.content_crc, header.n_blocks)
        self.at = at + entry.size
        return entry

    def _compact_record(self) -> FrameEntry | None:
        """A compact stream's record, read no further than it (a pipe cannot go back); it ends
        the stream. None for an empty one, which has no frame (its CRC is that of nothing)."""
        at = self.at
        taken = 0

        def read(n: int) -> bytes:
            nonlocal taken
            more = bytes(self.source.read(at + taken, n))
            taken += len(more)
            return more

        rec, head = read_compact_head(read, at)
        if self._on_frame is not None and rec.orig_size:
            self._on_frame(rec.orig_size)
        self._need(at + len(head), rec.end - len(head), "compact record")
        self.at = at + rec.end
        if not rec.orig_size:
            if rec.content_crc:
                raise faults.content_crc(0)
            self._stream_ended()
            return None
        entry = FrameEntry(at, rec.end, self.size, rec.orig_size, 0, 0, head=head, record=rec)
        self._count(rec.orig_size, rec.content_crc, 1)
        self._stream_ended()
        return entry

    def _count(self, orig_size: int, content_crc: int, n_blocks: int) -> None:
        self._tally.add(orig_size, content_crc, n_blocks)
        self.size += orig_size
        self.n_frames += 1
        self.n_blocks += n_blocks

    def _stream_ended(self) -> None:
        """The stream's CRC joins the data's (``crc``: the streams ended so far)."""
        self.crc = crc32_combine(self.crc, self._tally.crc, self._tally.size)
        self._in_stream = False
        self.complete = self._one_stream

    def _end(self, kind: bytes) -> None:
        raw = self._record(kind, END_SIZE, "end record")
        try:
            end = unpack_end(raw, 0)
        except BytePairError as exc:
            raise moved(exc, self.at) from None
        self._tally.check_end(end, self.at)
        self.at += END_SIZE
        self._stream_ended()


def decode_entry(
    entry: FrameEntry, rest: bytes | memoryview, into: Callable[[int], npt.NDArray[np.uint8]] | None = None
) -> npt.NDArray[np.uint8]:
    """Decode and check the frame *entry* stands for, given *rest*: its record's bytes after
    those the walk read (``entry.head``), that is a frame's body, or the rest of a compact
    record. Short *rest* raises ``TruncatedDataError``. *into*: as ``codec.decode_frame``'s."""
    if len(rest) < entry.size - len(entry.head):
        what = "compact record" if entry.compact else f"body of frame {entry.number}"
        at = entry.offset + len(entry.head)
        raise TruncatedDataError(
            f"data ends inside the {what} at byte {at} (needs {entry.size - len(entry.head)} bytes, has {len(rest)})"
        )
    if entry.record is not None:
        return decode_compact(entry.record, entry.head + bytes(rest), into)
    header = entry.header or unpack_frame_header(entry.head, 0, entry.number)  # checked when walked: cannot fail
    return decode_frame(header, rest, entry.number, entry.first_block, into)


def read_entry(entry: FrameEntry, source: Source) -> npt.NDArray[np.uint8]:
    """Read, check and decode the frame *entry* stands for from *source*."""
    return decode_entry(entry, source.read(entry.offset + len(entry.head), entry.size - len(entry.head)))
