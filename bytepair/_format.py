"""The bytepair container, version 1: packing and unpacking, with validation.

See docs/FORMAT.md for the byte-level description. This module knows bytes and
columns only: it neither compresses nor expands. Everything it reads is checked
before anything is allocated from it.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib

import numpy as np
import numpy.typing as npt

from ._errors import CorruptDataError, TruncatedDataError, UnsupportedFormatError
from ._tables import PairTables, concat_ranges

__all__ = [
    "MAGIC",
    "VERSION",
    "STREAM_HEADER_SIZE",
    "FRAME_HEADER_SIZE",
    "END_SIZE",
    "MAX_FRAME_SIZE",
    "FrameHeader",
    "fresh_code_runs",
    "need",
    "max_body_size",
    "StreamEnd",
    "pack_stream_header",
    "unpack_stream_header",
    "pack_frame",
    "unpack_frame_header",
    "unpack_frame_body",
    "pack_end",
    "unpack_end",
    "KIND_FRAME",
    "KIND_END",
]

MAGIC = b"BYPR"
VERSION = 1
KIND_FRAME = 0x46  # "F"
KIND_END = 0x45  # "E"
MAX_FRAME_SIZE = 1 << 26
"""Most original bytes one frame may describe; bounds a decoder's memory per frame."""

_STREAM_HEADER = struct.Struct("<4sBBH")  # magic, version, flags, check
_FRAME_HEADER = struct.Struct("<BIIII")  # kind, n_blocks, orig_size, body_size, content_crc
_END = struct.Struct("<BIQI")  # kind, n_frames, total_size, total_crc
STREAM_HEADER_SIZE = _STREAM_HEADER.size
FRAME_HEADER_SIZE = _FRAME_HEADER.size + 4  # + frame_crc
END_SIZE = _END.size + 4  # + end_crc

_PER_BLOCK = 7  # orig_len u16, payload_len u16, n_fresh u8, n_recycled u8, n_runs u8


@dataclasses.dataclass(frozen=True)
class FrameHeader:
    n_blocks: int
    orig_size: int
    body_size: int
    content_crc: int
    frame_crc: int
    header: bytes  # the fields the frame CRC covers, as read


@dataclasses.dataclass(frozen=True)
class StreamEnd:
    n_frames: int
    total_size: int
    total_crc: int


