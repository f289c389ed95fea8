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
``compare.py``, which interleaves them. Exit status: 0 done, 1 bad path, 2 bad option.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

try:
    import bytepair
except ImportError:  # run from a checkout that is not installed: use the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import bytepair

from bytepair import _bench, _engine

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


class Profile:
    """Timers wrapped around ``_engine._Batch`` methods; nested time is charged to the inner phase."""

    def __init__(self) -> None:
        self.time: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.steps: list[tuple[float, int]] = []  # (seconds, matches) per step
        self.merges = 0
        self._saved: dict[str, Any] = {}

    def install(self) -> None:
        for name in (*PHASES, STEP):
            original = getattr(_engine._Batch, name)
            self._saved[name] = original
            setattr(_engine._Batch, name, self._timed(name, original))

    def uninstall(self) -> None:
        for name, original in self._saved.items():
            setattr(_engine._Batch, name, original)

    def _timed(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        profile = self

        def timed(batch: Any, *args: Any, **kwargs: Any) -> Any:
            inner_before = sum(profile.time.values())
            steps_before = len(getattr(batch, "steps", ()))
            start = time.perf_counter()
            result = original(batch, *args, **kwargs)
            spent = time.perf_counter() - start
            inner = sum(profile.time.values()) - inner_before
            profile.time[name] += spent - inner
            if name == STEP and len(batch.steps) > steps_before:  # a step that merged something
                profile.steps.append((spent, int(batch.last_replaced.sum())))
                profile.merges += len(batch.steps[-1][0])
            return result

        return timed


def profile_once(inputs: list[bytes], level: int) -> tuple[float, Profile]:
    profile = Profile()
    profile.install()
    try:
        start = time.perf_counter()
        for data in inputs:
            bytepair.compress(data, level=level)
        total = time.perf_counter() - start
    finally:
        profile.uninstall()
    return total, profile


def report(total: float, profile: Profile, n_bytes: int) -> None:
    shares: collections.defaultdict[str, float] = collections.defaultdict(float)
    for name, seconds in profile.time.items():
        shares[PHASES.get(name, "the rest of each step")] += seconds
    shares["outside the engine"] = total - sum(profile.time.values())
    print(f"{n_bytes} bytes in {total:.3f} s ({n_bytes / total / 1e6:.2f} MB/s)")
    print()
    print("| phase | seconds | share |")
    print("|:--|--:|--:|")
    for phase, seconds in sorted(shares.items(), key=lambda item: -item[1]):
        print(f"| {phase} | {seconds:.3f} | {seconds / total:.1%} |")
    step_time = np.array([s for s, _ in profile.steps])
    matches = np.array([m for _, m in profile.steps], dtype=np.float64)
    print()
    print(f"{len(step_time)} steps, {profile.merges} merges, {int(matches.sum())} matches replaced")
    if len(step_time) > 2:
        design = np.column_stack((np.ones(len(step_time)), matches))
        (fixed, per_match), *_ = np.linalg.lstsq(design, step_time, rcond=None)
        print(
            f"step time ~ {fixed * 1e6:.0f} us + {per_match * 1e9:.0f} ns per match: "
            f"{fixed * len(step_time) / step_time.sum():.0%} of step time is the fixed part, "
            f"{per_match * matches.sum() / step_time.sum():.0%} the per-match part"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="Profile compression by engine phase.")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: the built-in sample)")
    parser.add_argument("--level", type=int, default=bytepair.DEFAULT_LEVEL, choices=sorted(bytepair.LEVELS))
    parser.add_argument("--runs", type=int, default=3, help="profiled runs; the median one is reported (3)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    try:
        named = _bench.collect_inputs(args.paths) if args.paths else _bench.sample_files()
    except (OSError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    inputs = [data for _, data in named if data]
    for data in inputs:  # warm up: imports, tables, caches
        bytepair.compress(data, level=args.level)
    runs = [profile_once(inputs, args.level) for _ in range(args.runs)]
    median = statistics.median_low([total for total, _ in runs])
    total, profile = next(run for run in runs if run[0] == median)
    report(total, profile, sum(map(len, inputs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
