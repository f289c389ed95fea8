"""The compiled decoder (``bytepair.core.kernels.decode``, kernels in ``_decode.pyx``) against the numpy one.

The numpy decoder is the reference: on every input both give the same bytes,
and on every bad input both raise the same exception class (for tables with one
thing wrong, the same message too). The compiled side is this module's kernels,
called directly (``decode.expand``) or through the library with the decoding
taken by them (:func:`compiled_decoding`), whatever else of the compiled core is built.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "bytepair.core.kernels._decode",
    reason="the compiled kernels are not built (pip install . with a C compiler; see docs/kernels.md)",
)

import bytepair
from bytepair import backend, gage
from bytepair.container import codec
from bytepair.container import format as container_format
from bytepair.container.format import (
    FRAME_HEADER_SIZE,
    STREAM_HEADER_SIZE,
    FrameHeader,
    pack_frame,
    pack_stream_header,
    unpack_frame_header,
)
from bytepair.core import expand as core_expand
from bytepair.core.escape import Escapes
from bytepair.core.expand import expand_numpy, expand_reference, node_budget
from bytepair.core.kernels import _decode, decode, stream
from bytepair.core.tables import PairTables
from tests.golden import GOLDEN
from tests.helpers import (
    CORPUS,
    GAGE_VECTORS,
    TESTDATA,
    frame_size,
    framed,
    gage_input,
    kernels,
    replace_kernels,
    require_shared,
)
from tests.strategies import blocky_bytes
from tests.test_expand import frames_of, one_block, tables_for


def expand_compiled(t: PairTables) -> bytes:
    return decode.expand(t).tobytes()


@contextlib.contextmanager
def compiled_decoding() -> Iterator[None]:
    """The library on the compiled path for decoding: ``codec.decode_frame``, ``backend.read_whole``
    and ``backend.expand`` take this module's kernels (and the CRCs ``_crc``'s), whether or
    not the rest of the compiled core is built. (Compress outside: the encoder's kernels
    are not asked for.)"""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backend, "_choice", backend.Choice("compiled", ""))
        patch.setattr(backend, "_compiled", True)
        replace_kernels(patch, decode=decode, stream=stream)
        patch.setattr(backend, "read_whole", stream.decode_whole, raising=False)
        yield


@contextlib.contextmanager
def on_path(name: str) -> Iterator[None]:
    """Decode on the numpy path (the reference) or the compiled one (``compiled_decoding``)."""
    with kernels("numpy") if name == "numpy" else compiled_decoding():
        yield


def outcome(decode: Callable[[], bytes]) -> bytes | Exception:
    """What *decode* returns, or the exception it raises."""
    try:
        return decode()
    except Exception as exc:
        return exc


def assert_same(numpy_got: bytes | Exception, compiled_got: bytes | Exception, *, message: bool = False) -> None:
    """The same bytes, or the same exception class (and with *message*, the same message)."""
    if isinstance(numpy_got, Exception):
        assert isinstance(compiled_got, Exception), f"numpy raised {numpy_got!r}, compiled decoded"
        assert type(compiled_got) is type(numpy_got), f"numpy raised {numpy_got!r}, compiled {compiled_got!r}"
        assert isinstance(numpy_got, bytepair.BytePairError), repr(numpy_got)
        if message:
            assert str(compiled_got) == str(numpy_got)
    else:
        assert not isinstance(compiled_got, Exception), f"numpy decoded, compiled raised {compiled_got!r}"
        assert compiled_got == numpy_got


def tables_agree(t: PairTables, *, message: bool = False) -> bytes | Exception:
    """*t* decoded by the compiled decoder and the numpy one alike; what they gave."""
    want = outcome(lambda: expand_numpy(t).tobytes())
    assert_same(want, outcome(lambda: expand_compiled(t)), message=message)
    return want


def streams_agree(
    blob: bytes, decompress: Callable[[bytes], bytes] = bytepair.decompress, *, message: bool = False
) -> bytes | Exception:
    """*blob* decompressed on each path alike; what they gave."""
    with kernels("numpy"):
        want = outcome(lambda: decompress(blob))
    with compiled_decoding():
        got = outcome(lambda: decompress(blob))
    assert_same(want, got, message=message)
    return want


def bp_files() -> Iterator[Path]:
    yield from sorted(GOLDEN.rglob("*.bp"))
    yield from sorted((TESTDATA / "fuzz").glob("*.bp"))


# -- valid input: the same bytes ------------------------------------------------------


@pytest.mark.parametrize("path", list(bp_files()), ids=lambda p: str(p.relative_to(TESTDATA)))
def test_golden_and_fuzz_files_decode_alike(path: Path) -> None:
    blob = path.read_bytes()
    got = streams_agree(blob)
    original = path.with_suffix(".bin")
    if path.is_relative_to(GOLDEN) and original.exists():
        assert got == original.read_bytes()
    if not isinstance(got, Exception):
        for t in frames_of(blob):
            tables_agree(t)


@settings(max_examples=60, deadline=None)
@given(data=blocky_bytes(), level=st.sampled_from(sorted(bytepair.LEVELS)), block_size=st.sampled_from([None, 16, 300]))
def test_round_trips_at_every_level(data: bytes, level: int, block_size: int | None) -> None:
    blob = bytepair.compress(data, level=level, block_size=block_size)
    with compiled_decoding():
        assert bytepair.decompress(blob) == data
    for t in frames_of(blob):
        assert tables_agree(t) == expand_reference(t)


@settings(max_examples=40, deadline=None)
@given(data=blocky_bytes(max_size=6000), limit=st.integers(2, 12))
def test_round_trips_with_escapes(data: bytes, limit: int) -> None:
    # few distinct values per block and a high escape limit: most blocks escape
    blob = bytepair.compress(data * 3, block_size=512, escape_limit=limit, max_distinct=250)
    for t in frames_of(blob):
        tables_agree(t)
    with compiled_decoding():
        assert bytepair.decompress(blob) == data * 3


@pytest.mark.parametrize(
    "data",
    [
        b"a" * 70_000,  # aaaa: overlapping pairs, codes of codes of a
        b"ab" * 40_000,  # abab: adjacent matches
        b"abc" * 30_000 + b"d",
        bytes(range(256)) * 300,  # every value: no fresh code at all
        b"a" * 32_767 + b"b" + b"a" * 32_768,  # a change of run at a block boundary
    ],
    ids=["aaaa", "abab", "abcd", "all-values", "boundary"],
)
@pytest.mark.parametrize("block_size", [16, 17, 4096, 32768])
def test_runs_and_block_boundaries(data: bytes, block_size: int) -> None:
    blob = bytepair.compress(data, block_size=block_size, threshold=2)
    for t in frames_of(blob):
        tables_agree(t)
    with compiled_decoding():
        assert bytepair.decompress(blob) == data


def test_many_frames_decode_alike() -> None:
    data = b"".join(bytes([k % 7 + 97]) * (k % 50 + 1) for k in range(5000))
    with frame_size(10_000):
        blob = bytepair.compress(data, block_size=1000)
    assert streams_agree(blob) == data


def test_recycled_codes_mean_what_they_meant_when_used() -> None:
    t = one_block(
        [(255, ord("a"), ord("b")), (254, 255, ord("c")), (253, 255, 255), (255, ord("x"), ord("y"))],
        bytes([254, 255, 254, 253]),
        12,
        n_fresh=3,
    )
    assert tables_agree(t) == b"abcxyabcabab"
    # a recycled code defined from its own earlier meaning
    t = one_block([(255, ord("a"), ord("b")), (255, 255, 255)], bytes([255]), 4, n_fresh=1)
    assert tables_agree(t) == b"abab"


def test_a_255_deep_chain_decodes() -> None:
    # codes 255..1, each the one before followed by 0: code 1 is 256 zeros, 255 merges deep
    pairs = [(255, 0, 0)] + [(255 - k, 256 - k, 0) for k in range(1, 255)]
    t = one_block(pairs, bytes([1, 2, 0]), 256 + 255 + 1)
    assert tables_agree(t) == bytes(512)


def test_long_codes_and_stored_blocks_side_by_side() -> None:
    # codes of 1..600 bytes (many 16-byte pieces each), a stored block, and an escaping block
    rng = np.random.default_rng(7)
    parts = [bytes(rng.integers(0, 4, 600).astype(np.uint8)) * 40, bytes(rng.integers(0, 256, 3000).astype(np.uint8))]
    data = b"".join(parts) * 2
    blob = bytepair.compress(data, block_size=30_000, threshold=2)
    for t in frames_of(blob):
        tables_agree(t)
    assert streams_agree(blob) == data


def test_corpus_files_decode_alike() -> None:
    folder = require_shared(CORPUS)
    files = sorted(p for p in folder.glob("*/*") if p.is_file())
    # the first 64 KiB of each file: every kind of data, in a few seconds
    data = [p.read_bytes()[: 1 << 16] for p in files]
    for part in data:
        blob = bytepair.compress(part, level=1)
        for t in frames_of(blob):
            tables_agree(t)
        with compiled_decoding():
            assert bytepair.decompress(blob) == part


def test_gage_vectors_decode_alike() -> None:
    for path in sorted(GAGE_VECTORS.glob("*.bin.gage")):
        got = streams_agree(path.read_bytes(), gage.decompress)
        assert got == gage_input(path.with_suffix("").name), path.name


def test_gage_round_trips_alike() -> None:
    data = b"".join(bytes([k % 5 + 65]) * (k % 9 + 1) for k in range(20_000))
    assert streams_agree(gage.compress(data), gage.decompress) == data


# -- bad input: the same exception ------------------------------------------------------


def chain(n: int, step: int) -> list[tuple[int, int, int]]:
    """Codes 255, 254, ...: each the previous one followed by *step* copies of itself (a doubling chain for 1)."""
    return [(255, ord("a"), ord("a"))] + [(255 - k, 256 - k, 256 - k if step else ord("b")) for k in range(1, n)]


@pytest.mark.parametrize(
    ("pairs", "payload", "orig_len", "n_fresh"),
    [
        ([(255, 255, ord("a"))], b"\xff", 2, None),  # refers to itself
        ([(255, ord("a"), 254), (254, ord("b"), ord("c"))], b"\xff", 3, None),  # a forward reference
        ([(255, 254, ord("a")), (254, 255, ord("b"))], b"\xfe", 3, None),  # a cycle
        ([(255, ord("a"), ord("b")), (255, ord("c"), ord("d"))], b"\xff", 2, None),  # a fresh code twice
        ([(255, ord("a"), ord("b"))], b"\xff\xff", 3, None),  # the payload expands to more
        ([(255, ord("a"), ord("b"))], b"\xff\xff", 5, None),  # ... to less
        ([(255, ord("a"), ord("b"))], b"\xff", 1, None),  # a code longer than its block
        (chain(255, 1), b"\x01", 4, None),  # a 255-deep doubling chain: 2**255 bytes
        (chain(255, 1), b"\x01", 60_000, None),  # ... however long the block
        (chain(200, 0), b"\x38" * 3, 603, None),  # 200 codes of up to 201 bytes: over budget
        ([], b"abc", 4, None),  # a stored block shorter than its header says
        ([], b"", 1, None),  # an empty payload
        ([(255, ord("a"), ord("b"))], b"\xff" * 3, 2, None),  # a payload longer than its block
        ([(200, ord("a"), ord("b")), (201, 200, 200)], b"\xc9", 4, 1),  # a recycled code... is fine
    ],
)
def test_crafted_tables_are_refused_alike(
    pairs: list[tuple[int, int, int]], payload: bytes, orig_len: int, n_fresh: int | None
) -> None:
    tables_agree(one_block(pairs, payload, orig_len, n_fresh), message=True)


def test_the_budget_covers_the_whole_run_of_blocks() -> None:
    # every block alone is within its share, all together over the frame's budget
    pairs = chain(120, 0)  # codes of 2..121 bytes: 7380 bytes for a block of 121
    block = one_block(pairs, b"\x88", 121)
    n = 1 + node_budget(121 * 12) // 7380
    t = PairTables(
        np.full(n, 121),
        np.full(n, len(pairs)),
        np.full(n, len(pairs)),
        np.tile(block.code, n),
        np.tile(block.left, n),
        np.tile(block.right, n),
        np.ones(n, dtype=np.int64),
        np.tile(block.payload, n),
    )
    with pytest.raises(bytepair.CorruptDataError, match="more than 4x"):
        expand_compiled(t)
    tables_agree(t)


@pytest.mark.parametrize("delta", [-1, 1])
def test_escape_counts_that_disagree_are_refused_alike(delta: int) -> None:
    data = b"abcab" * 50 + b"\x01xyz\x02xyz\x03"
    t = tables_for(data, [], threshold=2)
    # escape the three rare bytes under mark 1, then declare one too few or too many
    changed = bytes(1 if v in (1, 2, 3) else v for v in data)
    t = tables_for(changed, [], threshold=2)
    literals = np.array([1, 2, 3], dtype=np.uint8)
    good = dataclasses.replace(t, escapes=Escapes(np.array([3]), np.array([1], dtype=np.uint8), literals))
    assert tables_agree(good) == data
    count = 3 + delta
    bad = dataclasses.replace(
        t, escapes=Escapes(np.array([count]), np.array([1], dtype=np.uint8), np.resize(literals, count))
    )
    tables_agree(bad, message=True)


def sample_stream() -> bytes:
    """A stream with every feature: several frames, recycling, escapes, stored blocks."""
    rng = np.random.default_rng(1994)
    words = [bytes(rng.integers(0, 250, 3).astype(np.uint8)) for _ in range(40)]
    text = bytes(range(250)) + b"".join(words[i] for i in rng.integers(0, 40, 3000))
    data = text + bytes(rng.integers(0, 256, 2000).astype(np.uint8)) + b"the rare \x01 and \x02 " * 300
    with frame_size(6000):
        return bytepair.compress(data, block_size=2000)


def test_truncations_are_refused_alike() -> None:
    blob = sample_stream()
    for cut in range(1, len(blob), 7):
        assert isinstance(streams_agree(blob[:cut]), Exception)


def test_bit_flips_are_refused_alike() -> None:
    blob = sample_stream()
    for bit in range(0, 8 * len(blob), 13):
        damaged = bytearray(blob)
        damaged[bit // 8] ^= 1 << (bit % 8)
        assert isinstance(streams_agree(bytes(damaged)), Exception)


def repacked(t: PairTables, edit: Callable[[PairTables], None]) -> bytes:
    """A one-frame stream of *t* edited by *edit*, its CRCs made right again: only the decoder can tell."""
    t = dataclasses.replace(t, code=t.code.copy(), left=t.left.copy(), right=t.right.copy(), payload=t.payload.copy())
    edit(t)
    frame = pack_frame(t, 0)
    return pack_stream_header() + frame


def test_edited_tables_with_right_crcs_are_refused_alike() -> None:
    blob = sample_stream()
    t = frames_of(blob)[0]
    rng = np.random.default_rng(31)
    for _ in range(300):
        column = ("left", "right", "payload")[int(rng.integers(3))]

        def edit(t: PairTables, column: str = column) -> None:
            values = getattr(t, column)
            values[int(rng.integers(len(values)))] = int(rng.integers(256))

        streams_agree(repacked(t, edit))


def test_gage_damage_is_refused_alike() -> None:
    data = b"".join(bytes([k % 5 + 65]) * (k % 9 + 1) for k in range(3000))
    blob = gage.compress(data)
    for at in range(0, len(blob), 5):
        damaged = bytearray(blob)
        damaged[at] ^= 0x5A
        streams_agree(bytes(damaged), gage.decompress)
        streams_agree(blob[:at], gage.decompress)


def test_content_crc_is_still_checked() -> None:
    blob = bytearray(bytepair.compress(b"hello world, hello world, hello world" * 100))
    # flip a bit of the frame's content CRC (header offset 13) and make its frame CRC right again
    frame = 8
    blob[frame + 13] ^= 1
    body_size = int.from_bytes(blob[frame + 9 : frame + 13], "little")
    body = bytes(blob[frame + 21 : frame + 21 + body_size])
    blob[frame + 17 : frame + 21] = zlib.crc32(body, zlib.crc32(bytes(blob[frame : frame + 17]))).to_bytes(4, "little")
    assert isinstance(streams_agree(bytes(blob)), bytepair.CorruptDataError)


def test_both_crcs_are_checked_in_the_kernels() -> None:
    """The kernels check both CRCs (``_crc``, on any CPU): the numpy path's bytes and messages."""
    for data in (b"x", b"hello world, hello world, hello world" * 100, bytes(range(256)) * 40):
        blob = framed(bytepair.compress(data))  # the frame a compact stream stands for
        assert streams_agree(blob, message=True) == data
        frame = 8
        damaged = bytearray(blob)
        damaged[frame + 21] ^= 4  # the body's first byte: the frame CRC fails
        got = streams_agree(bytes(damaged), message=True)
        assert isinstance(got, bytepair.CorruptDataError) and "frame checksum mismatch" in str(got)
        damaged = bytearray(blob)
        damaged[frame + 13] ^= 1  # the content CRC, the frame CRC made right again
        body_size = int.from_bytes(damaged[frame + 9 : frame + 13], "little")
        body = bytes(damaged[frame + 21 : frame + 21 + body_size])
        crc = zlib.crc32(body, zlib.crc32(bytes(damaged[frame : frame + 17])))
        damaged[frame + 17 : frame + 21] = crc.to_bytes(4, "little")
        got = streams_agree(bytes(damaged), message=True)
        assert str(got) == "frame 0: decoded data fails its CRC-32 check"


