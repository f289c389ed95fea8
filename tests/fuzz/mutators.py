"""Mutators: damaged, crafted and hostile variants of valid streams, and crafted pair tables.

Each mutator takes a ``random.Random`` and a seed (a valid stream and what it
decodes to) and returns a :class:`Mutant`. Byte-level mutators work on any data;
structure-aware ones edit fields of the bytepair container or of Gage's format and
fix the checksums afterwards, so that the damage reaches the validation that
sits behind them. ``craft_tables`` builds ``PairTables`` for the decoders directly.

Whether a mutant *should* decode is decided by the independent reference
decoders in ``reference.py``, not here; ``must_fail`` only marks the damage the
format promises to detect whatever the rest of the data (every single-bit or
single-byte change, every cut, a frame dropped or repeated).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import random
import struct
import zlib
from collections.abc import Callable

import numpy as np

from bytepair.core.escape import Escapes
from bytepair.core.tables import PairTables

from . import container as C
from . import reference
from .seeds import Seed

INTERESTING8 = (0, 1, 2, 0x7F, 0x80, 0xFE, 0xFF)
INTERESTING16 = (0, 1, 2, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF)
INTERESTING32 = (0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF, 1 << 26, (1 << 26) + 1, (1 << 26) - 1)


@dataclasses.dataclass
class Mutant:
    data: bytes
    how: str  # mutator name, then details
    fmt: str  # what the data was made from: "bytepair", "gage" or "random"
    seed: str
    expect: bytes | None = None  # what a successful decode must give, when the reference cannot say
    must_fail: bool = False  # damage the format promises to detect


Mutator = Callable[[random.Random, Seed, list[Seed]], Mutant]


def _pos(rng: random.Random, n: int) -> int:
    return rng.randrange(n) if n else 0


def _boundary_prefix(seed: Seed, cut: int) -> bytes | None:
    """What a cut of a multi-stream file at a stream boundary decodes to, else None."""
    for stream_end, orig_end in seed.boundaries:
        if cut == stream_end:
            return seed.original[:orig_end]
    return None


# -- byte-level mutators (any format) --------------------------------------------


def bit_flips(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    data = bytearray(seed.stream)
    k = 1 if rng.random() < 0.6 else rng.randint(2, 8)
    bits: set[int] = set()
    for _ in range(k):
        if data:
            bit = rng.randrange(8 * len(data))
            bits ^= {bit}
            data[bit // 8] ^= 1 << (bit % 8)
    return Mutant(
        bytes(data),
        f"bit_flips {sorted(bits)}",
        seed.fmt,
        seed.name,
        seed.original,
        must_fail=seed.fmt == "bytepair" and len(bits) == 1,
    )


def byte_changes(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    data = bytearray(seed.stream)
    changed = set()
    for _ in range(1 if rng.random() < 0.5 else rng.randint(2, 6)):
        if not data:
            break
        at = rng.randrange(len(data))
        r = rng.random()
        value = (
            rng.choice(INTERESTING8)
            if r < 0.4
            else (data[at] + rng.choice((-1, 1))) % 256
            if r < 0.6
            else (rng.randrange(256))
        )
        if value != data[at]:
            changed.add(at)
        data[at] = value
    changed = {at for at in changed if data[at] != seed.stream[at]}  # a later change may undo an earlier one
    single = seed.fmt == "bytepair" and len(changed) == 1
    return Mutant(
        bytes(data), f"byte_changes at {sorted(changed)}", seed.fmt, seed.name, seed.original, must_fail=single
    )


def insert_bytes(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    data = seed.stream
    at = rng.randint(0, len(data))
    r = rng.random()
    if r < 0.4:
        piece = rng.randbytes(rng.randint(1, 32))
    elif r < 0.7 and data:
        lo = _pos(rng, len(data))
        piece = data[lo : lo + rng.randint(1, 64)]
    else:
        piece = rng.choice((b"BYPR", b"F", b"E", b"\x00", b"\xff", C.stream_header(), b"\xfe\x7f\xfe\xff\x00\x00"))
    return Mutant(data[:at] + piece + data[at:], f"insert {len(piece)} at {at}", seed.fmt, seed.name, seed.original)


def delete_bytes(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    data = seed.stream
    if not data:
        return insert_bytes(rng, seed, pool)
    at = rng.randrange(len(data))
    n = rng.randint(1, 64)
    return Mutant(data[:at] + data[at + n :], f"delete {n} at {at}", seed.fmt, seed.name, seed.original)


def truncate(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    data = seed.stream
    cut = rng.randint(0, max(len(data) - 1, 0))
    if rng.random() < 0.3 and seed.fmt == "bytepair":  # cut at or next to a record boundary
        recs = C.records(data)
        if recs:
            rec = rng.choice(recs)
            cut = max(0, min(len(data) - 1, rng.choice((rec.start, rec.end)) + rng.choice((-1, 0, 1))))
    prefix = _boundary_prefix(seed, cut)
    return Mutant(
        data[:cut],
        f"truncate to {cut} of {len(data)}",
        seed.fmt,
        seed.name,
        prefix,
        must_fail=seed.fmt == "bytepair" and prefix is None,
    )


def duplicate_range(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    data = seed.stream
    if not data:
        return insert_bytes(rng, seed, pool)
    lo = rng.randrange(len(data))
    hi = min(len(data), lo + rng.randint(1, 512))
    at = rng.randint(0, len(data))
    return Mutant(
        data[:at] + data[lo:hi] + data[at:], f"duplicate {lo}:{hi} at {at}", seed.fmt, seed.name, seed.original
    )


def splice(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    other = rng.choice(pool)
    a, b = seed.stream, other.stream
    cut_a = rng.randint(0, len(a))
    cut_b = rng.randint(0, len(b))
    return Mutant(
        a[:cut_a] + b[cut_b:], f"splice {seed.name}[:{cut_a}] + {other.name}[{cut_b}:]", seed.fmt, seed.name, None
    )


def append_garbage(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    tail = rng.choice((rng.randbytes(rng.randint(1, 40)), b"BY", b"BYPR", C.stream_header(), b"\x00" * 8))
    return Mutant(
        seed.stream + tail,
        f"append {tail[:8]!r}... ({len(tail)} bytes)",
        seed.fmt,
        seed.name,
        None,
        must_fail=seed.fmt == "bytepair",
    )


def concatenate(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    other = rng.choice([s for s in pool if s.fmt == seed.fmt] or [seed])
    return Mutant(
        seed.stream + other.stream, f"concatenate {other.name}", seed.fmt, seed.name, seed.original + other.original
    )


def random_bytes(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    n = rng.choice((0, 1, 7, 8, 9, 21, 28, 29, rng.randint(0, 64), rng.randint(0, 4096)))
    r = rng.random()
    if r < 0.5:
        data = rng.randbytes(n)
    elif r < 0.8:
        data = C.stream_header() + rng.randbytes(n)  # a real header, then noise
    else:
        data = C.stream_header() + b"F" + rng.randbytes(n)
    return Mutant(data, f"random {len(data)} bytes", "random", "-", None, must_fail=data[:4] != C.MAGIC)


BYTE_MUTATORS: list[tuple[Mutator, float]] = [
    (bit_flips, 4),
    (byte_changes, 3),
    (insert_bytes, 1),
    (delete_bytes, 1),
    (truncate, 2),
    (duplicate_range, 1),
    (splice, 0.5),
    (append_garbage, 0.5),
    (concatenate, 0.3),
    (random_bytes, 1),
]


# -- bytepair container: records -----------------------------------------------


def _frames(seed: Seed) -> tuple[list[C.Record], list[int]]:
    recs = C.records(seed.stream)
    return recs, [i for i, r in enumerate(recs) if r.kind == "frame"]


def _join(
    data: bytes, recs: list[C.Record], parts: dict[int, bytes | None], extra: dict[int, bytes] | None = None
) -> bytes:
    """The records again, with record i replaced by parts[i] (None: dropped), extra[i] inserted after it."""
    out = []
    end = 0
    for i, rec in enumerate(recs):
        part = parts.get(i, data[rec.start : rec.end])
        if part is not None:
            out.append(part)
        if extra and i in extra:
            out.append(extra[i])
        end = rec.end
    out.append(data[end:])
    return b"".join(out)


def frame_shuffle(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    recs, frames = _frames(seed)
    if not frames:
        return bit_flips(rng, seed, pool)
    data = seed.stream
    i = rng.choice(frames)
    piece = data[recs[i].start : recs[i].end]
    op = rng.choice(("dup", "drop", "swap", "foreign", "move"))
    if op == "dup":
        out = _join(data, recs, {}, {i: piece})
        must = True
    elif op == "drop":
        out = _join(data, recs, {i: None})
        must = True
    elif op == "swap" and len(frames) > 1:
        j = rng.choice([f for f in frames if f != i])
        out = _join(data, recs, {i: data[recs[j].start : recs[j].end], j: piece})
        must = False  # two frames of the same content are interchangeable
    else:
        others = [s for s in pool if s.fmt == "bytepair" and s is not seed]
        other = rng.choice(others)
        orecs, oframes = _frames(other)
        if not oframes:
            return bit_flips(rng, seed, pool)
        k = rng.choice(oframes)
        foreign = other.stream[orecs[k].start : orecs[k].end]
        out = _join(data, recs, {i: foreign}) if op == "foreign" else _join(data, recs, {}, {i: foreign})
        op += f" from {other.name}"
        must = False  # a frame of another stream may hold the same content
    return Mutant(out, f"frame_shuffle {op} frame record {i}", "bytepair", seed.name, seed.original, must_fail=must)


def end_edit(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    recs = C.records(seed.stream)
    ends = [i for i, r in enumerate(recs) if r.kind == "end"]
    heads = [i for i, r in enumerate(recs) if r.kind == "header"]
    data = seed.stream
    if rng.random() < 0.25 and heads:  # a stream header with another version or flags, its check fixed
        i = rng.choice(heads)
        v = C.VERSION
        version, flags = rng.choice(((v - 1, 0), (v + 1, 0), (0, 0), (v, 2), (v, 0x80), (255, 255)))
        return Mutant(
            _join(data, recs, {i: C.stream_header(version, flags)}),
            f"stream header v{version} f{flags}",
            "bytepair",
            seed.name,
            None,
            must_fail=True,
        )
    if not ends:
        return bit_flips(rng, seed, pool)
    i = rng.choice(ends)
    _, n_frames, total, crc = struct.unpack_from("<BIQI", data, recs[i].start)
    field = rng.choice(("n_frames", "total", "crc"))
    delta = rng.choice((1, -1, 1 << 31, rng.randrange(1, 1 << 16)))
    if field == "n_frames":
        n_frames = (n_frames + delta) % (1 << 32)
    elif field == "total":
        total = (total + rng.choice((delta, 1 << 63, 1 << 32))) % (1 << 64)
    else:
        crc ^= rng.randrange(1, 1 << 32)
    return Mutant(
        _join(data, recs, {i: C.end_record(n_frames, total, crc)}),
        f"end_edit {field}",
        "bytepair",
        seed.name,
        None,
        must_fail=True,
    )


def _pick_frame(rng: random.Random, seed: Seed) -> tuple[list[C.Record], int, C.Frame] | None:
    recs, frames = _frames(seed)
    if not frames:
        return None
    i = rng.choice(frames)
    frame, _ = C.parse_frame(seed.stream, recs[i].start)
    return recs, i, frame


def _interesting(rng: random.Random, value: int, choices: tuple[int, ...]) -> int:
    r = rng.random()
    if r < 0.4:
        return rng.choice(choices)
    if r < 0.8:
        return max(0, value + rng.choice((-2, -1, 1, 2, value, -(value // 2))))
    return rng.randrange(1 << 32)


def header_field(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    """A frame header field changed, the frame CRC recomputed over it."""
    picked = _pick_frame(rng, seed)
    if picked is None:
        return bit_flips(rng, seed, pool)
    recs, i, frame = picked
    field = rng.choice(("n_blocks", "orig_size", "body_size", "content_crc"))
    old = getattr(frame, field)
    new = _interesting(rng, old, INTERESTING32) & 0xFFFFFFFF
    setattr(frame, field, new)
    out = _join(seed.stream, recs, {i: frame.pack(fix_counts=False)})
    return Mutant(out, f"header_field {field} {old} -> {new}", "bytepair", seed.name, seed.original)


def block_field(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    """A per-block column entry changed, the frame CRC (and maybe the sizes) recomputed."""
    picked = _pick_frame(rng, seed)
    if picked is None:
        return bit_flips(rng, seed, pool)
    recs, i, frame = picked
    b = rng.randrange(len(frame.blocks))
    blk = frame.blocks[b]
    field = rng.choice(
        (
            "orig_len",
            "payload_len",
            "n_fresh",
            "n_recycled",
            "code_set",
            "code_set_bytes",
            "fresh",
            "recycled",
            "payload",
            "n_escaped",
            "n_escaped",
            "mark",
            "escaped",
        )
    )
    consistent = rng.random() < 0.5  # also fix what depends on it, so only the deeper checks remain
    if field in ("orig_len", "payload_len"):
        old = getattr(blk, field)
        setattr(blk, field, _interesting(rng, old, INTERESTING16) & 0xFFFF)
        if field == "payload_len" and consistent:
            blk.payload = (blk.payload + rng.randbytes(max(0, blk.payload_len - len(blk.payload))))[: blk.payload_len]
        detail = f"{old} -> {getattr(blk, field)}"
    elif field in ("n_fresh", "n_recycled"):
        old = getattr(blk, field)
        new = _interesting(rng, old, INTERESTING8) & 0xFF
        setattr(blk, field, new)
        if consistent and field == "n_recycled":
            blk.recycled = (blk.recycled + rng.randbytes(3 * max(0, new - old)))[: 3 * new]
        elif consistent:
            blk.fresh = (blk.fresh + rng.randbytes(2 * max(0, new - old)))[: 2 * new]
            blk.code_set, blk.code_set_bytes = _code_set_for(rng, rng.sample(range(256), new))
        detail = f"{old} -> {new}"
    elif field == "code_set":
        old = blk.code_set
        blk.code_set = rng.choice((0, 1, 2, 16, 17, 0x80, 0xFE, 0xFF, rng.randrange(256)))
        if consistent:
            size = C.code_set_size(blk.code_set) if blk.code_set <= 16 or blk.code_set == C.BITMAP else 0
            filler = bytes(size) if rng.random() < 0.3 else rng.randbytes(size)  # an empty bitmap, say
            blk.code_set_bytes = (blk.code_set_bytes + filler)[:size]
        detail = f"{old} -> {blk.code_set}"
    elif field == "n_escaped":
        old = blk.n_escaped
        new = _escape_count(rng, blk)
        blk.n_escaped = new
        if consistent:  # escaped bytes and mark to match: only the count check remains
            blk.escaped = (blk.escaped + rng.randbytes(max(0, new - len(blk.escaped))))[:new]
            blk.mark = (blk.mark or bytes([rng.randrange(256)]))[: 1 if new else 0]
        detail = f"{old} -> {new}"
    elif field == "mark":
        old_mark = blk.mark
        if consistent or not blk.mark:  # another value, or a mark a block without escapes must not have
            blk.mark = bytes([rng.randrange(256)])
        else:
            blk.mark = b""
        detail = f"{old_mark.hex() or '-'} -> {blk.mark.hex() or '-'}"
    else:
        raw = bytearray(getattr(blk, field))
        if not raw:
            raw = bytearray(rng.randbytes(2))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(raw))
            raw[at] = rng.choice((rng.randrange(256), raw[at] ^ (1 << rng.randrange(8)), *INTERESTING8))
        setattr(blk, field, bytes(raw))
        detail = "bytes edited"
    fix_counts = consistent or rng.random() < 0.5
    out = _join(seed.stream, recs, {i: frame.pack(fix_counts=fix_counts)})
    return Mutant(
        out,
        f"block_field {field} block {b} {detail} consistent={consistent} counts={fix_counts}",
        "bytepair",
        seed.name,
        seed.original,
    )


def block_shuffle(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    """Blocks of a frame duplicated, dropped, swapped or split, sizes and frame CRC recomputed."""
    picked = _pick_frame(rng, seed)
    if picked is None:
        return bit_flips(rng, seed, pool)
    recs, i, frame = picked
    blocks = frame.blocks
    b = rng.randrange(len(blocks))
    op = rng.choice(("dup", "drop", "swap", "split_stored", "merge_stored"))
    expect_same = False
    if op == "dup":
        blocks.insert(b, blocks[b].copy())
    elif op == "drop" and len(blocks) > 1:
        del blocks[b]
    elif op == "swap" and len(blocks) > 1:
        c = rng.randrange(len(blocks))
        blocks[b], blocks[c] = blocks[c], blocks[b]
    elif op == "split_stored":  # stored blocks cut into smaller stored blocks: still valid, same content
        expect_same = True
        new: list[C.Block] = []
        for blk in blocks:
            if blk.stored and blk.payload_len == blk.orig_len and rng.random() < 0.7:
                step = rng.choice((1, 2, 3, rng.randint(1, max(1, blk.orig_len))))
                for lo in range(0, blk.orig_len, step):
                    p = blk.payload[lo : lo + step]
                    new.append(C.Block(len(p), len(p), 0, 0, 0, b"", b"", b"", p))
            else:
                new.append(blk)
        frame.blocks = new
    else:  # neighbouring stored blocks joined beyond 64 KiB (orig_len wraps): must be refused
        stored = [blk for blk in blocks if blk.stored]
        if stored:
            joined = b"".join(blk.payload for blk in stored)
            payload = joined * (1 + 65536 // max(1, len(joined)))
            blocks.append(C.Block(len(payload), len(payload), 0, 0, 0, b"", b"", b"", payload))
    out = _join(seed.stream, recs, {i: frame.pack()})
    return Mutant(out, f"block_shuffle {op} block {b}", "bytepair", seed.name, seed.original if expect_same else None)


# -- escapes -----------------------------------------------------------------------


def _escape_count(rng: random.Random, blk: C.Block) -> int:
    """A new n_escaped for *blk*: off by one, zero, at or past orig_len, huge."""
    n, orig = blk.n_escaped, blk.orig_len
    return (
        rng.choice(
            (n + 1, max(0, n - 1), 0, 1, orig, orig + 1, orig - 1, 2 * n, 0xFFFF, 0x8000, rng.randrange(1 << 16))
        )
        & 0xFFFF
    )


def expansions(frame: C.Frame) -> list[bytes] | None:
    """Each block's expansion before its escapes are restored (what its mark is counted in),
    per the reference; None when the frame breaks a rule before that."""
    if frame.raw_body is not None:
        return None
    try:
        blocks = reference.parse_frame_body(frame.body(), len(frame.blocks), sum(b.orig_len for b in frame.blocks))
        return reference.block_contents(blocks, budget=False, escapes=False)
    except (reference.Invalid, struct.error):
        return None


def _mark_choice(rng: random.Random, expansion: bytes) -> int:
    """A value of *expansion* to use as a mark: a rare one, the commonest, or any present one."""
    counts = collections.Counter(expansion)
    values = sorted(counts, key=lambda v: (counts[v], v))
    r = rng.random()
    if r < 0.5:
        return values[0] if rng.random() < 0.5 else rng.choice(values[: max(1, len(values) // 4)])
    if r < 0.7:
        return values[-1]
    return rng.choice(values)


def add_escapes(rng: random.Random, blk: C.Block, expansion: bytes) -> str:
    """Give *blk* escapes the format allows: a mark present in its expansion, one escaped
    byte per occurrence (the mark itself, keeping the content, or other values)."""
    mark = _mark_choice(rng, expansion)
    n = expansion.count(mark)
    style = rng.choice(("same", "rare", "random", "fresh"))
    if style == "same":  # every escaped byte is the mark: the content does not change
        escaped = bytes([mark]) * n
    elif style == "rare":
        escaped = bytes(rng.choice((0x80, 0x81, 0x9F, 0xFF, 0, mark)) for _ in range(n))
    elif style == "fresh":  # values that are the block's fresh codes (as a writer's escapes are)
        codes = [c for c in range(256) if c not in set(expansion)] or [mark]
        escaped = bytes(rng.choice(codes) for _ in range(n))
    else:
        escaped = rng.randbytes(n)
    blk.set_escapes(n, mark, escaped)
    return f"add mark {mark} x{n} {style}"


def escape_edit(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    """A block's escapes edited (count, mark, escaped bytes), moved, swapped, added or removed;
    frame sizes and CRC recomputed, and half the time the content CRC and end record too, so
    an edit the format allows gives a valid stream with other content."""
    picked = _pick_frame(rng, seed)
    if picked is None:
        return bit_flips(rng, seed, pool)
    recs, i, frame = picked
    sizes = frame.n_blocks, frame.orig_size, frame.body_size
    blocks = frame.blocks
    notes = []
    escaping = [b for b, blk in enumerate(blocks) if blk.n_escaped]
    op = rng.choice(
        ("count", "count", "mark", "mark", "escaped", "escaped", "move", "swap", "add", "add", "remove", "all")
    )
    if op in ("move", "swap") and len(blocks) == 1:
        op = "count"
    if op == "add" or not escaping:
        exp = expansions(frame)
        encoded = [x for x, blk in enumerate(blocks) if not blk.stored]
        b = rng.choice(encoded) if encoded and rng.random() < 0.7 else rng.randrange(len(blocks))
        if exp is None:
            blocks[b].set_escapes(rng.randint(1, 4), rng.randrange(256), rng.randbytes(4))
            blocks[b].escaped = blocks[b].escaped[: blocks[b].n_escaped]
            notes.append(f"block {b} random escapes")
        else:
            notes.append(f"block {b} " + add_escapes(rng, blocks[b], exp[b]))
        escaping = [b]
        if op in ("add", "remove") or rng.random() < 0.3:  # (removing them again would undo it)
            op = "add"
    b = rng.choice(escaping)
    blk = blocks[b]
    if op == "count":
        old = blk.n_escaped
        new = _escape_count(rng, blk)
        blk.n_escaped = new
        if rng.random() < 0.7:  # the escaped bytes follow (so the sections stay aligned)
            blk.escaped = (blk.escaped + rng.randbytes(max(0, new - len(blk.escaped))))[:new]
            blk.mark = blk.mark[: 1 if new else 0]
            notes.append("with bytes")
        notes.append(f"block {b} n_escaped {old} -> {new}")
    elif op == "mark":
        old = blk.mark[0] if blk.mark else -1
        exp = expansions(frame)
        r = rng.random()
        if exp is not None and r < 0.4:  # a value of the expansion: maybe one with the same count
            same = [v for v in set(exp[b]) if exp[b].count(v) == blk.n_escaped and v != old]
            new = rng.choice(same) if same and rng.random() < 0.6 else _mark_choice(rng, exp[b])
        elif r < 0.6:
            new = (old + rng.choice((1, -1))) % 256
        elif r < 0.8 and blk.n_fresh:  # one of its fresh codes: never in the expansion
            new = rng.choice(_codes_of(blk) or [rng.randrange(256)])
        else:
            new = rng.randrange(256)
        blk.mark = bytes([new])
        notes.append(f"block {b} mark {old} -> {new}")
    elif op == "escaped":
        raw = bytearray(blk.escaped)
        what = rng.choice(("change", "drop", "add"))
        at = rng.randint(0, max(0, len(raw) - 1))
        if what == "change" and raw:
            raw[at] = rng.choice(
                ((raw[at] + 1) % 256, raw[at] ^ 0x80, blk.mark[0] if blk.mark else 0, rng.randrange(256))
            )
        elif what == "drop" and raw:
            del raw[at]
        else:
            raw.insert(at, rng.randrange(256))
        blk.escaped = bytes(raw)
        if what != "change" and rng.random() < 0.5:  # n_escaped follows
            blk.n_escaped = len(raw)
            blk.mark = blk.mark[: 1 if raw else 0]
            what += " with count"
        notes.append(f"block {b} escaped byte {at} {what}")
    elif op == "move":  # escape counts moved to another block
        c = rng.choice([x for x in range(len(blocks)) if x != b])
        k = rng.randint(1, blk.n_escaped)
        blk.n_escaped -= k
        blocks[c].n_escaped += k
        if rng.random() < 0.5:  # the bytes too (the marks section follows the counts)
            moved = blk.escaped[len(blk.escaped) - k :]
            blk.escaped = blk.escaped[: len(blk.escaped) - k]
            blocks[c].escaped = moved + blocks[c].escaped if c > b else blocks[c].escaped + moved
            if not blk.n_escaped:
                blocks[c].mark = blocks[c].mark or blk.mark
                blk.mark = b""
            elif not blocks[c].mark:
                blocks[c].mark = bytes([rng.randrange(256)])
            notes.append("with bytes")
        notes.append(f"{k} escapes block {b} -> {c}")
    elif op == "swap":
        c = rng.choice([x for x in range(len(blocks)) if x != b])
        x, y = blocks[b], blocks[c]
        x.n_escaped, x.mark, x.escaped, y.n_escaped, y.mark, y.escaped = (
            y.n_escaped,
            y.mark,
            y.escaped,
            x.n_escaped,
            x.mark,
            x.escaped,
        )
        notes.append(f"escapes of blocks {b} and {c} swapped")
    elif op == "remove":  # the marks stay in the content as literals
        blk.set_escapes(0, None, b"")
        notes.append(f"block {b} escapes removed")
    elif op == "all":  # every escaping block's count or mark off by one
        for e in escaping:
            if rng.random() < 0.5:
                blocks[e].n_escaped += 1
                blocks[e].escaped += b"\x00"
            elif blocks[e].mark:
                blocks[e].mark = bytes([(blocks[e].mark[0] + 1) % 256])
        notes.append(f"{len(escaping)} blocks off by one")
    mutant = _finish_crafted(rng, seed, recs, {i: frame}, "escape_edit " + op + ": " + "; ".join(notes))
    if rng.random() < 0.15:  # the frame header's sizes left as they were, its CRC fixed
        frame.n_blocks, frame.orig_size, frame.body_size = sizes
        parts: dict[int, bytes | None] = {i: frame.pack(fix_counts=False)}
        mutant = dataclasses.replace(
            mutant, data=_join(seed.stream, recs, parts), how=mutant.how + ", sizes kept", expect=seed.original
        )
    return mutant


def _codes_of(blk: C.Block) -> list[int]:
    try:
        return reference._fresh_codes(blk.code_set, blk.code_set_bytes, blk.n_fresh)
    except (reference.Invalid, IndexError):
        return []


# -- crafted pair tables ------------------------------------------------------------


def _code_set_for(rng: random.Random, codes: list[int]) -> tuple[int, bytes]:
    """The code-set byte and bytes for these fresh codes (runs or bitmap, as FORMAT.md says)."""
    codes = sorted(set(codes), reverse=True)
    if not codes:
        return 0, b""
    runs: list[tuple[int, int]] = []
    prev = 256
    for c in codes:
        if runs and c == prev - 1:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((prev - c - 1, 1))
        prev = c
    if len(runs) <= 16 and (rng.random() < 0.8 or len(runs) > 16):
        return len(runs), bytes(x for run in runs for x in run)
    flags = bytearray(32)
    for c in codes:
        i = 255 - c
        flags[i // 8] |= 0x80 >> (i % 8)
    return C.BITMAP, bytes(flags)


@dataclasses.dataclass
class Table:
    """One block's merges in creation order: (code, left, right), the first n_fresh with fresh codes."""

    merges: list[tuple[int, int, int]]
    n_fresh: int
    payload: bytes
    note: str

    def lengths(self) -> tuple[list[int], int]:
        """Expansion length of every merge and of the payload, as FORMAT.md resolves them (exact ints)."""
        length = [1] * 256
        out = []
        for code, left, right in self.merges:
            size = length[left] + length[right]
            out.append(size)
            length[code] = size
        return out, sum(length[s] for s in self.payload)


