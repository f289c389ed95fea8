"""What the profiling and scaling scripts share: their command line, and timers
wrapped around the package's own functions.

Each call's wall time is charged to its phase, less the time of timed calls
nested inside it, so the phases never add up to more than the total and the
rest of a run is what no timer covers. ``observe`` callbacks see every call of
one function with its time, arguments and result, for fits per call.
"""

from __future__ import annotations

import argparse
import collections
import functools
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, TypeVar

import bytepair
from bytepair.cli import bench as _bench

Run = TypeVar("Run", bound=tuple[Any, ...])

Observer = Callable[[float, tuple[Any, ...], Any], None]


class PhaseTimers:
    """``with PhaseTimers() as timers: timers.wrap(owner, name, phase); ...``: the
    originals are put back on leaving the block, whatever happens in it."""

    def __init__(self) -> None:
        self.time: collections.defaultdict[str, float] = collections.defaultdict(float)
        self._charged = 0.0  # all time charged so far: what a call's nested timers took
        self._saved: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, phase: str, observe: Observer | None = None) -> None:
        """Time ``owner.name`` (a module's function, or a class's method) as *phase*.

        A module's function is wrapped where it is looked up: the module that
        calls it, if that one imported it by name.
        """
        original = getattr(owner, name)
        timers = self

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            charged_before = timers._charged
            start = time.perf_counter()
            try:
                result = original(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                own = spent - (timers._charged - charged_before)
                timers.time[phase] += own
                timers._charged += own
            if observe is not None:
                observe(spent, args, result)
            return result

        self._saved.append((owner, name, original))
        setattr(owner, name, timed)

    def total(self) -> float:
        """Seconds charged to all phases together."""
        return self._charged

    def __enter__(self) -> PhaseTimers:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()


def at_least_one(text: str) -> int:
    """An argparse type: a whole number of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def command_line(prog: str, description: str, runs: int) -> argparse.ArgumentParser:
    """The options every profiling script takes; a script may add its own."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: the built-in sample)")
    parser.add_argument("--level", type=int, default=bytepair.DEFAULT_LEVEL, choices=sorted(bytepair.LEVELS))
    parser.add_argument(
        "--runs", type=at_least_one, default=runs, help=f"profiled runs; the median one is reported ({runs})"
    )
    return parser


def read_inputs(prog: str, paths: Sequence[str]) -> list[tuple[str, bytes]] | None:
    """The non-empty inputs *paths* name (none: the built-in sample), or None after
    saying on stderr why they cannot be read or that all of them are empty."""
    try:
        named = _bench.collect_inputs(paths) if paths else _bench.sample_files()
    except (OSError, ValueError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None
    inputs = [(name, data) for name, data in named if data]
    if not inputs:
        print(f"{prog}: every input is empty: nothing to time", file=sys.stderr)
        return None
    return inputs


def median_run(runs: Sequence[Run]) -> Run:
    """The run whose total time (its first item) is the median, the lower of two."""
    median = statistics.median_low([run[0] for run in runs])
    return next(run for run in runs if run[0] == median)


def print_phases(timers: PhaseTimers, total: float, outside: str, unit: str) -> None:
    """A Markdown table of the time of each phase, largest first, in *unit* (``s``
    or ``ms``); what no timer covered of *total* seconds is the phase *outside*."""
    phases = dict(timers.time)
    phases[outside] = total - timers.total()
    scale, digits = {"s": (1.0, 3), "ms": (1e3, 1)}[unit]
    print(f"| phase | {'seconds' if unit == 's' else unit} | share |")
    print("|:--|--:|--:|")
    for phase, seconds in sorted(phases.items(), key=lambda item: -item[1]):
        print(f"| {phase} | {seconds * scale:.{digits}f} | {seconds / total:.1%} |")
