"""Decompression speed of each decoder path against zlib, robust to a busy machine.

    python benchmarks/decode_kernels.py [PATH ...] [--reps N]

Every file is compressed once (default level); then, *reps* times in turn,
``bytepair.decompress`` on the compiled path, on the numpy path and
``zlib.decompress`` of the same file at level 6 are each timed once, and each
keeps its fastest time: on a loaded machine the fastest of many interleaved
tries estimates the uncontended speed far better than a median of a few.
``roundtrip.py`` gives the medians (and checks every round trip).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bytepair
from bytepair.core import jit


def fastest(calls: dict[str, Callable[[], object]], reps: int) -> dict[str, float]:
    """The fastest of *reps* interleaved timings of each call."""
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(reps):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def with_kernels(mode: str, blob: bytes) -> Callable[[], object]:
    def call() -> object:
        os.environ[jit.KERNELS_ENV] = mode
        return bytepair.decompress(blob)

    return call


def with_zlib(packed: bytes) -> Callable[[], object]:
    def call() -> object:
        return zlib.decompress(packed)

    return call


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders")
    parser.add_argument("--reps", type=int, default=30, help="timings of each call (default 30)")
    opts = parser.parse_args()
    files = [f for p in opts.paths for f in (sorted(x for x in p.iterdir() if x.is_file()) if p.is_dir() else [p])]
    print(f"kernels: {jit.kernels_name()}; fastest of {opts.reps} interleaved runs; MB = 10^6 bytes")
    print("| file | size | numba MB/s | numpy MB/s | zlib-6 MB/s | numba vs zlib | numpy vs zlib |")
    print("|:--|--:|--:|--:|--:|--:|--:|")
    totals = dict.fromkeys(("numba", "numpy", "zlib"), 0.0)
    size = 0
    for f in files:
        data = f.read_bytes()
        blob, packed = bytepair.compress(data), zlib.compress(data, 6)
        calls = {"numba": with_kernels("numba", blob), "numpy": with_kernels("numpy", blob)}
        for call in calls.values():
            if call() != data:
                print(f"{f}: round trip failed", file=sys.stderr)
                return 1
        calls["zlib"] = with_zlib(packed)
        best = fastest(calls, opts.reps)
        for name in totals:
            totals[name] += best[name]
        size += len(data)
        mb = len(data) / 1e6
        print(
            f"| {f.name} | {len(data)} | {mb / best['numba']:.0f} | {mb / best['numpy']:.0f} | {mb / best['zlib']:.0f} "
            f"| {best['zlib'] / best['numba']:.2f}x | {best['zlib'] / best['numpy']:.2f}x |"
        )
    mb = size / 1e6
    print(
        f"| **total** | {size} | {mb / totals['numba']:.0f} | {mb / totals['numpy']:.0f} | {mb / totals['zlib']:.0f} "
        f"| {totals['zlib'] / totals['numba']:.2f}x | {totals['zlib'] / totals['numpy']:.2f}x |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
