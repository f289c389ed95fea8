"""Hand-made hostile streams with valid checksums: decompression bombs and their relatives.

Used by ``tests/test_hostile.py`` and to rebuild the files of ``testdata/fuzz``.
Every stream here has correct CRCs, so nothing is caught before the deeper checks.
"""

from __future__ import annotations

import random
import zlib

from . import container as C
from . import mutators as M

A = ord("a")


def stream_of(frames: list[C.Frame], contents: list[bytes] | None = None) -> bytes:
    """Header, frames and a matching end record; *contents* give each frame's content CRC."""
    out = [C.stream_header()]
    crc = total = 0
    for k, frame in enumerate(frames):
        if contents is not None:
            frame.content_crc = zlib.crc32(contents[k])
            crc = zlib.crc32(contents[k], crc)
        total += sum(b.orig_len for b in frame.blocks)
        out.append(frame.pack())
    out.append(C.end_record(len(frames), total, crc))
    return b"".join(out)


def chain_block(depth: int, payload: bytes | None = None, orig_len: int | None = None) -> C.Block:
    """A block whose fresh codes 255, 254, ... (not 'a') each double the previous: code k spells 2**(k+1) 'a's."""
    codes = [v for v in range(255, -1, -1) if v != A][:depth]
    merges = [(codes[0], A, A)] + [(codes[k], codes[k - 1], codes[k - 1]) for k in range(1, depth)]
    if payload is None:
        payload = bytes([codes[-1]])
    table = M.Table(merges, depth, payload, "")
    _, total = table.lengths()
    kind, code_bytes = M._code_set_for(_NoBitmap(), codes)
    fresh = b"".join(bytes(m[1:]) for m in merges)
    return C.Block(
        orig_len if orig_len is not None else min(total, 0xFFFF),
        len(payload),
        depth,
        0,
        kind,
        code_bytes,
        fresh,
        b"",
        payload,
    )


class _NoBitmap(random.Random):
    """A ``random.Random`` that always picks runs for a code set."""

    def random(self) -> float:
        return 0.0


def max_block() -> tuple[C.Block, bytes]:
    """A valid block of 65535 'a's in 55 bytes: a 15-deep doubling chain and 16 payload symbols."""
    codes = list(range(255, 240, -1))  # codes[k] spells 2**(k+1) bytes
    payload = bytes(reversed(codes)) + bytes([A])  # 32768 + 16384 + ... + 2 + 1
    block = chain_block(15, payload, 0xFFFF)
    return block, b"a" * 0xFFFF


def bomb(n_blocks: int) -> tuple[bytes, int, int]:
    """A valid one-frame stream of *n_blocks* x 65535 'a's, 55 bytes per block; (stream, size, crc).

    With 1024 blocks it declares 67,107,840 bytes (the frame limit is 2**26) in 56 KB.
    """
    block, content = max_block()
    crc = 0
    for _ in range(n_blocks):
        crc = zlib.crc32(content, crc)
    frame = C.Frame(0, 0, 0, crc, 0, [block.copy() for _ in range(n_blocks)])
    size = n_blocks * len(content)
    return C.stream_header() + frame.pack() + C.end_record(1, size, crc), size, crc


def deep_chain(depth: int = 255, recycled: bool = False) -> bytes:
    """One block whose last code would spell 2**depth bytes (2**255 for 255 codes), all CRCs valid.

    With *recycled*, one byte value is redefined again and again as (itself, itself).
    """
    if recycled:
        payload = bytes([A])
        merges = b"".join(bytes([A, A, A]) for _ in range(depth))
        block = C.Block(0xFFFF, 1, 0, depth, 0, b"", b"", merges, payload)
    else:
        block = chain_block(depth, orig_len=0xFFFF)
    frame = C.Frame(0, 0, 0, 0, 0, [block])
    return stream_of([frame], [b"a" * 0xFFFF])


def many_blocks(n: int, depth: int = 4) -> tuple[bytes, bytes]:
    """A valid frame of *n* one-byte stored blocks and one encoded block: (stream, content).

    A frame may hold as many blocks as bytes; a decoder must not spend per block
    what it would spend per byte of a whole block (a 256-entry table, say)."""
    chain = chain_block(depth)
    blocks = [C.Block(1, 1, 0, 0, 0, b"", b"", b"", bytes([48 + k % 10])) for k in range(n)]
    blocks.append(chain)
    content = bytes(48 + k % 10 for k in range(n)) + b"a" * (2**depth)
    return stream_of([C.Frame(0, 0, 0, 0, 0, blocks)], [content]), content