def with_body_edit(blob: bytes, at: int, value: int) -> bytes:
    """*blob* with byte *at* of its first frame's body set to *value*, the frame CRC made right again."""
    frame = 8
    body_size = int.from_bytes(blob[frame + 9 : frame + 13], "little")
    body = bytearray(blob[frame + 21 : frame + 21 + body_size])
    body[at] = value
    crc = zlib.crc32(body, zlib.crc32(blob[frame : frame + 17]))
    return blob[: frame + 17] + crc.to_bytes(4, "little") + bytes(body) + blob[frame + 21 + body_size :]


@pytest.mark.parametrize("seed", range(4))
def test_edited_frame_bodies_are_refused_with_the_same_message(seed: int) -> None:
    # one byte of the body changed, its CRC right: the columns, code sets, tables or
    # payload are damaged, and both paths find the same first fault
    rng = np.random.default_rng(seed)
    data = sample_stream()
    body_size = int.from_bytes(data[17:21], "little")
    n_blocks = int.from_bytes(data[9:13], "little")
    for _ in range(150):
        # mostly the block headers and code sets, where the column checks are
        at = (
            int(rng.integers(min(body_size, 9 * n_blocks + 200)))
            if rng.random() < 0.7
            else int(rng.integers(body_size))
        )
        streams_agree(with_body_edit(data, at, int(rng.integers(256))), message=True)


