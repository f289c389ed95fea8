"""Compressed files: ``BytePairFile`` and ``open``, as ``lzma`` has them, and ``decompress_range``.

Reading parses the container here instead of going through
``BytePairDecompressor``, because a frame header states how many original bytes
the frame holds and how long its body is: reading headers only (and seeking
over bodies) maps where every original byte lives, so a reader can decode just
the frame a position falls in. The map is built lazily, only as far as reads and
seeks need it, so reading straight through is a single pass and a seek near the
end of a large file costs one small read per frame plus one frame's decoding.
"""

from __future__ import annotations

import builtins
import io
import operator
import os
import sys
from array import array
from bisect import bisect_right
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, TypeAlias, overload

import numpy as np
import numpy.typing as npt

from .._errors import BytePairError, OutputLimitError, TruncatedDataError
from ..container.walk import FileSource, FrameEntry, MemorySource, Source, Walker, read_entry
from .stream import BytePairCompressor, _Busy, as_byte_view, refuse_pickling

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer, StrOrBytesPath, WriteableBuffer

__all__ = ["BytePairFile", "decompress_range", "open"]


class _ReadableFile(Protocol):
    def read(self, size: int, /) -> bytes | None: ...


class _WritableFile(Protocol):
    def write(self, data: bytes, /) -> object: ...


FileObject: TypeAlias = "_ReadableFile | _WritableFile"
"""What ``BytePairFile`` accepts besides a path: anything with ``read`` (to read;
``seekable``, ``seek`` and ``tell`` are used when present) or ``write``."""


class _FrameMap:
    """Where every frame's original bytes start and its body lies, from headers only
    (``container.walk.Walker``, which checks every header and end record on the way).

    ``extend()`` maps one more frame, so everything but the frame bodies is verified as
    far as the map reaches. Bodies are read, CRC-checked and decoded by ``decode(i)`` only.
    """

    def __init__(self, source: Source) -> None:
        self._source = source
        self._walker = Walker(source)
        self._starts = array("q")  # original offset of each frame's first byte
        self._frames: list[FrameEntry] = []
        self._decoded: tuple[int, npt.NDArray[np.uint8] | BytePairError] | None = None  # the compact record last mapped

    def __len__(self) -> int:
        return len(self._starts)

    @property
    def size(self) -> int:
        """Original bytes mapped so far."""
        return self._walker.size

    @property
    def complete(self) -> bool:
        """True once the data has ended and its end has been checked."""
        return self._walker.complete

    @property
    def in_stream(self) -> bool:
        """True while mapping inside a stream; False between streams (or before the first)."""
        return self._walker.in_stream

    def start(self, i: int) -> int:
        return self._starts[i]

    def extend(self) -> bool:
        """Map one more frame; False once the data has ended."""
        frame = self._walker.next()
        if frame is None:
            return False
        self._starts.append(frame.original_offset)
        self._frames.append(frame)
        if frame.compact:
            # no end record vouches for a compact record's size (its orig_len has no check but
            # the content's CRC): it is decoded now, at most 64 KiB, and what came of it (bytes
            # or the error) kept for the read that follows (a pipe cannot give its bytes twice)
            try:
                outcome: npt.NDArray[np.uint8] | BytePairError = read_entry(frame, self._source)
            except BytePairError as exc:
                outcome = exc
            self._decoded = (len(self._frames) - 1, outcome)
            if isinstance(outcome, BytePairError):
                raise outcome
        return True

    def locate(self, pos: int) -> int | None:
        """The frame holding original byte *pos*, mapping as far as needed; None past the end."""
        while pos >= self.size and self.extend():
            pass
        if pos >= self.size:
            return None
        return bisect_right(self._starts, pos) - 1

    def map_all(self) -> int:
        """Map to the end of the data; returns the total original size."""
        while self.extend():
            pass
        return self.size

    def decode(self, i: int) -> npt.NDArray[np.uint8]:
        """Read, check and decode frame *i* (which must be mapped)."""
        if self._decoded is not None and self._decoded[0] == i:
            outcome = self._decoded[1]
            if isinstance(outcome, BytePairError):
                raise type(outcome)(str(outcome))  # the same error, each time it is asked
            self._decoded = None
            return outcome
        return read_entry(self._frames[i], self._source)


