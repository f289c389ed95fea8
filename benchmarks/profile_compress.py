"""Where compression time goes: the engine's phases, and its fixed and per-match cost.

    python benchmarks/profile_compress.py [--level N] [--runs N] [PATH ...]

Compresses every input (each file on its own, as users do) once to warm up,
then ``--runs`` times (3) with timers around the engine's phases, and reports
the median run:

* the share of the time in each phase: setting up a batch and counting its
  pairs, choosing each step's merges, the rest of a step (finding candidates,
  replacing, updating counts), indexing new pairs, collecting results, and
  everything outside the engine (cutting blocks, escapes, packing, CRC);
* steps, merges and replaced pairs (matches);
* a least-squares fit of each step's time as ``fixed + per_match * matches``,
  which says whether the number of steps or the work per match dominates.

Phases are timed with ``time.perf_counter`` inside one process, so the figures
are shares and costs of this machine at this moment; compare versions with
``compare.py``, which interleaves them. The phases are the numpy engine's, so
this script always runs it (``BYTEPAIR_KERNELS=numpy``); the compiled engine is
one kernel call, profiled as docs/kernels.md describes. Exit status: 0 done, 1 bad
path, 2 bad option.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

# this checkout's package, even where another copy is installed: a benchmark run
# from a working tree must time that tree's code
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["BYTEPAIR_KERNELS"] = "numpy"  # the phases timed here are the numpy engine's
from _profiling import PhaseTimers, command_line, median_run, print_phases, read_inputs

import bytepair
from bytepair.core import engine as _engine

PROG = "profile_compress.py"

PHASES = {
    "__init__": "batch set-up and initial pair index",
    "_choose_many": "choosing merges",
    "_choose_one": "choosing merges",
    "_append_index": "indexing new pairs",
    "_result": "collecting results",
    "_reset_tables": "clearing tables",
}
STEP = "_step"
REST_OF_STEP = "the rest of each step"
OUTSIDE = "outside the engine"


class StepLog:
    """Every step that merged something: its time and how many pairs it replaced."""

    def __init__(self) -> None:
        self.steps: list[tuple[float, int]] = []  # (seconds, matches) per step
        self.merges = 0
        self._last: object = None

    def observe(self, seconds: float, args: tuple[Any, ...], _result: Any) -> None:
        batch = args[0]
        if batch.steps and batch.steps[-1] is not self._last:  # the step appended a record
            self._last = batch.steps[-1]
            self.steps.append((seconds, int(batch.last_replaced.sum())))
            self.merges += len(batch.steps[-1][0])


def profile_once(inputs: list[bytes], level: int) -> tuple[float, PhaseTimers, StepLog]:
    log = StepLog()
    with PhaseTimers() as timers:
        for name, phase in PHASES.items():
            timers.wrap(_engine._Batch, name, phase)
        timers.wrap(_engine._Batch, STEP, REST_OF_STEP, log.observe)
        start = time.perf_counter()
        for data in inputs:
            bytepair.compress(data, level=level)
        total = time.perf_counter() - start
    return total, timers, log


def report(total: float, timers: PhaseTimers, log: StepLog, n_bytes: int) -> None:
    print(f"{n_bytes} bytes in {total:.3f} s ({n_bytes / total / 1e6:.2f} MB/s)")
    print()
    print_phases(timers, total, OUTSIDE, "s")
    step_time = np.array([s for s, _ in log.steps])
    matches = np.array([m for _, m in log.steps], dtype=np.float64)
    print()
    print(f"{len(step_time)} steps, {log.merges} merges, {int(matches.sum())} matches replaced")
    if len(step_time) > 2:
        design = np.column_stack((np.ones(len(step_time)), matches))
        (fixed, per_match), *_ = np.linalg.lstsq(design, step_time, rcond=None)
        print(
            f"step time ~ {fixed * 1e6:.0f} us + {per_match * 1e9:.0f} ns per match: "
            f"{fixed * len(step_time) / step_time.sum():.0%} of step time is the fixed part, "
            f"{per_match * matches.sum() / step_time.sum():.0%} the per-match part"
        )


def main(argv: list[str] | None = None) -> int:
    parser = command_line(PROG, "Profile compression by engine phase.", runs=3)
    args = parser.parse_args(argv)
    named = read_inputs(PROG, args.paths)
    if named is None:
        return 1
    inputs = [data for _, data in named]
    for data in inputs:  # warm up: imports, tables, caches
        bytepair.compress(data, level=args.level)
    total, timers, log = median_run([profile_once(inputs, args.level) for _ in range(args.runs)])
    report(total, timers, log, sum(map(len, inputs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
