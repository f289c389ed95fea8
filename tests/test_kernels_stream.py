"""The compiled reader of a whole stream (``core.kernels.stream``, kernels in ``_decode.pyx``;
``backend.read_whole``): in one call, it decodes exactly the streams the frame-by-frame
reader decodes whole, to the same bytes, and hands everything else back to it. Every test decodes on the
compiled path (``compiled_decoding``); streams are written on the numpy path (the same bytes)."""

from __future__ import annotations

import struct
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
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
from bytepair import backend
from bytepair.container import codec, crc
from bytepair.container.format import END_SIZE, pack_end, pack_frame, pack_stream_header
from bytepair.core.kernels import stream
from tests.helpers import frame_size, framed, kernels, read_whole
from tests.strategies import blocky_bytes
from tests.test_expand import one_block
from tests.test_kernels_decode import compiled_decoding


@pytest.fixture(autouse=True)
def compiled_path() -> Iterator[None]:
    with compiled_decoding():
        yield


def compress(data: bytes, **options: Any) -> bytes:
    """``bytepair.compress`` on the numpy path (the compiled encoder need not be built), a
    stream of one block written framed: the kernels here read framed streams (a compact one
    is tested in ``test_compact.py``)."""
    with kernels("numpy"):
        return framed(bytepair.compress(data, **options))


def whole(blob: bytes, max_length: int | None = None) -> bytes | None:
    """*blob* through ``decode_stream``: its bytes, or None when it handed the stream back."""
    got = read_whole(blob, max_length)
    assert got is None or type(got) is bytes
    return got


def peak_while(call: Callable[[], object]) -> int:
    """The most bytes Python's allocators held at once during *call*, beyond what they held before."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def frame_by_frame(blob: bytes, max_length: int | None = None) -> bytes | Exception:
    """*blob* through ``bytepair.decompress`` without the whole-stream kernel."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backend, "read_whole", None, raising=False)
        try:
            return bytepair.decompress(blob, max_length=max_length)
        except bytepair.BytePairError as exc:
            return exc


def multi_frame(data: bytes, size: int = 5000) -> bytes:
    with frame_size(size):
        return compress(data)


TEXT = b"".join(b"the %d quick brown foxes jump over %d lazy dogs\n" % (k, k * 7 % 13) for k in range(2000))


def streams() -> Iterator[tuple[str, bytes, bytes]]:
    yield "one byte", compress(b"x"), b"x"
    yield "text", compress(TEXT), TEXT
    yield "frames", multi_frame(TEXT), TEXT
    yield "runs", multi_frame(b"a" * 30000 + b"ab" * 20000, 7000), b"a" * 30000 + b"ab" * 20000
    binary = bytes(np.random.default_rng(5).integers(0, 256, 20000).astype(np.uint8))
    yield "stored", multi_frame(binary + TEXT[:20000], 9000), binary + TEXT[:20000]


@pytest.mark.parametrize(("blob", "data"), [(b, d) for _, b, d in streams()], ids=[n for n, _, _ in streams()])
def test_whole_streams_decode_in_one_call(blob: bytes, data: bytes) -> None:
    assert whole(blob) == data
    assert bytepair.decompress(blob) == data


def test_decompress_takes_it_for_one_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    # the frame-by-frame reader must not run at all for an intact stream
    def refuse(*args: object) -> None:
        raise AssertionError("the frame-by-frame reader ran")

    monkeypatch.setattr(bytepair._core, "Walker", refuse)
    for _, blob, data in streams():
        assert bytepair.decompress(blob) == data
        assert bytepair.decompress(bytearray(blob)) == data
        assert bytepair.decompress(np.frombuffer(blob, dtype=np.uint8)) == data


def test_what_it_hands_back_the_reader_decodes_or_refuses() -> None:
    blob = multi_frame(TEXT)
    empty = compress(b"")
    handed_back = {
        "two streams": blob + blob,
        "garbage after": blob + b"\0",
        "empty stream": empty,
        "truncated": blob[:-1],
        "no end": blob[:-END_SIZE],
        "only a header": pack_stream_header(),
    }
    for name, data in handed_back.items():
        assert whole(data) is None, name
        with kernels("numpy"):
            try:
                want: bytes | type = bytepair.decompress(data)
            except bytepair.BytePairError as exc:
                want = type(exc)
        try:
            got: bytes | type = bytepair.decompress(data)
        except bytepair.BytePairError as exc:
            got = type(exc)
        assert got == want, name
    assert bytepair.decompress(blob + empty + blob) == TEXT + TEXT