class _Reader:
    """The read side of a ``BytePairFile``: a position, and the one decoded frame that holds it."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.map = _FrameMap(source)
        self.pos = 0
        self.frames_decoded = 0
        self._verified = 0  # frames 0.._verified-1 have all been decoded, so their sizes are proven
        self._buf = b""
        self._buf_start = 0

    def release(self) -> None:
        self._buf = b""

    def _frame(self) -> bool:
        """Make the decoded frame holding the position current; False at the end of the data."""
        if 0 <= self.pos - self._buf_start < len(self._buf):
            return True
        self._buf = b""  # at most one decoded frame is held
        index = self.map.locate(self.pos)
        if index is None:
            return False
        if self.source.seekable and not self.map.complete:
            self._prove_sizes_before(index)
        self._buf = self._decode(index)
        self._buf_start = self.map.start(index)
        return True

    def _decode(self, index: int) -> bytes:
        out = self.map.decode(index).tobytes()
        self.frames_decoded += 1
        if index == self._verified:
            self._verified += 1
        return out

    def _prove_sizes_before(self, index: int) -> None:
        """Frames before *index* may have been skipped unread: prove the sizes their headers state.

        Every header and end record of the data, checked against each other, is
        the cheap proof, and damage it finds (an end record that does not match
        its frames: a frame repeated, lost or replaced) fails every read. Data
        that merely ends early, or has something other than a stream after its
        last whole stream, contradicts nothing before that point: there the
        frames before *index* are decoded in turn instead (each checks its own
        size and CRCs), so that everything before the damage can be read, as
        ``lzma.LZMAFile`` reads a truncated file up to the cut.
        """
        try:
            self.map.map_all()
        except BytePairError as exc:
            if not self.map.in_stream:
                return  # the damage follows whole streams, each checked against its end record
            if not isinstance(exc, TruncatedDataError):
                raise
            while self._verified < index:
                self._decode(self._verified)

    def _take(self, n: int) -> bytes:
        """Up to *n* bytes from the current frame."""
        off = self.pos - self._buf_start
        piece = self._buf[off : off + n]
        self.pos += len(piece)
        return piece

    def read(self, size: int) -> bytes:
        parts = []
        left = size if size >= 0 else sys.maxsize
        start = self.pos
        try:
            while left and self._frame():
                piece = self._take(left)
                parts.append(piece)
                left -= len(piece)
        except BaseException:
            self.pos = start  # nothing was returned: the bytes before the damage are still there to read
            raise
        return b"".join(parts)

    def read1(self, size: int) -> bytes:
        if size == 0 or not self._frame():
            return b""
        return self._take(size if size >= 0 else sys.maxsize)

    def readinto(self, b: WriteableBuffer, once: bool) -> int:
        start = self.pos
        with memoryview(b) as view, view.cast("B") as out:
            n = 0
            try:
                while n < len(out) and self._frame():
                    piece = self._take(len(out) - n)
                    out[n : n + len(piece)] = piece
                    n += len(piece)
                    if once:
                        break
            except BaseException:
                self.pos = start
                raise
            return n

    def readline(self, size: int) -> bytes:
        parts = []
        left = size if size >= 0 else sys.maxsize
        start = self.pos
        try:
            while left and self._frame():
                off = self.pos - self._buf_start
                stop = min(len(self._buf), off + left)
                newline = self._buf.find(b"\n", off, stop)
                piece = self._take((newline + 1 if newline >= 0 else stop) - off)
                parts.append(piece)
                left -= len(piece)
                if newline >= 0:
                    break
        except BaseException:
            self.pos = start
            raise
        return b"".join(parts)

    def peek(self, size: int) -> bytes:
        if not self._frame():
            return b""
        off = self.pos - self._buf_start
        return self._buf[off : off + max(size, io.DEFAULT_BUFFER_SIZE)]

    def seek(self, offset: int, whence: int) -> int:
        """As ``LZMAFile.seek``: the target is clamped to the data, 0 to its size."""
        if whence == io.SEEK_SET:
            target = offset
        elif whence == io.SEEK_CUR:
            target = self.pos + offset
        elif whence == io.SEEK_END:
            if not self.source.seekable:
                raise io.UnsupportedOperation("seeking from the end needs a seekable underlying file")
            target = self.map.map_all() + offset
        else:
            raise ValueError(f"invalid whence ({whence}, should be 0, 1 or 2)")
        target = max(0, target)
        if not self.source.seekable:
            if target < self.pos:
                raise io.UnsupportedOperation("the underlying file is not seekable: only forward seeks are possible")
            # read on: every frame passed over is decoded and checked, none skipped unverified
            while self.pos < target and self._frame():
                self._take(target - self.pos)
            return self.pos
        # headers only: nothing is decoded until the next read
        if self.map.locate(target) is None:
            target = self.map.size
        self.pos = target
        return target


_CLOSED, _READ, _WRITE = 0, 1, 2

BinaryMode = Literal["r", "rb", "w", "wb", "x", "xb", "a", "ab"]
TextMode = Literal["rt", "wt", "xt", "at"]


class BytePairFile(io.BufferedIOBase):
    """A file of bytepair streams, as ``lzma.LZMAFile`` is one of xz streams.

    *filename_or_fileobj* is a path (opened, and closed with this object) or a
    binary file object. *mode* is ``"r"``/``"rb"`` to read, ``"w"``/``"wb"`` to
    overwrite, ``"x"``/``"xb"`` to create a new file, ``"a"``/``"ab"`` to append
    a stream to an existing file. *level*, *threads*, *block_size*,
    *max_distinct*, *threshold* and *escape_limit* set the compressor, as for
    ``BytePairCompressor``; they are refused when reading.

    Reading returns the concatenated contents of every stream in the file; any
    bytes after the last stream that are not a stream raise ``CorruptDataError``.
    At most one frame (2 MiB as bytepair writes them) is held decoded.

    Seeking is random access on a seekable file: the frame map is read from
    headers only, as far as needed, and only the frame holding the bytes read
    next is decoded (``frames_decoded`` counts decodings). On a source that
    cannot seek (a pipe), only forward seeks work, reading on; ``SEEK_END`` and
    backward seeks raise ``io.UnsupportedOperation``. Positions follow
    ``LZMAFile``: a seek before the start lands at 0, one past the end at the end.

    A truncated file, or one with something other than a stream after its
    last stream, fails only the reads that reach the damage, as with
    ``LZMAFile``: everything before it can be read (a read that fails returns
    nothing and leaves the position where it was, so ``read1`` then gets the
    bytes up to the damage); ``TruncatedDataError`` is also an ``EOFError``.
    Damage that makes the frames contradict their stream's end record (a frame
    repeated, lost or replaced) fails every read of a seekable file: no byte
    of that stream can be placed with certainty.

    Frames that are skipped are not checked; a frame is verified (CRC of its
    compressed bytes and of its content) when it is decoded, so reading the
    whole file checks everything. Writing buffers input until a whole frame is
    there; ``close()`` ends the stream. One object belongs to one thread at a time:
    concurrent calls raise ``RuntimeError``, as the stream objects do.
    """

    def __init__(
        self,
        filename_or_fileobj: StrOrBytesPath | FileObject,
        mode: str = "r",
        *,
        level: int | None = None,
        threads: int = 1,
        block_size: int | None = None,
        max_distinct: int | None = None,
        threshold: int | None = None,
        escape_limit: int | None = None,
    ) -> None:
        self._mode = _CLOSED
        self._closefp = False
        self._reader: _Reader | None = None
        self._compressor: BytePairCompressor | None = None
        self._written = 0
        self._busy = _Busy("BytePairFile")
        if mode in ("r", "rb"):
            for name, value in (
                ("level", level),
                ("block_size", block_size),
                ("max_distinct", max_distinct),
                ("threshold", threshold),
                ("escape_limit", escape_limit),
            ):
                if value is not None:
                    raise ValueError(f"cannot set {name} when opening a file for reading")
            if threads != 1:
                raise ValueError("cannot set threads when opening a file for reading (frames are decoded one by one)")
            mode_code = _READ
        elif mode in ("w", "wb", "x", "xb", "a", "ab"):
            # made first: bad settings must not create or truncate the file
            self._compressor = BytePairCompressor(
                level,
                block_size=block_size,
                max_distinct=max_distinct,
                threshold=threshold,
                escape_limit=escape_limit,
                threads=threads,
            )
            mode_code = _WRITE
        else:
            raise ValueError(f"invalid mode: {mode!r}")

        if isinstance(filename_or_fileobj, (str, bytes, os.PathLike)):
            # closed by close(), not on leaving this block
            self._fp: Any = builtins.open(filename_or_fileobj, mode if "b" in mode else mode + "b")  # noqa: SIM115
            self._closefp = True
        elif hasattr(filename_or_fileobj, "read") or hasattr(filename_or_fileobj, "write"):
            self._fp = filename_or_fileobj
        else:
            raise TypeError("filename must be a str, bytes, file or PathLike object")

        if mode_code == _READ:
            try:
                seekable = getattr(self._fp, "seekable", None)
                self._reader = _Reader(FileSource(self._fp, bool(seekable and seekable())))
            except BaseException:
                if self._closefp:
                    self._fp.close()
                raise
        self._mode = mode_code

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        refuse_pickling(self)

    # -- state --

    @property
    def closed(self) -> bool:
        """True once ``close()`` has been called."""
        return self._mode == _CLOSED

    def close(self) -> None:
        """End the stream (writing) and close the file if this object opened it; may be called again."""
        if self._mode == _CLOSED:
            return
        try:
            # after a failed write the stream stays without its end (readers call it
            # truncated): the error was raised then, and is not raised again here
            if self._compressor is not None and not self._compressor._has_failed():
                self._fp.write(self._compressor.flush())
        finally:
            try:
                if self._closefp:
                    self._fp.close()
            finally:
                self._mode = _CLOSED
                self._closefp = False
                self._compressor = None
                if self._reader is not None:
                    self._reader.release()

    @property
    def frames_decoded(self) -> int:
        """Frames decoded so far: what random access costs, for tests and curious callers."""
        return self._reader.frames_decoded if self._reader is not None else 0

    @property
    def mode(self) -> str:
        return "rb" if self._reader is not None else "wb"

    @property
    def name(self) -> str:
        self._check_not_closed()
        name: str = self._fp.name
        return name

    def fileno(self) -> int:
        """The underlying file's descriptor."""
        self._check_not_closed()
        fd: int = self._fp.fileno()
        return fd

    def readable(self) -> bool:
        self._check_not_closed()
        return self._mode == _READ

    def writable(self) -> bool:
        self._check_not_closed()
        return self._mode == _WRITE

    def seekable(self) -> bool:
        """True when reading from a seekable file (forward seeks work on any source)."""
        return self.readable() and self._reading().source.seekable

    def flush(self) -> None:
        """Pass frames already written on to the underlying file.

        Input short of a frame stays buffered: ending the stream at every flush
        (``TextIOWrapper`` and ``print(flush=True)`` flush often) would cost
        compression. ``close()`` writes it.
        """
        self._check_not_closed()
        if self._mode == _WRITE and hasattr(self._fp, "flush"):
            self._fp.flush()

    def _check_not_closed(self) -> None:
        if self._mode == _CLOSED:
            raise ValueError("I/O operation on closed file")

    def _reading(self) -> _Reader:
        if self._mode != _READ or self._reader is None:
            self._check_not_closed()
            raise io.UnsupportedOperation("File not open for reading")
        return self._reader

    # -- reading --

    def read(self, size: int | None = -1) -> bytes:
        """Up to *size* bytes (fewer only at the end), or everything left if *size* is negative or None."""
        reader = self._reading()
        with self._busy:
            return reader.read(-1 if size is None else operator.index(size))

    def read1(self, size: int = -1) -> bytes:
        """Up to *size* bytes from one frame, decoding at most one (the rest of the frame if negative)."""
        reader = self._reading()
        with self._busy:
            return reader.read1(operator.index(size))

    def readinto(self, b: WriteableBuffer) -> int:
        reader = self._reading()
        with self._busy:
            return reader.readinto(b, once=False)

    def readinto1(self, b: WriteableBuffer) -> int:
        reader = self._reading()
        with self._busy:
            return reader.readinto(b, once=True)

    def readline(self, size: int | None = -1) -> bytes:
        """One line, with its ``\\n``; at most *size* bytes if *size* is not negative."""
        reader = self._reading()
        with self._busy:
            return reader.readline(-1 if size is None else operator.index(size))

    def peek(self, size: int = 0) -> bytes:
        """Bytes ahead of the position without moving it: at least one unless at the end, never past the frame."""
        reader = self._reading()
        with self._busy:
            return reader.peek(operator.index(size))

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move to a position of the original data; nothing is decoded until the next read."""
        if self._mode != _READ:
            self._check_not_closed()
            raise io.UnsupportedOperation("Seeking is only supported on files open for reading")
        reader = self._reading()
        with self._busy:
            return reader.seek(operator.index(offset), whence)

    def tell(self) -> int:
        """Position in the original data (bytes written so far, when writing)."""
        self._check_not_closed()
        return self._reader.pos if self._reader is not None else self._written

    # -- writing --

    def write(self, data: ReadableBuffer) -> int:
        """Compress *data*; returns its length in bytes. Frames reach the file as they fill."""
        if self._mode != _WRITE or self._compressor is None:
            self._check_not_closed()
            raise io.UnsupportedOperation("File not open for writing")
        view = as_byte_view(data)
        with self._busy:
            out = self._compressor.compress(view)
            if out:
                self._fp.write(out)
            self._written += view.nbytes
        return view.nbytes


@overload
def open(
    file: StrOrBytesPath | FileObject,
    mode: BinaryMode = "rb",
    *,
    level: int | None = None,
    threads: int = 1,
    block_size: int | None = None,
    max_distinct: int | None = None,
    threshold: int | None = None,
    escape_limit: int | None = None,
    encoding: None = None,
    errors: None = None,
    newline: None = None,
) -> BytePairFile: ...


@overload
def open(
    file: StrOrBytesPath | FileObject,
    mode: TextMode,
    *,
    level: int | None = None,
    threads: int = 1,
    block_size: int | None = None,
    max_distinct: int | None = None,
    threshold: int | None = None,
    escape_limit: int | None = None,
    encoding: str | None = None,
    errors: str | None = None,
    newline: str | None = None,
) -> io.TextIOWrapper: ...


@overload
def open(
    file: StrOrBytesPath | FileObject,
    mode: str,
    *,
    level: int | None = None,
    threads: int = 1,
    block_size: int | None = None,
    max_distinct: int | None = None,
    threshold: int | None = None,
    escape_limit: int | None = None,
    encoding: str | None = None,
    errors: str | None = None,
    newline: str | None = None,
) -> BytePairFile | io.TextIOWrapper: ...


def open(
    file: StrOrBytesPath | FileObject,
    mode: str = "rb",
    *,
    level: int | None = None,
    threads: int = 1,
    block_size: int | None = None,
    max_distinct: int | None = None,
    threshold: int | None = None,
    escape_limit: int | None = None,
    encoding: str | None = None,
    errors: str | None = None,
    newline: str | None = None,
) -> BytePairFile | io.TextIOWrapper:
    """Open a bytepair file in binary or text mode, as ``lzma.open`` does.

    Binary modes (``"rb"`` by default, ``"wb"``, ``"xb"``, ``"ab"``, or without
    the ``b``) return a ``BytePairFile``; text modes (``"rt"``, ``"wt"``,
    ``"xt"``, ``"at"``) wrap it in ``io.TextIOWrapper`` with *encoding*,
    *errors* and *newline*, which binary modes refuse.
    """
    if "t" in mode:
        if "b" in mode:
            raise ValueError(f"invalid mode: {mode!r}")
    else:
        for name, value in (("encoding", encoding), ("errors", errors), ("newline", newline)):
            if value is not None:
                raise ValueError(f"argument {name!r} is not supported in binary mode")
    binary = BytePairFile(
        file,
        mode.replace("t", ""),
        level=level,
        threads=threads,
        block_size=block_size,
        max_distinct=max_distinct,
        threshold=threshold,
        escape_limit=escape_limit,
    )
    if "t" not in mode:
        return binary
    try:
        return io.TextIOWrapper(binary, io.text_encoding(encoding), errors, newline)
    except BaseException:
        binary.close()
        raise


def _count(name: str, value: object) -> int:
    try:
        n = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
    if n < 0:
        raise ValueError(f"{name} must be non-negative, got {n}")
    return n


def decompress_range(data: object, start: int, length: int, *, max_length: int | None = None) -> bytes:
    """Original bytes ``[start, start + length)`` of one or more concatenated streams in *data*.

    Like slicing the decompressed data: a range reaching past the end gives the
    bytes up to the end, one starting at or past the end gives ``b""``. Only
    the frames overlapping the range are decoded (each checked by its CRCs);
    every frame header, stream header and end record is checked, the other
    frames' bodies are not. ``OutputLimitError`` if the result would be longer
    than *max_length* (raised before anything is decoded), so
    ``length=sys.maxsize`` can ask for "the rest, if not too much".
    """
    start = _count("start", start)
    length = _count("length", length)
    if max_length is not None:
        max_length = _count("max_length", max_length)
    frames = _FrameMap(MemorySource(as_byte_view(data)))
    stop = min(start + length, frames.map_all())
    if start >= stop:
        return b""
    if max_length is not None and stop - start > max_length:
        raise OutputLimitError(f"range of {stop - start} bytes exceeds max_length={max_length}")
    i = frames.locate(start)
    assert i is not None
    parts = []
    pos = start
    while pos < stop:
        out = frames.decode(i)
        first = frames.start(i)
        piece = out[pos - first : stop - first].tobytes()
        parts.append(piece)
        pos += len(piece)
        i += 1
    return b"".join(parts)
