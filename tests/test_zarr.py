"""bytepair.zarr.BytePair in real Zarr 3 arrays (format 3), bytepair.numcodecs.BytePair in format 2 ones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bytepair import BytePairError, CorruptDataError
from tests.fresh_process import run_fresh

zarr = pytest.importorskip("zarr", reason="the Zarr codec needs zarr 3 (bytepair[zarr])")

import bytepair.numcodecs  # noqa: E402
import bytepair.zarr  # noqa: E402

SHAPE, CHUNKS = (60, 900), (25, 400)


def _data(dtype: str) -> np.ndarray:
    """Text-like values with structure (repeats) and noise, so chunks both shrink and differ."""
    rng = np.random.default_rng(7)
    words = np.frombuffer(b"zarr chunks of byte pairs, " * 2000, dtype="u1")[: SHAPE[0] * SHAPE[1]]
    values = words.astype(dtype) + rng.integers(0, 3, size=words.size).astype(dtype)
    return values.reshape(SHAPE)


def _write(path: Path, data: np.ndarray, zarr_format: int = 3, **codecs: object) -> None:
    array = zarr.create_array(
        str(path), shape=data.shape, chunks=CHUNKS, dtype=data.dtype, zarr_format=zarr_format, **codecs
    )
    array[:] = data


@pytest.mark.parametrize("dtype", ["u1", "i2", "f8"])
def test_format_3_round_trip(tmp_path: Path, dtype: str) -> None:
    data = _data(dtype)
    _write(tmp_path / "a.zarr", data, compressors=bytepair.zarr.BytePair(level=3))
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a.zarr"))[:], data)
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert meta["codecs"][-1] == {"name": "bytepair", "configuration": {"level": 3}}


def test_format_3_behind_a_shuffle(tmp_path: Path) -> None:
    from zarr.codecs.numcodecs import Shuffle

    data = _data("i2")
    codec = bytepair.zarr.BytePair(level=1, threshold=4)
    _write(tmp_path / "a.zarr", data, compressors=[Shuffle(elementsize=2), codec])
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a.zarr"))[:], data)


def test_chunks_are_bytepair_streams(tmp_path: Path) -> None:
    _write(tmp_path / "a.zarr", _data("u1"), compressors=bytepair.zarr.BytePair())
    chunks = [p for p in (tmp_path / "a.zarr" / "c").rglob("*") if p.is_file()]
    assert len(chunks) == 3 * 3
    assert all(p.read_bytes().startswith(b"BYPR") for p in chunks)


def test_dict_round_trip_through_json() -> None:
    codec = bytepair.zarr.BytePair(level=7, block_size=8192, escape_limit=0)
    as_json = json.loads(json.dumps(codec.to_dict()))
    assert as_json == {"name": "bytepair", "configuration": {"level": 7, "block_size": 8192, "escape_limit": 0}}
    assert bytepair.zarr.BytePair.from_dict(as_json) == codec
    assert bytepair.zarr.BytePair.from_dict({"name": "bytepair"}) == bytepair.zarr.BytePair()


@pytest.mark.parametrize("kwargs", [{"level": 0}, {"block_size": 70000}, {"threshold": 1}])
def test_bad_parameters_fail_when_made(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        bytepair.zarr.BytePair(**kwargs)


def test_format_2_compressor(tmp_path: Path) -> None:
    data = _data("i2")
    _write(tmp_path / "a.zarr", data, zarr_format=2, compressors=bytepair.numcodecs.BytePair(level=2))
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "a.zarr"))[:], data)
    meta = json.loads((tmp_path / "a.zarr" / ".zarray").read_text())
    assert meta["compressor"] == {"id": "bytepair", "level": 2}


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_array_opens_in_a_fresh_process(tmp_path: Path, zarr_format: int) -> None:
    data = _data("i2")
    compressor = bytepair.zarr.BytePair(level=4) if zarr_format == 3 else bytepair.numcodecs.BytePair(level=4)
    _write(tmp_path / "a.zarr", data, zarr_format=zarr_format, compressors=compressor)
    out = run_fresh(
        "import sys, zarr\n"
        "assert 'bytepair' not in sys.modules\n"
        "print(int(zarr.open_array('a.zarr')[:].astype('i8').sum()))\n"
        "print([m for m in ('bytepair.numcodecs', 'bytepair.zarr') if m in sys.modules])\n",
        tmp_path,
    )
    # the codec came from its entry point (the format 3 one brings the numcodecs one, which it uses)
    loaded = ["bytepair.numcodecs", "bytepair.zarr"] if zarr_format == 3 else ["bytepair.numcodecs"]
    assert out.splitlines() == [str(int(data.astype("i8").sum())), str(loaded)]


def _damage_one_chunk(path: Path, key: str) -> None:
    chunk = path / key
    blob = bytearray(chunk.read_bytes())
    blob[len(blob) // 2] ^= 0x01
    chunk.write_bytes(bytes(blob))


@pytest.mark.parametrize(("zarr_format", "key"), [(3, "c/1/1"), (2, "1.1")])
def test_damaged_chunk(tmp_path: Path, zarr_format: int, key: str) -> None:
    compressor = bytepair.zarr.BytePair() if zarr_format == 3 else bytepair.numcodecs.BytePair()
    _write(tmp_path / "a.zarr", _data("u1"), zarr_format=zarr_format, compressors=compressor)
    _damage_one_chunk(tmp_path / "a.zarr", key)
    with pytest.raises(CorruptDataError):  # with zarr's own pipeline: the codec's error, without a key
        zarr.open_array(str(tmp_path / "a.zarr"))[:]
    with zarr.config.set({"codec_pipeline.path": "bytepair.zarr.ChunkKeyPipeline", "codec_pipeline.batch_size": 4}):
        array = zarr.open_array(str(tmp_path / "a.zarr"))
        assert isinstance(array._async_array.codec_pipeline, bytepair.zarr.ChunkKeyPipeline)
        with pytest.raises(CorruptDataError, match=f"zarr chunk '.*a.zarr/{key}'") as caught:
            array[:]
        assert isinstance(caught.value, BytePairError)
        np.testing.assert_array_equal(array[:25, :400], _data("u1")[:25, :400])  # the other chunks read


def test_partial_write_over_a_damaged_chunk_names_it(tmp_path: Path) -> None:
    _write(tmp_path / "a.zarr", _data("u1"), compressors=bytepair.zarr.BytePair())
    _damage_one_chunk(tmp_path / "a.zarr", "c/0/1")
    with zarr.config.set({"codec_pipeline.path": "bytepair.zarr.ChunkKeyPipeline"}):
        array = zarr.open_array(str(tmp_path / "a.zarr"))
    with pytest.raises(CorruptDataError, match=r"zarr chunk '.*a\.zarr/c/0/1'"):
        array[0, 500] = 7  # a write into part of the chunk reads it first
    array[0, 0] = 7  # the other chunks take writes
    assert array[0, 0] == 7
