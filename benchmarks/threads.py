"""threads=0 against one thread, called the way a plain user script calls it.

    python benchmarks/threads.py [PATH ...] [--runs N] [--level L]

This script has no ``if __name__ == "__main__":`` guard on purpose: the goal
for ``threads=0`` is measured with the caller being a plain script, the case
that once re-ran the caller in every worker process. It joins every input
(default: the built-in sample) into one, compresses it with ``threads=1`` and
``threads=0`` in turns, checks both give the same bytes, and prints the median
time of each and the speed-up. Exit status: 0 done, 1 different outputs.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # time this checkout's code
import bytepair
from bytepair import backend
from bytepair.cli.bench import sample_files

parser = argparse.ArgumentParser(prog="threads.py", description=__doc__.split("\n\n")[0])
parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="files or folders (default: built-in sample)")
parser.add_argument("--runs", type=int, default=5, help="runs of each setting; times are medians (5)")
parser.add_argument("--level", type=int, default=bytepair.DEFAULT_LEVEL)
args = parser.parse_args()

files = [f for p in args.paths for f in (sorted(p.iterdir()) if p.is_dir() else [p]) if f.is_file()]
data = b"".join(f.read_bytes() for f in files) if files else b"".join(blob for _, blob in sample_files())
times: dict[int, list[float]] = {1: [], 0: []}
outputs: dict[int, bytes] = {}
for run in range(args.runs + 1):  # the first round warms up (pool, kernels) and is not timed
    for threads in (1, 0) if run % 2 else (0, 1):
        start = time.perf_counter()
        outputs[threads] = bytepair.compress(data, level=args.level, threads=threads)
        if run:
            times[threads].append(time.perf_counter() - start)
one, all_cores = (statistics.median(times[t]) for t in (1, 0))
print(f"kernels: {backend.describe()}; {len(data):,} bytes, level {args.level}, {os.cpu_count()} cores")
print(f"threads=1: {len(data) / one / 1e6:.2f} MB/s; threads=0: {len(data) / all_cores / 1e6:.2f} MB/s")
print(f"threads=0 / threads=1: {one / all_cores:.3f}x (medians of {args.runs})")
if outputs[0] != outputs[1]:
    print("threads.py: threads=0 and threads=1 gave different bytes", file=sys.stderr)
    sys.exit(1)
