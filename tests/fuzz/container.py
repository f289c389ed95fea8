"""Raw, unvalidated views of bytepair streams, for mutators that edit fields and fix checksums.

Written from docs/FORMAT.md (format version 2), independently of ``bytepair.container.format``: a mutator must be
able to build frames the library would never write (wrong counts, bad code sets,
inconsistent sizes) and still give them a correct ``frame_crc``, so that the damage
reaches the validation behind the checksum.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib

MAGIC = b"BYPR"
VERSION = 2
STREAM_HEADER_SIZE = 8
FRAME_HEADER_SIZE = 21
PER_BLOCK = 9  # orig_len u16, payload_len u16, n_fresh, n_recycled, code_set, n_escaped u16
END_SIZE = 21
KIND_FRAME = 0x46
KIND_END = 0x45
BITMAP = 0xFF
MAX_FRAME_SIZE = 1 << 26
COMPACT = 0x01  # stream header flag: one compact record follows

_FRAME = struct.Struct("<BIIII")
_END = struct.Struct("<BIQI")


def stream_header(version: int = VERSION, flags: int = 0) -> bytes:
    head = MAGIC + bytes([version & 0xFF, flags & 0xFF])
    return head + struct.pack("<H", zlib.crc32(head) & 0xFFFF)


def end_record(n_frames: int, total_size: int, total_crc: int) -> bytes:
    fields = _END.pack(KIND_END, n_frames & 0xFFFFFFFF, total_size & (2**64 - 1), total_crc & 0xFFFFFFFF)
    return fields + struct.pack("<I", zlib.crc32(fields))


@dataclasses.dataclass
class Block:
    """One block's entries in the frame's columns, as bytes (nothing is checked).

    ``mark`` is what the block puts in the escape-marks section: one byte when
    ``n_escaped > 0`` in a well-formed frame, else nothing (a mutator may break that).
    """

    orig_len: int
    payload_len: int
    n_fresh: int
    n_recycled: int
    code_set: int
    code_set_bytes: bytes
    fresh: bytes  # 2 bytes per fresh merge: left, right
    recycled: bytes  # 3 bytes per recycled merge: code, left, right
    payload: bytes
    n_escaped: int = 0
    mark: bytes = b""  # the block's escape mark (0 or 1 byte, as serialised)
    escaped: bytes = b""  # the original values of its escaped bytes, in order

    def copy(self) -> Block:
        return dataclasses.replace(self)

    @property
    def stored(self) -> bool:
        """No merges, no escapes: the payload is the data."""
        return self.n_fresh == 0 and self.n_recycled == 0 and self.n_escaped == 0 and not self.mark

    def set_escapes(self, n_escaped: int, mark: int | None, escaped: bytes) -> None:
        """Escape fields that agree with each other (the mark present iff n_escaped > 0)."""
        self.n_escaped = n_escaped
        self.mark = bytes([mark]) if n_escaped > 0 and mark is not None else b""
        self.escaped = escaped


@dataclasses.dataclass
class Frame:
    n_blocks: int
    orig_size: int
    body_size: int
    content_crc: int
    frame_crc: int
    blocks: list[Block]
    raw_body: bytes | None = None  # when set, serialised instead of the blocks

    def body(self) -> bytes:
        if self.raw_body is not None:
            return self.raw_body
        b = self.blocks
        return b"".join(
            [
                b"".join(struct.pack("<H", x.orig_len & 0xFFFF) for x in b),
                b"".join(struct.pack("<H", x.payload_len & 0xFFFF) for x in b),
                bytes(x.n_fresh & 0xFF for x in b),
                bytes(x.n_recycled & 0xFF for x in b),
                bytes(x.code_set & 0xFF for x in b),
                b"".join(struct.pack("<H", x.n_escaped & 0xFFFF) for x in b),
                *(x.code_set_bytes for x in b),
                *(x.mark for x in b),
                *(x.fresh for x in b),
                *(x.recycled for x in b),
                *(x.escaped for x in b),
                *(x.payload for x in b),
            ]
        )

    def pack(self, *, fix_counts: bool = True, fix_crc: bool = True) -> bytes:
        """The frame's bytes; *fix_counts* sets n_blocks, orig_size and body_size from the
        blocks, *fix_crc* recomputes the frame CRC over whatever the fields now say."""
        body = self.body()
        if fix_counts:
            if self.raw_body is None:
                self.n_blocks = len(self.blocks)
                self.orig_size = sum(x.orig_len for x in self.blocks)
            self.body_size = len(body)
        head = _FRAME.pack(
            KIND_FRAME,
            self.n_blocks & 0xFFFFFFFF,
            self.orig_size & 0xFFFFFFFF,
            self.body_size & 0xFFFFFFFF,
            self.content_crc & 0xFFFFFFFF,
        )
        if fix_crc:
            self.frame_crc = zlib.crc32(body, zlib.crc32(head))
        return head + struct.pack("<I", self.frame_crc & 0xFFFFFFFF) + body

    def copy(self) -> Frame:
        return dataclasses.replace(self, blocks=[x.copy() for x in self.blocks])


def code_set_size(kind: int) -> int:
    return 32 if kind == BITMAP else 2 * kind


def parse_frame(buf: bytes, pos: int) -> tuple[Frame, int]:
    """The frame at *pos* of a well-formed stream, and the position after it."""
    _, nb, orig_size, body_size, content_crc = _FRAME.unpack_from(buf, pos)
    (frame_crc,) = struct.unpack_from("<I", buf, pos + 17)
    body = buf[pos + FRAME_HEADER_SIZE : pos + FRAME_HEADER_SIZE + body_size]
    at = 0

    def take(n: int) -> bytes:
        nonlocal at
        part = body[at : at + n]
        at += n
        return part

    orig = struct.unpack(f"<{nb}H", take(2 * nb))
    plen = struct.unpack(f"<{nb}H", take(2 * nb))
    n_fresh = take(nb)
    n_rec = take(nb)
    kinds = take(nb)
    n_esc = struct.unpack(f"<{nb}H", take(2 * nb))
    sets = [take(code_set_size(k)) for k in kinds]
    marks = [take(1) if n else b"" for n in n_esc]
    fresh = [take(2 * n) for n in n_fresh]
    rec = [take(3 * n) for n in n_rec]
    escaped = [take(n) for n in n_esc]
    pays = [take(n) for n in plen]
    blocks = [
        Block(
            orig[i],
            plen[i],
            n_fresh[i],
            n_rec[i],
            kinds[i],
            sets[i],
            fresh[i],
            rec[i],
            pays[i],
            n_esc[i],
            marks[i],
            escaped[i],
        )
        for i in range(nb)
    ]
    return Frame(nb, orig_size, body_size, content_crc, frame_crc, blocks), pos + FRAME_HEADER_SIZE + body_size


@dataclasses.dataclass
class Record:
    kind: str  # "header", "frame", "end", "compact"
    start: int
    end: int


def records(buf: bytes) -> list[Record]:
    """Every record of a well-formed (possibly multi-stream) bytepair file, in order."""
    out: list[Record] = []
    pos = 0
    while pos + STREAM_HEADER_SIZE <= len(buf) and buf.startswith(MAGIC, pos):
        out.append(Record("header", pos, pos + STREAM_HEADER_SIZE))
        pos += STREAM_HEADER_SIZE
        if buf[pos - 3] == COMPACT:
            found = compact_size(buf, pos)
            if found is None:
                return out
            out.append(Record("compact", pos, found[1]))
            pos = found[1]
            continue
        while pos < len(buf):
            if buf[pos] == KIND_FRAME and pos + FRAME_HEADER_SIZE <= len(buf):
                (body_size,) = struct.unpack_from("<I", buf, pos + 9)
                end = pos + FRAME_HEADER_SIZE + body_size
                out.append(Record("frame", pos, end))
                pos = end
            elif buf[pos] == KIND_END:
                out.append(Record("end", pos, pos + END_SIZE))
                pos += END_SIZE
                break
            else:
                return out
    return out


def compact_size(buf: bytes, pos: int) -> tuple[int, int] | None:
    """(original size, end) of the compact record at *pos*, from its own fields as
    docs/FORMAT.md gives them; None when they cannot be read."""
    if pos + 6 > len(buf):
        return None
    kind = buf[pos + 4]
    at = pos + 5
    if kind == 0:
        size = 0
        for i in range(3):
            if at + i >= len(buf):
                return None
            size |= (buf[at + i] & 0x7F) << (7 * i)
            if not buf[at + i] & 0x80:
                return size, at + i + 1 + size
        return None
    if kind == 1 and at + PER_BLOCK <= len(buf):
        orig, payload, fresh, recycled, code_set, escaped = struct.unpack_from("<HHBBBH", buf, at)
        body = PER_BLOCK + code_set_size(code_set) + (escaped > 0) + 2 * fresh + 3 * recycled + escaped + payload
        return orig, at + body
    return None


def declared_output(buf: bytes, max_length: int | None = None) -> int:
    """What the frame headers a reader would accept declare, as a reader walks them
    (without CRCs); at most *max_length*. Bounds the memory a decoder may use."""
    total = 0
    pos = 0
    while pos < len(buf):
        if buf.startswith(MAGIC, pos):
            pos += STREAM_HEADER_SIZE
            if pos <= len(buf) and buf[pos - 3] == COMPACT:
                found = compact_size(buf, pos)
                if found is None:
                    break
                total += found[0]
                pos = found[1]
            continue
        if buf[pos] == KIND_FRAME and pos + FRAME_HEADER_SIZE <= len(buf):
            _, nb, orig, body, _ = _FRAME.unpack_from(buf, pos)
            if not (1 <= orig <= MAX_FRAME_SIZE and 1 <= nb <= orig and 0 <= body - PER_BLOCK * nb <= orig):
                break
            if pos + FRAME_HEADER_SIZE + body > len(buf):
                break
            total += orig
            pos += FRAME_HEADER_SIZE + body
        elif buf[pos] == KIND_END:
            pos += END_SIZE
        else:
            break
    return total if max_length is None else min(total, max_length)
