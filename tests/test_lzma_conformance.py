"""CPython's own tests of ``lzma.LZMAFile`` and ``bz2.BZ2File`` (and of their decompressors), adapted.

A selection of ``Lib/test/test_lzma.py`` (``FileTestCase``, ``CompressorDecompressorTestCase``) and
``Lib/test/test_bz2.py`` (``BZ2FileTest``, ``BZ2DecompressorTest``) of Python 3.11, with bytepair's
names: ``LZMAFile`` -> ``BytePairFile``, ``LZMADecompressor`` -> ``BytePairDecompressor``,
``lzma.compress`` -> ``bytepair.compress``, ``LZMAError`` -> ``BytePairError``. Each test names the
one it comes from. Where bytepair deliberately differs (data after the last stream is an error, as in
zstd; it is ignored by ``lzma``), the test says so and checks bytepair's behaviour; README.md has the
table of every difference.

The stdlib's tests stand for what users of ``lzma`` rely on without thinking: a truncated file gives
everything before the cut, ``EOFError`` catches truncation, seeks are clamped to the data, a failed
call leaves an object usable, and nothing that holds a stream in progress can be pickled or copied.
"""

from __future__ import annotations

import array
import copy
import io
import pickle
from pathlib import Path

import pytest

import bytepair
from bytepair import (
    BytePairCompressor,
    BytePairDecompressor,
    BytePairError,
    BytePairFile,
    CorruptDataError,
    TruncatedDataError,
    UnsupportedFormatError,
)
from bytepair.container.format import END_SIZE
from tests.helpers import frame_size, framed

INPUT = b"".join(
    b"-rw-r--r-- 1 user users %6d 2012-02-%02d 14:%02d file_%04d.%s\n"
    % (i * 37 % 99991, 1 + i % 28, i % 60, i, (b"txt", b"py", b"c", b"h")[i % 4])
    for i in range(300)
)
"""Lines like those of ``ls -l``, as CPython's INPUT is."""

COMPRESSED = bytepair.compress(INPUT)
FRAME = 3000
"""Input bytes per frame in ``MULTI``: small, so that the tests cross frame edges."""
with frame_size(FRAME):
    MULTI = bytepair.compress(INPUT)
BOGUS = b"this is not a valid bytepair stream"


# -- FileTestCase (test_lzma) / BZ2FileTest (test_bz2) -----------------------------------------


def test_init() -> None:
    """test_lzma test_init."""
    with BytePairFile(io.BytesIO(COMPRESSED)):
        pass
    for mode in ("w", "x", "a"):
        with BytePairFile(io.BytesIO(), mode):
            pass


def test_close() -> None:
    """test_lzma test_close: closing does not close a file object it was given, and may be repeated."""
    with io.BytesIO(COMPRESSED) as src:
        f = BytePairFile(src)
        f.close()
        assert not src.closed
        f.close()
        assert not src.closed


def test_close_closes_a_file_it_opened(tmp_path: Path) -> None:
    """test_lzma test_close, second half."""
    path = tmp_path / "f.bp"
    path.write_bytes(COMPRESSED)
    f = BytePairFile(path)
    fp = f._fp
    f.close()
    assert fp.closed
    f.close()


def test_closed() -> None:
    """test_lzma test_closed."""
    f = BytePairFile(io.BytesIO(COMPRESSED))
    assert not f.closed
    f.read()
    assert not f.closed
    f.close()
    assert f.closed


def test_fileno(tmp_path: Path) -> None:
    """test_lzma test_fileno."""
    f = BytePairFile(io.BytesIO(COMPRESSED))
    with pytest.raises(io.UnsupportedOperation):
        f.fileno()
    f.close()
    with pytest.raises(ValueError):
        f.fileno()
    path = tmp_path / "f.bp"
    path.write_bytes(COMPRESSED)
    with BytePairFile(path) as f:
        assert f.fileno() == f._fp.fileno()


