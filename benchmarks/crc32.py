"""CRC-32 speed: the compiled kernel (``backend.crc32``) against ``zlib.crc32``.

    python benchmarks/crc32.py [--reps N]

For each buffer size (random bytes), *reps* rounds time one call of each in
turn; the median of each is reported, with the kernel's speed as a multiple of
zlib's in the same run. Both must give the same value (checked).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bytepair import backend

SIZES = (4 << 10, 32 << 10, 1 << 20, 2 << 20, 16 << 20)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="crc32.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=21, help="timed calls of each, in turns (21)")
    args = parser.parse_args(argv)
    if not backend.compiled():
        print(f"crc32.py: needs the compiled kernels; here: {backend.describe()}", file=sys.stderr)
        return 2
    kernel = backend
    rng = np.random.default_rng(0)
    print(f"{'bytes':>10} {'zlib GB/s':>10} {'kernel GB/s':>12} {'kernel vs zlib':>15}")
    for size in SIZES:
        array = rng.integers(0, 256, size, dtype=np.uint8)
        data = array.tobytes()
        if kernel.crc32(array) != zlib.crc32(data):
            print(f"crc32.py: the kernel's CRC of {size} bytes differs from zlib's", file=sys.stderr)
            return 1
        times: dict[str, list[float]] = {"zlib": [], "kernel": []}
        for _ in range(args.reps):
            start = time.perf_counter()
            zlib.crc32(data)
            middle = time.perf_counter()
            kernel.crc32(array)
            times["zlib"].append(middle - start)
            times["kernel"].append(time.perf_counter() - middle)
        z, k = (statistics.median(times[name]) for name in ("zlib", "kernel"))
        print(f"{size:>10} {size / z / 1e9:>10.2f} {size / k / 1e9:>12.2f} {z / k:>14.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
