"""BytePairFile, open and decompress_range: lzma's file semantics, plus random access by frame."""

from __future__ import annotations

import io
import os
import random
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import bytepair
from bytepair import BytePairError, CorruptDataError, OutputLimitError, TruncatedDataError, UnsupportedFormatError
from bytepair.container import walk
from bytepair.container.crc import crc32_combine
from bytepair.container.format import (
    COMPACT,
    END_SIZE,
    FRAME_HEADER_SIZE,
    KIND_FRAME,
    STREAM_HEADER_SIZE,
    compact_record,
    pack_end,
    pack_stream_header,
    unpack_frame_header,
)
from bytepair.io.file import BytePairFile, decompress_range
from bytepair.io.file import open as bp_open
from tests.helpers import frame_size


def frame_records(packed: bytes) -> list[tuple[int, bytes]]:
    """Every frame of concatenated streams as (original size, record bytes), parsed independently."""
    records = []
    pos = 0
    while pos < len(packed):
        pos += STREAM_HEADER_SIZE
        if packed[pos - STREAM_HEADER_SIZE + 5] == COMPACT:  # one compact record, which counts as a frame
            rec = compact_record(packed, pos)
            assert rec is not None
            if rec.orig_size:
                records.append((rec.orig_size, packed[pos : rec.end]))
            pos = rec.end
            continue
        while packed[pos] == KIND_FRAME:
            header = unpack_frame_header(packed, pos, 0)
            end = pos + FRAME_HEADER_SIZE + header.body_size
            records.append((header.orig_size, packed[pos:end]))
            pos = end
        pos += END_SIZE
    return records


def frame_bounds(packed: bytes) -> list[tuple[int, int]]:
    """(first, end) original offsets of every frame."""
    bounds, at = [], 0
    for size, _ in frame_records(packed):
        bounds.append((at, at + size))
        at += size
    return bounds


FOX = b"the quick brown fox jumps over the lazy dog "
TEXT = b"".join(b"%d: %s%d times\n" % (i, FOX * (i % 9), i % 97) for i in range(500))  # lines of 10 to 400 bytes
MIXED = random.Random(1).randbytes(3000) + b"tail line\n" * 150 + "naïve ≠ 東京\n".encode() * 40
with frame_size(2000):
    PACKED = bytepair.compress(TEXT) + bytepair.compress(b"") + bytepair.compress(MIXED)
DATA = TEXT + MIXED
assert len(frame_bounds(PACKED)) > 20


class Pipe(io.RawIOBase):
    """A source that cannot seek and returns short reads, as a pipe does."""

    def __init__(self, data: bytes, chunk: int = 777) -> None:
        self._data = data
        self._pos = 0
        self._chunk = chunk

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        n = min(len(b), self._chunk, len(self._data) - self._pos)
        b[:n] = self._data[self._pos : self._pos + n]
        self._pos += n
        return n


class Counting(io.RawIOBase):
    """A seekable file that counts the bytes read through it."""

    def __init__(self, raw: io.RawIOBase) -> None:
        self._raw = raw
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        n = self._raw.readinto(b) or 0
        self.bytes_read += n
        return n


# -- reading ----------------------------------------------------------------


def test_reads_concatenated_streams_and_decodes_each_frame_once(kernels: str) -> None:
    with BytePairFile(io.BytesIO(PACKED)) as f:
        assert f.mode == "rb" and f.readable() and f.seekable() and not f.writable()
        assert f.read() == DATA
        assert f.read() == b"" and f.read1() == b"" and f.peek() == b"" and f.readline() == b""
        assert f.frames_decoded == len(frame_bounds(PACKED))
    with BytePairFile(io.BytesIO(PACKED)) as f:
        pieces = iter(lambda: f.read(333), b"")
        assert b"".join(pieces) == DATA
        assert f.frames_decoded == len(frame_bounds(PACKED))


