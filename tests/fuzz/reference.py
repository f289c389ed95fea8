"""Independent pure-Python decoders, written from docs/FORMAT.md and GAGE.md, used as oracles.

They share no code with ``bytepair``: where the library and a reference disagree
on whether an input is valid, or on what it decodes to, one of them departs from
the documented format. They are slow (Python per merge, bytes joins per block) and
meant for the small inputs the fuzzer makes.
"""

from __future__ import annotations

import contextlib
import struct
import zlib

from .container import (
    BITMAP,
    COMPACT,
    END_SIZE,
    FRAME_HEADER_SIZE,
    KIND_END,
    KIND_FRAME,
    MAGIC,
    MAX_FRAME_SIZE,
    PER_BLOCK,
    STREAM_HEADER_SIZE,
    VERSION,
)

NODE_BUDGET = 4  # docs/FORMAT.md: merges of a frame expand to at most 4 * orig_size + 65536 bytes
GAGE_MAX_BLOCK_OUTPUT = 1 << 20  # bytepair.gage: no block may expand to more (documented limit)


class Invalid(Exception):
    """The input breaks a rule of the format (the reference's only error)."""


class OverLimit(Invalid):
    """The output would pass ``max_length``."""


# -- the bytepair container ------------------------------------------------------


def _fresh_codes(kind: int, blob: bytes, n_fresh: int) -> list[int]:
    if kind == 0:
        if n_fresh:
            raise Invalid("code_set 0 with fresh codes")
        return []
    if n_fresh == 0:
        raise Invalid("code_set must be 0 when n_fresh is 0")
    if kind == BITMAP:
        codes = [255 - (8 * i + j) for i in range(32) for j in range(8) if blob[i] >> (7 - j) & 1]
        if len(codes) != n_fresh:
            raise Invalid("bitmap popcount differs from n_fresh")
        return codes
    if kind > 16:
        raise Invalid(f"code_set {kind}")
    codes = []
    value = 255
    walked = 0
    for r in range(kind):
        skip, take = blob[2 * r], blob[2 * r + 1]
        if take < 1:
            raise Invalid("run with take 0")
        walked += skip + take
        if walked > 256:
            raise Invalid("runs walk past value 0")
        value -= skip
        codes.extend(range(value, value - take, -1))
        value -= take
    if len(codes) != n_fresh:
        raise Invalid("runs do not hold n_fresh codes")
    return codes


Merge = tuple[int, int, int]
Escapes = tuple[int, int, bytes]
"""A block's escapes: (n_escaped, mark, escaped bytes)."""
RefBlock = tuple[int, int, list[Merge], bytes] | tuple[int, int, list[Merge], bytes, Escapes]
"""(orig_len, n_fresh, merges, payload[, escapes]): a block as the rules see it."""


def parse_frame_body(body: bytes, nb: int, orig_size: int) -> list[RefBlock]:
    """A frame body's blocks, after every structural rule of FORMAT.md (sections, sizes,
    code sets); the rules on merges and expansions are ``decode_blocks``'s."""
    at = 0

    def take(n: int) -> bytes:
        nonlocal at
        if at + n > len(body):
            raise Invalid("body shorter than its columns")
        part = body[at : at + n]
        at += n
        return part

    orig = struct.unpack(f"<{nb}H", take(2 * nb))
    plen = struct.unpack(f"<{nb}H", take(2 * nb))
    n_fresh = take(nb)
    n_rec = take(nb)
    kinds = take(nb)
    n_esc = struct.unpack(f"<{nb}H", take(2 * nb))
    sets = [take(32 if k == BITMAP else 2 * k if k <= 16 else 0) for k in kinds]
    marks = [take(1)[0] if n else -1 for n in n_esc]
    fresh = [take(2 * n) for n in n_fresh]
    rec = [take(3 * n) for n in n_rec]
    escaped = [take(n) for n in n_esc]
    pays = [take(n) for n in plen]
    if at != len(body):
        raise Invalid("bytes after the last payload")
    if sum(orig) != orig_size:
        raise Invalid("orig_len do not add up to orig_size")
    if any(k != BITMAP and k > 16 for k in kinds):
        raise Invalid("code_set value")
    if any(n_esc[b] > orig[b] for b in range(nb)):
        raise Invalid("n_escaped larger than orig_len")
    blocks: list[RefBlock] = []
    for b in range(nb):
        codes = _fresh_codes(kinds[b], sets[b], n_fresh[b])
        merges = [(codes[k], fresh[b][2 * k], fresh[b][2 * k + 1]) for k in range(n_fresh[b])]
        merges += [(rec[b][3 * k], rec[b][3 * k + 1], rec[b][3 * k + 2]) for k in range(n_rec[b])]
        if n_esc[b]:
            blocks.append((orig[b], n_fresh[b], merges, pays[b], (n_esc[b], marks[b], escaped[b])))
        else:
            blocks.append((orig[b], n_fresh[b], merges, pays[b]))
    return blocks


