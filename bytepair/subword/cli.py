"""``bytepair subword learn|apply|encode|decode`` and ``bytepair explain --subword``: the command line of subword BPE.

Like subword-nmt's commands they read standard input and write standard output
by default. Every failure (a missing or malformed model, unreadable input) is one
line on standard error and exit status 1; bad usage is argparse's status 2.
``encode`` and ``decode`` work a line at a time and write each line's result as
they go, so they can sit in a pipe that never ends.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

from ..cli.progress import TerminalLine
from .errors import InvalidIdError, SubwordError, UnknownSymbolError
from .formats import FORMATS
from .learn import learn, learn_merges, word_symbols
from .tokenizer import Tokenizer
from .words import PATTERNS, SCHEMES, Pattern, Scheme, count_words

__all__ = ["explain_main", "main"]

PROG = "bytepair subword"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Learn subword BPE merges from text, or apply them, as subword-nmt's learn-bpe and apply-bpe do.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{learn,apply,encode,decode}")
    learner = commands.add_parser("learn", help="learn merges from text", description="Learn up to N merges.")
    learner.add_argument("-s", "--symbols", type=int, required=True, metavar="N", help="number of merges to learn")
    learner.add_argument(
        "-i", "--input", nargs="+", metavar="FILE", help="training text (UTF-8); default: standard input"
    )
    learner.add_argument(
        "-o",
        "--output",
        metavar="CODES",
        help="codes file (word scheme; default: standard output) or model directory (byte scheme; required)",
    )
    learner.add_argument("--scheme", choices=SCHEMES, default="word", help="word: subword-nmt's; byte: GPT-2's")
    learner.add_argument(
        "--pattern",
        choices=tuple(PATTERNS),
        help="byte scheme's pre-split (default gpt2); with cl100k or o200k -o is a tokenizer.json, which keeps it",
    )
    learner.add_argument(
        "--min-frequency", type=int, default=2, metavar="K", help="stop when no pair occurs K times (default 2)"
    )
    applier = commands.add_parser("apply", help="segment text with learnt merges", description="Apply merges.")
    applier.add_argument("-c", "--codes", required=True, metavar="CODES", help="codes file (word scheme)")
    applier.add_argument("-i", "--input", metavar="IN", help="text to segment; default: standard input")
    applier.add_argument("-o", "--output", metavar="OUT", help="where to write; default: standard output")
    applier.add_argument("-s", "--separator", default="@@", metavar="STR", help="joiner suffix (default @@)")
    encoder = commands.add_parser(
        "encode",
        help="cut each line into tokens (or ids)",
        description="Print each input line's tokens, space-separated (or their ids with --ids), a line at a time.",
    )
    _model_arguments(encoder)
    encoder.add_argument("--ids", action="store_true", help="print token ids instead of tokens")
    encoder.add_argument(
        "--vocab", metavar="FILE", help="subword-nmt vocabulary file for a codes file (every character gets an id)"
    )
    decoder = commands.add_parser(
        "decode",
        help="turn each line of ids back into text",
        description="Print the text of each input line's ids (space-separated integers), a line at a time.",
    )
    _model_arguments(decoder)
    return parser


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-m",
        "--model",
        required=True,
        metavar="MODEL",
        help="a codes file, a GPT-2 directory, a tokenizer.json or a tiktoken rank file",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        help="MODEL's format (default: found from MODEL: a directory is gpt2, "
        "a file starting with '{' tokenizer.json, one whose first line is '<base64> <number>' tiktoken, else codes)",
    )
    parser.add_argument(
        "--unk-token", metavar="STR", help="what a symbol without an id becomes (default: an error), and its id"
    )
    parser.add_argument(
        "--pattern",
        choices=tuple(PATTERNS),
        help="pre-split of a tiktoken rank file or a GPT-2 directory, which do not record it (default gpt2)",
    )
    parser.add_argument("-i", "--input", metavar="IN", help="input (UTF-8); default: standard input")
    parser.add_argument("-o", "--output", metavar="OUT", help="where to write; default: standard output")


def main(argv: Sequence[str] | None = None) -> int:
    """``bytepair subword ...``: 0 on success, 1 for a failure (one line on stderr), 2 for bad usage."""
    parser = _parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command == "learn":
        if args.symbols < 0 or args.min_frequency < 1:
            parser.error("-s must be >= 0 and --min-frequency >= 1")
        if args.scheme == "byte" and not args.output:
            parser.error("--scheme byte writes a model directory: give it with -o DIR")
        if args.scheme == "word" and args.pattern:
            parser.error("--pattern is the byte scheme's pre-split")
    with _quiet_sigpipe():
        try:
            run = {"learn": _learn, "apply": _apply, "encode": _encode, "decode": _decode}[args.command]
            return run(args)
        except (SubwordError, OSError, UnicodeError) as exc:
            print(f"{PROG} {args.command}: {_message(exc)}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130


@contextlib.contextmanager
def _quiet_sigpipe() -> Iterator[None]:
    """A reader that stops early (``| head``) ends the command quietly, as it ends gzip or subword-nmt."""
    if not hasattr(signal, "SIGPIPE") or threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGPIPE, saved)


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not UTF-8 ({exc.reason} at byte {exc.start})"
    return str(exc)


def _stdin(newline: str = "") -> TextIO:
    return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", newline=newline)


def _learn(args: argparse.Namespace) -> int:
    scheme: Scheme = args.scheme
    pattern: Pattern = args.pattern or "gpt2"
    if args.input:
        counts = count_words([Path(name) for name in args.input], scheme=scheme, pattern=pattern)
    else:
        counts = count_words(_stdin(), scheme=scheme, pattern=pattern)
    meter = _Meter(args.symbols, sys.stderr if sys.stderr.isatty() else None)
    try:
        tok = learn(
            counts=counts,
            merges=args.symbols,
            min_frequency=args.min_frequency,
            scheme=scheme,
            observer=meter,
            pattern=args.pattern,
        )
    finally:
        meter.close()
    if args.output:
        tok.save(args.output, format="tokenizer.json" if pattern != "gpt2" else None)
    else:
        sys.stdout.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in tok.merges))
    return 0


class _Meter(TerminalLine):
    """``merge 1234/32000 (count 57)`` redrawn on a terminal at most ten times a second; nothing elsewhere."""

    def __init__(self, total: int, stream: TextIO | None) -> None:
        super().__init__(stream, first_after=0.0)
        self._total = total

    def __call__(self, done: int, count: int) -> None:
        if self.due():
            self.draw(f"learn: merge {done}/{self._total} (count {count})")


def _lines(stream: TextIO) -> Iterator[str]:
    """Lines as subword-nmt's codecs reader cuts them: at every ``str.splitlines`` boundary, ends kept."""
    for line in stream:
        yield from line.splitlines(keepends=True)


