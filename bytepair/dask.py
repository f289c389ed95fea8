"""Reading bytepair files with Dask: ``read_text`` splits large files at frame boundaries.

gzip and xz files cannot be split: a reader must start at their beginning. A
bytepair file can, because every frame header says how long the frame is in the
file and how many original bytes it holds. ``read_text(..., blocksize=...)``
lists a file's frame headers (``bytepair.container.listing.list_frames``, no
bodies read), cuts the list into runs of about *blocksize* compressed bytes,
and gives each run to a task that reads just those bytes and decodes just those
frames, as ``dask.bag.read_text`` cuts a plain file: a line belongs to the
partition where it starts, and the task reads on into the frames that follow
only as far as that last line goes (one frame, unless a line is longer). No task
waits for another, so the partitions decode in parallel wherever they run.

Importing this module registers ``compression="bytepair"`` with fsspec, so its
tasks need nothing else on the workers; ``register_on(client)`` does it for
Dask's own readers (``dask.bag.read_text(..., compression="infer")``).
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator, Sequence
from typing import Any

import dask.bag
import fsspec
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph
from dask.sizeof import sizeof
from dask.utils import parse_bytes

from . import BytePairError, CorruptDataError
from . import fsspec as _registration  # noqa: F401 - registers compression="bytepair" wherever this runs
from .container.listing import FrameEntry, list_frames
from .container.walk import decode_entry
from .fsspec import NamedBytePairFile

__all__ = ["Piece", "plan", "read_text", "register_on"]

_HEADER_BLOCK = 1 << 16
"""Bytes a remote file fetches at a time while its frame headers are listed."""


@dataclasses.dataclass(frozen=True)
class Piece:
    """A run of consecutive frames of one file: what one task reads and decodes."""

    path: str
    frames: tuple[FrameEntry, ...]

    @property
    def compressed_size(self) -> int:
        """Bytes from its first frame to the end of its last (with any stream boundary between)."""
        return self.frames[-1].offset + self.frames[-1].size - self.frames[0].offset if self.frames else 0


@dataclasses.dataclass(frozen=True)
class Decoded:
    """What a task decoded: the original bytes of the lines its partition holds, and how many frames that took."""

    data: bytes
    frames_decoded: int


def _sizeof_decoded(decoded: Decoded) -> int:
    """What a result holds, so that the scheduler runs the next steps where it lies instead of moving it."""
    return len(decoded.data) + 64


sizeof.register(Decoded, _sizeof_decoded)  # type: ignore[no-untyped-call]


def plan(
    urlpath: str | Sequence[str], blocksize: int | str, storage_options: dict[str, Any] | None = None
) -> list[Piece]:
    """The pieces ``read_text`` gives its tasks: each file's frames in runs of about *blocksize* compressed bytes.

    A run closes once it reaches *blocksize*, so every piece holds at least one
    frame, and a frame larger than *blocksize* is a piece alone.
    """
    fs, paths = _files(urlpath, storage_options)
    return [piece for path in paths for piece in _cut(fs, path, _size(blocksize))]


def read_text(
    urlpath: str | Sequence[str],
    blocksize: int | str | None = None,
    encoding: str = "utf-8",
    *,
    storage_options: dict[str, Any] | None = None,
) -> dask.bag.Bag:
    """The lines of bytepair-compressed text files as a ``dask.bag``, as ``dask.bag.read_text`` gives them.

    Every file matched by *urlpath* (a path, glob or list; any fsspec URL) is
    read as bytepair streams, whatever its name. Without *blocksize* each file
    is one partition; with it (bytes, or a string such as ``"64MiB"``) each file
    is split at frame boundaries into partitions of about that many compressed
    bytes. Lines keep their ends; ``\\r\\n`` and ``\\r`` read as ``\\n`` (universal
    newlines). Splitting needs an encoding in which a newline is the byte
    ``0x0a`` and no other character contains that byte (UTF-8, ASCII, Latin-1).
    A damaged file raises its ``BytePairError`` with the file's path in the
    message, when the bag is computed (or, with *blocksize*, already here if a
    frame header is damaged).
    """
    fs, paths = _files(urlpath, storage_options)
    if not paths:
        raise FileNotFoundError(f"no files match {urlpath!r}")
    "".encode(encoding)  # an unknown encoding fails here, not on a worker
    if blocksize is None:
        name = "bytepair-read-text-" + tokenize(fs, paths, [fs.ukey(path) for path in paths], encoding)
        graph: dict[Any, Any] = {(name, i): (_lines_of_file, fs, path, encoding) for i, path in enumerate(paths)}
        return dask.bag.Bag(HighLevelGraph.from_collections(name, graph), name, len(paths))
    if "\n".encode(encoding) != b"\n":
        raise ValueError(f"cannot split {encoding} text at newline bytes; read it with blocksize=None")
    size = _size(blocksize)
    files = [_cut(fs, path, size) for path in paths]
    token = tokenize(fs, files, [fs.ukey(path) for path in paths], encoding)  # a changed file gets new keys
    name = "bytepair-read-text-" + token
    graph = {}
    out = 0
    for number, pieces in enumerate(files):
        # every frame of the file, held once on the cluster: a task may need those after its own
        frames = (f"bytepair-frames-{token}", number)
        graph[frames] = tuple(frame for piece in pieces for frame in piece.frames)
        lo = 0
        for piece in pieces:
            hi = lo + len(piece.frames)
            decoded = (f"bytepair-decode-{token}", out)
            graph[decoded] = (_decode_lines, fs, piece.path, frames, lo, hi)
            graph[(name, out)] = (_lines_of, decoded, encoding)
            lo = hi
            out += 1
    return dask.bag.Bag(HighLevelGraph.from_collections(name, graph), name, out)


def register_on(client: Any) -> None:
    """Register ``compression="bytepair"`` with fsspec on every worker of *client*, now and later.

    Needed for Dask's own readers (such as ``dask.bag.read_text``), whose tasks
    never import bytepair; ``read_text`` here does not need it.
    """
    from ._dask_plugin import FsspecRegistration

    client.register_plugin(FsspecRegistration(), name="bytepair-fsspec")


def _size(blocksize: int | str) -> int:
    size = parse_bytes(blocksize) if isinstance(blocksize, str) else blocksize
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ValueError(f"blocksize must be a positive number of bytes, got {blocksize!r}")
    return size


def _files(urlpath: str | Sequence[str], storage_options: dict[str, Any] | None) -> tuple[Any, list[str]]:
    fs, _, paths = fsspec.get_fs_token_paths(urlpath, mode="rb", storage_options=storage_options)
    return fs, sorted(paths) if isinstance(urlpath, str) else list(paths)


def _where(fs: Any, path: str) -> str:
    return str(fs.unstrip_protocol(path))


def _cut(fs: Any, path: str, blocksize: int) -> list[Piece]:
    """*path*'s frames, from their headers, in runs of at least *blocksize* bytes (the last may be less)."""
    try:
        # headers only, seeking over bodies: a remote file should fetch small blocks, not its default 5 MB ones
        with fs.open(path, "rb", block_size=_HEADER_BLOCK, cache_type="readahead") as f:
            frames = list_frames(f)
    except BytePairError as exc:
        raise type(exc)(f"{_where(fs, path)}: {exc}") from None
    pieces: list[Piece] = []
    run: list[FrameEntry] = []
    size = 0
    for frame in frames:
        run.append(frame)
        size += frame.size
        if size >= blocksize:
            pieces.append(Piece(path, tuple(run)))
            run, size = [], 0
    if run or not pieces:  # an empty file (no frames) still makes one empty partition
        pieces.append(Piece(path, tuple(run)))
    return pieces


