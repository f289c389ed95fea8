"""What numpy's building blocks cost on this machine, per item: the floor under
the decoder's and the engine's speed.

    python benchmarks/primitives.py [--items N] [--repeats N]

Times each operation the decoder's payload writer and the engine's step are
made of, on ``--items`` items (65,536) laid out as they are in real use (symbols
of 1 to 4 bytes at consecutive places, cells spread over a 128-block table of
pair counts), and prints the median of ``--repeats`` tries (15) in ns per
item, then what one payload symbol costs through the decoder's write path.
No design made of these calls can do better than their sum: this says whether
a speed goal is within reach of numpy at all, before any code is written for
it. Exit status: 0 done, 2 bad option.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

PROG = "primitives.py"
WORD = np.dtype("V16")
TABLE_CELLS = 128 * 65536  # the engine's pair counts for a batch of 128 blocks (16 MiB)


def per_item(operation: Callable[[], object], items: int, repeats: int) -> float:
    """Median ns per item of *operation* over *repeats* tries (one untimed first)."""
    operation()
    tries = []
    for _ in range(repeats):
        start = time.perf_counter()
        operation()
        tries.append(time.perf_counter() - start)
    return statistics.median(tries) / items * 1e9


def words_at(buf: npt.NDArray[np.uint8], stride: int) -> npt.NDArray[np.void]:
    """*buf* as overlapping 16-byte words, one every *stride* bytes (the decoder's view has stride 1)."""
    return np.ndarray(((len(buf) - 16) // stride + 1,), dtype=WORD, buffer=buf, strides=(stride,))


def measure(items: int, repeats: int) -> list[tuple[str, float, bool]]:
    """Every operation's name, its median ns per item, and whether it is on the decoder's write path."""
    rng = np.random.default_rng(1994)
    symbols = rng.integers(0, 256, items).astype(np.int64)
    lengths = rng.integers(1, 5, 256).astype(np.int64)  # text: 2-3 bytes a symbol on average
    sym_len = lengths.take(symbols)
    at = sym_len.cumsum() - sym_len  # each symbol's place in the output
    table_words = rng.integers(0, 256, 256 * 16).astype(np.uint8).view(WORD)
    words = table_words.take(symbols)
    out = np.zeros(int(at[-1] + sym_len[-1]) + 16, dtype=np.uint8)
    any_place, aligned = words_at(out, 1), words_at(np.zeros(8 * items + 16, dtype=np.uint8), 8)
    sums = np.empty(items, dtype=np.int64)
    byte_src = rng.integers(0, 256, 4096).astype(np.uint8)
    byte_at = rng.integers(0, 4096, items).astype(np.int64)
    slots = rng.integers(0, 256, 4 * items).astype(np.uint8)
    slot_kept = (np.arange(4)[None, :] < np.minimum(sym_len, 4)[:, None]).ravel()
    counts = np.zeros(TABLE_CELLS, dtype=np.uint16)
    cells = rng.integers(0, TABLE_CELLS, items).astype(np.int64)
    ones = np.ones(items, dtype=np.uint16)
    one = np.uint16(1)
    every_word = np.arange(items)
    # (name, operation, whether a payload symbol goes through it in the decoder's write path)
    timed: list[tuple[str, Callable[[], object], bool]] = [
        ("int64 gather by symbol (a symbol's length)", lambda: lengths.take(symbols, out=sums), True),
        ("running sum, int64 (each symbol's place)", lambda: sym_len.cumsum(out=sums), True),
        ("16-byte gather by symbol (a symbol's first word)", lambda: table_words.take(symbols), True),
        ("16-byte scatter at any byte offset (the payload write)", lambda: any_place.__setitem__(at, words), True),
        ("16-byte scatter at 8-byte-aligned offsets", lambda: aligned.__setitem__(every_word, words), False),
        ("byte gather by int64 index (per byte)", lambda: byte_src.take(byte_at), False),
        (
            "compaction of a 4-byte slot to its bytes (np.compress, per symbol)",
            lambda: slots.compress(slot_kept),
            False,
        ),
        ("uint16 count read, random cell of 16 MiB (take)", lambda: counts.take(cells), False),
        ("uint16 count update, random cell of 16 MiB (np.add.at)", lambda: np.add.at(counts, cells, one), False),
        ("uint16 store, random cell of 16 MiB (fancy assignment)", lambda: counts.__setitem__(cells, ones), False),
    ]
    return [(name, per_item(operation, items, repeats), in_path) for name, operation, in_path in timed]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="Time numpy's building blocks, per item.")
    parser.add_argument("--items", type=int, default=65536, help="items per call (65536)")
    parser.add_argument("--repeats", type=int, default=15, help="tries of each; times are medians (15)")
    args = parser.parse_args(argv)
    if args.items < 16 or args.repeats < 1:
        parser.error("--items must be at least 16 and --repeats at least 1")
    results = measure(args.items, args.repeats)
    print(f"numpy {np.__version__}, {args.items} items a call, median of {args.repeats} tries")
    print()
    print("| operation | ns per item |")
    print("|:--|--:|")
    for name, ns, _ in results:
        print(f"| {name} | {ns:.2f} |")
    path = [ns for _, ns, in_path in results if in_path]
    print()
    print(f"a payload symbol through the decoder's write path ({len(path)} rows above): {sum(path):.2f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
