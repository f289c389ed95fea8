"""The bytepair container, version 2: packing and unpacking, with validation.

See docs/FORMAT.md for the byte-level description. This module knows bytes and
columns only: it neither compresses nor expands. Everything it reads is checked
before anything is allocated from it.
"""

from __future__ import annotations

import dataclasses
import itertools
import struct
import zlib
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from .._errors import CorruptDataError, TruncatedDataError, UnsupportedFormatError
from ..core import faults
from ..core.escape import Escapes
from ..core.tables import PairTables, concat_ranges, run_edges
from .crc import crc32, crc32_combine

__all__ = [
    "BLOCK_HEADER_SIZE",
    "COMPACT",
    "COMPACT_ENCODED",
    "COMPACT_STORED",
    "END_SIZE",
    "FRAME_HEADER_SIZE",
    "KIND_END",
    "KIND_FRAME",
    "MAGIC",
    "MAX_COMPACT_SIZE",
    "MAX_FRAME_SIZE",
    "NO_FRAME_CRC",
    "STREAM_HEADER_SIZE",
    "VERSION",
    "CompactRecord",
    "FrameHeader",
    "StreamEnd",
    "code_set_sizes",
    "compact_from_frame",
    "compact_record",
    "compact_stored",
    "frame_from_body",
    "max_body_size",
    "need",
    "one_frame_stream",
    "pack_code_sets",
    "pack_end",
    "pack_frame",
    "pack_stream_header",
    "read_compact_head",
    "unpack_compact",
    "unpack_end",
    "unpack_frame_body",
    "unpack_frame_header",
    "unpack_stream_header",
]

MAGIC = b"BYPR"
VERSION = 2
KIND_FRAME = 0x46  # "F"
KIND_END = 0x45  # "E"
MAX_FRAME_SIZE = 1 << 26
"""Most original bytes one frame may describe; bounds a decoder's memory per frame."""

_STREAM_HEADER = struct.Struct("<4sBBH")  # magic, version, flags, check
_FRAME_HEADER = struct.Struct("<BIIII")  # kind, n_blocks, orig_size, body_size, content_crc
_END = struct.Struct("<BIQI")  # kind, n_frames, total_size, total_crc
STREAM_HEADER_SIZE = _STREAM_HEADER.size
FRAME_HEADER_SIZE = _FRAME_HEADER.size + 4  # + frame_crc
_FRAME_HEADER_AND_CRC = struct.Struct("<BIIIII")  # the fields, then frame_crc: a reader's one unpack
END_SIZE = _END.size + 4  # + end_crc
_END_AND_CRC = struct.Struct("<BIQII")  # the fields, then end_crc: a reader's one unpack

BLOCK_HEADER_SIZE = 9  # orig_len u16, payload_len u16, n_fresh u8, n_recycled u8, code-set kind u8, n_escaped u16


class FrameHeader(NamedTuple):
    """A frame header as read (a named tuple: a reader makes one per frame, and a
    frozen dataclass cost 1 us each)."""

    n_blocks: int
    orig_size: int
    body_size: int
    content_crc: int
    frame_crc: int
    header: bytes  # the fields the frame CRC covers, as read


class StreamEnd(NamedTuple):
    n_frames: int
    total_size: int
    total_crc: int


@dataclasses.dataclass
class StreamTally:
    """A stream's frames so far: what its end record must say.

    Every writer and reader of the stream structure keeps one, so the end
    record is written and checked by the same rule.
    """

    n_frames: int = 0
    n_blocks: int = 0
    size: int = 0
    crc: int = 0

    def add(self, orig_size: int, content_crc: int, n_blocks: int) -> None:
        self.n_frames += 1
        self.n_blocks += n_blocks
        self.crc = crc32_combine(self.crc, content_crc, orig_size)
        self.size += orig_size

    def add_header(self, header: FrameHeader) -> None:
        self.add(header.orig_size, header.content_crc, header.n_blocks)

    def pack_end(self) -> bytes:
        return pack_end(self.n_frames, self.size, self.crc)

    def check_end(self, end: StreamEnd, offset: int) -> None:
        """Raise ``CorruptDataError`` unless the end record at *offset* matches the frames read."""
        if (end.n_frames, end.total_size, end.total_crc) != (self.n_frames, self.size, self.crc):
            raise CorruptDataError(
                f"end of stream at byte {offset} does not match the stream "
                f"({end.n_frames} frames / {end.total_size} bytes declared, "
                f"{self.n_frames} / {self.size} read, or a CRC-32 mismatch)"
            )


