"""Hostile and damaged input: a short fixed-seed fuzz run, corruption detection, decompression
bombs, thread safety and the command line's data safety.

The fuzzer itself lives in tests/fuzz (``python -m tests.fuzz --help``); the inputs it
ever found a problem with are replayed by tests/test_fuzz_regressions.py.
"""

from __future__ import annotations

import fnmatch
import io
import os
import random
import struct
import sys
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

import bytepair
from bytepair import BytePairDecompressor, BytePairError, CorruptDataError, OutputLimitError
from tests.fuzz import Finding, run
from tests.fuzz import container as C
from tests.fuzz import crafted as K
from tests.fuzz.seeds import _recycling, _scattered
from tests.fuzz.targets import Cli, _BytePairFile, _decompress_range
from tests.helpers import TESTDATA, assert_every_bit_flip_is_an_error, frame_size, framed

try:
    from bytepair import gage
except ImportError:  # pragma: no cover
    gage = None  # type: ignore[assignment]

needs_file = pytest.mark.skipif(_BytePairFile is None, reason="bytepair.BytePairFile is not there yet")
needs_cli = pytest.mark.skipif(not Cli().available(), reason="the command line (bytepair/cli/main.py) is not there yet")


def peak_of(fn: Callable[[], object]) -> tuple[int, float]:
    """Peak traced memory (numpy reports its buffers) and CPU seconds of *fn*, whatever it raises."""
    tracemalloc.start()
    t0 = time.process_time()
    try:
        fn()
    except BytePairError:
        pass
    finally:
        cpu = time.process_time() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak, cpu


# -- a short fuzz campaign ---------------------------------------------------------

# Fuzz findings that are known open bugs, each with the regression file that records it
# (testdata/fuzz/README.md): tolerated (as an expected failure) only while that row is "open".
KNOWN_OPEN: dict[str, tuple[str, str, str]] = {
    "many-blocks-4000.bp": ("*", "memory", "many_blocks*"),
    "seek-orig-size-bitflip.bp": ("file", "silent-corruption", "*"),
    "bitmap-without-codes.bp": ("*", "accepts-invalid", "block_field code_set*"),
}


def _open_regressions() -> set[str]:
    rows = (TESTDATA / "fuzz" / "README.md").read_text().splitlines()
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
    return {c[0] for c in cells if len(c) >= 6 and c[3].startswith("open")}


def test_short_fuzz_campaign(tmp_path: Path) -> None:
    """1000 cases of seed 20_251_121 (about 8 s): every target, every mutator, the same cases every run."""
    report = run(0, seed=20_251_121, save_dir=tmp_path, max_cases=1000)
    assert report.cases == 1000
    still_open = _open_regressions()
    known: list[Finding] = []
    new: list[Finding] = []
    for f in report.findings:
        patterns = [KNOWN_OPEN[name] for name in still_open if name in KNOWN_OPEN]
        hit = any(
            fnmatch.fnmatch(f.target, t) and fnmatch.fnmatch(f.kind, k) and fnmatch.fnmatch(f.case, c)
            for t, k, c in patterns
        )
        (known if hit else new).append(f)
    assert not new, report.summary()
    assert report.slowest is not None and report.slowest.cpu < 1.5
    if known:
        pytest.xfail(f"{len(known)} findings of open bugs (see testdata/fuzz/README.md): {known[0].detail}")


# -- corruption detection ------------------------------------------------------------


def _rare_bytes_text() -> bytes:
    """Text long enough to run out of codes, with a few bytes seen once or twice: escapes."""
    text = bytearray(b"".join(b"line %d of a text that repeats itself, more or less. " % k for k in range(80)))
    for k, value in enumerate((0xE9, 0xFC, 0xE9, 0x80, 0xA7, 0x01, 0xFC)):
        text[531 * k + 17] = value
    return bytes(text)


def _features(blob: bytes) -> set[str]:
    kinds: set[str] = set()
    for rec in C.records(blob):
        if rec.kind == "frame":
            frame, _ = C.parse_frame(blob, rec.start)
            for b in frame.blocks:
                kinds |= {"recycled"} if b.n_recycled else set()
                kinds |= {"bitmap"} if b.code_set == C.BITMAP else set()
                kinds |= {"escapes"} if b.n_escaped else set()
    return kinds