def test_lines_and_readinto() -> None:
    with BytePairFile(io.BytesIO(PACKED)) as f:
        assert list(f) == io.BytesIO(DATA).readlines()  # lines end at \n only
    with BytePairFile(io.BytesIO(PACKED)) as f:
        out = np.zeros(1001, dtype=np.uint32)  # any writable buffer, filled byte-wise
        assert f.readinto(out) == out.nbytes  # type: ignore[arg-type]  # a buffer at run time
        assert out.tobytes() == DATA[: out.nbytes]
        buf = bytearray(10**6)
        n = f.readinto(buf)
        assert buf[:n] == DATA[out.nbytes :]
        assert f.readinto(bytearray(5)) == 0


def test_file_positioned_after_a_prefix() -> None:
    raw = io.BytesIO(b"prefix" + PACKED)
    raw.seek(6)
    with BytePairFile(raw) as f:
        f.seek(-100, io.SEEK_END)
        assert f.read() == DATA[-100:]
        f.seek(10)
        assert f.read(10) == DATA[10:20]


def test_empty_stream_reads_empty() -> None:
    with BytePairFile(io.BytesIO(bytepair.compress(b""))) as f:
        assert f.read() == b""
        assert f.seek(0, io.SEEK_END) == 0


class ReadModel(RuleBasedStateMachine):
    """Random calls on a BytePairFile, each checked against io.BytesIO of the original data."""

    seekable_source = True

    def __init__(self) -> None:
        super().__init__()
        source = io.BytesIO(PACKED) if self.seekable_source else Pipe(PACKED)
        self.f = BytePairFile(source)
        self.model = io.BytesIO(DATA)

    def teardown(self) -> None:
        self.f.close()

    sizes = st.one_of(st.integers(-2, 40), st.integers(0, 6000))

    @rule(size=st.one_of(sizes, st.none()))
    def read(self, size: int | None) -> None:
        assert self.f.read(size) == self.model.read(size)

    @rule(size=sizes)
    def read1(self, size: int) -> None:
        pos = self.model.tell()
        got = self.f.read1(size)
        assert got == DATA[pos : pos + len(got)]
        if size >= 0:
            assert len(got) <= size
        assert bool(got) == (size != 0 and pos < len(DATA))
        self.model.seek(len(got), io.SEEK_CUR)

    @rule(size=st.one_of(st.just(-1), sizes))
    def readline(self, size: int) -> None:
        assert self.f.readline(size) == self.model.readline(size)

    @rule(size=sizes)
    def readinto(self, size: int) -> None:
        ours, theirs = bytearray(max(size, 0)), bytearray(max(size, 0))
        assert self.f.readinto(ours) == self.model.readinto(theirs)
        assert ours == theirs

    @rule(size=sizes)
    def peek(self, size: int) -> None:
        pos = self.model.tell()
        got = self.f.peek(size)
        assert got == DATA[pos : pos + len(got)]
        assert bool(got) == (pos < len(DATA))

    @rule(offset=st.integers(-len(DATA) - 50, len(DATA) + 50), whence=st.sampled_from([0, 1, 2]))
    def seek(self, offset: int, whence: int) -> None:
        # as LZMAFile: clamped to the data, where io.BytesIO refuses a negative position and passes the end
        base = (0, self.model.tell(), len(DATA))[whence]
        expected = self.model.seek(min(max(0, base + offset), len(DATA)))
        if not self.seekable_source and (whence == io.SEEK_END or expected < self.f.tell()):
            with pytest.raises(io.UnsupportedOperation):
                self.f.seek(offset, whence)
            self.model.seek(self.f.tell())
            return
        assert self.f.seek(offset, whence) == expected

    @rule(edge=st.sampled_from([lo for lo, _ in frame_bounds(PACKED)] + [len(DATA)]), delta=st.integers(-70, 70))
    def seek_near_a_frame_edge(self, edge: int, delta: int) -> None:
        """Where reads cross frames (a random offset rarely lands there)."""
        self.seek(max(0, edge + delta), io.SEEK_SET)

    @rule()
    def tell(self) -> None:
        assert self.f.tell() == self.model.tell()

    @invariant()
    def same_position(self) -> None:
        assert self.f.tell() == self.model.tell()


