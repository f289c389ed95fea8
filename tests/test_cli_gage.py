"""The command line's --format gage: Gage's 1994 files in and out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import bytepair
from bytepair import gage
from tests.helpers import GAGE_VECTORS, gage_input

TEXT = b"the gage format has no header and no checksum, only blocks. " * 300


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "bytepair", *args], cwd=cwd, capture_output=True, timeout=120)


def test_compress_writes_bpe_that_gage_reads(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_bytes(TEXT)
    result = run("--format", "gage", "t.txt", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    packed = (tmp_path / "t.txt.bpe").read_bytes()
    assert packed == gage.compress(TEXT)
    assert gage.decompress(packed) == TEXT


def test_bpe_suffix_is_read_as_gage(tmp_path: Path) -> None:
    (tmp_path / "t.bpe").write_bytes(gage.compress(TEXT))
    result = run("-d", "t.bpe", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "t").read_bytes() == TEXT


def test_bpe_file_holding_a_bytepair_stream_is_recognised_by_magic(tmp_path: Path) -> None:
    (tmp_path / "t.bpe").write_bytes(bytepair.compress(TEXT))
    result = run("-dc", "t.bpe", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == TEXT


def test_format_gage_from_standard_input(tmp_path: Path) -> None:
    packed = gage.compress(TEXT)
    result = subprocess.run(
        [sys.executable, "-m", "bytepair", "-d", "--format", "gage"], input=packed, capture_output=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == TEXT


def test_gages_own_output_decodes(tmp_path: Path) -> None:
    vector = GAGE_VECTORS / "fields.c.bin.gage"
    (tmp_path / "f.bpe").write_bytes(vector.read_bytes())
    result = run("-d", "f.bpe", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "f").read_bytes() == gage_input("fields.c.bin")


def test_damaged_gage_file_is_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "t.bpe").write_bytes(gage.compress(TEXT)[:-7])
    result = run("-d", "t.bpe", cwd=tmp_path)
    assert result.returncode == 1
    assert len(result.stderr.decode().strip().splitlines()) == 1
    assert not (tmp_path / "t").exists()


def test_format_gage_with_list_is_a_usage_error(tmp_path: Path) -> None:
    result = run("-l", "--format", "gage", "x.bpe", cwd=tmp_path)
    assert result.returncode == 2
