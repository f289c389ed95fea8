"""bytepair.dask.read_text: lines like dask.bag.read_text, files split at frame boundaries (synchronous scheduler)."""

from __future__ import annotations

import functools
import io
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bytepair
from tests.helpers import frame_size, frames_each_split_task_decodes

dask = pytest.importorskip("dask", reason="the Dask reader needs dask[bag] (bytepair[dask])")
pytest.importorskip("dask.bag", reason="the Dask reader needs dask[bag] (bytepair[dask])")

import bytepair.dask  # noqa: E402

FRAME = 4096


def _text(seed: int, n_lines: int = 2000) -> str:
    """Lines of random lengths (some empty, one longer than several frames, CRLF among them), no final newline."""
    rng = random.Random(seed)
    ends = ["\n", "\r\n"]
    lengths = [0, 3, 40, 90, 400]
    lines = ["".join(rng.choices("abcdefghij ,;", k=rng.choice(lengths))) + rng.choice(ends) for _ in range(n_lines)]
    lines[n_lines // 3] = "é" * 9000 + "\n"  # 18 000 bytes of UTF-8: a line across five frames
    return "".join(lines) + "the last line has no newline"


@functools.cache
def _compressed(text: str, frame: int) -> bytes:
    with frame_size(frame):
        return bytepair.compress(text.encode())


def _write(path: Path, text: str, frame: int = FRAME) -> bytes:
    blob = _compressed(text, frame)
    path.write_bytes(blob)
    return blob


def _expected(text: str) -> list[str]:
    return list(io.StringIO(text, newline=None))


def _decoded_frames(bag: Any, get: Any = None) -> list[int]:
    """How many frames each decoding task of *bag* decoded, in partition order."""
    graph = dict(bag.__dask_graph__())
    keys = sorted((k for k in graph if str(k[0]).startswith("bytepair-decode-")), key=lambda k: k[1])
    results = (get or dask.get)(graph, keys)
    return [r.frames_decoded for r in results]


@pytest.mark.parametrize("blocksize", [1, 2500, 9000, "20kB", 10**9])
def test_split_reads_the_same_lines(tmp_path: Path, blocksize: int | str) -> None:
    text = _text(1)
    _write(tmp_path / "a.txt.bp", text)
    bag = bytepair.dask.read_text(str(tmp_path / "a.txt.bp"), blocksize=blocksize)
    assert bag.compute(scheduler="sync") == _expected(text)


def test_each_task_decodes_its_frames_and_those_its_last_line_runs_into(tmp_path: Path) -> None:
    text = _text(1)
    blob = _write(tmp_path / "a.txt.bp", text)
    pieces = bytepair.dask.plan(str(tmp_path / "a.txt.bp"), blocksize=3 * FRAME)
    n_frames = bytepair.container.listing.list_streams(io.BytesIO(blob)).frames
    assert sum(len(p.frames) for p in pieces) == n_frames
    assert all(p.compressed_size >= 3 * FRAME for p in pieces[:-1])
    assert len(pieces) > 3
    bag = bytepair.dask.read_text(str(tmp_path / "a.txt.bp"), blocksize=3 * FRAME)
    assert bag.npartitions == len(pieces)
    expected = frames_each_split_task_decodes(text.encode(), pieces)
    assert _decoded_frames(bag) == expected
    # a task reads one frame past its own where its last line goes on (the long line: see the next test)
    assert [e - len(p.frames) for e, p in zip(expected, pieces, strict=True)].count(1) >= len(pieces) // 2


def test_a_straddling_line_goes_whole_to_the_partition_of_its_start(tmp_path: Path) -> None:
    text = "short\n" + "x" * 10_000 + "\nend\n"
    _write(tmp_path / "a.txt.bp", text, frame=1000)
    bag = bytepair.dask.read_text(str(tmp_path / "a.txt.bp"), blocksize=1)
    partitions = [list(part.compute(scheduler="sync")) for part in bag.to_delayed()]
    assert bag.npartitions == 11  # one frame each
    assert partitions[0] == ["short\n", "x" * 10_000 + "\n"]
    assert all(p == [] for p in partitions[1:10])
    assert partitions[10] == ["end\n"]
    assert _decoded_frames(bag) == [11] + [1] * 10  # the first reads on to the long line's end


def test_several_files_several_streams(tmp_path: Path) -> None:
    texts = [_text(3, 300), "", _text(4, 500) + "\n"]
    for i, text in enumerate(texts):
        _write(tmp_path / f"{i}.txt.bp", text)
    with frame_size(FRAME):  # a file of two concatenated streams reads as their concatenation
        (tmp_path / "3.txt.bp").write_bytes(bytepair.compress(b"one\ntw") + bytepair.compress(b"o\nthree\n"))
    expected = [line for text in [*texts, "one\ntwo\nthree\n"] for line in _expected(text)]
    pattern = str(tmp_path / "*.txt.bp")
    assert bytepair.dask.read_text(pattern, blocksize=5000).compute(scheduler="sync") == expected
    assert bytepair.dask.read_text(pattern).compute(scheduler="sync") == expected
    assert bytepair.dask.read_text(pattern).npartitions == 4


def test_same_as_dask_bag_read_text(tmp_path: Path) -> None:
    import dask.bag

    text = _text(1)
    (tmp_path / "plain.txt").write_text(text, newline="")
    _write(tmp_path / "a.txt.bp", text)
    plain = dask.bag.read_text(str(tmp_path / "plain.txt"), encoding="utf-8").compute(scheduler="sync")
    assert bytepair.dask.read_text(str(tmp_path / "a.txt.bp"), blocksize=5000).compute(scheduler="sync") == plain
    bagged = dask.bag.read_text(str(tmp_path / "a.txt.bp"), encoding="utf-8", compression="infer")
    assert bagged.compute(scheduler="sync") == plain


def test_other_encodings(tmp_path: Path) -> None:
    text = "ünïcode\nlätin\n"
    with frame_size(FRAME):
        (tmp_path / "a.bp").write_bytes(bytepair.compress(text.encode("latin-1")))
        (tmp_path / "b.bp").write_bytes(bytepair.compress(text.encode("utf-16")))
    assert bytepair.dask.read_text(str(tmp_path / "a.bp"), 1, "latin-1").compute(scheduler="sync") == _expected(text)
    assert bytepair.dask.read_text(str(tmp_path / "b.bp"), None, "utf-16").compute(scheduler="sync") == _expected(text)
    with pytest.raises(ValueError, match="utf-16"):
        bytepair.dask.read_text(str(tmp_path / "b.bp"), 1, "utf-16")


@pytest.mark.parametrize("blocksize", [0, -5, "nonsense"])
def test_bad_blocksize(tmp_path: Path, blocksize: Any) -> None:
    _write(tmp_path / "a.bp", "x\n")
    with pytest.raises(ValueError):
        bytepair.dask.read_text(str(tmp_path / "a.bp"), blocksize=blocksize)


def test_no_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        bytepair.dask.read_text(str(tmp_path / "*.bp"))


@pytest.mark.parametrize("blocksize", [None, 2 * FRAME])
def test_damaged_body_names_the_file(tmp_path: Path, blocksize: int | None) -> None:
    blob = bytearray(_write(tmp_path / "a.txt.bp", _text(6)))
    blob[len(blob) // 2] ^= 0x02
    (tmp_path / "a.txt.bp").write_bytes(bytes(blob))
    bag = bytepair.dask.read_text(str(tmp_path / "a.txt.bp"), blocksize=blocksize)
    with pytest.raises(bytepair.CorruptDataError, match=r"^file://.*a\.txt\.bp: frame \d+"):
        bag.compute(scheduler="sync")


def test_damaged_header_names_the_file_when_planning(tmp_path: Path) -> None:
    blob = bytearray(_write(tmp_path / "a.txt.bp", _text(7)))
    blob[-3] ^= 0x02  # the end record
    (tmp_path / "a.txt.bp").write_bytes(bytes(blob))
    with pytest.raises(bytepair.CorruptDataError, match=r"^file://.*a\.txt\.bp: "):
        bytepair.dask.read_text(str(tmp_path / "a.txt.bp"), blocksize=FRAME)


def test_an_fsspec_url(tmp_path: Path) -> None:
    import fsspec

    text = _text(1)
    fs = fsspec.filesystem("memory")
    fs.pipe("/pydata-dask/a.txt.bp", _compressed(text, FRAME))
    try:
        bag = bytepair.dask.read_text("memory://pydata-dask/*.txt.bp", blocksize=3 * FRAME)
        assert bag.npartitions > 3
        assert bag.compute(scheduler="sync") == _expected(text)
    finally:
        fs.rm("/pydata-dask", recursive=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.text(alphabet="ab\r\u00e9\u4e2d", max_size=300).map(lambda t: t + "\n"), max_size=40),
    tail=st.text(alphabet="ab\n", max_size=20),
    frame=st.integers(1, 400),
    blocksize=st.integers(1, 2000),
)
def test_any_cut_reads_the_lines_of_the_whole(
    tmp_path: Path, lines: list[str], tail: str, frame: int, blocksize: int
) -> None:
    text = "".join(lines) + tail
    _write(tmp_path / "a.txt.bp", text, frame=frame)
    bag = bytepair.dask.read_text(str(tmp_path / "a.txt.bp"), blocksize=blocksize)
    assert bag.compute(scheduler="sync") == _expected(text)
    pieces = bytepair.dask.plan(str(tmp_path / "a.txt.bp"), blocksize)
    assert _decoded_frames(bag) == frames_each_split_task_decodes(text.encode(), pieces)