def test_columns_that_disagree_are_a_caller_error() -> None:
    good = one_block([(255, ord("a"), ord("b"))], b"\xff\xff", 4)
    assert expand_compiled(good) == b"abab"
    for bad in (
        dataclasses.replace(good, n_merges=np.array([2])),  # more merges than listed
        dataclasses.replace(good, payload_len=np.array([3])),  # more payload than given
        dataclasses.replace(good, n_fresh=np.array([2])),  # more fresh merges than merges
    ):
        with pytest.raises(ValueError, match="columns disagree"):
            expand_compiled(bad)


def test_a_code_of_one_block_is_a_literal_in_the_next() -> None:
    # block 0 makes 255 and 254 codes (254 escaped under mark 1); block 1 uses 255, 254 and 1 as literals
    t = PairTables(
        np.array([6, 5]),
        np.array([2, 1]),
        np.array([2, 1]),
        np.array([255, 254, 200], dtype=np.uint8),
        np.array([ord("a"), 255, ord("x")], dtype=np.uint8),
        np.array([ord("b"), 1, ord("y")], dtype=np.uint8),
        np.array([2, 4]),
        np.array([254, 254, 200, 255, 254, 1], dtype=np.uint8),
        escapes=Escapes(np.array([2, 0]), np.array([1, 0], dtype=np.uint8), np.array([7, 8], dtype=np.uint8)),
    )
    assert tables_agree(t, message=True) == b"ab\x07ab\x08xy\xff\xfe\x01"


