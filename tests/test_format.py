"""The container: golden files freeze version 2, and damage of any kind is an error."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

import bytepair
from bytepair import BytePairError, CorruptDataError, TruncatedDataError, UnsupportedFormatError
from bytepair.container.format import (
    CODE_SET_BITMAP,
    FRAME_HEADER_SIZE,
    MAGIC,
    STREAM_HEADER_SIZE,
    VERSION,
    pack_code_sets,
    pack_frame,
    unpack_frame_body,
    unpack_frame_header,
)
from tests.golden import CASES, EARLIER, GOLDEN
from tests.helpers import assert_every_bit_flip_is_an_error, frame_size, framed


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_bytes_are_frozen(name: str) -> None:
    data, params = CASES[name]
    stored_input = (GOLDEN / f"{name}.bin").read_bytes()
    golden = (GOLDEN / f"{name}.bp").read_bytes()
    assert stored_input == data, "the golden input changed; regenerate with python -m tests.golden"
    assert bytepair.compress(data, **params) == golden, (
        "the bytes written changed: bump the format version, document it in docs/FORMAT.md, "
        "and regenerate with python -m tests.golden"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_files_decode(name: str) -> None:
    golden = (GOLDEN / f"{name}.bp").read_bytes()
    assert bytepair.decompress(golden) == (GOLDEN / f"{name}.bin").read_bytes()


def test_earlier_encoders_golden_files_decode() -> None:
    earlier = sorted(EARLIER.glob("*/*.bp"))
    assert earlier, "no golden files of earlier encoders"
    for path in earlier:
        assert path.stem in CASES, f"{path}: no such golden case"
        assert bytepair.decompress(path.read_bytes()) == (GOLDEN / f"{path.stem}.bin").read_bytes(), path


def test_golden_files_cover_every_feature() -> None:
    """The golden set must exercise stored blocks, runs, bitmaps, recycled codes and escapes."""
    kinds: set[str] = set()
    for name in CASES:
        blob = (GOLDEN / f"{name}.bp").read_bytes()
        pos = STREAM_HEADER_SIZE
        while blob[pos] == ord("F"):
            header = unpack_frame_header(blob, pos, 0)
            body = blob[pos + FRAME_HEADER_SIZE : pos + FRAME_HEADER_SIZE + header.body_size]
            t = unpack_frame_body(header, body, 0, 0)
            nb = len(t.orig_len)
            set_kind = np.frombuffer(body, dtype=np.uint8, count=nb, offset=6 * nb)
            if ((t.n_merges == 0) & (t.payload_len == t.orig_len)).any():
                kinds.add("stored")
            if (set_kind == CODE_SET_BITMAP).any():
                kinds.add("bitmap")
            if ((set_kind > 0) & (set_kind != CODE_SET_BITMAP)).any():
                kinds.add("runs")
            if (t.n_merges > t.n_fresh).any():
                kinds.add("recycled")
            if t.escapes is not None and t.escapes.count.any():
                kinds.add("escapes")
            pos += FRAME_HEADER_SIZE + header.body_size
    assert kinds == {"stored", "bitmap", "runs", "recycled", "escapes"}


def test_escape_golden_file_escapes() -> None:
    blob = framed((GOLDEN / "escapes.bp").read_bytes())  # a compact stream, as its frame
    header = unpack_frame_header(blob, STREAM_HEADER_SIZE, 0)
    body = blob[STREAM_HEADER_SIZE + FRAME_HEADER_SIZE : STREAM_HEADER_SIZE + FRAME_HEADER_SIZE + header.body_size]
    escapes = unpack_frame_body(header, body, 0, 0).escapes
    assert escapes is not None and escapes.count.tolist() == [6]
    assert escapes.literals.tobytes() == bytes((0xE9, 0xFC, 0xE9, 0x80, 0xA7, 0x01))


def test_stream_layout() -> None:
    text = b"hello hello hello hello " * 20
    blob = bytepair.compress(text, block_size=200)  # three encoded blocks: framed
    assert blob[:4] == MAGIC and blob[4] == VERSION == 2 and blob[5] == 0
    assert blob[STREAM_HEADER_SIZE] == ord("F")
    kind, n_frames, total, crc = struct.unpack_from("<BIQI", blob, len(blob) - 21)
    assert (chr(kind), n_frames, total, crc) == ("E", 1, len(text), zlib.crc32(text))


def test_compact_stream_layout() -> None:
    text = b"hello hello hello hello " * 20
    blob = bytepair.compress(text)  # one block: compact
    assert blob[:4] == MAGIC and blob[4] == VERSION == 2 and blob[5] == 1
    crc, kind = struct.unpack_from("<IB", blob, STREAM_HEADER_SIZE)
    assert (crc, kind) == (zlib.crc32(text), 1)  # encoded
    orig_len, payload_len = struct.unpack_from("<HH", blob, STREAM_HEADER_SIZE + 5)
    assert orig_len == len(text) and payload_len < len(text)
    stored = bytepair.compress(b"abc")
    assert stored[STREAM_HEADER_SIZE:] == struct.pack("<IBB", zlib.crc32(b"abc"), 0, 3) + b"abc"


def test_code_sets_choose_the_cheaper_form() -> None:
    n_merges = np.array([3, 40])
    n_fresh = np.array([3, 40])
    runs_codes = [255, 254, 200]  # two runs
    scattered = list(range(255, 55, -5))  # 40 runs of one: the bitmap is cheaper
    kind, blob, size = pack_code_sets(n_merges, n_fresh, np.array(runs_codes + scattered, dtype=np.uint8))
    assert kind.tolist() == [2, CODE_SET_BITMAP]
    assert size.tolist() == [4, 32]
    assert blob[:4] == bytes([0, 2, 53, 1])


@pytest.mark.parametrize("codes_at_a_time", [1 << 16, 50], ids=["one-run", "runs-of-50-codes"])
@pytest.mark.parametrize("mix", ["runs", "bitmaps", "both"])
def test_code_sets_unpack_to_what_was_packed(mix: str, codes_at_a_time: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks without codes, with runs and with bitmaps, in any mix, and with or without
    recycled merges after the fresh ones: the columns come back as they were written,
    whether a frame's code sets are unpacked at once or a few blocks at a time."""
    from bytepair.container import format as _format
    from bytepair.container.format import _unpack_code_sets
    from bytepair.core.tables import PairTables

    monkeypatch.setattr(_format, "_CODES_PER_RUN", codes_at_a_time)

    rng = np.random.default_rng(len(mix))
    for _ in range(50):
        nb = int(rng.integers(1, 9))
        n_fresh = rng.integers(0, 60, nb) * (rng.random(nb) < 0.8)
        n_merges = n_fresh + rng.integers(0, 3, nb) * (rng.random() < 0.5)
        codes = []
        for k, n in enumerate(n_fresh.tolist()):
            runs = mix == "runs" or (mix == "both" and k % 2 == 0)
            picked = 255 - np.arange(n) if runs else np.sort(rng.choice(256, n, replace=False))[::-1]
            codes.append(np.concatenate((picked, rng.integers(0, 256, int(n_merges[k]) - n))))
        code = np.concatenate(codes).astype(np.uint8)
        kind, blob, _ = pack_code_sets(n_merges, n_fresh, code)
        fresh = np.concatenate([c[:n] for c, n in zip(codes, n_fresh.tolist(), strict=True)]).astype(np.uint8)
        assert _unpack_code_sets(kind.astype(np.int64), np.frombuffer(blob, np.uint8), n_fresh, 0).tolist() == (
            fresh.tolist()
        )
        m = int(n_merges.sum())
        t = PairTables(
            np.full(nb, 60000),
            n_merges,
            n_fresh,
            code,
            rng.integers(0, 256, m).astype(np.uint8),
            rng.integers(0, 256, m).astype(np.uint8),
            np.ones(nb, dtype=np.int64),
            np.zeros(nb, dtype=np.uint8),
        )
        body = pack_frame(t, 0)[FRAME_HEADER_SIZE:]
        back = unpack_frame_body(unpack_frame_header(pack_frame(t, 0), 0, 0), body, 0, 0)
        for name in ("n_merges", "n_fresh", "code", "left", "right"):
            assert getattr(back, name).tolist() == getattr(t, name).tolist(), name