def decode_frame_body(body: bytes, nb: int, orig_size: int) -> bytes:
    """A frame body's content, or ``Invalid``; every rule of FORMAT.md but the CRCs."""
    return decode_blocks(parse_frame_body(body, nb, orig_size))


def restore_escapes(expanded: bytes, escapes: Escapes) -> bytes:
    """The k-th occurrence of the mark replaced by the k-th escaped byte; the count must match."""
    n_escaped, mark, escaped = escapes
    if len(escaped) != n_escaped:
        raise Invalid("escaped bytes do not match n_escaped")
    parts = expanded.split(bytes([mark]))
    if len(parts) - 1 != n_escaped:
        raise Invalid(f"the mark occurs {len(parts) - 1} times, n_escaped is {n_escaped}")
    out = bytearray(parts[0])
    for k in range(n_escaped):
        out.append(escaped[k])
        out += parts[k + 1]
    return bytes(out)


def decode_blocks(blocks: list[RefBlock], budget: bool = True) -> bytes:
    """Blocks given as (orig_len, n_fresh, merges, payload[, (n_escaped, mark, escaped)]), checked
    as FORMAT.md says, then expanded and their escapes restored; *budget* applies the rule that
    all merges together expand to at most 4 * (their blocks' size) + 65536 bytes."""
    return b"".join(block_contents(blocks, budget))


def block_contents(blocks: list[RefBlock], budget: bool = True, escapes: bool = True) -> list[bytes]:
    """``decode_blocks``, each block's content apart; without *escapes*, each block's
    expansion as it is before its escapes are restored (their count unchecked)."""
    node_bytes = 0
    for orig, n_fresh, merges, payload, *_ in blocks:
        if orig < 1 or not 1 <= len(payload) <= orig:
            raise Invalid("block lengths")
        fresh_codes = [m[0] for m in merges[:n_fresh]]
        fresh_set = set(fresh_codes)
        if len(fresh_set) != len(fresh_codes):
            raise Invalid("fresh code listed twice")
        defined: set[int] = set()
        length = [1] * 256
        for k, (code, left, right) in enumerate(merges):
            for v in (left, right):
                if v in fresh_set and v not in defined:
                    raise Invalid("fresh code used before its merge")
            size = length[left] + length[right]
            if size > orig:
                raise Invalid("merge longer than its block")
            node_bytes += size
            length[code] = size
            if k < n_fresh:
                defined.add(code)
        if sum(length[s] for s in payload) != orig:
            raise Invalid("payload does not expand to orig_len")
    if budget and node_bytes > NODE_BUDGET * sum(b[0] for b in blocks) + 65536:
        raise Invalid("merges expand to more than the frame budget")
    out = []
    for _, _, merges, payload, *esc in blocks:
        meaning = [bytes([v]) for v in range(256)]
        for code, left, right in merges:
            meaning[code] = meaning[left] + meaning[right]
        expanded = b"".join(meaning[s] for s in payload)
        if escapes and esc and esc[0][0]:
            expanded = restore_escapes(expanded, esc[0])
        out.append(expanded)
    return out