def _check16(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFF


def pack_stream_header() -> bytes:
    head = _STREAM_HEADER.pack(MAGIC, VERSION, 0, 0)[:-2]
    return head + struct.pack("<H", _check16(head))


def unpack_stream_header(buf: bytes | memoryview, offset: int = 0) -> None:
    """Validate the stream header at *offset* (the caller ensures the bytes are there)."""
    magic, version, flags, check = _STREAM_HEADER.unpack_from(buf, offset)
    if magic != MAGIC:
        raise UnsupportedFormatError(f"not a bytepair stream (bad magic number at byte {offset})")
    if version != VERSION:
        raise UnsupportedFormatError(f"bytepair format version {version} is not supported (this reader knows {VERSION})")
    if flags != 0:
        raise UnsupportedFormatError(f"stream header at byte {offset} sets unknown flags {flags:#04x}")
    if check != _check16(bytes(buf[offset : offset + 6])):
        raise CorruptDataError(f"stream header at byte {offset} fails its check")


def max_body_size(n_blocks: int, orig_size: int) -> int:
    """The largest body a frame of *n_blocks* and *orig_size* bytes can have."""
    return n_blocks * (_PER_BLOCK + 2 * 128 + 2 * 255 + 3 * 255) + orig_size


def unpack_frame_header(buf: bytes | memoryview, offset: int, frame_index: int) -> FrameHeader:
    """Read and range-check a frame header (its kind byte already seen)."""
    kind, n_blocks, orig_size, body_size, content_crc = _FRAME_HEADER.unpack_from(buf, offset)
    (frame_crc,) = struct.unpack_from("<I", buf, offset + _FRAME_HEADER.size)
    where = f"frame {frame_index} (byte {offset})"
    if not 1 <= orig_size <= MAX_FRAME_SIZE:
        raise CorruptDataError(f"{where}: original size {orig_size} is out of range 1..{MAX_FRAME_SIZE}")
    if not 1 <= n_blocks <= orig_size:
        raise CorruptDataError(f"{where}: {n_blocks} blocks cannot hold {orig_size} bytes")
    if not n_blocks * _PER_BLOCK <= body_size <= max_body_size(n_blocks, orig_size):
        raise CorruptDataError(f"{where}: body size {body_size} is impossible for {n_blocks} blocks")
    header = bytes(buf[offset : offset + _FRAME_HEADER.size])
    return FrameHeader(n_blocks, orig_size, body_size, content_crc, frame_crc, header)


def fresh_code_runs(
    n_merges: npt.NDArray[np.int64], n_fresh: npt.NDArray[np.int64], code: npt.NDArray[np.uint8]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """Run-length form of each block's fresh codes: (runs per block, (skip, take) bytes)."""
    first_merge = np.cumsum(n_merges) - n_merges
    codes = code[concat_ranges(first_merge, n_fresh)].astype(np.int64)
    block = np.repeat(np.arange(len(n_fresh)), n_fresh)
    block_head = np.ones(len(codes), dtype=np.bool_)
    block_head[1:] = block[1:] != block[:-1]
    previous = np.where(block_head, 256, np.roll(codes, 1))
    heads = np.flatnonzero(block_head | (previous - codes != 1))
    skip = previous[heads] - codes[heads] - 1
    take = np.diff(heads, append=len(codes))
    runs = np.stack((skip, take), axis=1).astype(np.uint8).ravel()
    return np.bincount(block[heads], minlength=len(n_fresh)).astype(np.int64), runs


def pack_frame(t: PairTables, content_crc: int) -> bytes:
    """Serialize a run of blocks as one frame."""
    n_blocks = len(t.orig_len)
    n_recycled = t.n_merges - t.n_fresh
    n_runs, runs = fresh_code_runs(t.n_merges, t.n_fresh, t.code)
    first_merge = np.cumsum(t.n_merges) - t.n_merges
    fresh_at = concat_ranges(first_merge, t.n_fresh)
    recycled_at = concat_ranges(first_merge + t.n_fresh, n_recycled)
    body = b"".join(
        (
            t.orig_len.astype("<u2").tobytes(),
            t.payload_len.astype("<u2").tobytes(),
            t.n_fresh.astype(np.uint8).tobytes(),
            n_recycled.astype(np.uint8).tobytes(),
            n_runs.astype(np.uint8).tobytes(),
            runs.tobytes(),
            np.stack((t.left[fresh_at], t.right[fresh_at]), axis=1).tobytes(),
            np.stack((t.code[recycled_at], t.left[recycled_at], t.right[recycled_at]), axis=1).tobytes(),
            t.payload.tobytes(),
        )
    )
    header = _FRAME_HEADER.pack(KIND_FRAME, n_blocks, int(t.orig_len.sum()), len(body), content_crc)
    frame_crc = zlib.crc32(body, zlib.crc32(header))
    return header + struct.pack("<I", frame_crc) + body


def unpack_frame_body(h: FrameHeader, body: bytes | memoryview, frame_index: int, first_block: int) -> PairTables:
    """Check a frame's body against its header and CRC, and split it into columns."""
    where = f"frame {frame_index}"
    if zlib.crc32(body, zlib.crc32(h.header)) != h.frame_crc:
        raise CorruptDataError(f"{where}: compressed data is corrupt (frame checksum mismatch)")
    nb = h.n_blocks
    raw = np.frombuffer(body, dtype=np.uint8)
    at = 0

    def take(n: int) -> npt.NDArray[np.uint8]:
        nonlocal at
        if at + n > len(raw):
            raise CorruptDataError(f"{where}: body is shorter than its columns")
        part = raw[at : at + n]
        at += n
        return part

    orig_len = take(2 * nb).view("<u2").astype(np.int64)
    payload_len = take(2 * nb).view("<u2").astype(np.int64)
    n_fresh = take(nb).astype(np.int64)
    n_recycled = take(nb).astype(np.int64)
    n_runs = take(nb).astype(np.int64)
    runs = take(2 * int(n_runs.sum())).reshape(-1, 2).astype(np.int64)
    fresh = take(2 * int(n_fresh.sum())).reshape(-1, 2)
    recycled = take(3 * int(n_recycled.sum())).reshape(-1, 3)
    payload = take(int(payload_len.sum()))
    if at != len(raw):
        raise CorruptDataError(f"{where}: {len(raw) - at} bytes after the last payload")

    bad = np.flatnonzero((orig_len < 1) | (payload_len < 1) | (payload_len > orig_len) | ((n_runs == 0) != (n_fresh == 0)))
    if len(bad):
        raise CorruptDataError(f"block {first_block + int(bad[0])}: impossible lengths in the block header")
    if int(orig_len.sum()) != h.orig_size:
        raise CorruptDataError(f"{where}: blocks hold {int(orig_len.sum())} bytes, frame header says {h.orig_size}")

    # fresh codes from runs: walking down from 255, skip `skip` values, take `take`
    skip, take_n = runs[:, 0], runs[:, 1]
    run_block = np.repeat(np.arange(nb, dtype=np.int64), n_runs)
    walked = np.cumsum(skip + take_n)
    has_runs = n_runs > 0
    first_run = (np.cumsum(n_runs) - n_runs)[has_runs]
    walked_before_block = (walked - skip - take_n)[first_run]
    walked_in_block = walked - np.repeat(walked_before_block, n_runs[has_runs])
    took = np.bincount(run_block, weights=take_n, minlength=nb).astype(np.int64)
    span = np.bincount(run_block, weights=skip + take_n, minlength=nb).astype(np.int64)
    bad = np.flatnonzero((took != n_fresh) | (span > 256))
    if len(runs) and take_n.min() < 1:
        bad = np.append(bad, run_block[int(np.argmin(take_n))])
    if len(bad):
        raise CorruptDataError(f"block {first_block + int(bad.min())}: fresh code runs do not describe its codes")
    top = 255 - (walked_in_block - take_n)  # first code of each run
    fresh_codes = (-concat_ranges(-top, take_n)).astype(np.uint8)

    n_merges = n_fresh + n_recycled
    first_merge = np.cumsum(n_merges) - n_merges
    fresh_at = concat_ranges(first_merge, n_fresh)
    recycled_at = concat_ranges(first_merge + n_fresh, n_recycled)
    m_total = int(n_merges.sum())
    code = np.empty(m_total, dtype=np.uint8)
    left = np.empty(m_total, dtype=np.uint8)
    right = np.empty(m_total, dtype=np.uint8)
    code[fresh_at] = fresh_codes
    left[fresh_at] = fresh[:, 0]
    right[fresh_at] = fresh[:, 1]
    code[recycled_at] = recycled[:, 0]
    left[recycled_at] = recycled[:, 1]
    right[recycled_at] = recycled[:, 2]
    return PairTables(orig_len, n_merges, n_fresh, code, left, right, payload_len, payload, first_block)


def pack_end(n_frames: int, total_size: int, total_crc: int) -> bytes:
    fields = _END.pack(KIND_END, n_frames, total_size, total_crc)
    return fields + struct.pack("<I", zlib.crc32(fields))


def unpack_end(buf: bytes | memoryview, offset: int) -> StreamEnd:
    kind, n_frames, total_size, total_crc = _END.unpack_from(buf, offset)
    (check,) = struct.unpack_from("<I", buf, offset + _END.size)
    if check != zlib.crc32(bytes(buf[offset : offset + _END.size])):
        raise CorruptDataError(f"end of stream at byte {offset} fails its check")
    return StreamEnd(n_frames, total_size, total_crc)


def need(buf: bytes | memoryview, offset: int, size: int, what: str) -> None:
    """Raise TruncatedDataError unless *size* bytes of *what* are there at *offset*."""
    if offset + size > len(buf):
        raise TruncatedDataError(f"data ends inside the {what} at byte {offset} (needs {size} bytes, has {len(buf) - offset})")
