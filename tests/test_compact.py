"""The compact form (docs/FORMAT.md, "Compact record"): a stream of one block in 14 to 16 bytes
more than its input, written and read the same way by both paths and by every reader."""

from __future__ import annotations

import io
import os
import struct
import zlib
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bytepair
from bytepair import (
    BytePairError,
    CorruptDataError,
    OutputLimitError,
    TruncatedDataError,
    UnsupportedFormatError,
    backend,
)
from bytepair.container.format import COMPACT, STREAM_HEADER_SIZE, compact_record, pack_stream_header
from bytepair.container.listing import list_frames, list_streams
from tests.golden import CASES
from tests.helpers import (
    KERNEL_PATHS,
    assert_every_bit_flip_is_an_error,
    compiled_available,
    framed,
    kernels,
    read_whole,
)
from tests.strategies import blocky_bytes

TEXT = b"Byte pair encoding replaces the most frequent pair of adjacent bytes with an unused byte. " * 8


@pytest.fixture(params=KERNEL_PATHS)
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "compiled" and not compiled_available():
        pytest.skip("the compiled kernels are not built")
    with kernels(request.param):
        yield request.param


def by_the_reader(blob: bytes, max_length: int | None = None) -> bytes | Exception:
    """``decompress`` without the one-call kernel: the frame-by-frame reader's answer."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backend, "read_whole", None, raising=False)
        try:
            return bytepair.decompress(blob, max_length=max_length)
        except BytePairError as exc:
            return exc


def answer(blob: bytes, max_length: int | None = None) -> bytes | Exception:
    try:
        return bytepair.decompress(blob, max_length=max_length)
    except BytePairError as exc:
        return exc


def same(a: bytes | Exception, b: bytes | Exception) -> bool:
    if isinstance(a, Exception) or isinstance(b, Exception):
        return type(a) is type(b) and str(a) == str(b)
    return a == b


# -- what is written ---------------------------------------------------------------------------


def test_empty_input_is_fourteen_bytes(path: str) -> None:
    blob = bytepair.compress(b"")
    assert blob == bytes.fromhex("42 59 50 52 02 01 16 00 00 00 00 00 00 00")
    assert bytepair.decompress(blob) == b""


@pytest.mark.parametrize(("size", "overhead"), [(1, 14), (100, 14), (127, 14), (128, 15), (16383, 15), (16384, 16)])
def test_incompressible_input_grows_by_at_most_sixteen_bytes(path: str, size: int, overhead: int) -> None:
    data = os.urandom(size)
    blob = bytepair.compress(data)
    assert blob[5] == COMPACT
    assert len(blob) - size == overhead
    assert bytepair.decompress(blob) == data


def test_largest_stored_block_is_compact(path: str) -> None:
    data = os.urandom(65535)
    blob = bytepair.compress(data, block_size=65535, max_distinct=255)  # stored blocks, run together
    assert blob[5] == COMPACT and len(blob) - len(data) == 16
    assert bytepair.decompress(blob) == data


def test_an_encoded_block_is_compact_and_more_blocks_are_framed(path: str) -> None:
    one = bytepair.compress(TEXT)
    assert one[5] == COMPACT and one[STREAM_HEADER_SIZE + 4] == 1  # encoded
    two = bytepair.compress(TEXT, block_size=300)
    assert two[5] == 0
    assert bytepair.decompress(one) == bytepair.decompress(two) == TEXT


@settings(max_examples=60, deadline=None)
@given(st.lists(blocky_bytes(max_size=3000), min_size=1, max_size=4))
def test_every_writer_and_both_paths_write_the_same_bytes(inputs: list[bytes]) -> None:
    # in turn, so that the compiled kernels' kept scratch serves inputs of different sizes
    for data in inputs:
        with kernels("numpy"):
            want = bytepair.compress(data)
        for name in KERNEL_PATHS:
            if name == "compiled" and not compiled_available():
                continue
            with kernels(name):
                assert bytepair.compress(data) == want
                assert bytepair.compress(data, threads=2) == want
                compressor = bytepair.BytePairCompressor()
                fed = b"".join(compressor.compress(data[k : k + 700]) for k in range(0, len(data), 700))
                assert fed + compressor.flush() == want
                assert bytepair.decompress(want) == data


def test_a_compressor_writes_nothing_until_it_knows_the_form() -> None:
    compressor = bytepair.BytePairCompressor()
    assert compressor.compress(TEXT) == b""
    assert compressor.flush() == bytepair.compress(TEXT)


# -- every reader ------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"x", TEXT, bytes(range(256)) * 3], ids=["empty", "one", "text", "values"])
def test_every_reader_reads_it(path: str, data: bytes) -> None:
    blob = bytepair.compress(data)
    assert blob[5] == COMPACT
    framed_blob = framed(blob)
    assert bytepair.decompress(framed_blob) == data  # the same block, framed
    together = blob + framed_blob + blob
    assert bytepair.decompress(together) == data * 3
    assert by_the_reader(together) == data * 3
    decompressor = bytepair.BytePairDecompressor()
    assert b"".join(decompressor.decompress(blob[k : k + 1]) for k in range(len(blob))) == data
    assert decompressor.eof and decompressor.unused_data == b""
    with bytepair.open(io.BytesIO(together)) as f:
        assert f.read() == data * 3
        f.seek(len(data) + len(data) // 2)
        assert f.read() == data[len(data) // 2 :] + data
    listing = list_streams(io.BytesIO(together))
    assert (listing.original_size, listing.compressed_size, listing.crc32) == (
        3 * len(data),
        len(together),
        zlib.crc32(data * 3),
    )
    entries = list_frames(io.BytesIO(together))
    assert [e.compact for e in entries] == ([True, False, True] if data else [])


def test_max_length_is_checked_before_decoding(path: str) -> None:
    blob = bytepair.compress(TEXT)
    assert bytepair.decompress(blob, max_length=len(TEXT)) == TEXT
    with pytest.raises(OutputLimitError):
        bytepair.decompress(blob, max_length=len(TEXT) - 1)
    decompressor = bytepair.BytePairDecompressor()
    assert decompressor.decompress(blob, max_length=10) == TEXT[:10]


def test_no_view_of_the_callers_buffer_is_kept(path: str) -> None:
    data = bytearray(TEXT)
    blob = bytearray(bytepair.compress(data))
    assert bytepair.decompress(blob) == TEXT
    data.extend(b"more")  # a bytearray with a live view could not be resized
    blob.extend(b"more")


# -- damage ------------------------------------------------------------------------------------


ESCAPES = CASES["escapes"][0]  # rare bytes escaped: a block with escapes


@pytest.mark.parametrize(
    "data", [b"", b"x", TEXT, os.urandom(300), ESCAPES], ids=["empty", "one", "text", "random", "escapes"]
)
def test_every_bit_flip_is_an_error(path: str, data: bytes) -> None:
    assert_every_bit_flip_is_an_error(bytepair.compress(data), data, bytepair.decompress)


@pytest.mark.parametrize("data", [b"", b"x", TEXT, os.urandom(300)], ids=["empty", "one", "text", "random"])
def test_every_truncation_is_an_error(path: str, data: bytes) -> None:
    blob = bytepair.compress(data)
    for end in range(len(blob)):
        with pytest.raises(BytePairError):
            bytepair.decompress(blob[:end])


def record(content: bytes, kind: int, tail: bytes) -> bytes:
    return pack_stream_header(COMPACT) + struct.pack("<IB", zlib.crc32(content), kind) + tail


@pytest.mark.parametrize(
    ("blob", "error", "words"),
    [
        (record(b"", 0, b"\x80\x00"), CorruptDataError, "size is not one a writer makes"),  # not the shortest form
        (record(b"", 0, b"\xff\xff\x7f"), CorruptDataError, "size is not one a writer makes"),  # > 65535
        (record(b"", 0, b"\x80\x80\x80\x01"), CorruptDataError, "size is not one a writer makes"),  # > 3 bytes
        (record(b"", 2, b"\x00"), CorruptDataError, "unknown kind 0x02"),
        (record(b"ab", 0, b"\x02ab\x00"), CorruptDataError, "data after the end of the stream"),
        (record(b"ab", 0, b"\x03ab"), TruncatedDataError, "ends inside the compact record at byte 14"),
        (record(b"ab", 0, b"\x02ac"), CorruptDataError, "fails its CRC-32 check"),
        (pack_stream_header(0x02) + bytes(6), UnsupportedFormatError, "unknown flags 0x02"),
    ],
    ids=["long form", "too large", "four bytes", "kind", "after", "short", "crc", "flags"],
)
def test_hostile_records_are_refused_alike_by_both_paths(
    path: str, blob: bytes, error: type[Exception], words: str
) -> None:
    got = answer(blob)
    assert isinstance(got, error) and words in str(got), got
    assert same(got, by_the_reader(blob))


@settings(max_examples=300, deadline=None)
@given(blocky_bytes(max_size=2000), st.integers(0, 1 << 16), st.integers(0, 255))
def test_the_one_call_kernel_agrees_with_the_reader(data: bytes, at: int, value: int) -> None:
    # whatever an edit does, the one-call decoder decodes what the reader decodes, or hands it back
    blob = bytearray(bytepair.compress(data))
    blob[at % len(blob)] = value
    edited = bytes(blob)
    for name in KERNEL_PATHS:
        if name == "compiled" and not compiled_available():
            continue
        with kernels(name):
            fast = read_whole(edited, None)
            slow = by_the_reader(edited)
            if fast is not None:
                assert fast == slow
            assert same(answer(edited), slow)


def test_compact_record_needs_only_its_first_bytes() -> None:
    blob = bytepair.compress(TEXT)
    for end in range(STREAM_HEADER_SIZE, len(blob) + 1):
        rec = compact_record(blob[:end], STREAM_HEADER_SIZE)
        if rec is not None:
            assert rec.end == len(blob) and end <= STREAM_HEADER_SIZE + 14
            break
    arr = np.frombuffer(blob, dtype=np.uint8)
    assert compact_record(memoryview(arr), STREAM_HEADER_SIZE) == compact_record(blob, STREAM_HEADER_SIZE)


def test_every_reader_refuses_a_truncated_record() -> None:
    for data in (b"x", TEXT, os.urandom(300)):
        blob = bytepair.compress(data)
        for end in range(STREAM_HEADER_SIZE, len(blob)):
            with pytest.raises(TruncatedDataError, match=r"compact record at byte 8|ends"):
                list_streams(io.BytesIO(blob[:end]))
            with bytepair.open(io.BytesIO(blob[:end])) as f, pytest.raises(EOFError):
                f.read()
