"""Compare bytepair settings by compress (or decompress) time, interleaved in one process.

    python benchmarks/compare.py --base level=5,escape_limit=0 --new level=5 [--runs 9] [PATH ...]
    python benchmarks/compare.py --base-from ../old-checkout --base level=5 --new level=5 [PATH ...]
    python benchmarks/compare.py --decompress [--cold] --base-from ../old --base level=5 --new level=5 [PATH ...]

Each setting is ``name=value`` pairs for ``bytepair.compress`` (integers).
Every run compresses every input (each file on its own) with each setting in
turn, input by input, the setting that goes first swapping from one input to
the next, timing CPU with ``time.process_time``; the report gives each
setting's median run time, its ratio to the first setting's, and its
compressed/original. On a small shared machine whose speed drifts between
runs, this is the only way to see differences of a few percent: the settings
share every drift. Even so, the same code on both sides gives 0.99x-1.05x
from one invocation to the next in a busy hour (benchmarks/README, "Noise"):
repeat an invocation before trusting a difference of a few percent.
``--base-from DIR`` runs the base setting with the ``bytepair`` package of
another checkout (e.g. a ``git worktree`` of an older commit), loaded beside
this one, to compare two versions of the code the same way. ``--decompress``
times decompression instead: every input is compressed once per setting, by this
checkout (so two checkouts decode the very same streams), and each setting's
package decodes its own setting's streams; zlib level 6 is timed alongside.
``--cold`` (with ``--decompress``) runs each timed decompression right after an
untimed compression of the same input by the same package (zlib's by zlib), the
order of ``roundtrip.py``, where caches and the branch predictors are cold; the
compression must come from the package being timed, or the package that did it
runs its shared code warm (the same code on both sides then came out 0.88x).

Exit status: 0 done, 1 bad path, 2 bad option.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

# this checkout's package, even where another copy is installed: a benchmark run
# from a working tree must time that tree's code
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bytepair
from bytepair.cli import bench as _bench

PROG = "compare.py"
T = TypeVar("T")


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
    parser.add_argument("--decompress", action="store_true", help="time decompression instead of compression")
    parser.add_argument(
        "--cold", action="store_true", help="with --decompress: compress each input (untimed) before its decode"
    )
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
    if args.decompress:
        return _compare_decompress(runs, inputs, args)
    sizes = [sum(len(module.compress(d, **s)) for d in inputs) for module, s in runs]  # also warms up
    compressors = [functools.partial(_compress_input, module, settings, inputs) for module, settings in runs]
    times = _timed_in_turns(compressors, len(inputs), args.runs)
    first = statistics.median(times[0])
    print(f"{len(inputs)} inputs, {total} bytes, {args.runs} interleaved runs, CPU time medians")
    for (module, settings), spent, size in zip(runs, times, sizes, strict=True):
        print(
            f"{_shown(module, settings, args):32} {statistics.median(spent):8.3f} s  "
            f"{statistics.median(spent) / first:6.3f}x  ratio {size / max(total, 1):.4f}"
        )
    return 0


def _compress_input(module: Any, settings: dict[str, int], inputs: list[bytes], i: int) -> None:
    module.compress(inputs[i], **settings)


def _deflate_input(inputs: list[bytes], i: int) -> None:
    zlib.compress(inputs[i], 6)


def _decode_input(decode: Callable[[bytes], bytes], blobs: list[bytes], i: int) -> None:
    decode(blobs[i])


def _timed_in_turns(
    callers: Sequence[Callable[[int], None]],
    n_inputs: int,
    runs: int,
    before: Sequence[Callable[[int], None]] | None = None,
) -> list[list[float]]:
    """Each caller's CPU time in each run, where a run calls every caller on every
    input index, the callers taking turns input by input (``_turns``); *before*
    (one per caller, untimed) runs right before each call."""
    times: list[list[float]] = [[] for _ in callers]
    for r in range(runs):
        run_times = [0.0] * len(callers)
        for i in range(n_inputs):
            for k, call in _turns(callers, r + i):
                if before is not None:
                    before[k](i)
                start = time.process_time()
                call(i)
                run_times[k] += time.process_time() - start
        for k, run_time in enumerate(run_times):
            times[k].append(run_time)
    return times


def _turns(items: Sequence[T], turn: int) -> list[tuple[int, T]]:
    """*items* with their index, in order on even turns and reversed on odd ones.

    Settings take turns input by input, not pass by pass, and swap who goes first:
    this machine's speed drifts over seconds (one pass over both corpora took
    0.86-1.27 s within a minute), and with whole passes in a fixed order the same
    code on both sides came out 1.034x over both corpora (11 runs, 2026-11-26).
    """
    order = list(enumerate(items))
    return order if turn % 2 == 0 else order[::-1]


def _shown(module: Any, settings: dict[str, int], args: argparse.Namespace) -> str:
    shown = ",".join(f"{k}={v}" for k, v in settings.items()) or "(defaults)"
    return shown + (f" [{args.base_from}]" if module is not bytepair else "")


def _compare_decompress(runs: list[tuple[Any, dict[str, int]]], inputs: list[bytes], args: argparse.Namespace) -> int:
    """Decompress time of each setting's streams (made by this checkout), interleaved, with zlib-6's."""
    streams = [[bytepair.compress(d, **settings) for d in inputs] for _, settings in runs]
    for (module, _), blobs in zip(runs, streams, strict=True):  # every stream checked, also warms up
        for data, blob in zip(inputs, blobs, strict=True):
            if module.decompress(blob) != data:
                print(f"{PROG}: error: a round trip failed", file=sys.stderr)
                return 1
    deflated = [zlib.compress(d, 6) for d in inputs]
    decoders = [(module.decompress, blobs) for (module, _), blobs in zip(runs, streams, strict=True)]
    decoders.append((zlib.decompress, deflated))
    before = None
    if args.cold:
        before = [functools.partial(_compress_input, module, settings, inputs) for module, settings in runs]
        before.append(functools.partial(_deflate_input, inputs))
    times = _timed_in_turns([functools.partial(_decode_input, *d) for d in decoders], len(inputs), args.runs, before)
    total = sum(map(len, inputs))
    medians = [statistics.median(t) for t in times]
    order = ", each right after a compression" if args.cold else ""
    print(f"{len(inputs)} inputs, {total} bytes, {args.runs} interleaved runs{order}, decompress CPU time medians")
    for (module, settings), median in zip(runs, medians[:-1], strict=True):
        print(
            f"{_shown(module, settings, args):32} {median:8.3f} s  {median / medians[0]:6.3f}x  "
            f"{medians[-1] / median:.3f}x zlib-6's speed"
        )
    print(f"{'zlib-6':32} {medians[-1]:8.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
