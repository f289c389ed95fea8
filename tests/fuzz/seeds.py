"""Valid inputs of every format bytepair reads, to be mutated: the fuzzer's starting points.

Built once per run, deterministically: the same data whatever the fuzzing seed.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import bytepair
from tests.helpers import frame_size as small_frames
from tests.helpers import framed

try:
    from bytepair import gage as _gage
except ImportError:  # pragma: no cover - the Gage module is optional for the fuzzer
    _gage = None  # type: ignore[assignment]

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "testdata" / "golden"
GAGE_VECTORS = REPO / "testdata" / "gage"
MAX_VECTOR = 100_000  # larger Gage vectors make slow cases without finding more


@dataclasses.dataclass(frozen=True)
class Seed:
    name: str
    fmt: str  # "bytepair" or "gage"
    original: bytes
    stream: bytes
    boundaries: tuple[tuple[int, int], ...] = ()
    """For a file of several streams: (offset in stream, offset in original) at each stream end."""


def _text(size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    words = (
        b"the of and to in is you that it he was for on are as with his they at be this have from or one had "
        b"by word but not what all were we when your can said there use an each which she do how their if"
    ).split()
    return b" ".join(rng.choice(words) for _ in range(size // 3))[:size]


def _recycling(size: int) -> bytes:
    """250 distinct values leave 6 fresh codes: encoding must recycle."""
    rng = random.Random(1994)
    words = [bytes(rng.randrange(250) for _ in range(3)) for _ in range(40)]
    return bytes(range(250)) + b"".join(rng.choice(words) for _ in range(size // 3))


def _scattered(size: int) -> bytes:
    """Free values scattered among used ones: code sets stored as bitmaps."""
    used = bytes(v for v in range(256) if v % 5)
    return used + bytes(used[i % 40] for i in range(size))


def _rare_bytes(size: int, seed: int, every: int = 150, chunk: int = 0) -> bytes:
    """Text with a few rare byte values (0x80..0x9f) scattered in it, one every *every* bytes:
    the default level escapes them (values occurring a few times in a block are sent aside).
    With *chunk*, every byte value is also put once in each *chunk* bytes, so that a block
    of that size has no free code at all: it escapes whatever its length."""
    rng = random.Random(seed)
    out = bytearray(_text(size, seed))
    for _ in range(size // every):
        out[rng.randrange(len(out))] = rng.randrange(0x80, 0xA0)
    for lo in range(0, size, chunk or size + 1):
        hi = min(size, lo + chunk)
        if hi - lo >= 256:
            for value, at in zip(range(256), rng.sample(range(lo, hi), 256), strict=True):
                out[at] = value
    return bytes(out)


def inputs() -> dict[str, bytes]:
    rng = random.Random(8)
    return {
        "empty": b"",
        "one": b"x",
        "text": _text(20_000, 1),
        "runs": b"".join(bytes([rng.randrange(256)]) * rng.randrange(1, 300) for _ in range(60)),
        "random": rng.randbytes(3000),
        "all256": bytes(range(256)) * 12,
        "recycling": _recycling(6000),
        "scattered": _scattered(3000),
        "deep": b"a" * 4000 + b"b" * 70,
        "mixed": _text(2000, 2) + rng.randbytes(700) + b"\x00" * 900 + _text(1500, 3),
        "rare": _rare_bytes(12_000, 4),
        "rare-dense": _rare_bytes(3000, 5, every=20),  # many rare values
        "rare-all": _rare_bytes(2000, 6, chunk=2000),  # every value present, the rare ones escaped
        "rare-chunks": _rare_bytes(6000, 7, every=60, chunk=1000),  # every value in each 1000 bytes
    }


def _compress(data: bytes, **options: int) -> bytes:
    """``bytepair.compress``, a stream of one block written framed (``tests.helpers.framed``):
    the structure-aware mutators edit frames; compact seeds are added as such below."""
    return framed(bytepair.compress(data, **options))


def bytepair_seeds() -> list[Seed]:
    data = inputs()
    seeds = [Seed(f"bp-{name}", "bytepair", d, _compress(d)) for name, d in data.items()]
    for name in ("text", "runs", "random", "deep", "rare-dense"):  # compact streams: one block, or stored
        d = data[name][:3000]
        seeds.append(Seed(f"bp-compact-{name}", "bytepair", d, bytepair.compress(d, block_size=3000)))
    seeds.append(
        Seed(
            "bp-text-t2-b300",
            "bytepair",
            data["text"][:3000],
            _compress(data["text"][:3000], block_size=300, threshold=2),
        )
    )
    seeds.append(Seed("bp-deep-t2", "bytepair", data["deep"], _compress(data["deep"], threshold=2)))
    seeds.append(Seed("bp-level1", "bytepair", data["mixed"], _compress(data["mixed"], level=1)))
    seeds.append(Seed("bp-level9", "bytepair", data["mixed"], _compress(data["mixed"], level=9)))
    try:  # more escapes than the levels make (the parameter is new with format 2)
        d = data["rare-dense"]
        seeds.append(Seed("bp-escape-limit-40", "bytepair", d, _compress(d, escape_limit=40)))
    except TypeError:  # pragma: no cover
        pass
    with small_frames(700):
        for name in ("text", "mixed", "recycling", "scattered", "rare"):
            d = data[name][:5000]
            seeds.append(Seed(f"bp-frames-{name}", "bytepair", d, _compress(d, block_size=300)))
    with small_frames(2000):  # frames of two blocks with escapes
        d = data["rare-chunks"]
        seeds.append(Seed("bp-frames-rare-chunks", "bytepair", d, _compress(d, block_size=1000)))
    d = data["rare-chunks"]  # one frame of six blocks with escapes
    seeds.append(Seed("bp-blocks-rare-chunks", "bytepair", d, _compress(d, block_size=1000, threshold=2)))
    with small_frames(97):
        d = data["all256"][:1500]
        seeds.append(Seed("bp-frames-tiny", "bytepair", d, _compress(d, block_size=40, threshold=2)))
    # several streams back to back
    a, b = data["text"][:1000], data["runs"]
    sa, sb, se = _compress(a), _compress(b), bytepair.compress(b"")
    seeds.append(
        Seed("bp-concat", "bytepair", a + b, sa + sb + se, ((len(sa), len(a)), (len(sa) + len(sb), len(a) + len(b))))
    )
    if GOLDEN.is_dir():
        for path in sorted(GOLDEN.glob("*.bp")):
            original = path.with_suffix(".bin").read_bytes()
            seeds.append(Seed(f"golden-{path.stem}", "bytepair", original, path.read_bytes()))
    return seeds


def gage_seeds() -> list[Seed]:
    seeds: list[Seed] = []
    if _gage is not None:
        data = inputs()
        for name in ("empty", "one", "text", "runs", "random", "all256", "deep", "mixed"):
            seeds.append(Seed(f"gage-{name}", "gage", data[name], _gage.compress(data[name])))
        seeds.append(Seed("gage-deep-t2", "gage", data["deep"], _gage.compress(data["deep"], threshold=2)))
        seeds.append(
            Seed(
                "gage-small-blocks",
                "gage",
                data["text"][:4000],
                _gage.compress(data["text"][:4000], block_size=500, max_distinct=60),
            )
        )
    if GAGE_VECTORS.is_dir():
        for path in sorted(GAGE_VECTORS.glob("*.gage")):
            if path.stat().st_size <= MAX_VECTOR:
                source = path.with_suffix("")  # inputs that are corpus files are not in the repo
                original = source.read_bytes() if source.exists() else _gage.decompress(path.read_bytes())
                seeds.append(Seed(f"vector-{path.stem}", "gage", original, path.read_bytes()))
    return seeds


def all_seeds() -> list[Seed]:
    seeds = bytepair_seeds() + gage_seeds()
    for s in seeds:  # a seed that does not decode would make every finding about it false
        if s.fmt == "bytepair":
            assert bytepair.decompress(s.stream) == s.original, s.name
        elif _gage is not None:
            assert _gage.decompress(s.stream) == s.original, s.name
    return seeds