def _apply(args: argparse.Namespace) -> int:
    tok = Tokenizer.load(args.codes, format="codes")
    if tok.scheme != "word":
        raise SubwordError(f"{args.codes}: apply needs a codes file (word scheme), not a model directory")
    with _text_streams(args, newline="") as (source, sink):
        for out in tok.apply_text(_lines(source), args.separator):
            sink.write(out)
    return 0


def _encode(args: argparse.Namespace) -> int:
    """Each line's tokens (or ids), space-separated; the line end is not encoded (it ends the output line)."""
    tok = Tokenizer.load(
        args.model, format=args.format, vocab=args.vocab, unk_token=args.unk_token, pattern=args.pattern
    )

    def encode(line: str, number: int) -> str:
        if not args.ids:
            return " ".join(tok.tokenize(line))
        try:
            return " ".join(map(str, tok.encode(line)))
        except UnknownSymbolError as exc:
            raise UnknownSymbolError(f"line {number}: {exc}; here: --unk-token STR, or --vocab FILE") from None

    return _line_by_line(args, encode)


def _decode(args: argparse.Namespace) -> int:
    """Each line's ids (space-separated integers) as text."""
    tok = Tokenizer.load(args.model, format=args.format, unk_token=args.unk_token, pattern=args.pattern)

    def decode(line: str, number: int) -> str:
        ids: list[int] = []
        for word in line.split():
            try:
                ids.append(int(word))
            except ValueError:
                raise InvalidIdError(f"line {number}: {word!r} is not an id (a decimal integer)") from None
        try:
            return tok.decode(ids)
        except InvalidIdError as exc:
            raise InvalidIdError(f"line {number}: {exc}") from None

    return _line_by_line(args, decode)


def _line_by_line(args: argparse.Namespace, convert: Callable[[str, int], str]) -> int:
    """*convert* each input line (without its ``\\n`` or ``\\r\\n``), writing each result as it is made.

    Lines end at ``\\n`` only (the byte scheme keeps other line breaks as text); a
    failure stops at its line, after the lines before it were written.
    """
    with _text_streams(args, newline="\n") as (source, sink):  # lines end at \n only, nothing translated
        for number, line in enumerate(_split_at_newline(source), start=1):
            sink.write(convert(line, number) + "\n")
    return 0