def test_seekable_readable_writable() -> None:
    """test_lzma test_seekable, test_readable, test_writable."""
    f = BytePairFile(io.BytesIO(COMPRESSED))
    assert f.seekable() and f.readable() and not f.writable()
    f.read()
    assert f.seekable() and f.readable() and not f.writable()
    f.close()
    for method in (f.seekable, f.readable, f.writable):
        with pytest.raises(ValueError):
            method()
    with BytePairFile(io.BytesIO(), "w") as w:
        assert not w.seekable() and not w.readable() and w.writable()
    src = io.BytesIO(COMPRESSED)
    src.seekable = lambda: False  # type: ignore[method-assign]
    with BytePairFile(src) as f:
        assert not f.seekable()


def test_read() -> None:
    """test_lzma test_read, test_read_0, test_read_from_file."""
    with BytePairFile(io.BytesIO(COMPRESSED)) as f:
        assert f.read(0) == b""
        assert f.read() == INPUT
        assert f.read() == b""


def test_read_from_file_with_bytes_filename(tmp_path: Path) -> None:
    """test_lzma test_read_from_file_with_bytes_filename."""
    path = tmp_path / "f.bp"
    path.write_bytes(MULTI)
    with BytePairFile(bytes(path)) as f:
        assert f.read() == INPUT


@pytest.mark.parametrize("packed", [COMPRESSED, MULTI], ids=["one frame", "frames"])
def test_read_10(packed: bytes) -> None:
    """test_lzma test_read_10 / test_bz2 testReadChunk10."""
    with BytePairFile(io.BytesIO(packed)) as f:
        chunks = []
        while result := f.read(10):
            assert len(result) <= 10
            chunks.append(result)
        assert b"".join(chunks) == INPUT


def test_read_multistream() -> None:
    """test_lzma test_read_multistream / test_bz2 testMultiStreamOrdering."""
    with BytePairFile(io.BytesIO(COMPRESSED * 5)) as f:
        assert f.read() == INPUT * 5
    with BytePairFile(io.BytesIO(bytepair.compress(b"foo" * 1000) + bytepair.compress(b"bar" * 1000))) as f:
        assert f.read() == b"foo" * 1000 + b"bar" * 1000


def test_read_trailing_junk_is_an_error() -> None:
    """test_lzma test_read_trailing_junk, deliberately stricter: lzma ignores data after the last
    stream, bytepair reports it (as zstd does), after returning every stream before it."""
    with BytePairFile(io.BytesIO(COMPRESSED * 2 + BOGUS)) as f:
        assert f.read(2 * len(INPUT)) == INPUT * 2
        with pytest.raises(CorruptDataError, match="data after the end of the stream"):
            f.read()


def test_read_incomplete() -> None:
    """test_lzma test_read_incomplete."""
    with BytePairFile(io.BytesIO(COMPRESSED[:128])) as f, pytest.raises(EOFError):
        f.read()


def test_read_truncated() -> None:
    """test_lzma test_read_truncated / test_bz2 test_read_truncated: the end record dropped
    (of the same block framed: a compact stream has none), or a compact stream's last byte."""
    with BytePairFile(io.BytesIO(COMPRESSED[:-1])) as f, pytest.raises(EOFError):
        f.read()
    truncated = framed(COMPRESSED)[:-END_SIZE]
    with BytePairFile(io.BytesIO(truncated)) as f, pytest.raises(EOFError):
        f.read()
    with BytePairFile(io.BytesIO(truncated)) as f:
        assert f.read(len(INPUT)) == INPUT
        with pytest.raises(EOFError):
            f.read(1)
    for i in range(12):  # an incomplete stream header
        with BytePairFile(io.BytesIO(truncated[:i])) as f, pytest.raises(EOFError):
            f.read(1)


def test_read_bad_args() -> None:
    """test_lzma test_read_bad_args, test_read1_bad_args, test_peek_bad_args."""
    f = BytePairFile(io.BytesIO(COMPRESSED))
    f.close()
    for method in (f.read, f.read1, f.peek):
        with pytest.raises(ValueError):
            method()
    with BytePairFile(io.BytesIO(), "w") as w:
        for method in (w.read, w.read1, w.peek):
            with pytest.raises(ValueError):
                method()
    with BytePairFile(io.BytesIO(COMPRESSED)) as f:
        with pytest.raises(TypeError):
            f.read(0.0)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            f.read1(None)  # type: ignore[arg-type]


