"""Linear cost: the speed on a large input against the speed on the inputs joined, taking turns.

    python benchmarks/scaling.py [--size 200MB] [--rounds 2] [--level N] [PATH ...]

The inputs (files, folders, or the built-in sample) are joined into one, the
*small* input, which is repeated up to ``--size`` bytes, the *large* one (the
corpora joined are 6 MB; issue 5 asks for 200 MB within 20% of their speed).
Each round compresses the small input three times and the large one once, then
three times over decompresses the small one three times and the large one
once. Taking turns in one process, both see the same machine, whose speed
drifts between separate runs by more than the 20% in question. Every round
trip is checked.

Prints, for each direction, the median MB/s of each input (wall clock and CPU
time) and the ratio large/small. Exit status: 0 done, 1 bad path or failed
round trip, 2 bad option.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# this checkout's package, even where another copy is installed: a benchmark run
# from a working tree must time that tree's code
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _profiling import at_least_one, read_inputs
from memory import parse_size

import bytepair

PROG = "scaling.py"
SMALL_PER_LARGE = 3  # small-input calls for each large-input call, in both directions
DECOMPRESS_TURNS = 3  # decompression turns per round (each much shorter than compression)


class RoundTripLost(Exception):
    pass


class Speeds:
    """MB/s of every call, by wall clock and by CPU time."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def call(self, fn: Callable[[bytes], bytes], data: bytes, size: int) -> bytes:
        """``fn(data)``, timed as *size* bytes of work."""
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn(data)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        self.wall.append(size / wall / 1e6)
        self.cpu.append(size / cpu / 1e6 if cpu > 0 else float("inf"))
        return result

    def median(self) -> tuple[float, float]:
        return statistics.median(self.wall), statistics.median(self.cpu)


def measure(small: bytes, large: bytes, rounds: int, level: int) -> dict[str, dict[str, Speeds]]:
    """Every timed call of every round, by direction and input."""
    speeds = {way: {"small": Speeds(), "large": Speeds()} for way in ("compress", "decompress")}
    packed = {"small": bytepair.compress(small, level=level)}  # warm up

    def compress(data: bytes) -> bytes:
        return bytepair.compress(data, level=level)

    for _ in range(rounds):
        for name, data, calls in (("small", small, SMALL_PER_LARGE), ("large", large, 1)):
            for _ in range(calls):
                packed[name] = speeds["compress"][name].call(compress, data, len(data))
        for _ in range(DECOMPRESS_TURNS):
            for name, data, calls in (("small", small, SMALL_PER_LARGE), ("large", large, 1)):
                for _ in range(calls):
                    if speeds["decompress"][name].call(bytepair.decompress, packed[name], len(data)) != data:
                        raise RoundTripLost(f"the {name} input did not survive its round trip")
    return speeds


def report(speeds: dict[str, dict[str, Speeds]], small: int, large: int) -> None:
    print(f"small: the inputs joined, {small} bytes; large: repeated to {large} bytes")
    print()
    print(
        "| direction | small MB/s | large MB/s | large/small "
        "| small MB/s (CPU) | large MB/s (CPU) | large/small (CPU) |"
    )
    print("|:--|--:|--:|--:|--:|--:|--:|")
    for way, by_input in speeds.items():
        (small_wall, small_cpu), (large_wall, large_cpu) = by_input["small"].median(), by_input["large"].median()
        print(
            f"| {way} | {small_wall:.2f} | {large_wall:.2f} | {large_wall / small_wall:.3f} | "
            f"{small_cpu:.2f} | {large_cpu:.2f} | {large_cpu / small_cpu:.3f} |"
        )
    runs = {way: len(by_input["large"].wall) for way, by_input in speeds.items()}
    print()
    print(
        f"medians of {runs['compress']} and {runs['decompress']} calls on the large input "
        f"({SMALL_PER_LARGE} on the small one for each)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="Speed on a large input against the inputs joined.")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: the built-in sample)")
    parser.add_argument("--size", type=parse_size, default=parse_size("200MB"), help="the large input (200MB)")
    parser.add_argument("--rounds", type=at_least_one, default=2, help="rounds of turns (2)")
    parser.add_argument("--level", type=int, default=bytepair.DEFAULT_LEVEL, choices=sorted(bytepair.LEVELS))
    args = parser.parse_args(argv)
    named = read_inputs(PROG, args.paths)
    if named is None:
        return 1
    small = b"".join(data for _, data in named)
    if args.size < 2 * len(small):
        parser.error(f"--size must be at least twice the joined inputs ({2 * len(small)} bytes)")
    large = (small * -(-args.size // len(small)))[: args.size]
    try:
        speeds = measure(small, large, args.rounds, args.level)
    except RoundTripLost as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    report(speeds, len(small), len(large))
    return 0


if __name__ == "__main__":
    sys.exit(main())