def decode_bytepair(buf: bytes, max_length: int | None = None, out: list[bytes] | None = None) -> bytes:
    """One or more concatenated streams, as ``bytepair.decompress`` reads them.

    *out*, if given, receives each frame's content as soon as that frame is checked:
    what a streaming reader may hand out before it meets the damage.
    """
    out = [] if out is None else out
    produced = 0
    pos = 0
    while True:
        if len(buf) - pos < STREAM_HEADER_SIZE:
            raise Invalid("truncated stream header")
        head = buf[pos : pos + STREAM_HEADER_SIZE]
        if head[:4] != MAGIC or head[4] != VERSION or head[5] not in (0, COMPACT):
            raise Invalid(f"not a version {VERSION} stream")
        if struct.unpack_from("<H", head, 6)[0] != zlib.crc32(head[:6]) & 0xFFFF:
            raise Invalid("stream header check")
        pos += STREAM_HEADER_SIZE
        if head[5] == COMPACT:
            content, pos = _compact_record(buf, pos, max_length, produced)
            out.append(content)
            produced += len(content)
            if pos == len(buf):
                return b"".join(out)
            tail = buf[pos : pos + 4]
            if tail != MAGIC[: len(tail)]:
                raise Invalid("garbage after the stream")
            continue
        n_frames = 0
        total = 0
        crc = 0
        while True:
            if pos >= len(buf):
                raise Invalid("truncated")
            kind = buf[pos]
            if kind == KIND_FRAME:
                if len(buf) - pos < FRAME_HEADER_SIZE:
                    raise Invalid("truncated frame header")
                _, nb, orig_size, body_size, content_crc, frame_crc = struct.unpack_from("<BIIIII", buf, pos)
                if not (1 <= orig_size <= MAX_FRAME_SIZE and 1 <= nb <= orig_size):
                    raise Invalid("frame header ranges")
                if not PER_BLOCK * nb <= body_size <= PER_BLOCK * nb + orig_size:
                    raise Invalid("frame body size")
                if max_length is not None and produced + orig_size > max_length:
                    raise OverLimit("max_length")
                end = pos + FRAME_HEADER_SIZE + body_size
                if end > len(buf):
                    raise Invalid("truncated frame body")
                body = buf[pos + FRAME_HEADER_SIZE : end]
                if zlib.crc32(body, zlib.crc32(buf[pos : pos + 17])) != frame_crc:
                    raise Invalid("frame CRC")
                content = decode_frame_body(body, nb, orig_size)
                if zlib.crc32(content) != content_crc:
                    raise Invalid("content CRC")
                out.append(content)
                crc = zlib.crc32(content, crc)
                total += orig_size
                produced += orig_size
                n_frames += 1
                pos = end
            elif kind == KIND_END:
                if len(buf) - pos < END_SIZE:
                    raise Invalid("truncated end")
                fields = buf[pos : pos + 17]
                if struct.unpack_from("<I", buf, pos + 17)[0] != zlib.crc32(fields):
                    raise Invalid("end check")
                if struct.unpack("<BIQI", fields)[1:] != (n_frames, total, crc):
                    raise Invalid("end does not match")
                pos += END_SIZE
                break
            else:
                raise Invalid("unknown record")
        if pos == len(buf):
            return b"".join(out)
        tail = buf[pos : pos + 4]
        if tail != MAGIC[: len(tail)]:
            raise Invalid("garbage after the stream")


def _compact_record(buf: bytes, pos: int, max_length: int | None, produced: int) -> tuple[bytes, int]:
    """A compact record's content and the offset after it (docs/FORMAT.md, "Compact record")."""
    if len(buf) - pos < 6:
        raise Invalid("truncated compact record")
    content_crc, kind = struct.unpack_from("<IB", buf, pos)
    at = pos + 5
    if kind == 0:
        size = 0
        for i in range(3):
            if at + i >= len(buf):
                raise Invalid("truncated size")
            byte = buf[at + i]
            size |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                break
        else:
            raise Invalid("size longer than 3 bytes")
        if (i and byte == 0) or size > 0xFFFF:
            raise Invalid("size not in its shortest form, or over 65535")
        start = at + i + 1
        if max_length is not None and produced + size > max_length:
            raise OverLimit("max_length")
        if start + size > len(buf):
            raise Invalid("truncated stored data")
        content = buf[start : start + size]
        end = start + size
    elif kind == 1:
        if len(buf) - at < PER_BLOCK:
            raise Invalid("truncated block header")
        orig, payload, fresh, recycled, code_set, escaped = struct.unpack_from("<HHBBBH", buf, at)
        sets = 32 if code_set == BITMAP else 2 * code_set
        end = at + PER_BLOCK + sets + (escaped > 0) + 2 * fresh + 3 * recycled + escaped + payload
        if orig == 0:
            raise Invalid("empty encoded block")
        if max_length is not None and produced + orig > max_length:
            raise OverLimit("max_length")
        if end > len(buf):
            raise Invalid("truncated compact body")
        content = decode_frame_body(buf[at:end], 1, orig)
    else:
        raise Invalid("compact record kind")
    if zlib.crc32(content) != content_crc:
        raise Invalid("content CRC")
    return content, end


# -- Gage's 1994 format ------------------------------------------------------------


