"""Round-trip benchmark: bytepair against zlib, bz2, lzma (and zstd and lz4 when installed).

    python benchmarks/roundtrip.py [PATH ...] [--levels 1,5,9] [--threads 1,0]
        [--concat] [--runs N] [--json FILE] [--plot FILE.png]
        [--per-file/--no-per-file] [--quiet]

PATH is a file or a folder (its regular files, not recursive); with none, the
built-in sample of ``bytepair.cli.bench.sample_files()`` is used. ``--concat``
joins all inputs into one (several cores only share frames of 512 KiB or more,
so scaling shows on large inputs). Every round trip
is checked. The measuring lives in ``bytepair.cli.bench`` (shared with
``bytepair -b``); this script only parses options and writes files.

Exit status: 0 done, 1 bad path or failed round trip, 2 bad option (or --plot
without matplotlib).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# this checkout's package, even where another copy is installed: a benchmark run
# from a working tree must time that tree's code
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bytepair
from bytepair.cli import bench as _bench

PROG = "roundtrip.py"


def parse_levels(text: str) -> list[int]:
    """``1,5,9`` -> [1, 5, 9], each a valid level."""
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    bad = [level for level in levels if level not in bytepair.LEVELS]
    if bad or not levels:
        raise argparse.ArgumentTypeError(f"levels must be in {min(bytepair.LEVELS)}..{max(bytepair.LEVELS)}: {text!r}")
    return list(dict.fromkeys(levels))


def parse_threads(text: str) -> list[int]:
    """``1,0`` -> [1, 0]: bytepair's ``threads`` settings to measure (0 = one per core)."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = [-1]
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"threads must be a comma-separated list of integers >= 0: {text!r}")
    return list(dict.fromkeys(values))


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Compress and decompress every input with every codec, check it, and time it."
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: the built-in sample)")
    parser.add_argument(
        "--levels",
        type=parse_levels,
        default=[bytepair.DEFAULT_LEVEL],
        help=f"bytepair levels, comma-separated (default: {bytepair.DEFAULT_LEVEL})",
    )
    parser.add_argument(
        "--threads",
        type=parse_threads,
        default=[1],
        help="bytepair threads settings, comma-separated; other than 1 adds codecs named bytepair-L-TN (default: 1)",
    )
    parser.add_argument("--concat", action="store_true", help="join all inputs into one before measuring")
    parser.add_argument("--runs", type=positive, default=5, help="runs per input and codec; times are medians (5)")
    parser.add_argument("--json", metavar="FILE", help="also write every figure and time as JSON to FILE")
    parser.add_argument("--plot", metavar="FILE.png", help="also plot ratio against speed (needs matplotlib)")
    parser.add_argument(
        "--per-file", action=argparse.BooleanOptionalAction, default=True, help="print a row per file and codec"
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors (use with --json or --plot)")
    return parser


def plot(result: _bench.BenchResult, path: str) -> None:
    """Totals as two scatters, ratio against compress and against decompress speed:
    the lower right is the place to be."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result.totals() if r.ratio is not None]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for ax, label in zip(axes, ("compress", "decompress"), strict=True):
        for r in rows:
            x = r.compress_mbps if label == "compress" else r.decompress_mbps
            if x is None:
                continue
            ax.scatter([x], [r.ratio], color="C3" if r.codec.startswith("bytepair") else "C0")
            ax.annotate(r.codec, (x, r.ratio), textcoords="offset points", xytext=(5, 4), fontsize=8)
        ax.set_xscale("log")
        # plain numbers (20, not 2x10^1) on the log axis, between powers of ten only at 2x and 5x
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(_minor_tick))
        ax.set_xlabel(f"{label} speed (MB/s, log scale)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("ratio (compressed / original, lower is better)")
    n_files = len(result.files)
    files = "1 file" if n_files == 1 else f"{n_files} files"
    runs = "1 run" if result.runs == 1 else f"median of {result.runs} runs"
    fig.suptitle(f"bytepair {bytepair.__version__}: {files}, {runs}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _minor_tick(value: float, _: object) -> str:
    mantissa = f"{value:.0e}"[0]
    return f"{value:g}" if mantissa in "25" else ""


def fail(message: str, status: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return fail("--plot needs matplotlib, which is not installed (pip install matplotlib)", 2)
    try:
        inputs = _bench.collect_inputs(args.paths) if args.paths else _bench.sample_files()
    except (OSError, ValueError) as exc:
        return fail(str(exc), 1)
    if args.concat:
        inputs = [(f"{len(inputs)} inputs joined", b"".join(data for _, data in inputs))]
    if not args.quiet:
        total = sum(len(data) for _, data in inputs)
        print(f"{len(inputs)} inputs, {total} bytes, {args.runs} runs", file=sys.stderr)

    def progress(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr)

    try:
        result = _bench.run_benchmark(
            inputs, levels=args.levels, runs=args.runs, threads=args.threads, progress=progress
        )
    except _bench.RoundTripError as exc:
        return fail(f"round trip failed: {exc}", 1)
    if not args.quiet:
        print(_bench.format_table(result, per_file=args.per_file), end="")
    try:
        if args.json:
            Path(args.json).write_text(json.dumps(_bench.to_json(result), indent=2) + "\n")
        if args.plot:
            plot(result, args.plot)
    except OSError as exc:
        return fail(str(exc), 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
