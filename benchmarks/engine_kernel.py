"""The compiled engine alone against zlib-6, for comparing versions of the kernels.

    BYTEPAIR_KERNELS=numba python benchmarks/engine_kernel.py [--runs N] [PATH ...]

Cuts every file of the given paths (default: both corpora) into blocks and escapes them
as level 5 does (compiled), then times ``kernels.encode.encode_blocks`` over all of them
and ``zlib.compress(level=6)`` over the same files, each the best of ``--runs`` (7) runs
in this process, and prints both, their ratio, and a hash of the engine's output (equal
hashes: the same bytes). On a shared machine compare versions by alternating runs
(``PYTHONPATH`` at one tree, then the other), and look at the ratio. Needs numba.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from bytepair.core import jit
from bytepair.core.params import LEVELS

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[SHARED / "canterbury", SHARED / "calgary"])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    if not jit.use_numba(1 << 30):
        print("engine_kernel: needs numba (BYTEPAIR_KERNELS=numba and the fast extra)", file=sys.stderr)
        return 1
    from bytepair.core.kernels import encode, prepare

    params = LEVELS[5]
    files = sorted(f for p in args.paths for f in ([p] if p.is_file() else p.iterdir()) if f.is_file())
    jobs = []
    for path in files:
        data = np.fromfile(path, dtype=np.uint8)
        if len(data):
            bounds = prepare.split_blocks(data, params.block_size, params.max_distinct)
            changed, _ = prepare.find_escapes(data, bounds, params.escape_limit)
            jobs.append((data, changed, bounds))

    def engine_run() -> list[object]:
        return [
            encode.encode_blocks(
                changed,
                bounds,
                threshold=params.threshold,
                recycle=params.recycle,
                merges_per_step=params.merges_per_step,
            )
            for _, changed, bounds in jobs
        ]

    digest = hashlib.sha1()
    for enc in engine_run():  # also compiles or loads the kernels
        for field in ("n_merges", "code", "left", "right", "count", "payload"):
            digest.update(getattr(enc, field).tobytes())
    raw = [data.tobytes() for data, _, _ in jobs]
    best_engine = best_zlib = float("inf")
    for _ in range(args.runs):
        start = time.perf_counter()
        engine_run()
        best_engine = min(best_engine, time.perf_counter() - start)
        start = time.perf_counter()
        for blob in raw:
            zlib.compress(blob, 6)
        best_zlib = min(best_zlib, time.perf_counter() - start)
    total = sum(len(blob) for blob in raw)
    print(
        f"engine {best_engine * 1e3:.1f} ms ({total / best_engine / 1e6:.1f} MB/s), "
        f"zlib-6 {best_zlib * 1e3:.1f} ms: engine {best_zlib / best_engine:.2f}x zlib-6, "
        f"{len(jobs)} files, {total} bytes, output hash {digest.hexdigest()[:12]}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