@contextlib.contextmanager
def _text_streams(args: argparse.Namespace, newline: str) -> Iterator[tuple[TextIO, TextIO]]:
    """The input (``-i`` or standard input, read with *newline*) and the output (``-o`` or
    standard output, flushed rather than closed), UTF-8, closed however the block ends."""
    source = open(args.input, encoding="utf-8", newline=newline) if args.input else _stdin(newline)  # noqa: SIM115
    try:
        sink = open(args.output, "w", encoding="utf-8", newline="") if args.output else sys.stdout  # noqa: SIM115
        try:
            yield source, sink
        finally:
            if sink is not sys.stdout:
                sink.close()
            else:
                sink.flush()
    finally:
        source.close()


def _split_at_newline(stream: TextIO) -> Iterator[str]:
    """The lines of *stream* without their ``\\n`` or ``\\r\\n``, each as soon as it is read."""
    while line := stream.readline():
        if line.endswith("\n"):
            line = line[:-2] if line.endswith("\r\n") else line[:-1]
        yield line


# -- bytepair explain --subword ---------------------------------------------------------------------------


def _explain_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bytepair explain --subword",
        description="Show every merge subword BPE learns from TEXT: its count, the pairs tied with it, "
        "the rule that chose it, and the words after it.",
    )
    parser.add_argument("--subword", required=True, metavar="TEXT", help="training text, words split on spaces")
    parser.add_argument("--merges", type=int, default=10, metavar="N", help="merges to learn (default 10)")
    parser.add_argument("--min-frequency", type=int, default=2, metavar="K", help="stop below K (default 2)")
    parser.add_argument("--scheme", choices=SCHEMES, default="word", help="word (default) or byte")
    return parser


def explain_main(argv: Sequence[str]) -> int:
    """``bytepair explain --subword TEXT``: prints the merges step by step; 1 and one stderr line on failure."""
    parser = _explain_parser()
    args = parser.parse_args(list(argv))
    if args.merges < 0 or args.min_frequency < 1:
        parser.error("--merges must be >= 0 and --min-frequency >= 1")
    try:
        sys.stdout.write(explain_text(args.subword, args.merges, min_frequency=args.min_frequency, scheme=args.scheme))
    except SubwordError as exc:
        print(f"bytepair explain: {exc}", file=sys.stderr)
        return 1
    return 0


def explain_text(text: str, merges: int, *, min_frequency: int = 2, scheme: Scheme = "word") -> str:
    """The step-by-step account of learning *merges* merges from *text*.

    The merges and counts are the engine's (:func:`learn_merges`); the ties and
    the words after each merge come from recounting the few words at each step,
    and a recount that disagreed with the engine would be reported, not hidden.
    """
    counts: Counter[str] = count_words(text.split("\n"), scheme=scheme)
    learnt = learn_merges(counts, merges, min_frequency=min_frequency, scheme=scheme)
    words = {word: word_symbols(word, scheme) for word in counts}
    out = [f"words: {_show_words(words, counts)}"]
    for number, ((left, right), count) in enumerate(zip(learnt.merges, learnt.counts, strict=True), start=1):
        pairs: Counter[tuple[str, str]] = Counter()
        for word, symbols in words.items():
            for pair in itertools.pairwise(symbols):
                pairs[pair] += counts[word]
        tied = sorted((p for p, c in pairs.items() if c == count and p != (left, right)), reverse=True)
        out.append(f"merge {number}: {left} + {right} -> {left + right}   count {count}")
        if pairs[(left, right)] != count or max(pairs.values()) != count or (tied and tied[0] > (left, right)):
            out.append("  (a recount of the words disagrees with the engine here: please report it)")
        if tied:
            shown = ", ".join(f"({a}, {b})" for a, b in tied)
            out.append(f"  tied at {count}: {shown}")
            out.append(
                "  rule: the higher count, then the lexicographically greater pair (left symbol first, then right),"
                " as subword-nmt's max((count, pair))"
            )
        else:
            out.append("  rule: the highest count, no tie")
        for word, symbols in words.items():
            words[word] = _merged(symbols, left, right)
        out.append(f"  words: {_show_words(words, counts)}")
    if len(learnt.merges) < merges:
        out.append(f"stopped after {len(learnt.merges)} merges: no pair occurs {min_frequency} times or more")
    return "\n".join(out) + "\n"


def _merged(symbols: list[str], left: str, right: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == left and symbols[i + 1] == right:
            out.append(left + right)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def _show_words(words: dict[str, list[str]], counts: Counter[str]) -> str:
    return " | ".join(
        " ".join(symbols) + (f" (x{counts[word]})" if counts[word] > 1 else "") for word, symbols in words.items()
    )


if __name__ == "__main__":
    sys.exit(main())
