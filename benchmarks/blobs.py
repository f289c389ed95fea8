"""Small blobs, one call each: bytepair against zlib, zstd and lz4, as a key-value store calls them.

    python benchmarks/blobs.py [--runs N] [--sizes 100,1KB,4KB,64KB,1MB] [--source PATH ...]

For each size, blobs are cut from the texts at ``--source`` (``alice29.txt`` and
``news`` from ``../shared/corpus``, else Python's standard library sources) at
spread offsets; every codec compresses and decompresses each blob with one
call, the codecs taking turns blob by blob so that all see the same machine.
Each run times the whole set of blobs; the table gives the median run's
microseconds per call, the compressed size over the original, and each codec's
speed against zlib-6 in the same run (higher is faster). zstd (``zstandard``)
and lz4 are timed where installed (the ``bench`` extra). Every round trip is
checked. Exit status: 0 done, 1 a round trip failed, 2 bad option.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import sysconfig
import time
import zlib
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # time this checkout's code
import bytepair  # noqa: E402
from bytepair import backend  # noqa: E402

PROG = "blobs.py"
SHARED_CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_SOURCES = (SHARED_CORPUS / "canterbury" / "alice29.txt", SHARED_CORPUS / "calgary" / "news")
BLOBS_PER_SIZE = 32

Codec = tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]


def codecs() -> dict[str, Codec]:
    """Each codec's one-call compress and decompress; the peers where installed."""
    found: dict[str, Codec] = {
        "bytepair-5": (bytepair.compress, bytepair.decompress),
        "zlib-6": (lambda b: zlib.compress(b, 6), zlib.decompress),
    }
    try:
        import zstandard
    except ImportError:
        pass
    else:
        for level in (1, 3):
            cctx, dctx = zstandard.ZstdCompressor(level=level), zstandard.ZstdDecompressor()
            found[f"zstd-{level}"] = (cctx.compress, dctx.decompress)
    try:
        import lz4.frame
    except ImportError:
        pass
    else:
        found["lz4"] = (lz4.frame.compress, lz4.frame.decompress)
    return found


def parse_size(text: str) -> int:
    for unit, factor in (("KB", 1 << 10), ("MB", 1 << 20)):
        if text.upper().endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def text_sources(paths: list[Path]) -> bytes:
    if not paths:
        paths = [p for p in DEFAULT_SOURCES if p.is_file()]
    if not paths:
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        paths = sorted(stdlib.glob("*.py"))[:60]
    return b"".join(p.read_bytes() for p in paths)


def blobs_of(data: bytes, size: int) -> list[bytes]:
    """``BLOBS_PER_SIZE`` slices of *size* bytes at spread offsets (fewer when *data* is short)."""
    data = data * -(-size // len(data)) if len(data) < size else data
    room = len(data) - size
    count = BLOBS_PER_SIZE if size < (1 << 20) else 4
    return list(dict.fromkeys(data[k * room // count : k * room // count + size] for k in range(count)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs over every blob; medians (7)")
    parser.add_argument("--sizes", default="100,1KB,4KB,64KB,1MB", help="blob sizes (100,1KB,4KB,64KB,1MB)")
    parser.add_argument("--source", type=Path, action="append", default=[], help="a text file to cut blobs from")
    args = parser.parse_args(argv)
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes: not a list of sizes: {args.sizes!r}")
    if args.runs < 1 or any(s < 1 for s in sizes):
        parser.error("--runs and every size must be at least 1")
    data = text_sources(args.source)
    found = codecs()
    print(f"kernels: {backend.describe()}; one call per blob; {args.runs} runs; microseconds per call")
    print()
    print("| blob | codec | ratio | compress us | decompress us | compress vs zlib-6 | decompress vs zlib-6 |")
    print("|--:|:--|--:|--:|--:|--:|--:|")
    for size in sizes:
        blobs = blobs_of(data, size)
        packed = {name: [c(b) for b in blobs] for name, (c, _) in found.items()}
        for name, (_, d) in found.items():  # checked, and warm
            if any(d(p) != b for p, b in zip(packed[name], blobs, strict=True)):
                print(f"{PROG}: {name} did not give a blob of {size} bytes back", file=sys.stderr)
                return 1
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in found}
        for _ in range(args.runs):
            spent = {name: [0.0, 0.0] for name in found}
            for k, blob in enumerate(blobs):
                for name, (c, d) in found.items():
                    start = time.perf_counter()
                    c(blob)
                    middle = time.perf_counter()
                    d(packed[name][k])
                    spent[name][0] += middle - start
                    spent[name][1] += time.perf_counter() - middle
            for name, (ct, dt) in spent.items():
                runs[name].append((ct / len(blobs), dt / len(blobs)))
        zc, zd = (statistics.median(t[i] for t in runs["zlib-6"]) for i in (0, 1))
        for name in found:
            ct, dt = (statistics.median(t[i] for t in runs[name]) for i in (0, 1))
            ratio = sum(map(len, packed[name])) / sum(map(len, blobs))
            speeds = f"{ct * 1e6:.1f} | {dt * 1e6:.1f} | {zc / ct:.2f}x | {zd / dt:.2f}x"
            print(f"| {size:,} | {name} | {ratio:.3f} | {speeds} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