class PipeReadModel(ReadModel):
    """The same over a source that cannot seek: forward seeks read on, backward ones are refused."""

    seekable_source = False


TestReadModel = ReadModel.TestCase
TestReadModel.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestPipeReadModel = PipeReadModel.TestCase
TestPipeReadModel.settings = settings(max_examples=25, stateful_step_count=30, deadline=None)


# -- random access ----------------------------------------------------------


@pytest.fixture(scope="module")
def large_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, int]:
    """A 50 MB compressed file: one stream of 800 frames of 64 KiB of random data.

    The frames of one compressed MiB are repeated (a frame does not know its
    place), so building it takes a second where compressing 50 MB would take
    minutes. Returns the path, the repeated MiB and the number of copies.
    """
    unit = random.Random(7).randbytes(1 << 20)
    with frame_size(1 << 16):
        records = frame_records(bytepair.compress(unit, level=1))
    copies = 50
    crc = 0
    for _ in range(copies):
        crc = crc32_combine(crc, zlib.crc32(unit), len(unit))
    path = tmp_path_factory.mktemp("large") / "large.bp"
    with path.open("wb") as out:
        out.write(pack_stream_header())
        for _ in range(copies):
            out.writelines(record for _, record in records)
        out.write(pack_end(copies * len(records), copies * len(unit), crc))
    assert path.stat().st_size > 50_000_000
    return path, unit, copies


def test_seek_near_the_end_reads_headers_and_one_frame(large_file: tuple[Path, bytes, int]) -> None:
    path, unit, copies = large_file
    with path.open("rb", buffering=0) as raw:
        counting = Counting(raw)
        with BytePairFile(counting) as f:
            assert f.seek(-1024, io.SEEK_END) == copies * len(unit) - 1024
            assert f.frames_decoded == 0  # seeking decodes nothing
            assert f.read() == unit[-1024:]
            assert f.frames_decoded == 1
    # 800 frame headers and one body of 64 KiB, not 50 MB
    assert counting.bytes_read < 800 * FRAME_HEADER_SIZE + 70_000