def _fresh_pool(rng: random.Random, n: int) -> list[int]:
    if rng.random() < 0.5:
        return list(range(255, 255 - n, -1))
    return sorted(rng.sample(range(256), n), reverse=True)


def craft_table(rng: random.Random) -> Table:
    """A block's merges, valid or hostile in one of the ways FORMAT.md rules out."""
    design = rng.choice(
        (
            "doubling",
            "linear",
            "random",
            "recycled_churn",
            "cycle",
            "self_ref",
            "forward_ref",
            "duplicate_fresh",
            "budget",
            "wide",
            "recycled_self",
        )
    )
    a, b = rng.sample(range(48, 58), 2)
    if design == "doubling":  # up to 255 deep: code k spells 2**(k+1) bytes
        depth = rng.choice((1, 2, 8, 15, 16, 17, 30, 64, 254, 255, rng.randint(1, 255)))
        codes = _fresh_pool(rng, depth)
        merges = [(codes[0], a, a)] + [(codes[k], codes[k - 1], codes[k - 1]) for k in range(1, depth)]
        payload = bytes([codes[-1]] * rng.randint(1, 3))
        return Table(merges, depth, payload, f"doubling chain {depth}")
    if design == "linear":  # deepest nesting a block allows: 255 levels of (previous, a)
        depth = rng.choice((30, 31, 60, 200, 254, 255, rng.randint(1, 255)))
        codes = _fresh_pool(rng, depth)
        merges = [(codes[0], a, b)] + [(codes[k], codes[k - 1], rng.choice((a, b))) for k in range(1, depth)]
        payload = bytes(rng.choice((codes[-1], a, b, codes[rng.randrange(depth)])) for _ in range(rng.randint(1, 20)))
        return Table(merges, depth, payload, f"linear chain {depth}")
    if design in ("random", "wide"):
        n = rng.randint(1, 40 if design == "random" else 200)
        codes = _fresh_pool(rng, n)
        literals = [v for v in range(256) if v not in codes] or [0]
        merges = []
        for k in range(n):
            symbols = literals[:8] + codes[:k]
            merges.append((codes[k], rng.choice(symbols), rng.choice(symbols)))
        symbols = literals[:8] + codes
        payload = bytes(rng.choice(symbols) for _ in range(rng.randint(1, 60)))
        return Table(merges, n, payload, f"{design} {n}")
    if design in ("recycled_churn", "recycled_self"):  # one value redefined again and again
        n_fresh = rng.randint(0, 3)
        codes = _fresh_pool(rng, n_fresh)
        merges = [(codes[k], a, b if k == 0 else codes[k - 1]) for k in range(n_fresh)]
        c = rng.choice((a, b, *codes, rng.randrange(256)))
        for _ in range(rng.randint(1, 30 if design == "recycled_churn" else 16)):
            merges.append(
                (c, c, rng.choice((c, a, b)))
                if design == "recycled_self"
                else (c, rng.choice((a, b, c)), rng.choice((a, b, c)))
            )
        payload = bytes(rng.choice((c, a, b)) for _ in range(rng.randint(1, 10)))
        return Table(merges, n_fresh, payload, f"{design} code {c}")
    if design == "cycle":  # fresh codes that use each other: the later one before it exists
        codes = _fresh_pool(rng, rng.randint(2, 5))
        merges = [(codes[k], codes[(k + 1) % len(codes)], a) for k in range(len(codes))]
        return Table(merges, len(codes), bytes([codes[0]]), f"cycle of {len(codes)}")
    if design == "self_ref":
        codes = _fresh_pool(rng, rng.randint(1, 4))
        k = rng.randrange(len(codes))
        merges = [(c, a, b) for c in codes]
        merges[k] = (codes[k], codes[k], rng.choice((a, codes[k])))
        return Table(merges, len(codes), bytes([codes[k]]), "fresh self-reference")
    if design == "forward_ref":
        codes = _fresh_pool(rng, rng.randint(2, 6))
        merges = [(c, a, b) for c in codes]
        k = rng.randrange(len(codes) - 1)
        merges[k] = (codes[k], a, codes[rng.randint(k + 1, len(codes) - 1)])
        return Table(merges, len(codes), bytes([codes[k]]), "forward reference")
    if design == "duplicate_fresh":
        codes = _fresh_pool(rng, rng.randint(2, 6))
        codes[1] = codes[0]
        merges = [(c, a, b) for c in codes]
        return Table(merges, len(codes), bytes([codes[0]]), "fresh code twice")
    # "budget": many long codes nothing uses: the merges describe far more than the block
    depth = rng.randint(8, 12)
    extra = rng.randint(20, 240 - depth)
    codes = _fresh_pool(rng, depth + extra)
    merges = [(codes[0], a, a)] + [(codes[k], codes[k - 1], codes[k - 1]) for k in range(1, depth)]
    merges += [(codes[depth + k], codes[depth - 1], codes[depth - 2]) for k in range(extra)]
    return Table(merges, depth + extra, bytes([codes[depth - 1]]), f"budget {depth}+{extra}")