def _decode_lines(fs: Any, path: str, frames: Sequence[FrameEntry], lo: int, hi: int) -> Decoded:
    """The lines of the original bytes of ``frames[lo:hi]``, whole, cut as ``dask.bag.read_text``
    cuts a plain file: the first piece of a file starts at its first byte, any other just after
    its first newline; the end moves on to the first newline after the piece, reading the
    frames that follow as far as that (one, unless a line is longer than a frame)."""
    if lo == hi:
        return Decoded(b"", 0)
    data = _decode_frames(fs, path, frames[lo:hi])
    start = 0
    if lo:
        start = data.find(b"\n") + 1
        if not start:  # no line starts here: the piece lies inside a line that an earlier partition reads
            return Decoded(b"", hi - lo)
    parts: list[bytes | memoryview] = [memoryview(data)[start:]]
    more = hi
    # a line that starts right after the piece's last byte is this partition's too (the next
    # one skips to its first newline), so a piece ending in a newline reads on as well
    while more < len(frames):
        following = _decode_frames(fs, path, frames[more : more + 1])
        more += 1
        end = following.find(b"\n") + 1
        if end:
            parts.append(memoryview(following)[:end])
            break
        parts.append(following)
    return Decoded(b"".join(parts), more - lo)


def _decode_frames(fs: Any, path: str, frames: Sequence[FrameEntry]) -> bytes:
    """Read consecutive frames' compressed bytes in one request and decode them (``_cut`` checked their headers)."""
    start = frames[0].offset
    end = frames[-1].offset + frames[-1].size
    try:
        blob = memoryview(fs.cat_file(path, start=start, end=end))
        parts = []
        for frame in frames:
            record = blob[frame.offset - start : frame.offset - start + frame.size]
            if bytes(record[: len(frame.head)]) != frame.head:
                raise CorruptDataError(f"the record at byte {frame.offset} changed since it was listed")
            parts.append(decode_entry(frame, record[len(frame.head) :]).data)
    except BytePairError as exc:
        raise type(exc)(f"{_where(fs, path)}: {exc}") from None
    return b"".join(parts)


def _lines_of(decoded: Decoded, encoding: str) -> list[str]:
    return _lines(decoded.data, encoding)


def _lines(data: bytes, encoding: str) -> list[str]:
    return list(io.StringIO(data.decode(encoding), newline=None))


def _lines_of_file(fs: Any, path: str, encoding: str) -> list[str]:
    """A whole file's lines, streamed through ``BytePairFile`` (one frame held at a time)."""
    with fs.open(path, "rb") as raw, NamedBytePairFile(raw) as f:
        return list(_read_lines(f, encoding))


def _read_lines(f: NamedBytePairFile, encoding: str) -> Iterator[str]:
    with io.TextIOWrapper(f, encoding=encoding, newline=None) as text:
        yield from text
