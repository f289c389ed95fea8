"""Summaries of bytepair files from their headers alone, for ``bytepair -l``.

Listing must stay fast on large files, so frame bodies are skipped (a seek when
the file allows it, else read and discarded) and nothing is decoded. The walk
(``container.walk.Walker``) still checks every header, and each end record against
the frames before it, so a damaged container is reported rather than summarised.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import BinaryIO

from .._errors import BytePairError, UnsupportedFormatError
from .walk import FileSource, FrameEntry, Walker

__all__ = ["FrameEntry", "Listing", "list_frames", "list_streams"]


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


def list_frames(f: BinaryIO) -> list[FrameEntry]:
    """Every frame of every stream of *f*, with the checks of ``list_streams`` (which it runs)."""
    frames: list[FrameEntry] = []
    list_streams(f, frames.append)
    return frames


def list_streams(f: BinaryIO, on_frame: Callable[[FrameEntry], object] | None = None) -> Listing:
    """Walk every stream of *f* from its current position to its end, reading headers only
    (and making sure every body is there).

    *on_frame* is called with each frame's entry as its header is read.
    """
    walker = Walker(FileSource(f, f.seekable()), whole=True)
    try:
        while (frame := walker.next()) is not None:
            if on_frame is not None:
                on_frame(frame)
    except BytePairError:
        if not walker.starts_as_bytepair:  # the file does not even start as one: say so, as gzip -l does
            raise UnsupportedFormatError("not a bytepair file" + (" (it is empty)" if walker.empty else "")) from None
        raise
    return Listing(walker.n_frames, walker.n_blocks, walker.at, walker.size, walker.crc)