def edited_end(blob: bytes, n_frames: int | None = None, size: int | None = None, crc32: int | None = None) -> bytes:
    """*blob* with its end record's fields replaced, its own check right."""
    _, old_frames, old_size, old_crc, _ = struct.unpack("<BIQII", blob[-END_SIZE:])
    return blob[:-END_SIZE] + pack_end(
        old_frames if n_frames is None else n_frames,
        old_size if size is None else size,
        old_crc if crc32 is None else crc32,
    )


def test_an_end_record_that_lies_is_handed_back() -> None:
    blob = multi_frame(TEXT)
    _, n_frames, size, total_crc, _ = struct.unpack("<BIQII", blob[-END_SIZE:])
    assert n_frames > 1
    for lie in (
        edited_end(blob, n_frames=n_frames - 1),
        edited_end(blob, size=size + 1),
        edited_end(blob, size=size - 1),
        edited_end(blob, crc32=total_crc ^ 1),
        blob[:-4] + bytes(4),  # the end record's own check
    ):
        assert whole(lie) is None
        assert isinstance(frame_by_frame(lie), bytepair.CorruptDataError)
        with pytest.raises(bytepair.CorruptDataError):
            bytepair.decompress(lie)


def test_a_huge_claim_reserves_nothing() -> None:
    # an end record claiming far more than any stream of its length can hold: no room made
    blob = edited_end(compress(TEXT), size=1 << 60)
    whole(blob)  # this thread's kept room made
    assert peak_while(lambda: whole(blob)) < 4096
    assert whole(blob) is None
    with pytest.raises(bytepair.CorruptDataError):
        bytepair.decompress(blob)
    most = codec.MOST_PER_BYTE * len(blob)
    claim = edited_end(blob, size=most + 1)
    assert whole(claim) is None
    assert peak_while(lambda: whole(claim)) < 4096