def _gage_blocks(buf: bytes) -> list[tuple[dict[int, tuple[int, int]], bytes]]:
    blocks = []
    pos = 0
    n = len(buf)
    while pos < n:
        table: dict[int, tuple[int, int]] = {}
        c = 0
        while c < 256:
            if pos >= n:
                raise Invalid("cut inside a table")
            count = buf[pos]
            pos += 1
            if count > 127:
                c += count - 127
                if c > 256:
                    raise Invalid("table runs past code 255")
                if c == 256:
                    break
                count = 0
            elif c + count > 255:
                raise Invalid("table runs past code 255")
            for _ in range(count + 1):
                if pos >= n:
                    raise Invalid("cut inside a table")
                left = buf[pos]
                pos += 1
                if left != c:
                    if pos >= n:
                        raise Invalid("cut inside a table")
                    table[c] = (left, buf[pos])
                    pos += 1
                c += 1
        if pos + 2 > n:
            raise Invalid("cut inside the size")
        size = buf[pos] << 8 | buf[pos + 1]
        pos += 2
        if pos + size > n:
            raise Invalid("cut inside the payload")
        blocks.append((table, buf[pos : pos + size]))
        pos += size
    return blocks


def _gage_code_lengths(table: dict[int, tuple[int, int]]) -> dict[int, int]:
    """Every code's expansion length (exact ints); a cycle or self-reference is an error."""
    length: dict[int, int] = {}
    for start in table:  # iterative depth-first search
        if start in length:
            continue
        stack = [start]
        on_path = {start}
        while stack:
            c = stack[-1]
            pending = [v for v in table[c] if v in table and v not in length]
            if not pending:
                length[c] = sum(length.get(v, 1) for v in table[c])
                stack.pop()
                on_path.discard(c)
                continue
            v = pending[0]
            if v in on_path:
                raise Invalid("cycle or self-reference in a table")
            stack.append(v)
            on_path.add(v)
    return length


def gage_lengths(buf: bytes, max_length: int | None = None) -> list[int]:
    """Each block's output length, validating as ``bytepair.gage`` documents:
    no self-reference or cycle anywhere in a table, no code of a non-empty block
    longer than that block's output, no block over 1 MiB, the total within max_length."""
    lengths = []
    for table, payload in _gage_blocks(buf):
        length = _gage_code_lengths(table)
        total = sum(length.get(s, 1) for s in payload)
        if payload and any(x > total for x in length.values()):
            raise Invalid("code longer than its block")
        if total > GAGE_MAX_BLOCK_OUTPUT:
            raise Invalid("block over 1 MiB")
        lengths.append(total)
    if max_length is not None and sum(lengths) > max_length:
        raise OverLimit("max_length")
    return lengths


def gage_declared(buf: bytes) -> int:
    """What the blocks of a Gage file spell out, however damaged the file: a reader may
    expand all of them (each capped at 1 MiB) before it meets a bad one."""
    try:
        blocks = _gage_blocks(buf)
    except Invalid:
        return 0
    total = 0
    for table, payload in blocks:
        try:
            length = _gage_code_lengths(table)
        except Invalid:
            continue
        total += min(sum(length.get(s, 1) for s in payload), GAGE_MAX_BLOCK_OUTPUT)
    return total


def decode_gage(buf: bytes, max_length: int | None = None) -> bytes:
    gage_lengths(buf, max_length)
    out = []
    for table, payload in _gage_blocks(buf):
        memo: dict[int, bytes] = {}

        def expand(c: int, table: dict[int, tuple[int, int]] = table, memo: dict[int, bytes] = memo) -> bytes:
            if c not in table:
                return bytes([c])
            if c not in memo:
                # operands first, without recursion: post-order over the (acyclic) table
                stack = [c]
                while stack:
                    top = stack[-1]
                    todo = [v for v in table[top] if v in table and v not in memo]
                    if todo:
                        stack.extend(todo)
                        continue
                    stack.pop()
                    if top not in memo:
                        left, right = table[top]
                        memo[top] = memo.get(left, bytes([left])) + memo.get(right, bytes([right]))
            return memo[c]

        out.append(b"".join(expand(s) for s in payload))
    return b"".join(out)


def streamable_prefix(buf: bytes) -> bytes:
    """The content of the frames a streaming reader can check one by one before the first
    damage: the most it may return (a repeated or foreign frame is only caught at the end)."""
    out: list[bytes] = []
    with contextlib.suppress(Invalid):
        decode_bytepair(buf, out=out)
    return b"".join(out)