def test_read_bad_data() -> None:
    """test_lzma test_read_bad_data (LZMAError -> a BytePairError)."""
    with BytePairFile(io.BytesIO(BOGUS)) as f, pytest.raises(UnsupportedFormatError):
        f.read()


@pytest.mark.parametrize("size", [-1, 10])
def test_read1(size: int) -> None:
    """test_lzma test_read1, test_read1_10, test_read1_multistream."""
    with BytePairFile(io.BytesIO(MULTI * 2)) as f:
        blocks = []
        while result := f.read1(size):
            blocks.append(result)
        assert b"".join(blocks) == INPUT * 2
        assert f.read1() == b""
        assert f.read1(0) == b""


def test_peek() -> None:
    """test_lzma test_peek / test_bz2 testPeek."""
    for size in (0, 10):
        with BytePairFile(io.BytesIO(MULTI)) as f:
            result = f.peek(size)
            assert result and INPUT.startswith(result)
            assert f.read() == INPUT


def test_iterator_readline_readlines() -> None:
    """test_lzma test_iterator, test_readline, test_readlines."""
    lines = io.BytesIO(INPUT).readlines()
    with BytePairFile(io.BytesIO(MULTI)) as f:
        assert list(iter(f)) == lines
    with BytePairFile(io.BytesIO(MULTI)) as f:
        for line in lines:
            assert f.readline() == line
    with BytePairFile(io.BytesIO(MULTI)) as f:
        assert f.readlines() == lines


def test_mixed_iteration_and_reads() -> None:
    """test_bz2 testMixedIterationAndReads."""
    lines = io.BytesIO(INPUT).readlines()
    half = len(lines[0]) // 2
    with BytePairFile(io.BytesIO(MULTI)) as f:
        f.read(half)
        assert next(f) == lines[0][half:]
        assert f.read() == INPUT[len(lines[0]) :]
    with BytePairFile(io.BytesIO(MULTI)) as f:
        f.readlines()
        with pytest.raises(StopIteration):
            next(f)
        assert f.readlines() == []


def test_readinto() -> None:
    """test_bz2 testReadInto."""
    n = 128
    b = bytearray(n)
    with BytePairFile(io.BytesIO(MULTI)) as f:
        assert f.readinto(b) == n
        assert b == INPUT[:n]
        n = len(INPUT) - n
        b = bytearray(len(INPUT))
        assert f.readinto(b) == n
        assert b[:n] == INPUT[-n:]


def test_decompress_limited() -> None:
    """test_lzma test_decompress_limited: a read of one byte decodes one frame, not the file."""
    with frame_size(1 << 16):
        bomb = bytepair.compress(bytes(2_000_000))
    with BytePairFile(io.BytesIO(bomb)) as f:
        assert f.read(1) == b"\0"
        assert f.frames_decoded == 1


def test_write() -> None:
    """test_lzma test_write, test_write_10, test_writelines."""
    expected = bytepair.compress(INPUT)
    with io.BytesIO() as dst:
        with BytePairFile(dst, "w") as f:
            f.write(INPUT)
        assert dst.getvalue() == expected
    with io.BytesIO() as dst:
        with BytePairFile(dst, "w") as f:
            for start in range(0, len(INPUT), 10):
                f.write(INPUT[start : start + 10])
        assert dst.getvalue() == expected
    with io.BytesIO() as dst:
        with BytePairFile(dst, "w") as f:
            f.writelines(io.BytesIO(INPUT).readlines())
        assert dst.getvalue() == expected


def test_write_append(tmp_path: Path) -> None:
    """test_lzma test_write_append, test_write_append_to_file."""
    parts = INPUT[:1024], INPUT[1024:1536], INPUT[1536:]
    expected = b"".join(bytepair.compress(x) for x in parts)
    path = tmp_path / "f.bp"
    for mode, part in zip(("w", "a", "a"), parts, strict=True):
        with BytePairFile(path, mode) as f:
            f.write(part)
    assert path.read_bytes() == expected


