"""Show, step by step, what byte pair encoding does to one block.

``explain()`` runs the real engine (``core.engine.encode_blocks``) on one block, cut
exactly as the compressor cuts it, and records every merge through the engine's
``on_step`` observer. There is no second, teaching-only implementation: what is
explained is what ``bytepair.compress`` writes for that block.

``main()`` is ``bytepair explain``: an aligned text view (or ``--json``) of the
steps, the final pair table and the block's compressed size.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..container.codec import FRAME_SIZE, block_costs
from ..container.format import BLOCK_HEADER_SIZE
from ..core.blocks import split_blocks
from ..core.engine import EncodedBlocks, StepRecord, encode_blocks
from ..core.escape import find_escapes
from ..core.params import DEFAULT_LEVEL, Params, resolve_params
from ..io.stream import as_byte_view
from .names import shown

__all__ = ["SHORT_BLOCK", "Explanation", "Merge", "Step", "explain", "format_text", "main", "to_json_dict"]

SHORT_BLOCK = 80
"""Blocks of at most this many bytes keep their whole sequence after every step.

Longer blocks would make the record (and the text view) grow with
steps x length, and nobody reads a 32 KiB sequence 300 times over."""

_LETTERS = "ZYXWVUTSRQPONMLKJIHGFEDCBA"


@dataclasses.dataclass(frozen=True)
class Step:
    """One merge: the pair ``(left, right)`` became ``code`` everywhere it occurred.

    ``count`` is the pair's count before the merge, overlapping occurrences
    included as Gage counts them (``aaa`` holds ``(a, a)`` twice); ``replaced``
    is how many occurrences the left-to-right pass actually replaced, which is
    smaller for runs of one symbol. ``sequence_after`` is the block's symbols
    after the step, or None for blocks longer than ``SHORT_BLOCK`` bytes
    (unless asked for with ``keep_sequences=True``). The engine may make several
    merges in one pass, ``engine_step``: the first is the most frequent pair, the
    others the next most frequent pairs that cannot overlap a better one;
    ``count`` is still each pair's count just before its own merge.
    """

    step: int
    left: int
    right: int
    count: int
    code: int
    fresh: bool
    replaced: int
    length_after: int
    sequence_after: bytes | None
    engine_step: int


@dataclasses.dataclass(frozen=True)
class Merge:
    """One entry of the block's final pair table, in creation order.

    ``fresh`` codes are byte values absent from the block; the others are
    recycled byte values that no longer occurred. ``expansion`` is the original
    bytes the code stands for once fully expanded.
    """

    code: int
    left: int
    right: int
    count: int
    fresh: bool
    expansion: bytes


@dataclasses.dataclass(frozen=True)
class Explanation:
    """Everything the compressor does to one block.

    ``block`` counts blocks as the compressor cuts them (frames of 2 MiB, each
    cut by ``split_blocks``); the container may later join adjacent blocks it
    stores as they are. ``payload`` is the engine's encoded sequence even when
    ``stored`` is true: then the container keeps ``original`` instead, because
    ``encoded_size`` (header + pair table + escapes + payload) would not be smaller
    than ``len(original)`` (runs of stored blocks share one header, so encoding
    must also save its own). When the block escapes rare values,
    ``escape_mark`` stands for each of them in ``escaped`` (their original values,
    in order) and the steps work on the block so changed. ``compressed_size`` is what the block
    costs in the container. (The compressor may also store a block whose codes
    would expand past its decoder's memory budget; that takes pathological input,
    is decided per frame and is not modelled here.)
    """

    block: int
    n_blocks: int
    block_start: int
    original: bytes
    level: int
    params: Params
    steps: tuple[Step, ...]
    table: tuple[Merge, ...]
    payload: bytes
    table_size: int
    encoded_size: int
    compressed_size: int
    stored: bool
    escape_mark: int | None = None
    escaped: bytes = b""

    @property
    def escape_size(self) -> int:
        """Body bytes the escapes take: the escaped bytes and the mark."""
        return len(self.escaped) + 1 if self.escape_mark is not None else 0

    @property
    def changed(self) -> bytes:
        """The block as the engine sees it: escaped bytes replaced by the mark."""
        if self.escape_mark is None:
            return self.original
        escaped = set(self.escaped)
        return bytes(self.escape_mark if v in escaped else v for v in self.original)

    @property
    def threshold(self) -> int:
        return self.params.threshold

    @property
    def max_distinct(self) -> int:
        return self.params.max_distinct

    @property
    def block_size(self) -> int:
        return self.params.block_size


def _block_bounds(arr: npt.NDArray[np.uint8], params: Params) -> npt.NDArray[np.int64]:
    """Start offsets of every block of *arr* as the compressor cuts it, then ``len(arr)``."""
    starts: list[npt.NDArray[np.int64]] = []
    for lo in range(0, len(arr), FRAME_SIZE):
        frame = arr[lo : lo + FRAME_SIZE]
        starts.append(split_blocks(frame, params.block_size, params.max_distinct)[:-1] + lo)
    starts.append(np.asarray([len(arr)], dtype=np.int64))
    return np.concatenate(starts).astype(np.int64)


def explain(
    data: object,
    *,
    level: int | None = None,
    threshold: int | None = None,
    max_distinct: int | None = None,
    block_size: int | None = None,
    escape_limit: int | None = None,
    block: int = 0,
    keep_sequences: bool | None = None,
) -> Explanation:
    """Run the compressor's engine on block *block* of *data* and record every step.

    *data* is bytes-like, or a ``str`` (encoded as UTF-8, for notebooks).
    Parameters resolve as in ``bytepair.compress``. *keep_sequences* None keeps
    each step's whole sequence only for blocks of at most ``SHORT_BLOCK`` bytes.
    Raises ``IndexError`` if the input has no block *block* (empty input has none).
    """
    if isinstance(block, bool) or not isinstance(block, int):
        raise TypeError(f"block must be an integer, not {type(block).__name__}")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    params = resolve_params(
        level, block_size=block_size, max_distinct=max_distinct, threshold=threshold, escape_limit=escape_limit
    )
    arr = np.frombuffer(as_byte_view(raw), dtype=np.uint8)
    bounds = _block_bounds(arr, params)
    n_blocks = len(bounds) - 1
    if not 0 <= block < n_blocks:
        if n_blocks == 0:
            raise IndexError("the input is empty: it has no block to explain")
        raise IndexError(
            f"block {block} is out of range: the input has {n_blocks} block{'s' if n_blocks > 1 else ''} "
            f"(0..{n_blocks - 1}) with block size {params.block_size} and max distinct {params.max_distinct}"
        )
    lo, hi = int(bounds[block]), int(bounds[block + 1])
    piece = np.ascontiguousarray(arr[lo:hi])
    one_block = np.asarray([0, hi - lo], dtype=np.int64)
    engine_input, mark, escaped, escape_size = _escapes_as_compressed(piece, one_block, params)
    keep = (hi - lo) <= SHORT_BLOCK if keep_sequences is None else keep_sequences

    steps: list[Step] = []
    length = hi - lo
    sequence = engine_input.tobytes() if keep else b""

    def observe(record: StepRecord) -> None:
        nonlocal length, sequence
        # one block per batch, so every merge reported is one of block 0's; the
        # merges of one engine step cannot overlap, so making them one at a time
        # in table order gives the same sequences
        last = len(record.left) - 1
        for m in range(last + 1):
            left, right, code = int(record.left[m]), int(record.right[m]), int(record.code[m])
            length -= int(record.replaced[m])
            if keep:
                sequence = record.sequence(0) if m == last else _merge_pair(sequence, left, right, code)
            steps.append(
                Step(
                    step=len(steps) + 1,
                    left=left,
                    right=right,
                    count=int(record.count[m]),
                    code=code,
                    fresh=bool(record.fresh[m]),
                    replaced=int(record.replaced[m]),
                    length_after=length,
                    sequence_after=sequence if keep else None,
                    engine_step=record.step,
                )
            )

    enc = _encode(engine_input, one_block, params, observe)
    n_merges = int(enc.n_merges[0])
    n_fresh = int(enc.n_fresh[0])
    expansions: dict[int, bytes] = {v: bytes([v]) for v in range(256)}
    table: list[Merge] = []
    for k in range(n_merges):
        code, left, right = int(enc.code[k]), int(enc.left[k]), int(enc.right[k])
        expansions[code] = expansions[left] + expansions[right]
        table.append(Merge(code, left, right, int(enc.count[k]), k < n_fresh, expansions[code]))
    payload = enc.payload.tobytes()
    table_size = int(block_costs(enc)[0]) - len(payload)
    encoded_size = BLOCK_HEADER_SIZE + table_size + escape_size + len(payload)
    stored = encoded_size >= hi - lo  # as _codec decides: stored runs share one header
    return Explanation(
        block=block,
        n_blocks=n_blocks,
        block_start=lo,
        original=piece.tobytes(),
        level=DEFAULT_LEVEL if level is None else level,
        params=params,
        steps=tuple(steps),
        table=tuple(table),
        payload=payload,
        table_size=table_size,
        encoded_size=encoded_size,
        compressed_size=BLOCK_HEADER_SIZE + (hi - lo) if stored else encoded_size,
        stored=stored,
        escape_mark=mark,
        escaped=escaped,
    )


def _encode(
    block: npt.NDArray[np.uint8],
    one_block: npt.NDArray[np.int64],
    params: Params,
    on_step: Callable[[StepRecord], None] | None = None,
) -> EncodedBlocks:
    """The engine run exactly as the compressor runs it on this block."""
    return encode_blocks(
        block,
        one_block,
        threshold=params.threshold,
        recycle=params.recycle,
        merges_per_step=params.merges_per_step,
        on_step=on_step,
    )


def _merge_pair(sequence: bytes, left: int, right: int, code: int) -> bytes:
    """*sequence* with each occurrence of ``(left, right)``, left to right, made *code*
    (``bytes.replace`` scans the same way: ``aaaa`` becomes ``XX``)."""
    return sequence.replace(bytes((left, right)), bytes((code,)))


def _escapes_as_compressed(
    piece: npt.NDArray[np.uint8], one_block: npt.NDArray[np.int64], params: Params
) -> tuple[npt.NDArray[np.uint8], int | None, bytes, int]:
    """The block the engine gets, its escape mark, escaped bytes and their cost, as
    ``_codec`` decides them (trying the block both ways when the level does)."""
    if not params.escape_limit:
        return piece, None, b"", 0
    changed, esc = find_escapes(piece, one_block, params.escape_limit)
    if not esc.count[0]:
        return piece, None, b"", 0
    escape_size = int(esc.cost()[0])
    if params.escape_trial:

        def cost(block: npt.NDArray[np.uint8]) -> int:
            return int(block_costs(_encode(block, one_block, params))[0])

        if not cost(changed) + escape_size < cost(piece):
            return piece, None, b"", 0
    return changed, int(esc.mark[0]), esc.literals.tobytes(), escape_size


# -- showing symbols ------------------------------------------------------------

_ESCAPES = {ord("\\"): "\\\\", ord('"'): '\\"', ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"}


def _literal(value: int) -> str:
    if value in _ESCAPES:
        return _ESCAPES[value]
    if 0x20 <= value < 0x7F:
        return chr(value)
    return f"\\x{value:02x}"


class _Names:
    """How every byte value reads at every step.

    A byte value is a literal until the step that makes it a code (a recycled
    code was a literal earlier in the same block), so names depend on the step.
    In the letters view codes are named Z, Y, X, ... in the order they are made,
    skipping capitals the block contains; codes past the last free letter, and
    all codes in the plain view, read ``<byte value>``.
    """

    def __init__(self, explanation: Explanation, letters: bool) -> None:
        present = set(explanation.original)
        free = [c for c in _LETTERS if ord(c) not in present] if letters else []
        self.code_names = [free[k] if k < len(free) else f"<{m.code}>" for k, m in enumerate(explanation.table)]
        self.ran_out = letters and len(explanation.table) > len(free)
        # _after[t]: names after step t (t = 0 is the input)
        names = [_literal(v) for v in range(256)]
        self._after = [names]
        for k, merge in enumerate(explanation.table):
            names = list(names)
            names[merge.code] = self.code_names[k]
            self._after.append(names)

    def symbols(self, data: bytes, after_step: int) -> str:
        names = self._after[after_step]
        return "".join(names[v] for v in data)

    def pair(self, step: int, left: int, right: int) -> str:
        """The pair merged at *step*, named as it read just before the merge."""
        names = self._after[step - 1]
        return names[left] + names[right]


# -- JSON and text --------------------------------------------------------------


def to_json_dict(explanation: Explanation, *, letters: bool = False) -> dict[str, Any]:
    """The explanation as JSON-ready data: the dataclass fields, bytes as hex strings,
    plus ``shown`` renderings (as in the text view) of pairs, codes and sequences."""
    names = _Names(explanation, letters)
    e = explanation
    steps = []
    for s in e.steps:
        fields = dataclasses.asdict(s)
        fields["sequence_after"] = None if s.sequence_after is None else s.sequence_after.hex()
        fields["shown"] = {
            "pair": names.pair(s.step, s.left, s.right),
            "code": names.code_names[s.step - 1],
            "sequence_after": None if s.sequence_after is None else names.symbols(s.sequence_after, s.step),
        }
        steps.append(fields)
    table = []
    for k, m in enumerate(e.table):
        fields = dataclasses.asdict(m)
        fields["expansion"] = m.expansion.hex()
        fields["shown"] = {
            "code": names.code_names[k],
            "pair": names.pair(k + 1, m.left, m.right),
            "expansion": names.symbols(m.expansion, 0),
        }
        table.append(fields)
    return {
        "block": e.block,
        "n_blocks": e.n_blocks,
        "block_start": e.block_start,
        "original": e.original.hex(),
        "level": e.level,
        "params": dataclasses.asdict(e.params),
        "steps": steps,
        "table": table,
        "payload": e.payload.hex(),
        "table_size": e.table_size,
        "encoded_size": e.encoded_size,
        "compressed_size": e.compressed_size,
        "stored": e.stored,
        "escape_mark": e.escape_mark,
        "escaped": e.escaped.hex(),
        "escape_size": e.escape_size,
        "letters": letters,
        "shown": {"payload": names.symbols(e.payload, len(e.table))},
    }


def _columns(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """Rows as aligned text: numbers right-aligned, text left-aligned, no trailing blanks."""
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows, strict=True)]
    lines = []
    for row in (headers, *rows):
        cells = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right, strict=True)]
        lines.append("  ".join(cells).rstrip())
    return lines


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def format_text(explanation: Explanation, *, letters: bool = False) -> str:
    """The text view of ``bytepair explain``: steps, pair table, sizes."""
    e = explanation
    p = e.params
    names = _Names(e, letters)
    end = e.block_start + len(e.original)
    out = [
        f"block {e.block} of {e.n_blocks}: bytes {e.block_start}..{end - 1} of the input "
        f"({_plural(len(e.original), 'byte')})",
        f"parameters: level {e.level}, threshold {p.threshold} (recycled codes need {p.threshold + 1}), "
        f"max distinct {p.max_distinct}, block size {p.block_size}",
    ]
    if letters:
        note = "codes: letters Z, Y, X, ... in the order they are made, skipping capitals the block contains"
        out.append(note + ("; after the letters run out, <byte value>" if names.ran_out else ""))
    else:
        out.append("codes: <byte value>; other bytes: printable ASCII as is, the rest escaped as \\n, \\x00, ...")
    short = len(e.original) <= SHORT_BLOCK
    if short:
        out.append(f'input: "{names.symbols(e.original, 0)}"')
    if e.escape_mark is not None:
        rare = sorted(set(e.escaped))
        out.append(
            f"escapes: {_plural(len(e.escaped), 'byte')} of {_plural(len(rare), 'rare value')} "
            f"({', '.join(names.symbols(bytes([v]), 0) for v in rare)}) replaced by "
            f"{names.symbols(bytes([e.escape_mark]), 0)} and sent aside, freeing "
            f"{_plural(len(rare) - 1, 'value')} to serve as codes"
        )
        if short:
            out.append(f'input with escapes: "{names.symbols(e.changed, 0)}"')
    out.append("")

    if not e.steps:
        out.append(f"no pair occurs {p.threshold} times or more: nothing to merge")
    else:
        with_sequence = all(s.sequence_after is not None for s in e.steps)
        recycled = any(not s.fresh for s in e.steps)
        headers = ["step", "pass", "pair", "count", "replaced", "code", "length"]
        right = [True, True, False, True, True, False, True]
        if with_sequence:
            headers.append("sequence after the step")
            right.append(False)
        rows = []
        for s in e.steps:
            code = names.code_names[s.step - 1] + ("" if s.fresh else " *")
            row = [
                str(s.step),
                str(s.engine_step),
                f'"{names.pair(s.step, s.left, s.right)}"',
                str(s.count),
                str(s.replaced),
                code,
                str(s.length_after),
            ]
            if with_sequence:
                assert s.sequence_after is not None
                row.append(f'"{names.symbols(s.sequence_after, s.step)}"')
            rows.append(row)
        out += _columns(headers, rows, right)
        out.append("count: occurrences before the step, overlapping ones too; replaced: those the step replaced")
        out.append(
            "pass: the engine's step; the merges of one pass cannot overlap, the first is the most frequent pair"
        )
        if recycled:
            out.append("* a recycled code: a byte value of the block that no longer occurs")
        out.append("")
        out.append(f"pair table: {_plural(len(e.table), 'code')}")
        rows = []
        for k, m in enumerate(e.table):
            rows.append(
                [
                    names.code_names[k],
                    str(m.code),
                    f'"{names.pair(k + 1, m.left, m.right)}"',
                    str(m.count),
                    "fresh" if m.fresh else "recycled",
                    f'"{names.symbols(m.expansion, 0)}"',
                ]
            )
        out += _columns(
            ["code", "byte", "pair", "count", "kind", "stands for"], rows, [False, True, False, True, False, False]
        )
    out.append("")

    final = f"result: {_plural(len(e.original), 'byte')} -> {_plural(len(e.payload), 'symbol')}"
    if short:
        final += f': "{names.symbols(e.payload, len(e.table))}"'
    out.append(final)
    out.append(
        f"encoded block: {e.encoded_size} bytes = {BLOCK_HEADER_SIZE} header + {e.table_size} pair table "
        + (f"+ {e.escape_size} escapes " if e.escape_mark is not None else "")
        + f"+ {len(e.payload)} payload"
    )
    if e.stored:
        out.append(
            f"compressed size: {e.compressed_size} bytes, stored as is "
            f"({BLOCK_HEADER_SIZE} header + {len(e.original)} bytes): encoding does not pay"
        )
    else:
        out.append(
            f"compressed size: {e.compressed_size} bytes, encoded "
            f"(stored as is it would take {BLOCK_HEADER_SIZE + len(e.original)})"
        )
    return "\n".join(out) + "\n"


# -- command line ---------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bytepair explain",
        description="Show step by step how bytepair compresses one block: each merge (the most frequent pair, "
        "its count, the code that replaces it, the sequence length after), the final pair table and "
        "the block's compressed size. The compressor's own engine does the work.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("text", nargs="?", metavar="TEXT", help="the input, as given on the command line")
    source.add_argument("--file", metavar="FILE", help="read the input from FILE ('-' for standard input)")
    parser.add_argument(
        "--block", type=int, default=0, metavar="N", help="explain block N (counted from 0) instead of the first"
    )
    parser.add_argument("--level", type=int, metavar="1-9", help=f"preset to start from (default {DEFAULT_LEVEL})")
    parser.add_argument(
        "--threshold", type=int, metavar="N", help="replace a pair only if it occurs at least N times (Gage: 3)"
    )
    parser.add_argument(
        "--max-distinct", type=int, metavar="N", help="end a block at the byte that makes N distinct values (Gage: 200)"
    )
    parser.add_argument("--block-size", type=int, metavar="N", help="most bytes in one block (Gage: 5000)")
    parser.add_argument(
        "--escape-limit",
        type=int,
        metavar="N",
        help="escape byte values seen at most N times in the block, freeing them as codes (0: never)",
    )
    parser.add_argument(
        "--letters",
        action="store_true",
        help="name codes Z, Y, X, ... in the order they are made, as textbooks do; capitals "
        "that occur in the block are skipped, and once the letters run out the remaining "
        "codes fall back to <byte value>",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the explanation as JSON (bytes as hex strings, plus the text renderings under 'shown')",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``bytepair explain``: 0 on success, 1 for a failure (one line on stderr), 2 for bad usage."""
    parser = _parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        resolve_params(
            args.level,
            block_size=args.block_size,
            max_distinct=args.max_distinct,
            threshold=args.threshold,
            escape_limit=args.escape_limit,
        )
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    try:
        if args.file is None:
            data = os.fsencode(args.text)  # the bytes as given, even if they are not UTF-8
        elif args.file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as f:
                data = f.read()
        explanation = explain(
            data,
            level=args.level,
            threshold=args.threshold,
            max_distinct=args.max_distinct,
            block_size=args.block_size,
            escape_limit=args.escape_limit,
            block=args.block,
        )
    except OSError as exc:
        print(f"bytepair explain: cannot read {shown(args.file)}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except (IndexError, ValueError) as exc:
        print(f"bytepair explain: {exc}", file=sys.stderr)
        return 1
    if args.json:
        text = json.dumps(to_json_dict(explanation, letters=args.letters), indent=1) + "\n"
    else:
        text = format_text(explanation, letters=args.letters)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `bytepair explain ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
