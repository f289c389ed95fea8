"""Where decompression time goes: the decoder's phases, and its cost per frame and per symbol.

    python benchmarks/profile_decompress.py [--level N] [--runs N] [--frames] [PATH ...]

Compresses every input (each file on its own, as users do) at ``--level``,
decompresses each once to warm up, then ``--runs`` times (5) with timers around
the decoder's phases, and reports the median run:

* the share of the time in each phase: checking a frame and splitting its
  columns, resolving pair codes to merges, code lengths, laying out every
  code's expansion, per-block tables and length checks, writing the payloads,
  restoring escaped bytes, small runs of blocks decoded in Python, the checks
  between those phases, the CRC-32 of the output, and everything else (stream
  and frame headers, joining frames into bytes);
* a least-squares fit of each frame's time as a fixed part plus parts per
  block, per merge, per payload symbol and per output byte (none negative), which says
  whether the calls a frame makes or the work per symbol dominate (a rough
  guide: ``--frames`` lists every frame's time and sizes, to check it against).

Phases are timed with ``time.perf_counter`` inside one process, so the figures
are shares and costs of this machine at this moment; compare versions with
``compare.py --decompress``, which interleaves them. Exit status: 0 done, 1 bad
path, 2 bad option.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

# this checkout's package, even where another copy is installed: a benchmark run
# from a working tree must time that tree's code
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["BYTEPAIR_KERNELS"] = "numpy"  # the phases timed here are the numpy decoder's
from _profiling import PhaseTimers, command_line, median_run, print_phases, read_inputs

import bytepair
from bytepair import backend as _backend
from bytepair.container import codec as _codec
from bytepair.container import walk as _walk
from bytepair.core import expand as _expand

PROG = "profile_decompress.py"

# (owner, name): phase. Functions are wrapped where their callers look them up.
PHASES: dict[tuple[Any, str], str] = {
    (_codec, "unpack_frame_body"): "checking frames (their CRC) and splitting columns",
    (_expand._Resolved, "__init__"): "resolving pair codes to merges",
    (_expand, "_node_lengths"): "code lengths",
    (_expand, "_lay_out"): "laying out code expansions",
    (_expand._MeaningsInPython, "__init__"): "code expansions built in Python (few merges)",
    (_expand._MeaningsInPython, "lay_out"): "laying out code expansions",
    (_expand._Payloads, "__init__"): "per-block tables and length checks",
    (_expand._Payloads, "check_totals"): "per-block tables and length checks",
    (_expand._Payloads, "write"): "writing payloads",
    (_expand, "restore_escapes"): "restoring escaped bytes",
    (_expand, "_expand_small"): "small runs of blocks, in Python",
}
EXPAND = "checks between those phases"
FRAME = "CRC-32 of the output"
MIN_FRAMES_TO_FIT = 15  # five terms need well more than five frames
OUTSIDE = "everything else (stream and frame headers, joining frames into bytes)"


class FrameLog:
    """Every frame decoded: its time, blocks, merges, payload symbols and output bytes."""

    def __init__(self) -> None:
        self.frames: list[tuple[float, int, int, int, int]] = []
        self.inputs: list[int] = []  # which input each frame belongs to
        self.current_input = 0
        self._blocks = self._merges = self._symbols = 0

    def observe_expand(self, _seconds: float, args: tuple[Any, ...], _result: Any) -> None:
        tables = args[0]
        self._blocks += len(tables.orig_len)
        self._merges += len(tables.code)
        self._symbols += len(tables.payload)

    def observe_frame(self, seconds: float, _args: tuple[Any, ...], result: Any) -> None:
        self.frames.append((seconds, self._blocks, self._merges, self._symbols, len(result)))
        self.inputs.append(self.current_input)
        self._blocks = self._merges = self._symbols = 0


def profile_once(streams: list[bytes]) -> tuple[float, PhaseTimers, FrameLog]:
    log = FrameLog()
    with PhaseTimers() as timers:
        for (owner, name), phase in PHASES.items():
            timers.wrap(owner, name, phase)
        timers.wrap(_backend, "expand", EXPAND, log.observe_expand)
        timers.wrap(_walk, "decode_frame", FRAME, log.observe_frame)
        start = time.perf_counter()
        for k, stream in enumerate(streams):
            log.current_input = k
            bytepair.decompress(stream)
        total = time.perf_counter() - start
    return total, timers, log


def report_frames(log: FrameLog, names: list[str]) -> None:
    print("| input | frame us | blocks | merges | symbols | bytes | ns per symbol |")
    print("|:--|--:|--:|--:|--:|--:|--:|")
    for k, (seconds, blocks, merges, symbols, size) in zip(log.inputs, log.frames, strict=True):
        print(
            f"| {names[k]} | {seconds * 1e6:.0f} | {blocks} | {merges} | {symbols} | {size} | "
            f"{seconds / max(symbols, 1) * 1e9:.1f} |"
        )
    print()


def report(total: float, timers: PhaseTimers, log: FrameLog, n_bytes: int) -> None:
    print(f"{n_bytes} bytes in {total * 1e3:.1f} ms ({n_bytes / total / 1e6:.1f} MB/s), {len(log.frames)} frames")
    print()
    print_phases(timers, total, OUTSIDE, "ms")
    print()
    frames = np.array(log.frames, dtype=np.float64).reshape(-1, 5)
    blocks, merges, symbols, sizes = (int(frames[:, k].sum()) for k in (1, 2, 3, 4))
    print(f"{blocks} blocks, {merges} merges, {symbols} payload symbols, {sizes} bytes")
    fit = fit_frames(frames)
    if fit is not None:
        terms, coef, parts = fit
        cost = " + ".join(f"{_duration(c)} per {t}" for t, c in zip(terms[1:], coef[1:], strict=True))
        split = ", ".join(f"{p:.0%} the per-{t} part" for t, p in zip(terms[1:], parts[1:], strict=True))
        print(f"frame time ~ {_duration(coef[0])} + {cost}: {parts[0]:.0%} of frame time is the fixed part, {split}")
    else:
        print(f"too few frames (fewer than {MIN_FRAMES_TO_FIT}) for a fit of frame time")


def _duration(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us" if seconds >= 1e-6 else f"{seconds * 1e9:.1f} ns"


def fit_frames(frames: npt.NDArray[np.float64]) -> tuple[list[str], list[float], list[float]] | None:
    """Least squares of frame time on a fixed part and parts per block, per merge, per
    symbol and per byte, none negative: of the fits with no negative part, the closest.
    Returns the terms, their coefficients and their shares of all frame time."""
    if len(frames) < MIN_FRAMES_TO_FIT:
        return None
    seconds = frames[:, 0]
    columns = {"block": frames[:, 1], "merge": frames[:, 2], "symbol": frames[:, 3], "byte": frames[:, 4]}
    best: tuple[float, list[str], npt.NDArray[np.float64]] | None = None
    for size in range(len(columns), 0, -1):
        for chosen in map(list, itertools.combinations(columns, size)):
            design = np.column_stack([np.ones(len(frames)), *(columns[t] for t in chosen)])
            # relative errors: small frames weigh as much as large ones, or their
            # noise alone (a few percent of milliseconds) would set the fixed part
            coef = np.linalg.lstsq(design / seconds[:, None], np.ones(len(frames)), rcond=None)[0].astype(np.float64)
            residual = float(np.sum((design @ coef / seconds - 1) ** 2))
            if (coef >= 0).all() and (best is None or residual < best[0]):
                best = (residual, chosen, coef)
    if best is None:
        return None
    _, chosen, coef = best
    total = float(seconds.sum())
    parts = [float(coef[0]) * len(frames) / total]
    parts += [float(c) * float(columns[t].sum()) / total for t, c in zip(chosen, coef[1:], strict=True)]
    return ["fixed", *chosen], [float(c) for c in coef], parts


def main(argv: list[str] | None = None) -> int:
    parser = command_line(PROG, "Profile decompression by decoder phase.", runs=5)
    parser.add_argument("--frames", action="store_true", help="also list every frame of the median run")
    args = parser.parse_args(argv)
    named = read_inputs(PROG, args.paths)
    if named is None:
        return 1
    names = [name for name, _ in named]
    inputs = [data for _, data in named]
    streams = [bytepair.compress(data, level=args.level) for data in inputs]
    for stream, data in zip(streams, inputs, strict=True):  # warm up, and check the round trips
        if bytepair.decompress(stream) != data:
            print(f"{PROG}: a round trip lost data", file=sys.stderr)
            return 1
    total, timers, log = median_run([profile_once(streams) for _ in range(args.runs)])
    if args.frames:
        report_frames(log, names)
    report(total, timers, log, sum(map(len, inputs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