def test_write_bad_args() -> None:
    """test_lzma test_write_bad_args."""
    f = BytePairFile(io.BytesIO(), "w")
    f.close()
    with pytest.raises(ValueError):
        f.write(b"foo")
    with BytePairFile(io.BytesIO(COMPRESSED), "r") as f, pytest.raises(ValueError):
        f.write(b"bar")
    with BytePairFile(io.BytesIO(), "w") as f:
        for bad in (None, "text", 789):
            with pytest.raises(TypeError):
                f.write(bad)  # type: ignore[arg-type]


def test_seek_forward() -> None:
    """test_lzma test_seek_forward, test_seek_forward_across_streams, ..._relative_to_current, ..._to_end."""
    with BytePairFile(io.BytesIO(MULTI)) as f:
        f.seek(555)
        assert f.read() == INPUT[555:]
    with BytePairFile(io.BytesIO(MULTI * 2)) as f:
        f.seek(len(INPUT) + 123)
        assert f.read() == INPUT[123:]
    with BytePairFile(io.BytesIO(MULTI)) as f:
        f.read(100)
        f.seek(1236, io.SEEK_CUR)
        assert f.read() == INPUT[1336:]
    with BytePairFile(io.BytesIO(MULTI)) as f:
        f.seek(-555, io.SEEK_END)
        assert f.read() == INPUT[-555:]


def test_seek_backward() -> None:
    """test_lzma test_seek_backward, ..._across_streams, ..._relative_to_end."""
    with BytePairFile(io.BytesIO(MULTI)) as f:
        f.read(1001)
        f.seek(211)
        assert f.read() == INPUT[211:]
    with BytePairFile(io.BytesIO(MULTI * 2)) as f:
        f.read(len(INPUT) + 333)
        f.seek(737)
        assert f.read() == INPUT[737:] + INPUT
    with BytePairFile(io.BytesIO(MULTI)) as f:
        f.seek(-150, io.SEEK_END)
        assert f.read() == INPUT[-150:]


@pytest.mark.parametrize("streams", [1, 5])
def test_seek_past_end(streams: int) -> None:
    """test_lzma test_seek_past_end / test_bz2 testSeekPostEnd, ...MultiStream, ...Twice."""
    with BytePairFile(io.BytesIO(MULTI * streams)) as f:
        assert f.seek(len(INPUT) * streams + 9001) == len(INPUT) * streams
        assert f.tell() == len(INPUT) * streams
        f.seek(len(INPUT) * streams + 9001)
        assert f.tell() == len(INPUT) * streams
        assert f.read() == b""
        assert f.seek(50, io.SEEK_END) == len(INPUT) * streams


@pytest.mark.parametrize("streams", [1, 2])
def test_seek_past_start(streams: int) -> None:
    """test_lzma test_seek_past_start / test_bz2 testSeekPreStart, ...MultiStream."""
    with BytePairFile(io.BytesIO(MULTI * streams)) as f:
        assert f.seek(-88) == 0
        assert f.tell() == 0
        assert f.read() == INPUT * streams
        assert f.seek(-10 * len(INPUT), io.SEEK_END) == 0
        assert f.seek(-1, io.SEEK_CUR) == 0


def test_seek_past_end_of_a_pipe() -> None:
    """The same clamping on a source that cannot seek, where forward seeks read on."""
    src = io.BytesIO(MULTI)
    src.seekable = lambda: False  # type: ignore[method-assign]
    with BytePairFile(src) as f:
        assert f.seek(len(INPUT) + 9001) == len(INPUT)
        assert f.tell() == len(INPUT)
        assert f.read() == b""


def test_seek_bad_args() -> None:
    """test_lzma test_seek_bad_args."""
    f = BytePairFile(io.BytesIO(COMPRESSED))
    f.close()
    with pytest.raises(ValueError):
        f.seek(0)
    with BytePairFile(io.BytesIO(), "w") as w, pytest.raises(ValueError):
        w.seek(0)
    with BytePairFile(io.BytesIO(COMPRESSED)) as f:
        with pytest.raises(ValueError):
            f.seek(0, 3)
        with pytest.raises((TypeError, ValueError)):
            f.seek(9, ())  # type: ignore[arg-type]
        for bad in (None, b"derp"):
            with pytest.raises(TypeError):
                f.seek(bad)  # type: ignore[arg-type]


