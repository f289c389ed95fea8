"""bytepair.numcodecs.BytePair against numcodecs' own codec checks, and its discovery by entry point."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import numpy as np
import pytest

from bytepair import BytePairError, CorruptDataError, OutputLimitError
from tests.fresh_process import run_fresh
from tests.helpers import TESTDATA

numcodecs = pytest.importorskip("numcodecs", reason="the numcodecs codec needs numcodecs (bytepair[zarr])")
common = pytest.importorskip("numcodecs.tests.common", reason="numcodecs' codec checks ship with numcodecs")

from bytepair.numcodecs import BytePair  # noqa: E402

FIXTURES = TESTDATA / "numcodecs"
"""check_backwards_compatibility's 'fixture/bytepair' folder lives here: encoded chunks we committed."""

CODECS = [
    BytePair(),
    BytePair(level=1),
    BytePair(level=9),
    BytePair(level=3, block_size=4096, max_distinct=180, threshold=4, escape_limit=0),
]


def _arrays() -> list[np.ndarray]:
    """numcodecs' test mix (dtypes, shapes, C and F order), from a fixed seed so fixtures stay comparable."""
    rng = np.random.default_rng(34)
    return [
        np.arange(1000, dtype="i4"),
        np.linspace(1000, 1001, 1000, dtype="f8"),
        rng.normal(loc=1000, scale=1, size=(100, 10)),
        rng.integers(0, 2, size=1000).astype(bool).reshape(100, 10, order="F"),
        rng.choice([b"a", b"bb", b"ccc"], size=1000).reshape(10, 10, 10),
        rng.integers(0, 2**60, size=1000, dtype="u8").view("M8[ns]"),
        rng.integers(0, 2**25, size=1000, dtype="u8").view("m8[m]"),
        np.frombuffer(b"the cat sat on the mat; " * 200, dtype="u1").copy(),
        np.zeros(0, dtype="u2"),
        np.asfortranarray(rng.integers(-(2**15), 2**15, size=(30, 40), dtype="i2")),
    ]


ARRAYS = _arrays()


@pytest.mark.parametrize(("arr", "codec"), list(itertools.product(ARRAYS, CODECS)))
def test_encode_decode(arr: np.ndarray, codec: BytePair) -> None:
    common.check_encode_decode(arr, codec)


@pytest.mark.parametrize("codec", CODECS)
def test_config(codec: BytePair) -> None:
    common.check_config(codec)


def test_config_holds_what_was_given() -> None:
    config = BytePair(level=3, threshold=4).get_config()
    assert json.loads(json.dumps(config)) == {"id": "bytepair", "level": 3, "threshold": 4}


@pytest.mark.parametrize(
    "stmt",
    ["BytePair(level=5)", "BytePair(level=9)", "BytePair(level=3, block_size=4096, escape_limit=0)"],
)
def test_repr(stmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # check_repr evaluates in numcodecs' namespace, which knows only numcodecs' own codecs
    monkeypatch.setitem(vars(common), "BytePair", BytePair)
    common.check_repr(stmt)


def test_eq() -> None:
    assert BytePair() == BytePair(level=5)
    assert BytePair(level=1) != BytePair(level=9)
    assert BytePair(threshold=4) != BytePair()
    assert BytePair() != "bytepair"


def test_backwards_compatibility(monkeypatch: pytest.MonkeyPatch) -> None:
    # numcodecs writes any missing fixture instead of checking it: make sure there is nothing to write
    stored = FIXTURES / "fixture" / BytePair.codec_id
    if not os.environ.get("BYTEPAIR_WRITE_FIXTURES"):
        assert len(list(stored.glob("array.*.npy"))) == len(ARRAYS), f"fixtures missing in {stored}"
        for j in range(len(CODECS)):
            assert len(list((stored / f"codec.{j:02d}").glob("encoded.*.dat"))) == len(ARRAYS)
    monkeypatch.chdir(FIXTURES)
    common.check_backwards_compatibility(BytePair.codec_id, ARRAYS, CODECS)


def test_fixtures_are_bytepair_streams() -> None:
    encoded = sorted((FIXTURES / "fixture" / "bytepair").glob("codec.*/encoded.*.dat"))
    assert encoded
    assert all(path.read_bytes().startswith(b"BYPR") for path in encoded)


def test_err_decode_object_buffer() -> None:
    common.check_err_decode_object_buffer(BytePair())


def test_err_encode_object_buffer() -> None:
    common.check_err_encode_object_buffer(BytePair())


def test_err_encode_non_contiguous() -> None:
    with pytest.raises(ValueError):
        BytePair().encode(np.arange(1000, dtype="i4")[::2])


@pytest.mark.parametrize(
    "kwargs", [{"level": 10}, {"level": 0}, {"block_size": 0}, {"max_distinct": 256}, {"threshold": 1}]
)
def test_bad_config_fails_when_made(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        BytePair(**kwargs)


def test_bad_chunk_is_a_bytepair_error() -> None:
    encoded = bytearray(BytePair().encode(np.arange(1000, dtype="i4")))
    encoded[30] ^= 0x10
    with pytest.raises(CorruptDataError):
        BytePair().decode(bytes(encoded))
    with pytest.raises(BytePairError):
        BytePair().decode(b"not bytepair at all")


def test_decode_into_out_decodes_no_more_than_out_holds() -> None:
    encoded = BytePair().encode(np.arange(1000, dtype="i4"))
    with pytest.raises(OutputLimitError):
        BytePair().decode(encoded, out=np.empty(999, dtype="i4"))


def test_get_codec_in_a_fresh_process(tmp_path: Path) -> None:
    out = run_fresh(
        "import sys, numcodecs\n"
        "assert 'bytepair' not in sys.modules\n"
        "codec = numcodecs.get_codec({'id': 'bytepair', 'level': 9})\n"
        "print(type(codec).__module__, codec.get_config()['level'], codec.decode(codec.encode(b'abcabc' * 9)))\n",
        tmp_path,
    )
    assert out.split() == ["bytepair.numcodecs", "9", repr(b"abcabc" * 9)]