@pytest.fixture(scope="module")
def featured_streams() -> list[tuple[bytes, bytes]]:
    """Two small streams and their contents: one of several frames with recycled codes and a
    bitmap code set, one with escapes."""
    first = _recycling(300)  # 250 distinct values: 6 fresh codes, then recycling
    data = first + _scattered(300)  # free values scattered: a bitmap code set
    with frame_size(len(first)):
        blob = bytepair.compress(data, max_distinct=255, escape_limit=0)  # escapes would free codes
    assert _features(blob) == {"recycled", "bitmap"}
    assert sum(r.kind == "frame" for r in C.records(blob)) >= 2
    text = _rare_bytes_text()
    escaping = framed(bytepair.compress(text))  # one block, written framed (compact ones: test_compact.py)
    assert _features(escaping) == {"escapes"}
    assert bytepair.decompress(blob + escaping) == data + text
    return [(blob, data), (escaping, text)]


def test_every_bit_flip_of_recycled_bitmap_and_escape_frames_is_an_error(
    featured_streams: list[tuple[bytes, bytes]],
) -> None:
    """The two streams back to back, as ``decompress`` reads concatenated streams."""
    (first, first_data), (second, second_data) = featured_streams
    assert_every_bit_flip_is_an_error(first + second, first_data + second_data, bytepair.decompress)