def literal_blocks(n: int, block_len: int = 2000) -> tuple[bytes, bytes]:
    """A valid frame of *n* blocks of *block_len* bytes, each one merge and a payload of
    almost all literals: (stream, content). Symbols about as many as bytes, in blocks
    too small for tables of their own: a decoder must not keep several 8-byte
    integers per symbol of the whole frame."""
    unit = bytes(range(100, 118))  # neither "a" nor the code 255
    repeats = block_len // (len(unit) + 2)
    block = chain_block(1, (b"\xff" + unit) * repeats, block_len)  # shorter than stored, or it would be
    content = (b"aa" + unit) * repeats
    assert len(content) == block_len, "block_len must be a multiple of 20"
    return stream_of([C.Frame(0, 0, 0, 0, 0, [block.copy() for _ in range(n)])], [content * n]), content * n


def escaped_blocks(n: int) -> tuple[bytes, bytes]:
    """A valid frame of *n* blocks of 32768 + 64 bytes whose 32768 marks are all escaped
    bytes (as many as the body's size allows), but for the last block, which escapes
    nothing: (stream, content). Nearly every byte is a mark; a decoder must not hold
    several 8-byte integers per mark for the whole frame."""
    c = ord("c")
    codes = [v for v in range(255, 0, -1) if v not in (A, c)][:21]
    marks, plain = codes[:15], codes[15:]
    merges = [(marks[0], A, A)] + [(marks[k], marks[k - 1], marks[k - 1]) for k in range(1, 15)]
    merges += [(plain[0], c, c)] + [(plain[k], plain[k - 1], plain[k - 1]) for k in range(1, 6)]
    kind, code_bytes = M._code_set_for(_NoBitmap(), [m[0] for m in merges])
    fresh = b"".join(bytes(m[1:]) for m in merges)
    payload = bytes([marks[-1], plain[-1]])  # 32768 "a", then 64 "c"
    block = C.Block(32768 + 64, len(payload), len(merges), 0, kind, code_bytes, fresh, b"", payload)
    escaping = block.copy()
    escaping.set_escapes(32768, A, b"b" * 32768)
    frame = C.Frame(0, 0, 0, 0, 0, [escaping.copy() for _ in range(n - 1)] + [block])
    content = (b"b" * 32768 + b"c" * 64) * (n - 1) + b"a" * 32768 + b"c" * 64
    return stream_of([frame], [content]), content


def merge_heavy_blocks(n: int) -> tuple[bytes, bytes]:
    """A valid frame of *n* blocks of 640 "a"s, each with 254 merges (one for every
    2.5 bytes of output, about as many as a body may hold): (stream, content). A
    decoder must not spend some 200 bytes per merge for the whole frame at once."""
    b = ord("b")
    codes = [v for v in range(255, -1, -1) if v not in (A, b)][:254]
    merges = [(codes[0], A, A), (codes[1], codes[0], codes[0]), (codes[2], codes[1], codes[1])]
    merges += [(code, b, b) for code in codes[3:]]  # unused, but each must be resolved and laid out
    kind, code_bytes = M._code_set_for(_NoBitmap(), codes)
    fresh = b"".join(bytes(m[1:]) for m in merges)
    payload = bytes([codes[2]]) * 80  # 80 x 8 "a"
    block = C.Block(640, len(payload), len(merges), 0, kind, code_bytes, fresh, b"", payload)
    content = b"a" * 640 * n
    return stream_of([C.Frame(0, 0, 0, 0, 0, [block.copy() for _ in range(n)])], [content]), content


def gage_deep_chain(depth: int = 255) -> bytes:
    """Gage's format: one block whose last code spells 2**depth bytes (no checksum to get past)."""
    codes = [v for v in range(256) if v != A][:depth]
    table = {codes[0]: (A, A)}
    for k in range(1, len(codes)):
        table[codes[k]] = (codes[k - 1], codes[k - 1])
    return M.gage_block(table, bytes([codes[-1]]))


def heavy_bomb(n_blocks: int) -> tuple[bytes, int]:
    """A valid frame of *n_blocks* x 65535 'a's whose tables spell out almost exactly the
    4x budget (a 15-deep doubling chain plus six unused codes of 32768 bytes per block);
    (stream, output size). With 1024 blocks: 68 KB declaring 64 MiB, 256 MiB of code expansions."""
    codes = [v for v in range(255, -1, -1) if v != A][:21]
    merges = [(codes[0], A, A)] + [(codes[k], codes[k - 1], codes[k - 1]) for k in range(1, 15)]
    merges += [(codes[15 + j], codes[13], codes[13]) for j in range(6)]
    payload = bytes(reversed(codes[:15])) + bytes([A])
    kind, code_bytes = M._code_set_for(_NoBitmap(), [m[0] for m in merges])
    fresh = b"".join(bytes(m[1:]) for m in merges)
    block = C.Block(0xFFFF, len(payload), len(merges), 0, kind, code_bytes, fresh, b"", payload)
    frame = C.Frame(0, 0, 0, 0, 0, [block.copy() for _ in range(n_blocks)])
    return stream_of([frame], [b"a" * 0xFFFF * n_blocks]), 0xFFFF * n_blocks