def table_block(rng: random.Random, t: Table, escapes: bool = True) -> tuple[C.Block, int]:
    """The crafted table as a container block; orig_len is the true length, or a wrong one.
    With *escapes*, a quarter of them get escapes: valid ones when the table can be expanded
    (sometimes with the count off by one), else random ones."""
    _, total = t.lengths()
    orig = total if rng.random() < 0.8 else total + rng.choice((-1, 1, 2, -total // 2))
    orig = max(1, min(orig, 0xFFFF))
    kind, code_bytes = _code_set_for(rng, [m[0] for m in t.merges[: t.n_fresh]])
    if rng.random() < 0.1:  # the code set itself hostile: wrong popcount, runs past 255, take 0
        sabotage = rng.choice(("popcount", "past255", "take0", "kind"))
        if sabotage == "popcount":
            flags = bytearray(
                code_bytes if kind == C.BITMAP else _code_set_for(random.Random(0), [255])[1].ljust(32, b"\0")
            )
            flags[rng.randrange(32)] ^= 1 << rng.randrange(8)
            kind, code_bytes = C.BITMAP, bytes(flags)
        elif sabotage == "past255":
            kind, code_bytes = 2, bytes([200, max(1, t.n_fresh - 1), 100, 1])
        elif sabotage == "take0":
            kind, code_bytes = 2, bytes([0, t.n_fresh, 3, 0])
        else:
            kind = rng.choice((17, 0x80, 0xFE, 0))
            code_bytes = code_bytes[: C.code_set_size(kind)] if kind <= 16 else b""
        t.note += f" code set {sabotage}"
    fresh = b"".join(bytes([m[1], m[2]]) for m in t.merges[: t.n_fresh])
    recycled = b"".join(bytes(m) for m in t.merges[t.n_fresh :])
    blk = C.Block(
        orig, len(t.payload), t.n_fresh, len(t.merges) - t.n_fresh, kind, code_bytes, fresh, recycled, t.payload
    )
    if escapes and rng.random() < 0.25:
        expansion = None
        if total <= 0xFFFF:
            with contextlib.suppress(reference.Invalid):
                expansion = reference.block_contents(
                    [(orig, t.n_fresh, t.merges, t.payload)], budget=False, escapes=False
                )[0]
        if expansion:
            t.note += " escapes " + add_escapes(rng, blk, expansion)
            if rng.random() < 0.2:
                blk.n_escaped += rng.choice((1, -1))
                blk.escaped = blk.escaped[: blk.n_escaped] + rng.randbytes(max(0, blk.n_escaped - len(blk.escaped)))
                t.note += " off by one"
        else:
            n = rng.randint(1, 8)
            blk.set_escapes(n, rng.randrange(256), rng.randbytes(n))
            t.note += f" random escapes x{n}"
    return blk, total


def crafted_frame(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    """A block of a frame replaced by (or a frame extended with) a crafted table, CRCs fixed.

    Half the time the frame's content CRC and the end record are recomputed from what
    the reference decoder makes of the new frame, so a crafted table that the format
    allows gives a fully valid stream, which the library must decode.
    """
    picked = _pick_frame(rng, seed)
    if picked is None:
        return bit_flips(rng, seed, pool)
    recs, i, frame = picked
    t = craft_table(rng)
    blk, _ = table_block(rng, t)
    if rng.random() < 0.5:
        frame.blocks[rng.randrange(len(frame.blocks))] = blk
    else:
        frame.blocks.insert(rng.randint(0, len(frame.blocks)), blk)
    return _finish_crafted(rng, seed, recs, {i: frame}, f"crafted_frame {t.note}")


def _finish_crafted(
    rng: random.Random, seed: Seed, recs: list[C.Record], frames: dict[int, C.Frame], how: str
) -> Mutant:
    """Pack edited frames; maybe recompute content CRCs and end records so the stream is valid."""
    recraft = rng.random() < 0.5
    data = seed.stream
    parts: dict[int, bytes | None] = {}
    if not recraft:
        for i, frame in frames.items():
            parts[i] = frame.pack()
        return Mutant(_join(data, recs, parts), how + " (content CRC kept)", "bytepair", seed.name, seed.original)
    # recompute the content CRCs of the edited frames, then every end record
    n_frames = total = crc = 0
    for i, rec in enumerate(recs):
        if rec.kind == "header":
            n_frames = total = crc = 0
        elif rec.kind == "frame":
            frame = frames.get(i) or C.parse_frame(data, rec.start)[0]
            if i in frames:
                frame.pack()
                try:
                    content = reference.decode_frame_body(frame.body(), frame.n_blocks, frame.orig_size)
                    frame.content_crc = zlib.crc32(content)
                except reference.Invalid:
                    content = b""
                parts[i] = frame.pack()
            else:
                content = reference.decode_frame_body(frame.body(), frame.n_blocks, frame.orig_size)
            n_frames += 1
            total += frame.orig_size
            crc = zlib.crc32(content, crc)
        elif rec.kind == "end":
            parts[i] = C.end_record(n_frames, total, crc)
    return Mutant(_join(data, recs, parts), how + " (recrafted)", "bytepair", seed.name, None)


def many_blocks(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    """A valid frame of very many tiny blocks, one of them encoded: what a decoder spends
    per block, not per byte, shows here (n_blocks may be as large as orig_size)."""
    n = rng.choice((1000, 5000, 20_000, rng.randint(100, 40_000)))
    escaped = rng.random() < 0.3  # the one-byte blocks escaped too: 2 more body bytes each
    depth = 15 if escaped else rng.randint(4, 8)  # shallower chains cost more body than they expand to
    payload = bytes(range(256 - depth, 256)) + b"a" if escaped else bytes([256 - depth])  # 65535 or 2**depth
    t = Table([(255, 97, 97)] + [(255 - k, 256 - k, 256 - k) for k in range(1, depth)], depth, payload, "")
    blk, total = table_block(random.Random(0), t, escapes=False)
    blk.orig_len = total
    stored = rng.randbytes(n)
    blocks = [C.Block(1, 1, 0, 0, 0, b"", b"", b"", stored[k : k + 1]) for k in range(n)]
    if escaped:  # as many as the chain's slack under the body bound allows
        for k in range(min(n, (total - len(blk.fresh) - len(blk.code_set_bytes) - len(payload)) // 2)):
            blocks[k].set_escapes(1, stored[k], bytes([rng.randrange(256)]))
    blocks.insert(rng.randint(0, n), blk)
    frame = C.Frame(0, 0, 0, 0, 0, blocks)
    content = reference.decode_frame_body(frame.body(), len(blocks), sum(x.orig_len for x in blocks))
    frame.content_crc = zlib.crc32(content)
    data = C.stream_header() + frame.pack() + C.end_record(1, len(content), zlib.crc32(content))
    return Mutant(
        data, f"many_blocks {n} stored{' escaped' if escaped else ''} + chain {depth}", "bytepair", "-", content
    )


BYTEPAIR_MUTATORS: list[tuple[Mutator, float]] = [
    (frame_shuffle, 1),
    (end_edit, 0.7),
    (header_field, 1.5),
    (block_field, 3),
    (block_shuffle, 1),
    (crafted_frame, 3),
    (escape_edit, 3),
    (many_blocks, 0.05),
]


# -- Gage's format -----------------------------------------------------------------


def gage_table(table: dict[int, tuple[int, int]]) -> bytes:
    """Pack a Gage pair table (code -> (left, right), left != code), written independently of bytepair.gage."""
    out = bytearray()
    c = 0

    def entry(c: int) -> None:
        if c in table:
            out.extend(table[c])
        else:
            out.append(c)

    while c < 256:
        n = 0
        while c + n < 256 and c + n not in table and n < 128:
            n += 1
        if n:
            out.append(127 + n)
            c += n
            if c == 256:
                break
            entry(c)
            c += 1
            continue
        while c + n < 256 and c + n in table and n < 128:
            n += 1
        out.append(n - 1)
        for k in range(n):
            entry(c + k)
        c += n
    return bytes(out)


def gage_block(table: dict[int, tuple[int, int]], payload: bytes) -> bytes:
    return gage_table(table) + len(payload).to_bytes(2, "big") + payload


def _gage_spans(data: bytes) -> list[tuple[int, int, int]]:
    """(table start, size field, block end) of each block of a well-formed Gage file."""
    spans = []
    pos = 0
    n = len(data)
    try:
        while pos < n:
            start = pos
            c = 0
            while c < 256:
                count = data[pos]
                pos += 1
                if count > 127:
                    c += count - 127
                    if c >= 256:
                        break
                    count = 0
                for _ in range(count + 1):
                    left = data[pos]
                    pos += 2 if left != c else 1
                    c += 1
            size = data[pos] << 8 | data[pos + 1]
            spans.append((start, pos, pos + 2 + size))
            pos += 2 + size
    except IndexError:
        pass
    return spans


def craft_gage_table(rng: random.Random) -> tuple[dict[int, tuple[int, int]], bytes, str]:
    a, b = 97, 98
    design = rng.choice(("doubling", "linear", "cycle", "self_ref", "heavy", "random", "bomb"))
    if design in ("doubling", "bomb"):
        depth = rng.choice((8, 16, 19, 20, 21, 64, 255)) if design == "doubling" else rng.randint(17, 20)
        codes = rng.sample([v for v in range(256) if v not in (a, b)], min(depth, 254))
        table = {codes[0]: (a, a)}
        for k in range(1, len(codes)):
            table[codes[k]] = (codes[k - 1], codes[k - 1])
        payload = bytes([codes[-1]] * (rng.randint(1, 4) if design == "doubling" else rng.randint(1, 2)))
        return table, payload, f"{design} chain {len(codes)}"
    if design == "linear":
        depth = rng.randint(30, 254)
        codes = rng.sample([v for v in range(256) if v not in (a, b)], depth)
        table = {codes[0]: (a, b)}
        for k in range(1, depth):
            table[codes[k]] = (codes[k - 1], rng.choice((a, b)))
        return table, bytes([codes[-1]] * rng.randint(1, 5)), f"linear chain {depth}"
    if design == "cycle":
        codes = rng.sample([v for v in range(256) if v not in (a, b)], rng.randint(2, 6))
        table = {codes[k]: (codes[(k + 1) % len(codes)], a) for k in range(len(codes))}
        payload = bytes([rng.choice((a, codes[0]))]) * rng.randint(0, 3)
        return table, payload, f"cycle of {len(codes)}"
    if design == "self_ref":
        c = rng.choice([v for v in range(256) if v not in (a, b)])
        return {c: (a, c)}, bytes([c, a]), "self-reference (right)"
    if design == "heavy":  # long unused codes: more table than output
        depth = rng.randint(10, 18)
        codes = rng.sample([v for v in range(256) if v not in (a, b)], depth + rng.randint(5, 30))
        table = {codes[0]: (a, a)}
        for k in range(1, depth):
            table[codes[k]] = (codes[k - 1], codes[k - 1])
        for c in codes[depth:]:
            table[c] = (codes[depth - 1], codes[depth - 2])
        return table, bytes([codes[depth - 1]] * rng.randint(1, 2)), f"heavy {len(codes)} codes"
    n = rng.randint(1, 100)
    codes = rng.sample(range(256), n)
    table = {}
    for k, c in enumerate(codes):
        ops = [v for v in range(256) if v not in codes][:6] + codes[:k]
        left = rng.choice([v for v in ops if v != c] or [a])
        table[c] = (left, rng.choice(ops))
    payload = bytes(rng.choice([*codes, a]) for _ in range(rng.randint(0, 50)))
    return table, payload, f"random {n}"


def gage_structural(rng: random.Random, seed: Seed, pool: list[Seed]) -> Mutant:
    data = seed.stream
    spans = _gage_spans(data)
    op = rng.choice(("size", "crafted", "crafted", "dup", "drop", "swap", "cut_table", "count_byte"))
    if not spans:
        op = "crafted"
    k = rng.randrange(len(spans)) if spans else 0
    if op == "crafted":
        table, payload, note = craft_gage_table(rng)
        block = gage_block(table, payload)
        if spans and rng.random() < 0.5:
            start, _, end = spans[k]
            out = data[:start] + block + data[end:]
        else:
            at = rng.choice([s[0] for s in spans] + [len(data)])
            out = data[:at] + block + data[at:]
        return Mutant(out, f"gage crafted {note}", "gage", seed.name)
    start, size_at, end = spans[k]
    if op == "size":
        old = data[size_at] << 8 | data[size_at + 1]
        new = _interesting(rng, old, INTERESTING16) & 0xFFFF
        out = data[:size_at] + new.to_bytes(2, "big") + data[size_at + 2 :]
        return Mutant(out, f"gage size {old} -> {new} block {k}", "gage", seed.name)
    if op == "dup":
        return Mutant(data[:end] + data[start:end] + data[end:], f"gage dup block {k}", "gage", seed.name)
    if op == "drop":
        return Mutant(data[:start] + data[end:], f"gage drop block {k}", "gage", seed.name)
    if op == "swap":
        j = rng.randrange(len(spans))
        if j == k:
            return Mutant(data, "gage swap block with itself", "gage", seed.name, seed.original)
        (s1, _, e1), (s2, _, e2) = sorted((spans[k], spans[j]))
        out = data[:s1] + data[s2:e2] + data[e1:s2] + data[s1:e1] + data[e2:]
        return Mutant(out, f"gage swap blocks {k},{j}", "gage", seed.name)
    if op == "cut_table":
        cut = rng.randint(start, size_at)
        return Mutant(data[:cut], f"gage cut in table of block {k} at {cut}", "gage", seed.name)
    at = rng.randint(start, max(start, size_at - 1))
    value = rng.choice((0x7F, 0x80, 0xFF, 0xFE, 0, 1, 127 + 128, rng.randrange(256)))
    out = data[:at] + bytes([value]) + data[at + 1 :]
    return Mutant(out, f"gage table byte {at} -> {value}", "gage", seed.name)


GAGE_MUTATORS: list[tuple[Mutator, float]] = [(gage_structural, 6)]


# -- crafted PairTables for the decoders ------------------------------------------------


def craft_tables(rng: random.Random, pool: list[Seed]) -> tuple[PairTables, str]:
    """A run of blocks for ``expand`` and ``expand_reference``: crafted tables, tables of
    real frames with columns edited, or both, within the columns' structural contract
    (array lengths agree; orig_len >= 1)."""
    blocks: list[Table] = []
    notes = []
    for _ in range(rng.choice((1, 1, 2, 3, 6))):
        t = craft_table(rng) if rng.random() < 0.6 else Table([], 0, rng.randbytes(rng.randint(1, 50)), "stored")
        blocks.append(t)
        notes.append(t.note)
    orig: list[int] = []
    n_merges: list[int] = []
    n_fresh: list[int] = []
    code: list[int] = []
    left: list[int] = []
    right: list[int] = []
    plen: list[int] = []
    payload: list[int] = []
    for t in blocks:
        _, total = t.lengths()
        o = total if rng.random() < 0.8 else total + rng.choice((-1, 1, -total // 2))
        orig.append(max(1, min(o, 1 << 20)))
        n_merges.append(len(t.merges))
        n_fresh.append(t.n_fresh)
        for c, lft, rgt in t.merges:
            code.append(c)
            left.append(lft)
            right.append(rgt)
        plen.append(len(t.payload))
        payload.extend(t.payload)
    tables = PairTables(
        np.array(orig, dtype=np.int64),
        np.array(n_merges, dtype=np.int64),
        np.array(n_fresh, dtype=np.int64),
        np.array(code, dtype=np.uint8),
        np.array(left, dtype=np.uint8),
        np.array(right, dtype=np.uint8),
        np.array(plen, dtype=np.int64),
        np.array(payload, dtype=np.uint8),
    )
    if rng.random() < 0.4:
        tables.escapes = _craft_escapes(rng, blocks, orig)
        notes.append(f"escapes {tables.escapes.count.tolist()}")
    if rng.random() < 0.3:  # edit columns in place
        edits: list[str] = []
        for _ in range(rng.randint(1, 4)):
            col = rng.choice(("code", "left", "right", "payload", "orig_len", "n_fresh", "mark", "literals", "count"))
            if col in ("mark", "literals", "count") and not _edit_escapes(rng, tables, col, edits):
                col = "payload"
            elif col in ("mark", "literals", "count"):
                continue
            arr = getattr(tables, col)
            if not len(arr):
                continue
            at = rng.randrange(len(arr))
            if col == "orig_len":
                arr[at] = max(1, int(arr[at]) + rng.choice((-1, 1, 100)))
            elif col == "n_fresh":
                arr[at] = rng.randint(0, int(tables.n_merges[at]))
            else:
                arr[at] = rng.randrange(256)
            edits.append(f"{col}[{at}]")
        notes.append("edited " + ",".join(edits))
    return tables, "; ".join(notes)


def _craft_escapes(rng: random.Random, blocks: list[Table], orig: list[int]) -> Escapes:
    """Escapes for crafted tables, within the columns' contract (one count and mark per block,
    as many literals as the counts say): matching the expansion where it can be computed,
    sometimes off by one, else random."""
    count, mark, literals = [], [], bytearray()
    for t, o in zip(blocks, orig, strict=True):
        scratch = C.Block(o, len(t.payload), t.n_fresh, 0, 0, b"", b"", b"", t.payload)
        r = rng.random()
        if r < 0.4:
            scratch.set_escapes(0, None, b"")
        else:
            expansion = None
            if t.lengths()[1] <= 0xFFFF:
                with contextlib.suppress(reference.Invalid):
                    expansion = reference.block_contents(
                        [(o, t.n_fresh, t.merges, t.payload)], budget=False, escapes=False
                    )[0]
            if expansion and r < 0.9:
                add_escapes(rng, scratch, expansion)
                if rng.random() < 0.15:
                    n = max(0, scratch.n_escaped + rng.choice((1, -1)))
                    scratch.set_escapes(n, scratch.mark[0] if scratch.mark else 0, rng.randbytes(n))
            else:
                n = rng.randint(1, 5)
                scratch.set_escapes(n, rng.randrange(256), rng.randbytes(n))
        count.append(scratch.n_escaped)
        mark.append(scratch.mark[0] if scratch.mark else rng.choice((0, 0, rng.randrange(256))))
        literals += scratch.escaped
    return Escapes(
        np.array(count, dtype=np.int64),
        np.array(mark, dtype=np.uint8),
        np.frombuffer(bytes(literals), dtype=np.uint8).copy(),
    )


def _edit_escapes(rng: random.Random, t: PairTables, col: str, edits: list[str]) -> bool:
    """Edit the escapes of *t* in place, within the columns' contract: a mark or a literal
    changed, or one escape count moved to another block (the literals stay as many)."""
    esc = t.escapes
    if esc is None or not len(esc.count):
        return False
    if col == "count":
        src = np.flatnonzero(esc.count)
        if not len(src):
            return False
        a, b = int(rng.choice(src.tolist())), rng.randrange(len(esc.count))
        esc.count[a] -= 1
        esc.count[b] += 1
        edits.append(f"escape count block {a} -> {b}")
        return True
    arr = esc.mark if col == "mark" else esc.literals
    if not len(arr):
        return False
    at = rng.randrange(len(arr))
    arr[at] = rng.choice(((int(arr[at]) + 1) % 256, rng.randrange(256)))
    edits.append(f"escape {col}[{at}]")
    return True


def tables_from_seed(rng: random.Random, pool: list[Seed]) -> tuple[PairTables, str]:
    """The tables of a real frame, some entries changed."""
    from bytepair.container.format import unpack_frame_body, unpack_frame_header

    seed = rng.choice([s for s in pool if s.fmt == "bytepair"])
    recs = [r for r in C.records(seed.stream) if r.kind == "frame"]
    if not recs:
        return craft_tables(rng, pool)
    rec = rng.choice(recs)
    header = unpack_frame_header(seed.stream, rec.start, 0)
    t = unpack_frame_body(header, seed.stream[rec.start + C.FRAME_HEADER_SIZE : rec.end], 0, 0)
    esc = t.escapes
    t = dataclasses.replace(
        t,
        code=t.code.copy(),
        left=t.left.copy(),
        right=t.right.copy(),
        payload=t.payload.copy(),
        orig_len=t.orig_len.copy(),
        n_fresh=t.n_fresh.copy(),
        escapes=None if esc is None else Escapes(esc.count.copy(), esc.mark.copy(), esc.literals.copy()),
    )
    edits: list[str] = []
    for _ in range(rng.randint(0, 3)):
        col = rng.choice(("code", "left", "right", "payload", "mark", "literals", "count"))
        if col in ("mark", "literals", "count"):
            _edit_escapes(rng, t, col, edits)
            continue
        arr = getattr(t, col)
        if len(arr):
            at = rng.randrange(len(arr))
            arr[at] = rng.randrange(256)
            edits.append(f"{col}[{at}]")
    return t, f"{seed.name} frame at {rec.start}" + (f" edited {','.join(edits)}" if edits else "")