def test_seeks_decode_only_the_frames_they_need(large_file: tuple[Path, bytes, int]) -> None:
    path, unit, copies = large_file
    size = copies * len(unit)
    with BytePairFile(path) as f:
        f.seek(size // 2 - 100_000)
        assert f.read(200_000) == (unit * 2)[len(unit) - 100_000 : len(unit) + 100_000]
        assert f.frames_decoded == 4  # 200 kB span 4 frames of 64 KiB here
        f.seek(5)
        assert f.read(10) == unit[5:15]
        assert f.frames_decoded == 5
        f.seek(-15, io.SEEK_CUR)  # within the frame held: nothing more to decode
        assert f.read(5) == unit[:5]
        f.seek(1 << 16)  # the next frame
        assert f.read(5) == unit[1 << 16 : (1 << 16) + 5]
        assert f.frames_decoded == 6
        f.seek(size + 10)
        assert f.tell() == size and f.read() == b""  # clamped to the end, as LZMAFile does
        assert f.frames_decoded == 6


def test_decompress_range_on_the_large_file(large_file: tuple[Path, bytes, int]) -> None:
    path, unit, copies = large_file
    blob = path.read_bytes()
    with mock.patch.object(walk, "decode_entry", wraps=walk.decode_entry) as decode:
        assert decompress_range(blob, copies * len(unit) - 1024, 10_000) == unit[-1024:]
        assert decode.call_count == 1


def test_a_damaged_frame_fails_only_the_reads_that_need_it() -> None:
    bounds = frame_bounds(PACKED)
    damaged = bytearray(PACKED)
    damaged[STREAM_HEADER_SIZE + FRAME_HEADER_SIZE + 3] ^= 0x10  # body of the first frame
    with BytePairFile(io.BytesIO(bytes(damaged))) as f:
        f.seek(bounds[-1][0])
        assert f.read() == DATA[bounds[-1][0] :]
        f.seek(0)
        with pytest.raises(CorruptDataError, match="frame 0"):
            f.read(1)


# -- sources that cannot seek ----------------------------------------------


def test_pipe_like_source_reads_forward() -> None:
    with BytePairFile(Pipe(PACKED, chunk=100)) as f:
        assert not f.seekable()
        assert f.read(10) == DATA[:10]
        assert f.seek(20_000) == 20_000  # forward: reads on
        assert f.read(5) == DATA[20_000:20_005]
        with pytest.raises(io.UnsupportedOperation):
            f.seek(0)
        with pytest.raises(io.UnsupportedOperation):
            f.seek(0, io.SEEK_END)
        assert f.read() == DATA[20_005:]


def test_os_pipe() -> None:
    r, w = os.pipe()

    def feed() -> None:
        with os.fdopen(w, "wb") as out:
            out.write(PACKED)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        with os.fdopen(r, "rb") as src, BytePairFile(src) as f:
            assert not f.seekable()
            assert f.read() == DATA
    finally:
        writer.join()


# -- writing ----------------------------------------------------------------


def test_write_equals_one_shot_compression(tmp_path: Path, kernels: str) -> None:
    data = TEXT + MIXED
    path = tmp_path / "out.bp"
    with frame_size(5000):
        with BytePairFile(path, "w", level=1) as f:
            assert f.mode == "wb" and f.writable() and not f.readable()
            for lo in range(0, len(data), 3000):  # frames fill as it is written
                assert f.write(data[lo : lo + 3000]) == len(data[lo : lo + 3000])
                f.flush()
            assert f.tell() == len(data)
        assert path.read_bytes() == bytepair.compress(data, level=1)
    with BytePairFile(path) as f:
        assert f.read() == data


def test_write_accepts_buffers_and_leaves_a_given_file_open() -> None:
    out = io.BytesIO()
    with BytePairFile(out, "wb") as f:
        assert f.write(np.arange(10, dtype=np.uint32)) == 40  # type: ignore[arg-type]  # a buffer at run time
        assert f.write(memoryview(b"abc")) == 3
        assert f.write(bytearray(b"de")) == 2
    assert not out.closed
    assert bytepair.decompress(out.getvalue()) == np.arange(10, dtype=np.uint32).tobytes() + b"abcde"


def test_append_mode_adds_a_stream(tmp_path: Path) -> None:
    path = tmp_path / "log.bp"
    with BytePairFile(path, "w") as f:
        f.write(TEXT)
    with BytePairFile(path, "a") as f:
        assert f.mode == "wb"
        f.write(MIXED)
    with BytePairFile(path, "ab") as f:
        pass  # an empty stream
    assert path.read_bytes() == bytepair.compress(TEXT) + bytepair.compress(MIXED) + bytepair.compress(b"")
    with BytePairFile(path) as f:
        assert f.read() == TEXT + MIXED


def test_exclusive_mode_refuses_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "new.bp"
    with BytePairFile(path, "x") as f:
        f.write(b"first")
    with pytest.raises(FileExistsError):
        BytePairFile(path, "xb")
    with pytest.raises(FileExistsError):
        bp_open(path, "xt", encoding="utf-8")
    assert bytepair.decompress(path.read_bytes()) == b"first"


def test_bad_settings_create_no_file(tmp_path: Path) -> None:
    path = tmp_path / "never.bp"
    with pytest.raises(ValueError):
        BytePairFile(path, "w", level=0)
    with pytest.raises(TypeError):
        BytePairFile(path, "w", level="5")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        BytePairFile(path, "w", threads=-1)
    assert not path.exists()


# -- arguments, closed files, fileno ----------------------------------------


@pytest.mark.parametrize(
    "kwargs", [{"level": 5}, {"block_size": 100}, {"max_distinct": 100}, {"threshold": 3}, {"threads": 2}]
)
def test_compression_settings_are_refused_when_reading(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        BytePairFile(io.BytesIO(PACKED), "r", **kwargs)


def test_bad_modes_and_file_arguments(tmp_path: Path) -> None:
    for mode in ["", "rw", "r+", "rt", "wt", "br", "t", "U"]:
        with pytest.raises(ValueError):
            BytePairFile(io.BytesIO(PACKED), mode)
    for mode in ["rbt", "tb", "t", "r+t"]:
        with pytest.raises(ValueError):
            bp_open(io.BytesIO(PACKED), mode)
    with pytest.raises(TypeError):
        BytePairFile(3.5)  # type: ignore[arg-type]
    for name in ["encoding", "errors", "newline"]:
        with pytest.raises(ValueError, match=name):
            bp_open(io.BytesIO(PACKED), "rb", **{name: "x"})  # type: ignore[call-overload]


def test_closed_file_raises_value_error() -> None:
    f = BytePairFile(io.BytesIO(PACKED))
    f.close()
    f.close()  # idempotent
    assert f.closed
    calls: list[Callable[[], object]] = [
        f.read,
        f.read1,
        f.readline,
        f.peek,
        f.tell,
        f.fileno,
        f.readable,
        f.writable,
        f.seekable,
        f.flush,
        lambda: f.seek(0),
        lambda: f.readinto(bytearray(1)),
        lambda: f.name,
        lambda: f.write(b"x"),
    ]
    for call in calls:
        with pytest.raises(ValueError):
            call()
    with pytest.raises(ValueError), f:
        pass
    w = BytePairFile(io.BytesIO(), "w")
    w.close()
    w.close()
    with pytest.raises(ValueError):
        w.write(b"x")


def test_wrong_direction_is_unsupported() -> None:
    with BytePairFile(io.BytesIO(), "w") as w:
        calls: list[Callable[[], object]] = [
            w.read,
            w.read1,
            w.readline,
            w.peek,
            lambda: w.seek(0),
            lambda: w.readinto(bytearray(1)),
        ]
        for call in calls:
            with pytest.raises(io.UnsupportedOperation):
                call()
        assert not w.seekable()
        assert w.tell() == 0
    with BytePairFile(io.BytesIO(PACKED)) as r, pytest.raises(io.UnsupportedOperation):
        r.write(b"x")


def test_fileno_and_name(tmp_path: Path) -> None:
    path = tmp_path / "f.bp"
    path.write_bytes(PACKED)
    with path.open("rb") as raw, BytePairFile(raw) as f:
        assert f.fileno() == raw.fileno()
        assert f.name == str(path)
    with BytePairFile(path) as f:
        assert os.fstat(f.fileno()).st_size == len(PACKED)
        assert f.name == str(path)
    with BytePairFile(io.BytesIO(PACKED)) as f, pytest.raises(io.UnsupportedOperation):
        f.fileno()


def test_seek_argument_errors() -> None:
    with BytePairFile(io.BytesIO(PACKED)) as f:
        with pytest.raises(ValueError):
            f.seek(0, 3)
        with pytest.raises(TypeError):
            f.seek(1.5)  # type: ignore[arg-type]
        assert f.seek(-1) == 0  # as LZMAFile: a seek before the start lands at 0
        assert f.seek(-10, io.SEEK_CUR) == 0


def test_concurrent_use_of_one_file_is_refused() -> None:
    entered, release = threading.Event(), threading.Event()

    class Slow(io.BytesIO):
        def read(self, size: int | None = -1, /) -> bytes:
            entered.set()
            release.wait(10)
            return super().read(size)

    with BytePairFile(Slow(PACKED)) as f:
        reader = threading.Thread(target=f.read)
        reader.start()
        try:
            assert entered.wait(10)
            with pytest.raises(RuntimeError, match="another thread"):
                f.read(1)
        finally:
            release.set()
            reader.join()
        assert f.tell() == len(DATA)


# -- text mode --------------------------------------------------------------

TEXT_LINES = "".join(f"{i}: naïve café ≠ 東京 😀 ±{i * 7}\n" for i in range(400)) + "no newline at the end ∑"


def test_text_round_trip_across_frames(tmp_path: Path, kernels: str) -> None:
    path = tmp_path / "t.bp"
    with frame_size(1001), bp_open(path, "wt", encoding="utf-8") as f:  # multi-byte characters split by frames
        f.write(TEXT_LINES)
    assert len(frame_bounds(path.read_bytes())) > 10
    with bp_open(path, "rt", encoding="utf-8") as f:
        assert f.read() == TEXT_LINES
    with bp_open(path, "rt", encoding="utf-8") as f:
        assert f.readlines() == TEXT_LINES.splitlines(keepends=True)
    with bp_open(path, "rt", encoding="utf-8") as f:
        f.readline()
        cookie = f.tell()
        rest = f.read()
        f.seek(cookie)
        assert f.read() == rest


def test_text_newline_options(tmp_path: Path) -> None:
    path = tmp_path / "n.bp"
    text = "one\ntwo\r\nthree\rfour"
    with bp_open(path, "wt", encoding="utf-8", newline="") as f:
        f.write(text)
    assert bytepair.decompress(path.read_bytes()) == text.encode()
    with bp_open(path, "rt", encoding="utf-8") as f:  # universal newlines
        assert f.read() == "one\ntwo\nthree\nfour"
    with bp_open(path, "rt", encoding="utf-8", newline="") as f:
        assert f.readlines() == ["one\n", "two\r\n", "three\r", "four"]
    with bp_open(path, "wt", encoding="utf-8", newline="\r\n") as f:
        f.write("a\nb\n")
    assert bytepair.decompress(path.read_bytes()) == b"a\r\nb\r\n"


def test_text_append_and_encodings(tmp_path: Path) -> None:
    path = tmp_path / "a.bp"
    # not "utf-16": TextIOWrapper writes a BOM only to a seekable buffer, and a
    # file being written cannot seek (as with lzma.open), so name the byte order
    with bp_open(path, "wt", encoding="utf-16-le") as f:
        f.write("ünïcode")
    assert bytepair.decompress(path.read_bytes()) == "ünïcode".encode("utf-16-le")
    with bp_open(path, "wt", encoding="latin-1", errors="replace") as f:
        f.write("café 東京\n")
    with bp_open(path, "at", encoding="latin-1") as f:
        f.write("more\n")
    with bp_open(path, "rt", encoding="latin-1") as f:
        assert f.read() == "café ??\nmore\n"


# -- decompress_range -------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(start=st.integers(0, len(DATA) + 100), length=st.integers(0, len(DATA) + 100))
def test_decompress_range_is_slicing(start: int, length: int) -> None:
    bounds = frame_bounds(PACKED)
    with mock.patch.object(walk, "decode_entry", wraps=walk.decode_entry) as decode:
        assert decompress_range(PACKED, start, length) == DATA[start : start + length]
    overlapping = sum(1 for lo, hi in bounds if max(lo, start) < min(hi, start + length))
    assert decode.call_count == overlapping


def test_decompress_range_arguments() -> None:
    assert decompress_range(bytearray(PACKED), np.int64(3), 4) == DATA[3:7]  # type: ignore[arg-type]  # an index
    assert decompress_range(PACKED, 0, 2**70) == DATA
    assert decompress_range(PACKED, 2**70, 5) == b""
    assert decompress_range(PACKED, 10, 0) == b""
    assert decompress_range(PACKED, len(DATA) - 3, 100, max_length=3) == DATA[-3:]
    with pytest.raises(OutputLimitError):
        decompress_range(PACKED, 0, 2**70, max_length=len(DATA) - 1)
    for args in [(-1, 5), (0, -1)]:
        with pytest.raises(ValueError):
            decompress_range(PACKED, *args)
    with pytest.raises(ValueError):
        decompress_range(PACKED, 0, 1, max_length=-1)
    with pytest.raises(TypeError):
        decompress_range(PACKED, 1.0, 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        decompress_range("text", 0, 5)


# -- damaged data -----------------------------------------------------------

with frame_size(300):
    SMALL_DATA = b"abracadabra, " * 40 + bytes(range(256))
    SMALL = bytepair.compress(SMALL_DATA)
assert len(frame_bounds(SMALL)) >= 3


def read_all(blob: bytes) -> bytes:
    with BytePairFile(io.BytesIO(blob)) as f:
        return f.read()


def test_every_truncation_is_truncated_data() -> None:
    for cut in range(len(SMALL)):
        with pytest.raises(TruncatedDataError):
            read_all(SMALL[:cut])
        with pytest.raises(TruncatedDataError):
            decompress_range(SMALL[:cut], 0, 1)
    with pytest.raises(TruncatedDataError):
        read_all(SMALL + SMALL[:-1])


@settings(max_examples=300, deadline=None)
@given(bit=st.integers(0, 8 * len(SMALL) - 1))
def test_every_bit_flip_is_an_error(bit: int) -> None:
    damaged = bytearray(SMALL)
    damaged[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(BytePairError):
        read_all(bytes(damaged))
    with pytest.raises(BytePairError):
        decompress_range(bytes(damaged), 0, len(SMALL_DATA))


@pytest.mark.parametrize(
    ("tail", "error"),
    [
        (b"\x00", CorruptDataError),
        (b"garbage after the stream", CorruptDataError),
        (b"BYP", TruncatedDataError),
        (b"BYPR\x01", TruncatedDataError),
        (b"BYPR\x03\x00\x00\x00", UnsupportedFormatError),
    ],
)
def test_trailing_bytes_are_errors(tail: bytes, error: type[BytePairError]) -> None:
    with pytest.raises(error):
        read_all(SMALL + tail)
    with pytest.raises(error):
        decompress_range(SMALL + tail, 0, 1)
    with BytePairFile(io.BytesIO(SMALL + tail)) as f, pytest.raises(error):
        f.seek(0, io.SEEK_END)  # the end is only known once the trailing bytes are read


def test_not_a_stream() -> None:
    for blob in [b"", b"\x00" * 40, b"PK\x03\x04 a zip file"]:
        with pytest.raises(BytePairError):
            read_all(blob)
    with pytest.raises(UnsupportedFormatError):
        read_all(b"PK\x03\x04 a zip file")
    with pytest.raises(TruncatedDataError):
        read_all(b"")


def test_error_positions_are_absolute() -> None:
    damaged = bytearray(SMALL + SMALL)
    damaged[len(SMALL) + 7] ^= 1  # the second stream header's check
    with pytest.raises(CorruptDataError, match=rf"byte {len(SMALL)}\b"):
        read_all(bytes(damaged))


def test_a_failed_write_leaves_a_truncated_stream_and_the_first_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing after a failed write neither raises a second error over the first nor
    ends the stream as if nothing were missing: readers call it truncated."""
    monkeypatch.setattr(bytepair.io.stream, "FRAME_SIZE", 4096)
    path = tmp_path / "interrupted.bp"
    data = b"a file whose writing is interrupted " * 2000

    with pytest.raises(KeyboardInterrupt), bytepair.open(path, "wb") as f:
        f.write(data[:1000])
        assert isinstance(f, BytePairFile) and f._compressor is not None
        frames = f._compressor._frames
        add = frames.add
        calls = iter(range(1_000_000))

        def interrupted_once(chunk: bytes) -> list[tuple[bytes, int, int]]:
            if next(calls) == 1:  # the second frame: the first one's output is lost with the call
                raise KeyboardInterrupt
            return add(chunk)

        monkeypatch.setattr(frames, "add", interrupted_once)
        f.write(data[1000:])
    assert f.closed
    with pytest.raises(TruncatedDataError):
        bytepair.decompress(path.read_bytes())
