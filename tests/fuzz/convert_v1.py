"""Convert format-1 streams (damaged ones included) to format 2, keeping their damage.

``python -m tests.fuzz.convert_v1 FILE...`` rewrites each file in place (files that
are not version 1 are left alone). This is how the regression files of
``testdata/fuzz`` were carried over to format 2.

Format 2 differs from format 1 by its version byte and by one more per-block
column, ``n_escaped`` (u16, placed after ``code_set``), plus two sections (escape
marks and escaped bytes) that are empty when every ``n_escaped`` is 0. So a
version 1 frame becomes a version 2 frame with the same content by inserting
``2 * n_blocks`` zero bytes after its first ``7 * n_blocks`` body bytes and
adding ``2 * n_blocks`` to ``body_size``. End records do not change.

Checks are carried over so that the damage stays the same kind:

* a check that was right is recomputed (it is right again);
* a frame whose CRC was wrong because one bit of it (header or body) was flipped
  is converted as the undamaged frame, its CRC computed, and the same bit (at its
  new place) flipped again: still "a valid stream with one bit flipped";
* any other wrong check is XORed with the same error it had, so it stays wrong.
"""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path

MAGIC = b"BYPR"
_FRAME = struct.Struct("<BIIII")
V1_PER_BLOCK = 7


def _check16(head: bytes) -> int:
    return zlib.crc32(head) & 0xFFFF


def _frame_crc(fields: bytes, body: bytes) -> int:
    return zlib.crc32(body, zlib.crc32(fields))


def _single_bit_repair(fields: bytes, body: bytes, crc: int) -> int | None:
    """The bit (over header fields, then body) whose flip makes the frame CRC right, if one does."""
    message = bytearray(fields + body)
    for bit in range(8 * len(message)):
        message[bit // 8] ^= 1 << (bit % 8)
        if zlib.crc32(message) == crc:
            return bit
        message[bit // 8] ^= 1 << (bit % 8)
    return None


def _convert_frame(fields: bytes, body: bytes, crc: int) -> bytes:
    """A v1 frame (header fields 0..16, body, stored CRC) as a v2 frame with the same damage."""
    flipped = None
    if _frame_crc(fields, body) != crc:
        flipped = _single_bit_repair(fields, body, crc)
        if flipped is not None:  # convert the undamaged frame, then damage it again
            message = bytearray(fields + body)
            message[flipped // 8] ^= 1 << (flipped % 8)
            fields, body = bytes(message[:17]), bytes(message[17:])
    kind, nb, orig_size, body_size, content_crc = _FRAME.unpack(fields)
    cut = V1_PER_BLOCK * nb
    new_body = body[:cut] + bytes(2 * nb) + body[cut:]
    new_fields = _FRAME.pack(kind, nb, orig_size, body_size + 2 * nb, content_crc)
    if flipped is not None:
        new_crc = _frame_crc(new_fields, new_body)
        message = bytearray(new_fields + new_body)
        at = flipped // 8
        at += 2 * nb if at >= 17 + cut else 0  # a body byte after the inserted column moved
        message[at] ^= 1 << (flipped % 8)
        return bytes(message[:17]) + struct.pack("<I", new_crc) + bytes(message[17:])
    error = crc ^ _frame_crc(fields, body)  # 0 when the CRC was right
    return new_fields + struct.pack("<I", _frame_crc(new_fields, new_body) ^ error) + new_body


def convert(buf: bytes) -> bytes:
    """Every version 1 stream of *buf* as version 2; whatever cannot be walked is copied as is."""
    out = bytearray()
    pos = 0
    while pos + 8 <= len(buf) and buf.startswith(MAGIC, pos) and buf[pos + 4] == 1:
        head = buf[pos : pos + 8]
        error = struct.unpack_from("<H", head, 6)[0] ^ _check16(head[:6])
        new_head = head[:4] + bytes([2]) + head[5:6]
        out += new_head + struct.pack("<H", _check16(new_head) ^ error)
        pos += 8
        while pos < len(buf) and buf[pos] == 0x46 and pos + 21 <= len(buf):
            fields = buf[pos : pos + 17]
            (crc,) = struct.unpack_from("<I", buf, pos + 17)
            body_size = _FRAME.unpack(fields)[3]
            # a damaged header may declare another body: its CRC repair finds the true one
            body = buf[pos + 21 : pos + 21 + body_size]
            if _frame_crc(fields, body) != crc and (bit := _single_bit_repair(fields, body, crc)) is not None:
                message = bytearray(fields)
                if bit < 8 * 17:
                    message[bit // 8] ^= 1 << (bit % 8)
                body_size = _FRAME.unpack(message)[3]
                body = buf[pos + 21 : pos + 21 + body_size]
            out += _convert_frame(fields, body, crc)
            pos += 21 + body_size
        if pos < len(buf) and buf[pos] == 0x45:
            out += buf[pos : pos + 21]
            pos += 21
    out += buf[pos:]
    return bytes(out)


def main(argv: list[str]) -> int:
    for name in argv:
        path = Path(name)
        data = path.read_bytes()
        new = convert(data)
        if new != data:
            path.write_bytes(new)
            print(f"{path}: {len(data)} -> {len(new)} bytes")
        else:
            print(f"{path}: not version 1, left alone")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