def test_outputs_leave_the_compiled_decoder_its_spare_bytes() -> None:
    """``codec.decode_frame``'s callers leave ``codec.SPARE`` bytes past each frame: as many
    as the compiled decoder's copies may write past its end."""
    from bytepair.container import codec

    assert codec.SPARE >= decode.SPARE == decode.W == 32


@pytest.mark.parametrize("mode", ["numpy", "compiled"])
def test_frames_decode_into_a_given_output(mode: str) -> None:
    """``decode_frame(..., into)`` writes the frame at the start of ``into(orig_size)`` and
    returns that view; the bytes past it are the caller's spare."""
    from bytepair.container import codec
    from bytepair.container.format import FRAME_HEADER_SIZE, STREAM_HEADER_SIZE, unpack_frame_header

    data = b"spare bytes after the frame " * 300
    blob = framed(bytepair.compress(data))  # the frame a compact stream stands for
    header = unpack_frame_header(blob, STREAM_HEADER_SIZE, 0)
    body = blob[STREAM_HEADER_SIZE + FRAME_HEADER_SIZE :][: header.body_size]
    out = np.full(len(data) + codec.SPARE + 5, 7, dtype=np.uint8)
    asked: list[int] = []

    def into(n: int) -> np.ndarray:
        asked.append(n)
        return out[5:]

    with on_path(mode):
        got = codec.decode_frame(header, body, 0, 0, into)
    assert got.tobytes() == data and asked == [len(data)]
    assert np.shares_memory(got, out) and out[5:].ctypes.data == got.ctypes.data
    assert (out[:5] == 7).all()