def _check16(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFF


def pack_stream_header(flags: int = 0) -> bytes:
    head = _STREAM_HEADER.pack(MAGIC, VERSION, flags, 0)[:-2]
    return head + struct.pack("<H", _check16(head))


def unpack_stream_header(buf: bytes | memoryview, offset: int = 0) -> int:
    """Validate the stream header at *offset* (the caller ensures the bytes are there);
    returns its flags (0, or ``COMPACT``)."""
    magic, version, flags, check = _STREAM_HEADER.unpack_from(buf, offset)
    if magic != MAGIC:
        raise UnsupportedFormatError(f"not a bytepair stream (bad magic number at byte {offset})")
    if version != VERSION:
        raise UnsupportedFormatError(
            f"bytepair format version {version} is not supported (this reader knows {VERSION})"
        )
    if check != zlib.crc32(buf[offset : offset + 6]) & 0xFFFF:
        raise CorruptDataError(f"stream header at byte {offset} fails its check")
    if flags not in (0, COMPACT):
        raise UnsupportedFormatError(f"stream header at byte {offset} sets unknown flags {flags:#04x}")
    return int(flags)


def max_body_size(n_blocks: int, orig_size: int) -> int:
    """The largest body a frame of *n_blocks* and *orig_size* bytes can have.

    An encoded block never takes more bytes than its data (it would be stored
    instead), so a reader never buffers more than about one frame's output.
    """
    return n_blocks * BLOCK_HEADER_SIZE + orig_size


def unpack_frame_header(buf: bytes | memoryview, offset: int, frame_index: int) -> FrameHeader:
    """Read and range-check a frame header (its kind byte already seen)."""
    _kind, n_blocks, orig_size, body_size, content_crc, frame_crc = _FRAME_HEADER_AND_CRC.unpack_from(buf, offset)
    if not (
        1 <= orig_size <= MAX_FRAME_SIZE
        and 1 <= n_blocks <= orig_size
        and n_blocks * BLOCK_HEADER_SIZE <= body_size <= max_body_size(n_blocks, orig_size)
    ):
        where = f"frame {frame_index} (byte {offset})"
        if not 1 <= orig_size <= MAX_FRAME_SIZE:
            raise CorruptDataError(f"{where}: original size {orig_size} is out of range 1..{MAX_FRAME_SIZE}")
        if not 1 <= n_blocks <= orig_size:
            raise CorruptDataError(f"{where}: {n_blocks} blocks cannot hold {orig_size} bytes")
        raise CorruptDataError(f"{where}: body size {body_size} is impossible for {n_blocks} blocks")
    header = bytes(buf[offset : offset + _FRAME_HEADER.size])
    return FrameHeader(n_blocks, orig_size, body_size, content_crc, frame_crc, header)


CODE_SET_BITMAP = 0xFF
"""A block's code-set byte with this value: its fresh codes are a 32-byte bitmap."""
MAX_RUNS = 16
"""More runs than this cost more than the bitmap, so the writer uses the bitmap."""


def _fresh_code_runs(
    n_merges: npt.NDArray[np.int64], n_fresh: npt.NDArray[np.int64], code: npt.NDArray[np.uint8]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Each block's fresh codes as descending runs: (codes, runs per block, skip, take)."""
    first_merge = np.cumsum(n_merges) - n_merges
    codes = code[concat_ranges(first_merge, n_fresh)].astype(np.int64)
    block = np.repeat(np.arange(len(n_fresh)), n_fresh)
    block_head = np.ones(len(codes), dtype=np.bool_)
    block_head[1:] = block[1:] != block[:-1]
    previous = np.where(block_head, 256, np.roll(codes, 1))
    heads = np.flatnonzero(block_head | (previous - codes != 1))
    skip = previous[heads] - codes[heads] - 1
    take = np.diff(heads, append=len(codes))
    return codes, np.bincount(block[heads], minlength=len(n_fresh)).astype(np.int64), skip, take


def code_set_sizes(
    n_merges: npt.NDArray[np.int64], n_fresh: npt.NDArray[np.int64], code: npt.NDArray[np.uint8]
) -> npt.NDArray[np.int64]:
    """Bytes each block's code set takes in its cheaper form, without packing it."""
    n_runs = _fresh_code_runs(n_merges, n_fresh, code)[1]
    sizes: npt.NDArray[np.int64] = np.where(n_runs > MAX_RUNS, 32, 2 * n_runs)
    return sizes


def pack_code_sets(
    n_merges: npt.NDArray[np.int64], n_fresh: npt.NDArray[np.int64], code: npt.NDArray[np.uint8]
) -> tuple[npt.NDArray[np.uint8], bytes, npt.NDArray[np.int64]]:
    """Each block's set of fresh codes in its cheaper form, runs or bitmap.

    Returns the per-block code-set bytes, the packed sets, and each set's size.
    """
    codes, n_runs, skip, take = _fresh_code_runs(n_merges, n_fresh, code)
    bitmap = n_runs > MAX_RUNS
    kind = np.where(bitmap, CODE_SET_BITMAP, n_runs).astype(np.uint8)
    size = np.where(bitmap, 32, 2 * n_runs)
    blob = np.zeros(int(size.sum()), dtype=np.uint8)
    offset = np.cumsum(size) - size
    run_block = np.repeat(np.arange(len(n_runs)), n_runs)
    in_runs = ~bitmap[run_block]
    pairs = np.stack((skip[in_runs], take[in_runs]), axis=1).ravel()
    blob[concat_ranges(offset[~bitmap], size[~bitmap])] = pairs
    if bitmap.any():
        code_block = np.repeat(np.arange(len(n_fresh)), n_fresh)
        flags = np.zeros((len(n_fresh), 256), dtype=np.uint8)
        flags[code_block, 255 - codes] = 1
        blob[concat_ranges(offset[bitmap], size[bitmap])] = np.packbits(flags[bitmap], axis=1).ravel()
    return kind, blob.tobytes(), size


_CODES_PER_RUN = 1 << 16
"""Code sets are unpacked in runs of blocks with about this many fresh codes: a frame may
hold a fresh code for every two bytes of its output, and unpacking takes some 32
bytes per code."""


def _unpack_code_sets(
    kind: npt.NDArray[np.int64], blob: npt.NDArray[np.uint8], n_fresh: npt.NDArray[np.int64], first_block: int
) -> npt.NDArray[np.uint8]:
    """Every block's fresh codes, block-major, descending within a block."""
    nb = len(kind)
    edges = run_edges(n_fresh, _CODES_PER_RUN)
    if len(edges) <= 2:
        return _unpack_code_set_run(kind, blob, n_fresh, first_block)
    blob_at = np.zeros(nb + 1, dtype=np.int64)
    np.cumsum(np.where(kind == CODE_SET_BITMAP, 32, 2 * kind), out=blob_at[1:])
    return np.concatenate(
        [
            _unpack_code_set_run(kind[lo:hi], blob[blob_at[lo] : blob_at[hi]], n_fresh[lo:hi], first_block + lo)
            for lo, hi in itertools.pairwise(edges)
        ]
    )


def _unpack_code_set_run(
    kind: npt.NDArray[np.int64], blob: npt.NDArray[np.uint8], n_fresh: npt.NDArray[np.int64], first_block: int
) -> npt.NDArray[np.uint8]:
    """``_unpack_code_sets`` for one run of blocks.

    A fixed number of numpy calls, and fewer when all its code sets are runs (the
    common case) or all bitmaps.
    """
    nb = len(kind)
    bitmap = kind == CODE_SET_BITMAP
    n_runs = np.where(bitmap, 0, kind)
    # runs need codes and codes need runs (or a bitmap); a bitmap needs codes
    bad = ((n_runs > MAX_RUNS) | ((kind == 0) == (n_fresh > 0))).nonzero()[0]
    if len(bad):
        raise faults.bad_set_header(first_block + int(bad[0]))
    n_bitmaps = int(np.count_nonzero(bitmap))
    if n_bitmaps == 0:
        run_bytes, map_bytes = blob, blob[:0]
    elif n_bitmaps == nb:
        run_bytes, map_bytes = blob[:0], blob
    else:
        in_map = bitmap.repeat(np.where(bitmap, 32, 2 * n_runs))
        run_bytes, map_bytes = blob[~in_map], blob[in_map]
    codes = np.empty(int(n_fresh.sum()), dtype=np.uint8)
    in_runs = ~bitmap
    if n_bitmaps == 0:
        run_codes = codes
    else:
        fresh_start = n_fresh.cumsum() - n_fresh
        run_codes = np.empty(int(n_fresh[in_runs].sum()), dtype=np.uint8)

    # runs: walking down from 255, skip `skip` values, then take `take` as codes
    runs = run_bytes.reshape(-1, 2).astype(np.int64)
    skip, take = runs[:, 0], runs[:, 1]
    run_owner = np.arange(nb, dtype=np.int64).repeat(n_runs)
    stride = skip + take
    walked = stride.cumsum()
    took = np.bincount(run_owner, weights=take, minlength=nb)
    span = np.bincount(run_owner, weights=stride, minlength=nb).astype(np.int64)
    bad = (in_runs & ((took != n_fresh) | (span > 256))).nonzero()[0]
    if len(take) and take.min() < 1:
        bad = np.append(bad, run_owner[int(np.argmin(take))])
    if len(bad):
        raise faults.bad_runs(first_block + int(bad.min()))
    if len(take):
        # the walk restarts at each block: subtract what the blocks before it walked
        block_walked = span.cumsum()
        walked -= (block_walked - span).repeat(n_runs)
        top = 255 - (walked - take)  # first code of each run
        # codes descend by one inside a run and jump to the next run's top
        step = np.full(len(run_codes), -1, dtype=np.int64)
        step[take.cumsum() - take] = top - np.concatenate(([0], top[:-1] - take[:-1] + 1))
        run_codes[:] = step.cumsum(out=step)
    if n_bitmaps:
        fresh_in_runs = n_fresh * in_runs
        codes[
            (fresh_start - (fresh_in_runs.cumsum() - fresh_in_runs)).repeat(fresh_in_runs) + np.arange(len(run_codes))
        ] = run_codes
        maps = map_bytes.reshape(-1, 32)
        flags = np.unpackbits(maps, axis=1)  # column i is byte value 255 - i
        counted = flags.sum(axis=1, dtype=np.int64)
        bad = (counted != n_fresh[bitmap]).nonzero()[0]
        if len(bad):
            raise faults.bad_bitmap(first_block + int(np.flatnonzero(bitmap)[bad[0]]))
        _rows, cols = flags.nonzero()
        codes[concat_ranges(fresh_start[bitmap], n_fresh[bitmap])] = 255 - cols
    return codes


def pack_frame(t: PairTables, content_crc: int) -> bytes:
    """Serialize a run of blocks as one frame."""
    n_blocks = len(t.orig_len)
    n_recycled = t.n_merges - t.n_fresh
    set_kind, code_sets, _ = pack_code_sets(t.n_merges, t.n_fresh, t.code)
    first_merge = np.cumsum(t.n_merges) - t.n_merges
    fresh_at = concat_ranges(first_merge, t.n_fresh)
    recycled_at = concat_ranges(first_merge + t.n_fresh, n_recycled)
    esc = t.escapes if t.escapes is not None else Escapes.none(n_blocks)
    body = b"".join(
        (
            t.orig_len.astype("<u2").tobytes(),
            t.payload_len.astype("<u2").tobytes(),
            t.n_fresh.astype(np.uint8).tobytes(),
            n_recycled.astype(np.uint8).tobytes(),
            set_kind.tobytes(),
            esc.count.astype("<u2").tobytes(),
            code_sets,
            esc.mark[esc.count > 0].tobytes(),
            np.stack((t.left[fresh_at], t.right[fresh_at]), axis=1).tobytes(),
            np.stack((t.code[recycled_at], t.left[recycled_at], t.right[recycled_at]), axis=1).tobytes(),
            esc.literals.tobytes(),
            t.payload.tobytes(),
        )
    )
    return frame_from_body(body, n_blocks, int(t.orig_len.sum()), content_crc)


def frame_from_body(body: bytes | memoryview, n_blocks: int, orig_size: int, content_crc: int) -> bytes:
    """A frame's body with its header and the frame CRC put in front."""
    header = _FRAME_HEADER.pack(KIND_FRAME, n_blocks, orig_size, len(body), content_crc)
    frame_crc = crc32(body, zlib.crc32(header))
    return b"".join((header, struct.pack("<I", frame_crc), body))


def unpack_frame_body(h: FrameHeader, body: bytes | memoryview, frame_index: int, first_block: int) -> PairTables:
    """Check a frame's body against its header and CRC, and split it into columns."""
    where = f"frame {frame_index}"
    if h.frame_crc != NO_FRAME_CRC and crc32(body, zlib.crc32(h.header)) != h.frame_crc:
        raise CorruptDataError(f"{where}: compressed data is corrupt (frame checksum mismatch)")
    nb = h.n_blocks
    raw = np.frombuffer(body, dtype=np.uint8)
    at = 0

    def take(n: int) -> npt.NDArray[np.uint8]:
        nonlocal at
        if at + n > len(raw):
            raise faults.short_body(frame_index)
        part = raw[at : at + n]
        at += n
        return part

    orig_len = take(2 * nb).view("<u2").astype(np.int64)
    payload_len = take(2 * nb).view("<u2").astype(np.int64)
    n_fresh = take(nb).astype(np.int64)
    n_recycled = take(nb).astype(np.int64)
    set_kind = take(nb).astype(np.int64)
    n_escaped = take(2 * nb).view("<u2").astype(np.int64)
    set_size = np.where(set_kind == CODE_SET_BITMAP, 32, 2 * set_kind)
    code_sets = take(int(set_size.sum()))
    escaping = n_escaped > 0
    marks = take(int(np.count_nonzero(escaping)))
    fresh = take(2 * int(n_fresh.sum())).reshape(-1, 2)
    recycled = take(3 * int(n_recycled.sum())).reshape(-1, 3)
    literals = take(int(n_escaped.sum()))
    payload = take(int(payload_len.sum()))
    if at != len(raw):
        raise faults.long_body(frame_index, len(raw) - at)

    bad = ((orig_len < 1) | (payload_len < 1) | (payload_len > orig_len) | (n_escaped > orig_len)).nonzero()[0]
    if len(bad):
        raise faults.bad_lengths(first_block + int(bad[0]))
    if int(orig_len.sum()) != h.orig_size:
        raise faults.wrong_size(frame_index, int(orig_len.sum()), h.orig_size)
    fresh_codes = _unpack_code_sets(set_kind, code_sets, n_fresh, first_block)

    n_merges = n_fresh + n_recycled
    if not recycled.size:  # no recycled codes: the fresh merges are all the merges
        code, left, right = fresh_codes, fresh[:, 0].copy(), fresh[:, 1].copy()
    else:
        # a block's merges are its fresh ones then its recycled ones: each fresh merge
        # moves past the recycled merges of the blocks before it, and vice versa
        m_total = int(n_merges.sum())
        fresh_at = (n_recycled.cumsum() - n_recycled).repeat(n_fresh)
        fresh_at += np.arange(len(fresh), dtype=np.int64)
        recycled_at = n_fresh.cumsum().repeat(n_recycled)
        recycled_at += np.arange(len(recycled), dtype=np.int64)
        code = np.empty(m_total, dtype=np.uint8)
        left = np.empty(m_total, dtype=np.uint8)
        right = np.empty(m_total, dtype=np.uint8)
        code[fresh_at] = fresh_codes
        left[fresh_at] = fresh[:, 0]
        right[fresh_at] = fresh[:, 1]
        code[recycled_at] = recycled[:, 0]
        left[recycled_at] = recycled[:, 1]
        right[recycled_at] = recycled[:, 2]
    escapes = None
    if len(marks):
        mark = np.zeros(nb, dtype=np.uint8)
        mark[escaping] = marks
        escapes = Escapes(n_escaped, mark, literals)
    return PairTables(orig_len, n_merges, n_fresh, code, left, right, payload_len, payload, first_block, escapes)


def pack_end(n_frames: int, total_size: int, total_crc: int) -> bytes:
    fields = _END.pack(KIND_END, n_frames, total_size, total_crc)
    return fields + struct.pack("<I", zlib.crc32(fields))


def unpack_end(buf: bytes | memoryview, offset: int) -> StreamEnd:
    _kind, n_frames, total_size, total_crc, check = _END_AND_CRC.unpack_from(buf, offset)
    if check != zlib.crc32(buf[offset : offset + _END.size]):
        raise CorruptDataError(f"end of stream at byte {offset} fails its check")
    return StreamEnd(n_frames, total_size, total_crc)


def need(buf: bytes | memoryview, offset: int, size: int, what: str) -> None:
    """Raise TruncatedDataError unless *size* bytes of *what* are there at *offset*."""
    if offset + size > len(buf):
        raise TruncatedDataError(
            f"data ends inside the {what} at byte {offset} (needs {size} bytes, has {len(buf) - offset})"
        )


# -- the compact form: a stream of one block --------------------------------------------------

COMPACT = 0x01
"""The stream header flag of a compact stream: after the header comes one compact record
(a block stored or encoded, and the content's CRC-32), and nothing else of the stream.
A small input's whole overhead is 14 to 16 bytes where a framed stream takes 59."""
COMPACT_STORED = 0x00
COMPACT_ENCODED = 0x01
MAX_COMPACT_SIZE = 0xFFFF
"""The most original bytes a compact record holds: one block's."""
_COMPACT_HEAD = struct.Struct("<IB")  # content_crc, kind
_BLOCK_HEADER = struct.Struct("<HHBBBH")  # orig_len, payload_len, n_fresh, n_recycled, code-set kind, n_escaped
_COMPACT_STREAM_HEADER = pack_stream_header(COMPACT)


class CompactRecord(NamedTuple):
    """A compact record's fields, read from its first bytes."""

    content_crc: int
    stored: bool
    orig_size: int
    start: int  # offset of the stored data or of the encoded block's body
    end: int  # offset of the first byte after the record


def compact_record(buf: bytes | memoryview, offset: int, where: int | None = None) -> CompactRecord | None:
    """The compact record at *offset* (just after its stream header), from its first bytes
    (its first 14 always suffice: 8 for a stored one); None when *buf* ends before its size can be
    told. Raises ``CorruptDataError`` for a kind or a size no writer makes, naming the record
    at byte *where* (default: *offset*)."""
    at = offset + _COMPACT_HEAD.size
    where = offset if where is None else where
    if len(buf) <= at:
        return None
    content_crc, kind = _COMPACT_HEAD.unpack_from(buf, offset)
    if kind == COMPACT_STORED:
        size = 0
        for i in range(3):  # LEB128, least significant group first, shortest form
            if at + i >= len(buf):
                return None
            byte = buf[at + i]
            size |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                break
        if byte & 0x80 or (i and not byte) or size > MAX_COMPACT_SIZE:
            raise CorruptDataError(f"compact record at byte {where}: its size is not one a writer makes")
        return CompactRecord(content_crc, True, size, at + i + 1, at + i + 1 + size)
    if kind == COMPACT_ENCODED:
        if len(buf) - at < BLOCK_HEADER_SIZE:
            return None
        orig_len, payload_len, n_fresh, n_recycled, set_kind, n_escaped = _BLOCK_HEADER.unpack_from(buf, at)
        set_size = 32 if set_kind == CODE_SET_BITMAP else 2 * set_kind
        body = BLOCK_HEADER_SIZE + set_size + (n_escaped > 0) + 2 * n_fresh + 3 * n_recycled + n_escaped + payload_len
        return CompactRecord(content_crc, False, orig_len, at, at + body)
    raise CorruptDataError(f"compact record at byte {where}: unknown kind {kind:#04x}")


def read_compact_head(read: Callable[[int], bytes], at: int) -> tuple[CompactRecord, bytes]:
    """A compact record's fields, and its first bytes, read by ``read(n)`` (up to *n* more
    bytes, fewer only where the data ends) no further than the record: a pipe cannot go
    back, and another stream may follow. *at* is the record's offset, for messages; the
    record's offsets are from its start. Raises ``TruncatedDataError`` where the data ends
    before its size can be told, and what ``compact_record`` raises."""
    head = read(_COMPACT_HEAD.size + 1)  # its CRC, its kind and the first byte that says its size
    while (rec := compact_record(head, 0, at)) is None:
        more = read(1) if len(head) > _COMPACT_HEAD.size else b""
        if not more:
            raise TruncatedDataError(f"data ends inside the compact record at byte {at}")
        head += more
    return rec, head


def unpack_compact(rec: CompactRecord, buf: bytes | memoryview) -> FrameHeader:
    """The header of the one-block frame an encoded compact record's body is (its body is
    ``buf[rec.start:rec.end]``): no frame CRC (``NO_FRAME_CRC``), the content's CRC-32 checks it all."""
    return FrameHeader(1, rec.orig_size, rec.end - rec.start, rec.content_crc, NO_FRAME_CRC, b"")


NO_FRAME_CRC = -1
"""A ``FrameHeader.frame_crc`` that is not checked: a compact record's body has none."""


def compact_stored(data: bytes | memoryview, content_crc: int) -> bytes:
    """A compact stream holding *data* (at most ``MAX_COMPACT_SIZE`` bytes) as it is."""
    size = len(data)
    varint = bytearray()
    while size >= 0x80:
        varint.append(size & 0x7F | 0x80)
        size >>= 7
    varint.append(size)
    return b"".join((_COMPACT_STREAM_HEADER, _COMPACT_HEAD.pack(content_crc, COMPACT_STORED), varint, data))


def compact_from_frame(frame: bytes | memoryview) -> bytes:
    """The compact stream of a frame of one block (as ``frame_from_body`` makes it)."""
    view = memoryview(frame)
    _kind, n_blocks, _orig_size, _body_size, content_crc = _FRAME_HEADER.unpack_from(view, 0)
    if n_blocks != 1:
        raise ValueError("compact_from_frame takes a frame of one block")
    body = view[FRAME_HEADER_SIZE:]
    _, _, n_fresh, n_recycled, _, n_escaped = _BLOCK_HEADER.unpack_from(body, 0)
    if n_fresh == n_recycled == n_escaped == 0:  # stored: its payload is its data
        return compact_stored(body[BLOCK_HEADER_SIZE:], content_crc)
    return b"".join((_COMPACT_STREAM_HEADER, _COMPACT_HEAD.pack(content_crc, COMPACT_ENCODED), body))


def one_frame_stream(frame: bytes | None) -> bytes:
    """The whole stream of one frame (or of none, for the empty input): compact when the
    frame is one block, else framed."""
    if frame is None:
        return compact_stored(b"", 0)
    if int.from_bytes(frame[1:5], "little") == 1:
        return compact_from_frame(frame)
    _kind, _n_blocks, orig_size, _body_size, content_crc = _FRAME_HEADER.unpack_from(frame, 0)
    return b"".join((pack_stream_header(), frame, pack_end(1, orig_size, content_crc)))