def test_a_bad_code_set_in_a_later_run_of_blocks_names_its_block(monkeypatch: pytest.MonkeyPatch) -> None:
    from bytepair.container import format as _format
    from bytepair.container.format import _unpack_code_sets

    monkeypatch.setattr(_format, "_CODES_PER_RUN", 6)  # runs of three blocks
    n_fresh = np.array([2, 2, 2, 2, 2, 2, 2], dtype=np.int64)
    kind = np.ones(7, dtype=np.int64)  # one run each: skip 0, take 2
    blob = np.array([0, 2] * 7, dtype=np.uint8)
    assert _unpack_code_sets(kind, blob, n_fresh, 10).tolist() == [255, 254] * 7
    blob[2 * 5 + 1] = 3  # block 5 takes 3 codes, its header says 2
    with pytest.raises(CorruptDataError, match="block 15: fresh code runs do not describe its codes"):
        _unpack_code_sets(kind, blob, n_fresh, 10)


@pytest.fixture(scope="module")
def multi_frame_stream() -> tuple[bytes, bytes]:
    data = (b"abracadabra, " * 40 + bytes(range(256)) + b"the quick brown fox " * 30) * 2
    with frame_size(700):
        blob = bytepair.compress(data, block_size=300)
    assert blob.count(b"F") >= 3
    return data, blob