@pytest.mark.parametrize("mode", ["numpy", "compiled"])
def test_a_frame_whose_blocks_do_not_add_up_gets_no_output(mode: str) -> None:
    """A frame that claims more than its block headers hold (behind a right frame CRC) is
    refused before any output is asked for, with the numpy decoder's message."""
    from bytepair.container import codec
    from bytepair.container.format import FRAME_HEADER_SIZE, STREAM_HEADER_SIZE, FrameHeader, unpack_frame_header

    data = b"claims more than it holds " * 40
    blob = framed(bytepair.compress(data))  # the frame a compact stream stands for
    real = unpack_frame_header(blob, STREAM_HEADER_SIZE, 0)
    body = blob[STREAM_HEADER_SIZE + FRAME_HEADER_SIZE :][: real.body_size]
    claimed = 1 << 26
    fields = bytearray(real.header)
    fields[5:9] = claimed.to_bytes(4, "little")  # orig_size, after kind and n_blocks
    header = FrameHeader(
        real.n_blocks, claimed, real.body_size, real.content_crc, zlib.crc32(body, zlib.crc32(fields)), bytes(fields)
    )
    asked: list[int] = []
    with on_path(mode), pytest.raises(bytepair.CorruptDataError, match="frame header says") as caught:
        codec.decode_frame(header, body, 0, 0, lambda n: asked.append(n) or np.empty(0, np.uint8))
    assert asked == []
    assert str(caught.value) == f"frame 0: blocks hold {len(data)} bytes, frame header says {claimed}"


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.binary(min_size=1, max_size=300), st.lists(st.integers(0, 2), min_size=1, max_size=300).map(bytes)),
    st.data(),
)
def test_escaped_bytes_go_back_where_the_mark_is(block: bytes, data: st.DataObject) -> None:
    """``restore_escapes`` against a plain loop: any block, anywhere in an output with any
    number of bytes after it (the 64-byte compares must stop short of the output's end and
    ignore what follows the block), too few literals refused."""
    mark = data.draw(st.sampled_from(sorted(set(block))))
    before = data.draw(st.integers(0, 70))
    after = data.draw(st.integers(0, 70))
    out = np.frombuffer(bytes([mark]) * before + block + bytes([mark]) * after, np.uint8).copy()
    held = block.count(mark)
    short = data.draw(st.booleans())
    literals = np.arange(held + 3, dtype=np.uint8)[: held - 1 if short else held]
    want = bytearray(block)
    k = 0
    for i, value in enumerate(block):
        if value == mark and k < len(literals):
            want[i] = literals[k]
            k += 1
    start = data.draw(st.integers(0, 3))  # literals before the block's, already put back
    spare = data.draw(st.sampled_from([0, 70]))  # and the next block's (the loops read ahead when there are)
    literals = np.concatenate([np.full(start, 99, np.uint8), literals, np.full(spare, 77, np.uint8)])
    lit_end = len(literals) - spare
    first = out.copy()
    for loop in escape_loops():
        out = first.copy()
        with escape_loop(loop):
            got = decode.restore_escapes(out, before, before + len(block), mark, literals, start, lit_end)
        if short:
            assert got == -1, loop
        else:
            assert got == start + held, loop
            assert out[before : before + len(block)].tobytes() == bytes(want), loop
            assert (out[:before] == mark).all() and (out[before + len(block) :] == mark).all(), loop