def test_no_room_before_every_frame_passed_the_readers_first_checks() -> None:
    # the reader gives a frame room only once its CRC is right and its block lengths add
    # up: a stream that fails those anywhere gets none (the fuzzer's case: one byte of the
    # end record's size changed, claiming some 3,000 bytes a byte)
    blob = multi_frame(TEXT)
    assert peak_while(lambda: whole(blob)) > len(TEXT)  # (what making the output shows)
    size_at = len(blob) - END_SIZE + 5
    for damaged in (
        blob[:size_at] + b"\xff" + blob[size_at + 1 :],  # the end record's size: its check fails
        flip(blob, 8 * (len(blob) // 2)),  # a frame body: its CRC fails
        with_frame_edit(blob, 8, 0, blob[8 + 21] ^ 1),  # block lengths that do not add up, CRC right
    ):
        assert whole(damaged) is None
        assert peak_while(lambda: whole(damaged)) < 4096  # noqa: B023 (called at once)
        with pytest.raises(bytepair.CorruptDataError):
            bytepair.decompress(damaged)
    raw = np.frombuffer(blob, dtype=np.uint8)
    assert stream.plan_stream(raw) == stream.stream_size(raw) == len(TEXT)


def test_the_densest_streams_we_write_fit_the_claim_limit() -> None:
    # all zeros, in blocks as long as the format allows: the highest ratio a writer reaches
    data = bytes(1 << 21)
    blob = compress(data, block_size=65535)
    assert len(data) < codec.MOST_PER_BYTE * len(blob) / 2
    assert whole(blob) == data


def test_max_length() -> None:
    blob = multi_frame(TEXT)
    assert whole(blob, max_length=len(TEXT)) == TEXT
    assert whole(blob, max_length=len(TEXT) - 1) is None
    with pytest.raises(bytepair.OutputLimitError):
        bytepair.decompress(blob, max_length=len(TEXT) - 1)
    assert bytepair.decompress(blob, max_length=len(TEXT)) == TEXT


def test_numpy_path_never_takes_it() -> None:
    with kernels("numpy"):
        assert whole(compress(TEXT)) is None
    assert whole(compress(b"small")) == b"small"  # any size on the compiled path
    assert whole(compress(TEXT)) == TEXT


def test_the_output_is_its_own_bytes_object() -> None:
    # decoded straight into the bytes returned, then cut to size: nothing else holds it
    import sys

    blob = multi_frame(TEXT)
    got = bytepair.decompress(blob)
    assert type(got) is bytes and got == TEXT and len(got) == len(TEXT)
    assert sys.getrefcount(got) == 2  # the name, and getrefcount's argument
    assert bytepair.decompress(blob) is not got


def test_an_output_view_that_outlives_the_call_costs_a_copy_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # the frame-by-frame reader hands its buffer over as bytes without a copy, unless a view of
    # it is still alive (a caller's, here: the readers keep none)
    kept: list[object] = []
    real = bytepair._core.decode_entry

    def keep_room(entry: Any, rest: Any, room: Callable[[int], Any]) -> Any:
        def into(n: int) -> Any:
            kept.append(room(n))
            return kept[-1]

        return real(entry, rest, into)

    blob = multi_frame(TEXT)
    monkeypatch.setattr(backend, "read_whole", None, raising=False)
    monkeypatch.setattr(bytepair._core, "decode_entry", keep_room)
    assert bytepair.decompress(blob) == TEXT
    assert len(kept) > 1
    kept.clear()
    monkeypatch.setattr(bytepair._core, "decode_entry", real)
    assert bytepair.decompress(blob) == TEXT


def flip(blob: bytes, bit: int) -> bytes:
    damaged = bytearray(blob)
    damaged[bit // 8] ^= 1 << (bit % 8)
    return bytes(damaged)


def test_every_bit_flip_is_handed_back() -> None:
    # every byte of a stream is checked by something: a header, a CRC, the end record
    blob = multi_frame(TEXT[:6000], 2500)
    for bit in range(8 * len(blob)):
        assert whole(flip(blob, bit)) is None, f"bit {bit}"


def with_frame_edit(blob: bytes, frame: int, at: int, value: int) -> bytes:
    """*blob* with byte *at* of the body of its frame at offset *frame* set to *value*, that
    frame's CRC made right again: only the decoder's checks of the columns can tell."""
    body_size = int.from_bytes(blob[frame + 9 : frame + 13], "little")
    body = bytearray(blob[frame + 21 : frame + 21 + body_size])
    body[at % body_size] = value
    frame_crc = zlib.crc32(body, zlib.crc32(blob[frame : frame + 17]))
    return blob[: frame + 17] + frame_crc.to_bytes(4, "little") + bytes(body) + blob[frame + 21 + body_size :]


@settings(max_examples=150, deadline=None)
@given(data=blocky_bytes(max_size=6000), frame_len=st.integers(500, 7000), edits=st.data())
def test_agrees_with_the_reader_on_edited_bodies(data: bytes, frame_len: int, edits: st.DataObject) -> None:
    # whatever a body edit does, the kernel decodes exactly what the reader decodes, or hands back
    if not data:
        return
    blob = multi_frame(data, frame_len)
    edited = with_frame_edit(
        blob, 8, edits.draw(st.integers(0, 1 << 16), label="at"), edits.draw(st.integers(0, 255), label="value")
    )
    for candidate in (blob, edited):
        got = whole(candidate)
        want = frame_by_frame(candidate)
        if got is not None:
            assert got == want
    assert whole(blob) == data


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 0xFFFFFFFF), st.integers(0, 0xFFFFFFFF), st.integers(0, 1 << 40))
def test_crc32_combine_is_zlibs(crc1: int, crc2: int, len2: int) -> None:
    assert stream.crc32_combine(crc1, crc2, len2) == crc.crc32_combine(crc1, crc2, len2)


def test_crc32_combine_of_real_parts() -> None:
    rng = np.random.default_rng(2)
    a, b = bytes(rng.integers(0, 256, 3001).astype(np.uint8)), bytes(rng.integers(0, 256, 777).astype(np.uint8))
    assert stream.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def test_stream_size_reads_the_structure_only() -> None:
    blob = multi_frame(TEXT)
    raw = np.frombuffer(blob, dtype=np.uint8)
    assert stream.stream_size(raw) == len(TEXT)
    header = pack_stream_header()
    for name, damaged in {
        "magic": b"X" + blob[1:],
        "version": blob[:4] + b"\x09" + blob[5:],
        "flags": blob[:5] + b"\x01" + blob[6:],
        "check": blob[:6] + bytes([blob[6] ^ 1]) + blob[7:],
        "after": blob + b"E",
        "short": blob[:-1],
        "header only": header,
    }.items():
        assert stream.stream_size(np.frombuffer(damaged, dtype=np.uint8)) == -1, name


@pytest.mark.parametrize("decompress", [bytepair.decompress, frame_by_frame], ids=["whole", "frame-by-frame"])
def test_both_readers_on_many_frames(decompress: Callable[[bytes], bytes | Exception]) -> None:
    data = TEXT * 3
    blob = multi_frame(data, 3000)
    assert decompress(blob) == data


def long_codes(doublings: int, extra: list[tuple[int, int]]) -> tuple[bytes, bytes]:
    """A frame of one block of zeros whose merges expand to more than 64 KiB together
    (codes of 2, 4, ... 2**doublings zeros, then each (a, b) of *extra* a code of code a
    then code b, the last one the payload), and its content."""
    pairs = [(255, 0, 0)] + [(255 - k, 256 - k, 256 - k) for k in range(1, doublings)]
    length = {255 - k: 2 << k for k in range(doublings)}
    code = 255 - doublings
    for a, b in extra:
        pairs.append((code, a, b))
        length[code] = length[a] + length[b]
        code -= 1
    data = bytes(length[code + 1])
    return pack_frame(one_block(pairs, bytes([code + 1]), len(data)), zlib.crc32(data)), data


def test_frames_that_need_a_larger_table_than_the_frames_before() -> None:
    """``decode_stream`` starts with a table for 64 KiB of merges, and makes a larger one
    when a frame needs it (then goes on from that frame): twice here, in mid-stream; the
    thread's kept table stays as it was."""
    big, big_data = long_codes(15, [(241, 242)])  # 2 + 4 + ... + 32768, then 49152 bytes of merges
    bigger, bigger_data = long_codes(15, [(241, 242), (241, 243), (241, 244), (240, 243)])  # ..., then 184320 bytes
    small = multi_frame(TEXT[:3000], 1000)
    small_frames, small_count = small[8:-END_SIZE], struct.unpack("<BIQII", small[-END_SIZE:])[1]
    frames = [small_frames, big, small_frames, bigger, big]
    content = TEXT[:3000] + big_data + TEXT[:3000] + bigger_data + big_data
    end = pack_end(2 * small_count + 3, len(content), zlib.crc32(content))
    blob = pack_stream_header() + b"".join(frames) + end
    assert whole(blob) == content
    assert frame_by_frame(blob) == content
    with kernels("numpy"):
        assert bytepair.decompress(blob) == content
    # the larger frame's payload changed, its CRC right: refused once the larger table is made
    content = TEXT[:3000] + bigger_data
    blob = pack_stream_header() + small_frames + bigger + pack_end(small_count + 1, len(content), zlib.crc32(content))
    assert whole(blob) == content
    damaged = with_frame_edit(blob, 8 + len(small_frames), -1, 0)
    assert stream.plan_stream(np.frombuffer(damaged, np.uint8)) == len(content)
    assert whole(damaged) is None
    got = frame_by_frame(damaged)
    assert isinstance(got, bytepair.CorruptDataError) and "expands to 1 bytes" in str(got)


def test_the_front_door_takes_flat_buffers_of_bytes_and_hands_back_the_rest() -> None:
    # decode_whole takes either form from any flat buffer of bytes; anything else is the
    # Python reader's, which makes a byte view of it or says what is wrong
    framed_blob = compress(TEXT)
    with kernels("compiled"):
        compact_blob = bytepair.compress(TEXT[:3000])
    assert compact_blob[5] == 1 and framed_blob[5] == 0
    for blob, data in ((framed_blob, TEXT), (compact_blob, TEXT[:3000])):
        for form in (blob, bytearray(blob), memoryview(blob), np.frombuffer(blob, dtype=np.uint8)):
            assert read_whole(form, None) == data
        assert read_whole(blob, len(data)) == data
        assert read_whole(blob, len(data) - 1) is None
        assert read_whole(blob, 1 << 80) == data  # any limit beyond a C integer
        padded = np.frombuffer(blob + b"\0", dtype=np.uint8)
        for other in (
            np.frombuffer(blob[: len(blob) // 2 * 2], dtype=np.uint16),  # not bytes
            memoryview(padded)[::2],  # not flat
            blob.decode("latin-1"),  # not a buffer
        ):
            assert read_whole(other, None) is None
        if len(blob) % 2 == 0:
            assert bytepair.decompress(np.frombuffer(blob, dtype=np.uint16)) == data  # the reader's byte view of it
    with pytest.raises(TypeError, match="bytes-like"):
        bytepair.decompress(framed_blob.decode("latin-1"))
    with pytest.raises(ValueError, match="contiguous"):
        bytepair.decompress(memoryview(np.frombuffer(framed_blob + framed_blob, dtype=np.uint8))[::2])