def test_every_truncation_is_an_error(multi_frame_stream: tuple[bytes, bytes]) -> None:
    data, blob = multi_frame_stream
    assert bytepair.decompress(blob) == data
    for cut in range(len(blob)):
        with pytest.raises(TruncatedDataError if cut >= 4 else BytePairError):
            bytepair.decompress(blob[:cut])


def test_every_single_bit_flip_is_an_error(multi_frame_stream: tuple[bytes, bytes]) -> None:
    data, blob = multi_frame_stream
    assert_every_bit_flip_is_an_error(blob, data, bytepair.decompress)


def test_byte_changes_are_errors(multi_frame_stream: tuple[bytes, bytes]) -> None:
    _, blob = multi_frame_stream
    rng = np.random.default_rng(7)
    for pos in rng.integers(0, len(blob), 400):
        damaged = bytearray(blob)
        damaged[pos] = (damaged[pos] + int(rng.integers(1, 256))) % 256
        with pytest.raises(BytePairError):
            bytepair.decompress(bytes(damaged))


def test_not_a_stream() -> None:
    with pytest.raises(UnsupportedFormatError, match="not a bytepair stream"):
        bytepair.decompress(b"PK\x03\x04 this is a zip file, not ours")


@pytest.mark.parametrize("version", [0, 1, 3, 255])
def test_other_versions_are_refused(version: int) -> None:
    """Version 1 (development builds, before escapes) and any future version."""
    blob = bytearray(bytepair.compress(b"abc"))
    blob[4] = version
    with pytest.raises(UnsupportedFormatError, match=f"version {version} "):
        bytepair.decompress(bytes(blob))


def test_oversized_declared_frame_is_refused_before_reading_it() -> None:
    blob = bytearray(framed(bytepair.compress(b"abc" * 100)))
    struct.pack_into("<I", blob, STREAM_HEADER_SIZE + 5, 1 << 30)  # orig_size
    with pytest.raises(CorruptDataError, match="out of range"):
        bytepair.decompress(bytes(blob))