def escape_loops() -> list[str]:
    """The escape loops this CPU runs: the baseline one, and the AVX-512 VBMI2 one where it has it."""
    with escape_loop("avx512vbmi2") as taken:
        return sorted({"baseline", taken})


@contextlib.contextmanager
def escape_loop(name: str) -> Iterator[str]:
    """The decoder's escape loop *name* while the block runs (the name taken: ``baseline`` where
    the CPU lacks what *name* needs); the one before after it."""
    before = _decode.ESCAPE_LOOP
    try:
        yield _decode.use_escape_loop(name)
    finally:
        _decode.use_escape_loop(before)


def test_both_builds_of_the_escape_loop() -> None:
    """Streams with escapes in most blocks (words of 150 values, and 106 others a few times a
    block), and the goldens, decode alike with each loop."""
    rng = np.random.default_rng(12)
    words = [bytes(rng.integers(0, 150, rng.integers(2, 6), dtype=np.uint8)) for _ in range(200)]
    text = bytearray(b"".join(rng.choice(np.array(words, dtype=object), 12_000)))
    for at in rng.integers(0, len(text), len(text) // 40):  # 106 rarer values, a few times a block each
        text[at] = int(rng.integers(150, 256))
    cases = [(bytepair.compress(bytes(text), block_size=b), bytes(text)) for b in (1000, 4096, 32768)]
    cases += [(path.read_bytes(), path.with_suffix(".bin").read_bytes()) for path in sorted(GOLDEN.glob("*.bp"))]
    for loop in escape_loops():
        with escape_loop(loop):
            for blob, data in cases:
                assert streams_agree(blob) == data, loop


def test_escape_loop_by_name() -> None:
    with pytest.raises(ValueError, match="no escape loop named"):
        _decode.use_escape_loop("sse9")
    assert _decode.ESCAPE_LOOP in ("avx512vbmi2", "baseline")


def test_the_kernels_constants_are_the_formats() -> None:
    """The format's constants compiled into ``_decode`` (read at its import) are the Python ones."""
    got = _decode.constants()
    assert got
    for name, value in got.items():
        source = core_expand if name.startswith("NODE") else container_format
        assert value == getattr(source, name), name


@functools.cache
def a_frame() -> tuple[bytes, bytes, int]:
    """The first frame of ``sample_stream()``: its header's fields, its body, its content CRC."""
    blob = sample_stream()
    header = unpack_frame_header(blob, STREAM_HEADER_SIZE, 0)
    at = STREAM_HEADER_SIZE + FRAME_HEADER_SIZE
    return header.header, blob[at : at + header.body_size], header.content_crc


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_hostile_frame_bodies_are_refused_alike(data: st.DataObject) -> None:
    """A frame body edited in a few places, cut or lengthened, under a header whose counts
    may lie, its frame CRC right: decoded alike or refused with the same message."""
    fields, body, content_crc = a_frame()
    edited = bytearray(body)
    for _ in range(data.draw(st.integers(0, 4), label="edits")):
        edited[data.draw(st.integers(0, len(edited) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.sampled_from([None, None, 0, 1, 9, 40, len(body) // 2, len(body) - 1]), label="cut")
    if cut is not None:
        edited = edited[:cut]
    edited += bytes(data.draw(st.sampled_from([0, 0, 0, 1, 3, 300]), label="added"))
    _, n_blocks, orig_size, _, _ = struct.unpack("<BIIII", fields)
    n_blocks = max(1, n_blocks + data.draw(st.sampled_from([0, 0, 0, -1, 1, 7]), label="n_blocks"))
    orig_size = max(0, orig_size + data.draw(st.sampled_from([0, 0, 0, -1, 1, 1000]), label="orig_size"))
    fields = struct.pack("<BIIII", fields[0], n_blocks, orig_size, len(edited), content_crc)
    header = FrameHeader(n_blocks, orig_size, len(edited), content_crc, zlib.crc32(edited, zlib.crc32(fields)), fields)
    for passed in (bytes(edited), memoryview(edited)):
        results = []
        for name in ("numpy", "compiled"):
            with on_path(name):
                results.append(outcome(lambda passed=passed: codec.decode_frame(header, passed, 0, 0).tobytes()))  # type: ignore[misc]
        assert_same(*results, message=True)


def test_decode_body_writes_where_it_is_told() -> None:
    """``_decode.decode_body`` writes into an output long enough, and makes its own otherwise."""
    fields, body, content_crc = a_frame()
    _, n_blocks, orig_size, _, _ = struct.unpack("<BIIII", fields)
    status = np.zeros(5, dtype=np.int64)
    want = outcome(lambda: decode.expand(frames_of(sample_stream())[0]).tobytes())
    room = np.zeros(orig_size + decode.SPARE, dtype=np.uint8)
    got = _decode.decode_body(body, n_blocks, orig_size, node_budget(orig_size), status, room, content_crc)
    assert got is room and status[0] == _decode.OK and room[:orig_size].tobytes() == want
    short = np.zeros(orig_size + decode.SPARE - 1, dtype=np.uint8)
    got = _decode.decode_body(body, n_blocks, orig_size, node_budget(orig_size), status, short, content_crc)
    assert got is not short and len(got) == orig_size + decode.SPARE and got[:orig_size].tobytes() == want
    assert not short.any()
    with pytest.raises(ValueError, match="status needs 5"):
        _decode.decode_body(body, n_blocks, orig_size, 1 << 20, np.zeros(4, np.int64), room, content_crc)


def test_the_kernels_refuse_arguments_that_do_not_fit() -> None:
    t = one_block([(255, ord("a"), ord("b"))], b"\xff\xff", 4)
    status = np.zeros(5, dtype=np.int64)
    columns: list[Any] = [
        t.orig_len, t.n_merges, t.n_fresh, t.code.copy(), t.left.copy(), t.right.copy(), t.payload_len, t.payload,
        np.zeros(1, np.int64), np.zeros(1, np.uint8), np.zeros(0, np.uint8)
    ]  # fmt: skip
    assert _decode.decode_blocks(*columns, 1 << 20, status)[:4].tobytes() == b"abab"
    for k, wrong in ((3, np.zeros(2, np.uint8)), (7, t.payload[:1]), (10, np.zeros(1, np.uint8)), (1, np.array([2]))):
        bad = list(columns)
        bad[k] = wrong
        with pytest.raises(ValueError, match="columns disagree"):
            _decode.decode_blocks(*bad, 1 << 20, status)
    out = np.zeros(10, dtype=np.uint8)
    literals = np.zeros(3, dtype=np.uint8)
    for start, end, lit, lit_end in ((0, 11, 0, 1), (5, 4, 0, 1), (-1, 3, 0, 1), (0, 5, 0, 4), (0, 5, 2, 1)):
        with pytest.raises(ValueError, match="outside their arrays"):
            _decode.restore_escapes(out, start, end, 0, literals, lit, lit_end)


def test_threads_decode_alike() -> None:
    """The kernels run without the GIL: threads decoding at once each get the bytes."""
    blob = sample_stream()
    with kernels("numpy"):
        want = bytepair.decompress(blob)
    t = frames_of(blob)[0]
    with compiled_decoding(), concurrent.futures.ThreadPoolExecutor(4) as pool:
        streams = list(pool.map(lambda _: bytepair.decompress(blob), range(12)))
        tables = list(pool.map(lambda _: expand_compiled(t), range(12)))
    assert streams == [want] * 12
    assert tables == [expand_numpy(t).tobytes()] * 12


@pytest.fixture(params=["baseline", "avx2"])
def payload_loop(request: pytest.FixtureRequest) -> Iterator[str]:
    """The decoder's payload loop in each of its builds: the baseline one, and the AVX2 one
    where the CPU has it (it runs by default there). The checked build runs its own loop
    through the memoryviews either way."""
    before = _decode.PAYLOAD_LOOP
    taken = _decode.use_payload_loop(request.param)
    try:
        if taken != request.param:
            pytest.skip("this CPU has no AVX2 (or the compiler built no AVX2 loop)")
        yield taken
    finally:
        _decode.use_payload_loop(before)


def test_both_builds_of_the_payload_loop(payload_loop: str) -> None:
    rng = np.random.default_rng(9)
    deep = b"ab" * 3000 + b"abcd" * 2000  # expansions longer than one 32-byte copy
    text = b"".join(rng.choice([b"the ", b"cat ", b"sat ", b"on ", b"a ", b"mat. ", b"\xe9"], 30_000))
    for data in (deep, text, bytes(rng.integers(0, 256, 5000, dtype=np.uint8))):
        for blob in (bytepair.compress(data), bytepair.compress(data, block_size=1000)):
            assert streams_agree(blob) == data
    for path in sorted(GOLDEN.glob("*.bp")):
        assert streams_agree(path.read_bytes()) == path.with_suffix(".bin").read_bytes()


def test_payload_loop_by_name() -> None:
    with pytest.raises(ValueError, match="no payload loop named"):
        _decode.use_payload_loop("sse9")
    assert _decode.PAYLOAD_LOOP in ("avx2", "baseline")