@pytest.mark.parametrize("which", [0, 1], ids=["recycled-bitmap", "escapes"])
def test_every_bit_flip_fed_in_pieces_is_an_error(featured_streams: list[tuple[bytes, bytes]], which: int) -> None:
    """Fed in pieces, damage raises, or the stream never ends (the caller sees it is cut short);
    whatever came out before is the start of the original."""
    blob, data = featured_streams[which]
    rng = random.Random(5)
    damaged = bytearray(blob)
    for bit in range(8 * len(blob)):
        damaged[bit // 8] ^= 1 << (bit % 8)
        d = BytePairDecompressor()
        out = bytearray()
        pos = 0
        try:
            while pos < len(damaged) and not d.eof:
                n = rng.choice((1, 7, 64, 300))
                out += d.decompress(bytes(damaged[pos : pos + n]), max_length=rng.choice((-1, 100)))
                pos += n
                while not d.eof and not d.needs_input:
                    out += d.decompress(b"", max_length=100)
        except BytePairError:
            pass
        else:
            assert not d.eof, f"bit {bit} flipped: the stream ended without an error"
        assert data.startswith(out), f"bit {bit} flipped: wrong bytes came out before the error"
        damaged[bit // 8] ^= 1 << (bit % 8)


# -- decompression bombs ---------------------------------------------------------------


@pytest.fixture(scope="module")
def bomb64m() -> bytes:
    """56 KB, valid, declaring 67,107,840 bytes (1024 blocks of 65535 'a's)."""
    blob, size, _ = K.bomb(1024)
    assert size > 64_000_000 and len(blob) < 60_000
    return blob


def test_declared_size_over_max_length_is_refused_before_allocation(bomb64m: bytes) -> None:
    small = bytepair.compress(b"x" * 1000)
    attempts: list[Callable[[], object]] = [
        lambda: bytepair.decompress(bomb64m, max_length=1_000_000),
        lambda: bytepair.decompress(small + bomb64m, max_length=1_000_000),  # the second stream passes it
    ]
    for fn in attempts:
        with pytest.raises(OutputLimitError):
            fn()
        peak, cpu = peak_of(fn)
        assert peak < 1 << 20, f"{peak} bytes allocated before refusing"
        assert cpu < 0.5
    if _decompress_range is not None:
        decompress_range: Callable[..., bytes] = _decompress_range
        with pytest.raises(OutputLimitError):
            decompress_range(bomb64m, 0, 1 << 40, max_length=1_000_000)
        peak, _ = peak_of(lambda: decompress_range(bomb64m, 0, 1 << 40, max_length=1_000_000))
        assert peak < 1 << 20


@pytest.mark.parametrize("recycled", [False, True], ids=["fresh-codes", "one-recycled-code"])
def test_255_deep_doubling_chain_with_valid_crcs_is_refused_quickly(recycled: bool) -> None:
    """Its last code would spell 2**255 bytes; the frame CRC is right, so the table checks must see it."""
    blob = K.deep_chain(255, recycled)
    with pytest.raises(CorruptDataError, match="expands to more than"):
        bytepair.decompress(blob)
    peak, cpu = peak_of(lambda: bytepair.decompress(blob))
    assert peak < 4 << 20 and cpu < 0.5
    d = BytePairDecompressor()
    with pytest.raises(CorruptDataError):
        for k in range(0, len(blob), 16):
            d.decompress(blob[k : k + 16])


@pytest.mark.skipif(gage is None, reason="bytepair.gage is not there yet")
def test_255_deep_gage_chain_is_refused_quickly() -> None:
    blob = K.gage_deep_chain(255)
    assert len(blob) < 600
    with pytest.raises(CorruptDataError):
        gage.decompress(blob)
    with pytest.raises(BytePairError):
        gage.decompress(blob, max_length=10_000)
    peak, cpu = peak_of(lambda: gage.decompress(blob))
    assert peak < 4 << 20 and cpu < 0.5


@pytest.fixture(scope="module")
def bomb4m() -> tuple[bytes, int]:
    """3.5 KB, valid, 4 MiB of output in one frame."""
    blob, size, _ = K.bomb(64)
    return blob, size


FRAME_FACTOR = 16
"""Readers that hold one frame may use this many bytes per byte of that frame's output."""


def test_decompressor_holds_one_frame_of_a_bomb(bomb4m: tuple[bytes, int]) -> None:
    blob, size = bomb4m
    produced = 0

    def read() -> None:
        nonlocal produced
        d = BytePairDecompressor()
        for k in range(0, len(blob), 500):
            produced += len(d.decompress(blob[k : k + 500], max_length=65536))
            while not d.eof and not d.needs_input:
                produced += len(d.decompress(b"", max_length=65536))
        assert d.eof

    peak, _ = peak_of(read)
    assert produced == size
    assert peak < FRAME_FACTOR * size, f"peak {peak / 2**20:.0f} MiB for a {size / 2**20:.0f} MiB frame"


def test_heaviest_valid_tables_decode_in_bounded_memory() -> None:
    """Tables spelling out the whole 4x budget: 4.3 KB, valid, 4 MiB of output and 16 MiB of
    code expansions. A reader of one frame needs a small multiple of that frame, not an
    8-byte index per expanded byte (that was 38x: 2.5 GB for a 68 KB file of one 64 MiB frame)."""
    blob, size = K.heavy_bomb(64)
    out: list[bytes] = []
    peak, _ = peak_of(lambda: out.append(bytepair.decompress(blob)))
    assert out == [b"a" * size]
    assert peak < FRAME_FACTOR * size, f"peak {peak / 2**20:.0f} MiB for {size / 2**20:.0f} MiB of output"


@pytest.mark.parametrize(
    "crafted",
    [
        # 8 MB of 100-byte blocks nearly all literals, about a symbol per byte: 46x while
        # each block had a 256-entry table
        lambda: K.literal_blocks(81_920, 100),
        # the same in 2000-byte blocks: 25x while every symbol kept four 8-byte integers
        lambda: K.literal_blocks(4_096, 2000),
        # 2.6 MB from 1.04 million merges, one per 2.5 bytes: 73x as one run of blocks
        lambda: K.merge_heavy_blocks(4096),
        # 4 MB nearly all escape marks, one block escaping none: 20x while the marks'
        # positions took 17 bytes each for the whole frame
        lambda: K.escaped_blocks(128),
    ],
    ids=["100-byte-literal-blocks", "2000-byte-literal-blocks", "many-merges", "escaped-bytes"],
)
def test_crafted_frames_decode_in_bounded_memory(crafted: Callable[[], tuple[bytes, bytes]]) -> None:
    """Valid frames built to make a decoder hold much more than their output (the
    peaks quoted were measured before the fixes)."""
    blob, content = crafted()
    out: list[bytes] = []
    peak, _ = peak_of(lambda: out.append(bytepair.decompress(blob)))
    assert out == [content]
    assert peak < FRAME_FACTOR * len(content), f"peak {peak / 2**20:.0f} MiB for {len(content) / 2**20:.0f} MiB"


@needs_file
def test_file_reads_a_bomb_in_bounded_memory(bomb4m: tuple[bytes, int]) -> None:
    blob, size = bomb4m
    produced = 0

    def read() -> None:
        nonlocal produced
        with _BytePairFile(io.BytesIO(blob)) as f:
            while chunk := f.read(65536):
                produced += len(chunk)
            f.seek(size // 2)
            assert f.read(10) == b"a" * 10

    peak, _ = peak_of(read)
    assert produced == size
    assert peak < FRAME_FACTOR * size


@needs_cli
def test_cli_reads_a_bomb_in_bounded_memory(bomb4m: tuple[bytes, int], tmp_path: Path) -> None:
    blob, size = bomb4m
    (tmp_path / "ok.bp").write_bytes(bytepair.compress(b"small"))
    (tmp_path / "bomb.bp").write_bytes(blob)
    base = Cli.spawn(["-t", "ok.bp"], str(tmp_path), env=Cli.baseline_env())
    for args in (["-t", "bomb.bp"], ["-d", "-c", "bomb.bp"]):
        r = Cli.spawn(args, str(tmp_path))
        assert r["rc"] == 0, r["stderr"]
        grown = (r["maxrss"] - base["maxrss"]) * 1024
        assert grown < FRAME_FACTOR * size, f"{args}: peak RSS grew {grown / 2**20:.0f} MiB"
    deep = tmp_path / "deep.bp"
    deep.write_bytes(K.deep_chain(255))
    r = Cli.spawn(["-d", "deep.bp"], str(tmp_path))
    assert r["rc"] == 1 and len(r["stderr"].splitlines()) == 1 and "Traceback" not in r["stderr"]
    assert r["cpu"] - base["cpu"] < 1.0
    assert not (tmp_path / "deep").exists()


# -- thread safety -------------------------------------------------------------------------


def _damaged_inputs(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    data = bytes(rng.choice(b"abcdefgh ") for _ in range(3000)) + rng.randbytes(500)
    with frame_size(900):
        blob = bytepair.compress(data, threshold=2)
    out = [blob]
    for _ in range(12):
        b = bytearray(blob)
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        out.append(bytes(b))
    out += [blob[: rng.randrange(len(blob))], K.deep_chain(rng.randint(17, 255)), blob + b"junk"]
    return out


def _outcome(data: bytes) -> tuple[str, bytes | str]:
    try:
        return "ok", bytepair.decompress(data)
    except BytePairError as exc:
        return type(exc).__name__, str(exc)


def test_decompress_of_damaged_inputs_is_thread_safe() -> None:
    """8 threads decoding different damaged streams at once give exactly the serial results:
    the same output or the same error and message, for every input."""
    inputs = [_damaged_inputs(seed) for seed in range(8)]
    serial = [[_outcome(x) for x in batch] for batch in inputs]
    assert any(kind == "ok" for kind, _ in serial[0]) and any(kind != "ok" for kind, _ in serial[0])
    results: list[list[tuple[str, bytes | str]] | None] = [None] * 8
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        barrier.wait()
        got = []
        for _ in range(3):
            got = [_outcome(x) for x in inputs[i]]
        results[i] = got

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == serial


def test_concurrent_use_of_one_decompressor_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second thread calling into a decompressor that is busy gets RuntimeError, and the
    first call, and the object, carry on undisturbed."""
    import bytepair.container.walk as walk

    data = b"concurrency " * 4000
    with frame_size(10_000):
        blob = bytepair.compress(data)
    inside = threading.Event()
    release = threading.Event()
    real = vars(walk)["decode_frame"]

    def slow_decode(*args: object, **kwargs: object) -> object:
        inside.set()
        assert release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(walk, "decode_frame", slow_decode)
    d = BytePairDecompressor()
    first: list[bytes] = []
    t = threading.Thread(target=lambda: first.append(d.decompress(blob[: len(blob) // 2])))
    t.start()
    assert inside.wait(10)
    with pytest.raises(RuntimeError, match="another thread"):
        d.decompress(blob[len(blob) // 2 :])
    with pytest.raises(RuntimeError):
        _ = d.decompress(b"")
    release.set()
    t.join()
    monkeypatch.setattr(walk, "decode_frame", real)
    rest = d.decompress(blob[len(blob) // 2 :])
    assert d.eof and first[0] + rest == data


# -- the command line with damaged input ---------------------------------------------------


@pytest.fixture(scope="module")
def late_damage() -> dict[str, bytes]:
    """Multi-frame files whose damage shows only after most of the output was written."""
    data = b"".join(b"line %d: the quick brown fox jumps over the lazy dog\n" % i for i in range(6000))
    with frame_size(30_000):
        blob = bytepair.compress(data)
    recs = [r for r in C.records(blob) if r.kind == "frame"]
    assert len(recs) >= 8
    last = recs[-1]
    flipped = bytearray(blob)
    flipped[(last.start + last.end) // 2] ^= 0x04
    dup = blob[: last.end] + blob[last.start : last.end] + blob[last.end :]  # only the end record can tell
    end = len(blob) - C.END_SIZE
    _, n, total, crc = struct.unpack_from("<BIQI", blob, end)
    bad_crc = blob[:end] + C.end_record(n, total, crc ^ 1)
    return {
        "good": blob,
        "data": data,
        "last-frame": bytes(flipped),
        "repeated-frame": dup,
        "end-crc": bad_crc,
        "bomb": K.deep_chain(255),
    }


@needs_cli
@pytest.mark.parametrize("damage", ["last-frame", "repeated-frame", "end-crc", "bomb"])
@pytest.mark.parametrize("rm", [False, True], ids=["keep", "rm"])
def test_cli_decompress_of_damaged_file_leaves_nothing(
    late_damage: dict[str, bytes], damage: str, rm: bool, tmp_path: Path
) -> None:
    src = tmp_path / "in.bp"
    src.write_bytes(late_damage[damage])
    r = Cli.spawn(["-d", *(["--rm"] if rm else []), "in.bp"], str(tmp_path))
    assert r["rc"] == 1
    lines = r["stderr"].splitlines()
    assert len(lines) == 1 and lines[0].startswith("bytepair: in.bp: ") and "Traceback" not in r["stderr"], lines
    assert sorted(os.listdir(tmp_path)) == ["in.bp"], "partial output or a temporary file was left"
    assert src.read_bytes() == late_damage[damage], "the input must be kept (and unchanged)"


@needs_cli
def test_cli_damaged_file_among_good_ones(late_damage: dict[str, bytes], tmp_path: Path) -> None:
    (tmp_path / "a.bp").write_bytes(late_damage["good"])
    (tmp_path / "b.bp").write_bytes(late_damage["repeated-frame"])
    r = Cli.spawn(["-d", "--rm", "a.bp", "b.bp"], str(tmp_path))
    assert r["rc"] == 1 and len(r["stderr"].splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == ["a", "b.bp"]
    assert (tmp_path / "a").read_bytes() == late_damage["data"]


def test_decoders_are_not_fooled_by_a_valid_frame_from_elsewhere(late_damage: dict[str, bytes]) -> None:
    """Each frame's CRCs are its own: a valid frame moved or repeated is caught by the end record."""
    good = late_damage["good"]
    recs = [r for r in C.records(good) if r.kind == "frame"]
    a, b = recs[1], recs[2]
    swapped = good[: a.start] + good[b.start : b.end] + good[a.start : a.end] + good[b.end :]
    for blob in (swapped, late_damage["repeated-frame"]):
        with pytest.raises(CorruptDataError, match="end of stream"):
            bytepair.decompress(blob)
    assert zlib.crc32(late_damage["data"]) == struct.unpack_from("<I", good, len(good) - 8)[0]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