def test_tell() -> None:
    """test_lzma test_tell, test_tell_bad_args, test_issue44439."""
    with BytePairFile(io.BytesIO(MULTI)) as f:
        pos = 0
        while True:
            assert f.tell() == pos
            result = f.read(183)
            if not result:
                break
            pos += len(result)
        assert f.tell() == len(INPUT)
    with BytePairFile(io.BytesIO(), "w") as w:
        for pos in range(0, len(INPUT), 144):
            assert w.tell() == pos
            w.write(INPUT[pos : pos + 144])
        assert w.tell() == len(INPUT)
        q = array.array("Q", [1, 2, 3, 4, 5])
        assert w.write(q) == len(q) * q.itemsize
    with pytest.raises(ValueError):
        w.tell()


# -- a truncated file: everything before the cut, as LZMAFile gives -----------------------------

CUT = MULTI[: len(MULTI) // 2]
"""A file of several frames cut in half, inside a frame."""


def bytes_before_the_cut() -> int:
    """Original bytes in the frames that lie whole before the cut, as the incremental decompressor gives them."""
    return len(BytePairDecompressor().decompress(CUT))


BEFORE = bytes_before_the_cut()


def test_the_cut_file_has_whole_frames_before_the_cut() -> None:
    assert 0 < BEFORE < len(INPUT)
    assert BEFORE % FRAME == 0


def test_truncated_file_reads_every_frame_before_the_cut() -> None:
    """Reads up to the cut succeed; the first that reaches it raises, as EOFError too."""
    with BytePairFile(io.BytesIO(CUT)) as f:
        assert f.read(BEFORE) == INPUT[:BEFORE]
        with pytest.raises(TruncatedDataError) as caught:
            f.read(1)
        assert isinstance(caught.value, EOFError)


def test_truncated_file_read1_gives_frames_until_the_cut() -> None:
    with BytePairFile(io.BytesIO(CUT)) as f:
        got = []
        with pytest.raises(EOFError):
            while piece := f.read1():
                got.append(piece)
        assert b"".join(got) == INPUT[:BEFORE]


def test_truncated_file_copyfileobj_copies_up_to_the_cut() -> None:
    """What shutil-style copying in chunks gets: every chunk whole before the cut."""
    out = io.BytesIO()
    with BytePairFile(io.BytesIO(CUT)) as f, pytest.raises(EOFError):
        while chunk := f.read(1000):
            out.write(chunk)
    assert out.getvalue() == INPUT[: BEFORE // 1000 * 1000]


def test_a_read_that_reaches_the_cut_keeps_the_position() -> None:
    """A read that raises returned nothing: the bytes before the cut are still there to read."""
    with BytePairFile(io.BytesIO(CUT)) as f:
        f.read(10)
        with pytest.raises(EOFError):
            f.read()
        assert f.tell() == 10
        assert f.read(BEFORE - 10) == INPUT[10:BEFORE]


def test_truncated_file_allows_seeks_before_the_cut() -> None:
    """A seek over unread frames of a cut file: their sizes are proven by decoding them."""
    with BytePairFile(io.BytesIO(CUT)) as f:
        f.seek(BEFORE - 100)
        assert f.read(100) == INPUT[BEFORE - 100 : BEFORE]
        with pytest.raises(EOFError):
            f.seek(len(INPUT))  # the seek itself reaches the cut


def test_truncated_file_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "cut.bp"
    path.write_bytes(CUT)
    with bytepair.open(path) as f:
        assert f.read(BEFORE) == INPUT[:BEFORE]
    with bytepair.open(path, "rt", encoding="ascii") as t, pytest.raises(EOFError):
        t.read()


def test_truncated_data_error_is_an_eof_error() -> None:
    assert issubclass(TruncatedDataError, EOFError)
    assert issubclass(TruncatedDataError, CorruptDataError)
    with pytest.raises(EOFError):
        bytepair.decompress(COMPRESSED[:-1])


# -- CompressorDecompressorTestCase (test_lzma) / BZ2DecompressorTest (test_bz2) -----------------


def test_decompressor_chunks_maxsize() -> None:
    """test_lzma test_decompressor_chunks_maxsize."""
    d = BytePairDecompressor()
    max_length = 100
    out = [d.decompress(MULTI[: len(MULTI) // 2], max_length=max_length)]
    assert not d.needs_input
    assert len(out[-1]) == max_length
    out.append(d.decompress(b"", max_length=max_length))
    assert not d.needs_input
    assert len(out[-1]) == max_length
    out.append(d.decompress(MULTI[len(MULTI) // 2 :], max_length=max_length))
    assert len(out[-1]) <= max_length
    while not d.eof:
        out.append(d.decompress(b"", max_length=max_length))
        assert len(out[-1]) <= max_length
    assert b"".join(out) == INPUT
    assert d.unused_data == b""


def test_decompressor_inputbuf() -> None:
    """test_lzma test_decompressor_inputbuf_1, _2, _3."""
    d = BytePairDecompressor()
    out = [d.decompress(MULTI[:100], max_length=0)]
    out.append(d.decompress(b"", 2))
    out.append(d.decompress(MULTI[100:105], 15))
    out.append(d.decompress(MULTI[105:]))
    assert b"".join(out) == INPUT


def test_decompressor_unused_data_and_eof() -> None:
    """test_lzma test_decompressor_unused_data / test_bz2 testEOFError."""
    d = BytePairDecompressor()
    assert d.decompress(COMPRESSED + b"fooblibar") == INPUT
    assert d.eof and d.unused_data == b"fooblibar"
    with pytest.raises(EOFError):
        d.decompress(b"anything")


def test_decompressor_bad_input() -> None:
    """test_lzma test_decompressor_bad_input."""
    with pytest.raises(BytePairError):
        BytePairDecompressor().decompress(BOGUS)


@pytest.mark.parametrize("bad", [1.5, "10", b"10", object()])
def test_decompressor_checks_max_length_before_taking_input(bad: object) -> None:
    """A call refused for its arguments takes none of its data: the next good call is as if it never was."""
    d = BytePairDecompressor()
    with pytest.raises(TypeError, match="max_length"):
        d.decompress(COMPRESSED[:50], bad)  # type: ignore[arg-type]
    assert d.needs_input and not d.eof
    assert d.decompress(COMPRESSED) == INPUT
    assert d.eof and d.unused_data == b""


def test_decompressor_checks_data_before_taking_it() -> None:
    d = BytePairDecompressor()
    d.decompress(COMPRESSED[:50])
    with pytest.raises(TypeError):
        d.decompress("text")
    assert d.decompress(COMPRESSED[50:]) == INPUT


# -- pickling and copying (test_lzma test_pickle, test_bz2 testPickle) ----------------------------


def stream_objects(tmp_path: Path) -> list[object]:
    path = tmp_path / "f.bp"
    path.write_bytes(COMPRESSED)
    half_fed = BytePairDecompressor()
    half_fed.decompress(MULTI[:100])
    return [
        BytePairCompressor(),
        BytePairDecompressor(),
        half_fed,
        BytePairFile(io.BytesIO(COMPRESSED)),
        BytePairFile(io.BytesIO(), "w"),
        BytePairFile(path),
    ]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_is_refused(tmp_path: Path, protocol: int) -> None:
    for obj in stream_objects(tmp_path):
        with pytest.raises(TypeError, match=f"cannot pickle or copy '{type(obj).__name__}' object"):
            pickle.dumps(obj, protocol)


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_copy_is_refused(tmp_path: Path, how: object) -> None:
    """A copy would share the original's buffer and parser: feeding one would corrupt the other."""
    assert callable(how)
    for obj in stream_objects(tmp_path):
        with pytest.raises(TypeError, match="holds a stream in progress"):
            how(obj)


def test_what_a_seek_before_the_damage_decodes() -> None:
    """After whole streams, trailing garbage leaves every size proven by end records: a seek decodes
    one frame. In a cut stream the sizes before the target are proven by decoding those frames."""
    with BytePairFile(io.BytesIO(MULTI + BOGUS)) as f:
        f.seek(len(INPUT) - 10)
        assert f.read(10) == INPUT[-10:]
        assert f.frames_decoded == 1
    with BytePairFile(io.BytesIO(CUT)) as f:
        f.seek(BEFORE - 10)
        assert f.read(10) == INPUT[BEFORE - 10 : BEFORE]
        assert f.frames_decoded == BEFORE // FRAME
