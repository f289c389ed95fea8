"""How long ``bytepair.decompress`` takes in roundtrip.py's order, by what ran just before it.

    python benchmarks/decode_after.py [--runs N] [--before A,B,...] [PATH ...]

``roundtrip.py`` decodes each file right after compressing it with the same codec,
with bz2-9 and lzma-6 run between files: the decoder starts cold, and how cold
depends on what the compression before it left in the caches. Here every run
visits every file; for each setting of ``--before`` in turn (the order rotating
from run to run) it runs a bz2-9, an lzma-6 and a zlib-6 round trip of the file,
then the setting's work, then the timed ``bytepair.decompress`` (wall time). The
report gives, per setting, the sum over the files of each file's median, and its
ratio to the first setting's. Settings:

* ``compress``: ``bytepair.compress`` of the file, as the package does it;
* ``three-calls``: the same bytes made by the older path of three compiled calls
  per frame (cutting and escapes, engine, packing) instead of one;
* ``nothing``: no work between the other codecs and the decoding;
* ``touch``: an array of the file's length filled and freed (fresh memory in cache).

The first run is not counted. Exit status: 0 done, 1 a round trip failed.
"""

from __future__ import annotations

import argparse
import bz2
import lzma
import statistics
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # time this checkout's code
import numpy as np

import bytepair
from bytepair import backend
from bytepair.cli.bench import collect_inputs, sample_files
from bytepair.container import codec


def _three_calls(data: bytes) -> bytes:
    """``bytepair.compress(data)`` through ``codec.encode_frame``'s general path (an engine
    other than ``run_engine`` keeps the one-call kernel out): the same bytes."""
    real = codec.encode_frame.__defaults__
    codec.encode_frame.__defaults__ = (lambda d, b, p: codec.run_engine(d, b, p),)
    try:
        return bytepair.compress(data)
    finally:
        codec.encode_frame.__defaults__ = real


def _touch(data: bytes) -> None:
    np.ones(len(data) + 4096, dtype=np.uint8).sum()


BEFORE: dict[str, Callable[[bytes], object]] = {
    "compress": bytepair.compress,
    "three-calls": _three_calls,
    "nothing": lambda data: None,
    "touch": _touch,
}

parser = argparse.ArgumentParser(prog="decode_after.py", description=__doc__.split("\n\n")[0])
parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: the built-in sample)")
parser.add_argument("--runs", type=int, default=7, help="counted runs; times are medians (7)")
parser.add_argument("--before", default="compress,three-calls", help="comma-separated settings (compress,three-calls)")
args = parser.parse_args()
settings = [name.strip() for name in args.before.split(",") if name.strip()]
unknown = [name for name in settings if name not in BEFORE]
if unknown or not settings or args.runs < 1:
    parser.error(f"--before takes {', '.join(BEFORE)}; --runs at least 1")
inputs = collect_inputs(args.paths) if args.paths else sample_files()
streams = {name: bytepair.compress(data) for name, data in inputs}
for name, data in inputs:
    if _three_calls(data) != streams[name]:
        print(f"decode_after.py: {name}: the two compress paths gave different bytes", file=sys.stderr)
        sys.exit(1)
times: dict[tuple[str, str], list[float]] = {}
for run in range(args.runs + 1):
    order = settings[run % len(settings) :] + settings[: run % len(settings)]
    for name, data in inputs:
        for setting in order:
            bz2.decompress(bz2.compress(data, 9))
            lzma.decompress(lzma.compress(data))
            zlib.decompress(zlib.compress(data, 6))
            BEFORE[setting](data)
            start = time.perf_counter()
            back = bytepair.decompress(streams[name])
            elapsed = time.perf_counter() - start
            if back != data:
                print(f"decode_after.py: {name}: round trip failed", file=sys.stderr)
                sys.exit(1)
            if run:
                times.setdefault((setting, name), []).append(elapsed)
total = {s: sum(statistics.median(times[s, name]) for name, _ in inputs) for s in settings}
print(
    f"kernels: {backend.describe()}; {len(inputs)} inputs, {sum(len(d) for _, d in inputs):,} bytes; {args.runs} runs"
)
for s in settings:
    print(f"{s:12s} {total[s] * 1e3:8.3f} ms  {total[s] / total[settings[0]]:.3f}x")
