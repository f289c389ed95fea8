"""Compare bytepair settings by compress time, interleaved in one process.

    python benchmarks/compare.py --base level=5,escape_limit=0 --new level=5 [--runs 9] [PATH ...]
    python benchmarks/compare.py --base-from ../old-checkout --base level=5 --new level=5 [PATH ...]

Each setting is ``name=value`` pairs for ``bytepair.compress`` (integers).
Every run compresses every input (each file on its own) with each setting in
turn, timing CPU with ``time.process_time``; the report gives each setting's
median time, its ratio to the first setting's, and its compressed/original.
On a small shared machine whose speed drifts between runs, this is the only
way to see differences of a few percent: the settings share every drift.
``--base-from DIR`` runs the base setting with the ``bytepair`` package of
another checkout (e.g. a ``git worktree`` of an older commit), loaded beside
this one, to compare two versions of the code the same way.

Exit status: 0 done, 1 bad path, 2 bad option.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

try:
    import bytepair
except ImportError:  # run from a checkout that is not installed: use the checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import bytepair

from bytepair import _bench

PROG = "compare.py"


def load_checkout(root: str) -> ModuleType:
    """The ``bytepair`` package of the checkout at *root*, imported as ``bytepair_base``."""
    init = Path(root) / "bytepair" / "__init__.py"
    spec = importlib.util.spec_from_file_location("bytepair_base", init, submodule_search_locations=[str(init.parent)])
    if spec is None or spec.loader is None or not init.is_file():
        raise OSError(f"no bytepair package in {root}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bytepair_base"] = module
    spec.loader.exec_module(module)
    return module


def parse_settings(text: str) -> dict[str, int]:
    """``level=5,escape_limit=0`` -> {"level": 5, "escape_limit": 0}."""
    settings: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        try:
            if not sep:
                raise ValueError
            settings[name.strip()] = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not name=integer pairs: {text!r}") from None
    return settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="Compare bytepair settings by interleaved compress time.")
    parser.add_argument(
        "--base", type=parse_settings, required=True, metavar="SETTINGS", help="e.g. level=5,escape_limit=0"
    )
    parser.add_argument("--new", type=parse_settings, required=True, metavar="SETTINGS", help="e.g. level=5")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: the built-in sample)")
    parser.add_argument("--base-from", metavar="DIR", help="run --base with the bytepair package of checkout DIR")
    parser.add_argument("--runs", type=int, default=9, help="runs; times are medians (9)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    try:
        base_module: Any = load_checkout(args.base_from) if args.base_from else bytepair
    except (OSError, ImportError) as exc:
        print(f"{PROG}: error: cannot load {args.base_from}: {exc}", file=sys.stderr)
        return 1
    runs = [(base_module, args.base), (bytepair, args.new)]
    for module, settings in runs:  # a bad setting is an error now, not after a warm-up
        try:
            module.compress(b"check", **settings)
        except (TypeError, ValueError) as exc:
            parser.error(f"{settings}: {exc}")
    try:
        inputs = [data for _, data in (_bench.collect_inputs(args.paths) if args.paths else _bench.sample_files())]
    except (OSError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    total = sum(map(len, inputs))
    times: list[list[float]] = [[] for _ in runs]
    sizes = [sum(len(module.compress(d, **s)) for d in inputs) for module, s in runs]  # also warms up
    for _ in range(args.runs):
        for k, (module, settings) in enumerate(runs):
            start = time.process_time()
            for data in inputs:
                module.compress(data, **settings)
            times[k].append(time.process_time() - start)
    first = statistics.median(times[0])
    print(f"{len(inputs)} inputs, {total} bytes, {args.runs} interleaved runs, CPU time medians")
    for (module, settings), spent, size in zip(runs, times, sizes, strict=True):
        shown = ",".join(f"{k}={v}" for k, v in settings.items()) or "(defaults)"
        if module is not bytepair:
            shown += f" [{args.base_from}]"
        median = statistics.median(spent)
        print(f"{shown:32} {median:8.3f} s  {median / first:6.3f}x  ratio {size / max(total, 1):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
