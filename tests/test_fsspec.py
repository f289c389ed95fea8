"""compression="bytepair" and "infer" for .bp names in fsspec, and so in pandas."""

from __future__ import annotations

from pathlib import Path

import pytest

import bytepair
from tests.fresh_process import run_fresh
from tests.helpers import frame_size

fsspec = pytest.importorskip("fsspec", reason="the fsspec integration needs fsspec (bytepair[dask])")

import bytepair.fsspec  # noqa: E402

TEXT = "".join(f"{i},{i * i},row {i}\n" for i in range(3000))


def _damaged(blob: bytes) -> bytes:
    out = bytearray(blob)
    out[len(out) // 2] ^= 0x08
    return bytes(out)


def test_write_and_read_by_name(tmp_path: Path) -> None:
    path = str(tmp_path / "a.csv.bp")
    with fsspec.open(path, "wt", compression="bytepair") as f:
        f.write(TEXT)
    assert bytepair.decompress((tmp_path / "a.csv.bp").read_bytes()).decode() == TEXT
    with fsspec.open(path, "rt", compression="bytepair") as f:
        assert f.read() == TEXT


def test_infer_from_the_bp_suffix(tmp_path: Path) -> None:
    (tmp_path / "a.txt.bp").write_bytes(bytepair.compress(b"first\nsecond\n"))
    (tmp_path / "b.txt.bp").write_bytes(bytepair.compress(b"third\n"))
    assert fsspec.utils.infer_compression("x.csv.bp") == "bytepair"
    files = fsspec.open_files(str(tmp_path / "*.txt.bp"), "rt", compression="infer")
    lines = []
    for of in files:
        with of as f:
            lines.extend(f)
    assert lines == ["first\n", "second\n", "third\n"]


def test_write_takes_compressor_settings(tmp_path: Path) -> None:
    path = tmp_path / "a.bp"
    with fsspec.open(str(path), "wb", compression="infer") as raw:
        raw.write(TEXT.encode())
    with open(path, "rb") as raw, bytepair.fsspec.open_compressed(raw) as f:
        assert f.read() == TEXT.encode()
    with open(path, "wb") as raw, bytepair.fsspec.open_compressed(raw, "wb", level=1) as f:
        f.write(b"x" * 100)
    assert bytepair.decompress(path.read_bytes()) == b"x" * 100


def test_seek_reads_only_the_frames_it_needs(tmp_path: Path) -> None:
    with frame_size(1000):
        (tmp_path / "a.bp").write_bytes(bytepair.compress(TEXT.encode()))
    with fsspec.open(str(tmp_path / "a.bp"), "rb", compression="infer") as f:
        f.seek(20_000)
        assert f.read(10) == TEXT.encode()[20_000:20_010]
        assert f.frames_decoded == 1


def test_damaged_file_names_its_path(tmp_path: Path) -> None:
    (tmp_path / "bad.txt.bp").write_bytes(_damaged(bytepair.compress(TEXT.encode())))
    with (
        pytest.raises(bytepair.CorruptDataError, match=r"^file://.*bad\.txt\.bp: "),
        fsspec.open(str(tmp_path / "bad.txt.bp"), "rt", compression="infer") as f,
    ):
        f.read()


def test_a_memory_filesystem(tmp_path: Path) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe("/pydata-test/a.txt.bp", bytepair.compress(TEXT.encode()))
    try:
        with fsspec.open("memory://pydata-test/a.txt.bp", "rt", compression="infer") as f:
            assert f.read() == TEXT
    finally:
        fs.rm("/pydata-test", recursive=True)


def test_pandas_read_csv(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas", reason="pandas is what this checks")
    (tmp_path / "a.csv.bp").write_bytes(bytepair.compress(("n,square,label\n" + TEXT).encode()))
    # a local path: pandas opens it itself, so hand it the file
    with fsspec.open(str(tmp_path / "a.csv.bp"), "rt", compression="infer") as f:
        frame = pd.read_csv(f)
    assert frame.shape == (3000, 3)
    assert int(frame["square"].sum()) == sum(i * i for i in range(3000))
    # a URL: pandas opens it through fsspec, which takes the compression from storage_options
    fs = fsspec.filesystem("memory")
    fs.pipe("/pydata-test/a.csv.bp", (tmp_path / "a.csv.bp").read_bytes())
    fs.pipe("/pydata-test/bad.csv.bp", _damaged((tmp_path / "a.csv.bp").read_bytes()))
    try:
        frame = pd.read_csv("memory://pydata-test/a.csv.bp", storage_options={"compression": "infer"})
        assert frame.shape == (3000, 3)
        with pytest.raises(bytepair.BytePairError, match=r"memory:///pydata-test/bad\.csv\.bp: "):
            pd.read_csv("memory://pydata-test/bad.csv.bp", storage_options={"compression": "infer"})
    finally:
        fs.rm("/pydata-test", recursive=True)


def test_fsspec_alone_does_not_know_bytepair(tmp_path: Path) -> None:
    # fsspec reads no entry point for compressions: the documented line is what registers it
    out = run_fresh(
        "import fsspec.compression\n"
        "print('bytepair' in fsspec.compression.compr)\n"
        "import bytepair.fsspec\n"
        "print('bytepair' in fsspec.compression.compr, fsspec.utils.infer_compression('a.csv.bp'))\n",
        tmp_path,
    )
    assert out.split() == ["False", "True", "bytepair"]
