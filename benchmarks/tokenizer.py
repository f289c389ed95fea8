"""Tokenizer speed against tiktoken and Hugging Face, from the same merges: issue 42's goals in one run.

    python benchmarks/tokenizer.py [--size 10] [--merges 32000] [--runs 5]
        [--patterns gpt2,cl100k,o200k] [--only CASE,...] [--json FILE]

The text is the English texts of ../shared/corpus as ``benchmarks/subword.py``
builds them (each line's whitespace runs made single spaces, joined, repeated or
cut to ``--size`` MB; 0 keeps the joined texts as they are, 3.1 MB), kept as
lines: each line with its ``\\n`` is one input of the line-by-line cases. From it
bytepair learns ``--merges`` merges, byte scheme once per pattern and word scheme
once (min frequency 2), and each peer is built from those merges: a
``tiktoken.Encoding`` from the ``save_tiktoken`` file with the same pattern
(``pat_str``), and a Hugging Face ``tokenizers`` BPE model with the same vocab and
merges (``end_of_word_suffix="</w>"``, ``WhitespaceSplit``). Before anything is
timed every line's ids (and the whole text's) are compared with the peer's, and
every decode with the line: a difference ends the run with status 1.

Cases (``--only``; the byte cases run once per pattern of ``--patterns``):

* ``encode-lines``: byte scheme, one ``Tokenizer.encode`` per line (as a data
  loader calls it) against tiktoken's ``encode_ordinary``; MB/s of text.
* ``encode-whole``: byte scheme, the whole text in one call, the same two.
* ``decode-lines``: byte scheme, ``Tokenizer.decode`` of each line's ids against
  tiktoken's ``decode`` (for reference); MB/s of the text made.
* ``word-encode-lines``: word scheme, one ``encode`` per line against Hugging
  Face's ``encode(line).ids`` (one thread).
* ``encode-batch``, ``decode-batch``: ``encode_batch(lines, threads=0)`` (one
  thread per usable core) against ``threads=1``, byte scheme (each pattern) and word
  scheme; ``decode_batch`` of the lines' ids the same way.
* ``learn``: learning ``--merges`` merges (word scheme, min frequency 2) from the
  text's file: ``bytepair.subword.learn(path, merges)`` (counting included) against
  Hugging Face's ``BpeTrainer`` training on the file (its counting included), one
  thread (``RAYON_NUM_THREADS=1``). Each learner runs in a fresh child process (this
  script with ``--learner``), as in ``benchmarks/subword.py``, so neither inherits
  the other's memory or the parent's; only the learning call is timed (imports are not).

Speeds and times are medians of ``--runs`` runs (5). Within a run every case takes
its turn, the first case rotating from run to run and the two sides of a case
swapping who goes first, so that the machine's drift falls on all alike. The ratio
is the median of the runs' own ratios, bytepair's over the other side's measured in
the same run: speed over speed (higher: bytepair faster) for encode, decode and the
batches (``threads=0`` over ``threads=1``); time over time (lower: bytepair faster)
for learning. The garbage collector stays on, as in a program that does not turn it
off, and runs before each timed call; what the set-up made (the text, every line's
ids for the checks and the decode cases) is frozen out of its passes (``gc.freeze``),
so that its work while timing is that of the timed calls' own objects. bytepair's
cache of words is warm when the timing starts (the checks have encoded every line),
as in a data loader past its first lines; tiktoken keeps no such cache.

Exit status: 0 done, 1 a peer disagreed on ids or text (or a learner's child process
failed), 2 bad usage or ../shared absent. A peer that is not installed (tiktoken,
tokenizers) leaves out its rows, with a note.

(Not ``tokenize.py``: every script here runs with this folder first on ``sys.path``,
so a ``tokenize.py`` here would be what ``import tokenize`` finds, which ``inspect``
and so ``dataclasses`` do, and every script of the folder would fail.)
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = Path(HERE).parent
sys.path.insert(0, str(REPO))  # this checkout's bytepair, ahead of any installed copy
from bytepair import backend  # noqa: E402

if TYPE_CHECKING:
    from bytepair.subword.words import Pattern

PROG = "tokenizer.py"
PATTERN_NAMES: tuple[Pattern, ...] = ("gpt2", "cl100k", "o200k")
CASES = ("encode-lines", "encode-whole", "decode-lines", "word-encode-lines", "encode-batch", "decode-batch", "learn")
ONE_THREAD = {"RAYON_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


class Disagreement(Exception):
    """A peer (or bytepair's own batch call) gave other ids or text than bytepair's ``encode``/``decode``."""


def subword_bench() -> Any:
    """``benchmarks/subword.py`` as a module: its text is this benchmark's text."""
    spec = importlib.util.spec_from_file_location("_subword_bench", os.path.join(HERE, "subword.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def have(package: str) -> bool:
    """Whether *package* imports (a peer that is not installed leaves out its rows)."""
    try:
        importlib.import_module(package)
    except ImportError:
        return False
    return True


def clock(call: Callable[[], object]) -> float:
    """Seconds *call* takes, after a collection; what it returns is freed after the clock stops."""
    gc.collect()
    start = time.perf_counter()
    out = call()
    spent = time.perf_counter() - start
    del out
    return spent


@dataclass
class Row:
    """One line of the table: bytepair's side and the other side, timed in the same runs."""

    key: str  # "encode-lines/gpt2": the JSON key
    case: str  # one of CASES
    label: str
    other: str  # the other side's name: "tiktoken", "tokenizers", "threads=1"
    ours: Callable[[], float]  # each returns the seconds one call took
    theirs: Callable[[], float]
    mb: float | None  # MB of text a call goes through (speeds), or None (times in seconds)
    times: list[tuple[float, float]] = field(default_factory=list)
    note: Callable[[], str] | None = None  # said under the table, after the runs

    def ratio(self, ours: float, theirs: float) -> float:
        """Speed over speed for speeds, time over time for times: bytepair's side first."""
        return theirs / ours if self.mb is not None else ours / theirs

    def summary(self) -> dict[str, Any]:
        mid_ours = statistics.median(t for t, _ in self.times)
        mid_theirs = statistics.median(t for _, t in self.times)
        out: dict[str, Any] = {"case": self.case, "label": self.label, "other": self.other}
        if self.mb is not None:
            out.update(unit="MB/s", bytepair=self.mb / mid_ours, theirs=self.mb / mid_theirs, mb=self.mb)
            out["ratio_is"] = "bytepair speed / other speed (higher: bytepair faster)"
        else:
            out.update(unit="s", bytepair=mid_ours, theirs=mid_theirs)
            out["ratio_is"] = "bytepair time / other time (lower: bytepair faster)"
        out["ratio"] = statistics.median(self.ratio(a, b) for a, b in self.times)
        out["runs_s"] = [list(t) for t in self.times]
        if self.note is not None:
            out["note"] = self.note()
        return out


def first_difference(ours: Sequence[object], theirs: Sequence[object]) -> int | None:
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if a != b:
            return k
    return None


def check(what: str, ours: Sequence[object], theirs: Sequence[object], lines: Sequence[str]) -> None:
    """*ours* and *theirs* are equal item by item (one item a line), or :class:`Disagreement` naming the line."""
    k = first_difference(ours, theirs)
    if k is not None:
        raise Disagreement(f"{what}: line {k + 1} ({lines[k][:60]!r}) gives {ours[k]!r:.200} and {theirs[k]!r:.200}")


def byte_rows(
    lines: list[str], text: str, pattern: Pattern, merges: int, cases: set[str], notes: list[str], folder: str
) -> list[Row]:
    """The byte scheme's rows for *pattern*: a tokenizer learnt from *lines*, tiktoken built from its rank file."""
    from bytepair.subword import UnsupportedModelError, learn
    from bytepair.subword.words import PATTERNS

    mb = len(text.encode("utf-8")) / 1e6
    tok = learn(lines, merges, scheme="byte", pattern=pattern)
    ids = [tok.encode(line) for line in lines]  # and bytepair's cache of words: the timed calls find it warm
    check(f"byte {pattern}: decode", [tok.decode(i) for i in ids], lines, lines)
    rows: list[Row] = []
    peer_cases = {"encode-lines", "encode-whole", "decode-lines"} & cases
    if peer_cases and not have("tiktoken"):
        missing = f"{', '.join(c for c in CASES if c in peer_cases)} left out: tiktoken is not installed"
        notes += [missing] if missing not in notes else []
    elif peer_cases:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        path = os.path.join(folder, f"{pattern}.tiktoken")
        try:
            tok.save_tiktoken(path)
        except UnsupportedModelError as exc:
            notes.append(f"byte {pattern}: tiktoken left out: a rank file cannot hold these merges ({exc})")
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = ""  # read the file itself, never a copy cached under its path
            enc = tiktoken.Encoding(
                f"bytepair-{pattern}",
                pat_str=PATTERNS[pattern],
                mergeable_ranks=load_tiktoken_bpe(path),
                special_tokens={},
            )
            check(f"byte {pattern}: tiktoken encode_ordinary", ids, [enc.encode_ordinary(x) for x in lines], lines)
            if tok.encode(text) != enc.encode_ordinary(text):
                raise Disagreement(f"byte {pattern}: the whole text's ids differ from tiktoken's encode_ordinary")
            check(f"byte {pattern}: tiktoken decode", [enc.decode(i) for i in ids], lines, lines)
            encode, decode, t_encode, t_decode = tok.encode, tok.decode, enc.encode_ordinary, enc.decode
            label = f"byte {pattern}:"
            if "encode-lines" in cases:
                rows.append(
                    Row(
                        f"encode-lines/{pattern}",
                        "encode-lines",
                        f"{label} encode line by line",
                        "tiktoken",
                        lambda: clock(lambda: [encode(x) for x in lines]),
                        lambda: clock(lambda: [t_encode(x) for x in lines]),
                        mb,
                    )
                )
            if "encode-whole" in cases:
                rows.append(
                    Row(
                        f"encode-whole/{pattern}",
                        "encode-whole",
                        f"{label} encode the whole text",
                        "tiktoken",
                        lambda: clock(lambda: encode(text)),
                        lambda: clock(lambda: t_encode(text)),
                        mb,
                    )
                )
            if "decode-lines" in cases:
                rows.append(
                    Row(
                        f"decode-lines/{pattern}",
                        "decode-lines",
                        f"{label} decode line by line",
                        "tiktoken",
                        lambda: clock(lambda: [decode(i) for i in ids]),
                        lambda: clock(lambda: [t_decode(i) for i in ids]),
                        mb,
                    )
                )
    rows += batch_rows(tok, lines, ids, f"byte {pattern}", pattern, cases)
    return rows


def batch_rows(tok: Any, lines: list[str], ids: list[list[int]], label: str, key: str, cases: set[str]) -> list[Row]:
    """``encode_batch``/``decode_batch`` on every usable core against one thread, checked against
    ``encode``/``decode`` line by line; MB/s of the text read (encode) and made (decode)."""
    rows: list[Row] = []
    if not {"encode-batch", "decode-batch"} & cases:
        return rows
    texts = [tok.decode(i) for i in ids]
    for threads in (0, 1):
        check(f"{label}: encode_batch(threads={threads})", tok.encode_batch(lines, threads=threads), ids, lines)
        check(f"{label}: decode_batch(threads={threads})", tok.decode_batch(ids, threads=threads), texts, lines)
    mb = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    made = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    if "encode-batch" in cases:
        rows.append(
            Row(
                f"encode-batch/{key}",
                "encode-batch",
                f"{label}: encode_batch, threads=0",
                "threads=1",
                lambda: clock(lambda: tok.encode_batch(lines, threads=0)),
                lambda: clock(lambda: tok.encode_batch(lines, threads=1)),
                mb,
            )
        )
    if "decode-batch" in cases:
        rows.append(
            Row(
                f"decode-batch/{key}",
                "decode-batch",
                f"{label}: decode_batch, threads=0",
                "threads=1",
                lambda: clock(lambda: tok.decode_batch(ids, threads=0)),
                lambda: clock(lambda: tok.decode_batch(ids, threads=1)),
                made,
            )
        )
    return rows


def word_rows(lines: list[str], text: str, merges: int, cases: set[str], notes: list[str]) -> list[Row]:
    """The word scheme's rows: a tokenizer learnt from *lines*, Hugging Face's BPE model with its vocab and merges."""
    from bytepair.subword import learn

    tok = learn(lines, merges)
    ids = [tok.encode(line) for line in lines]
    rows: list[Row] = []
    if "word-encode-lines" in cases and not have("tokenizers"):
        notes.append("word-encode-lines left out: tokenizers is not installed")
    elif "word-encode-lines" in cases:
        from tokenizers import Tokenizer, models, pre_tokenizers

        hf = Tokenizer(models.BPE(vocab=tok.vocab, merges=tok.merges, end_of_word_suffix="</w>"))
        hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        check("word: Hugging Face encode", ids, [hf.encode(line).ids for line in lines], lines)
        encode, hf_encode = tok.encode, hf.encode
        rows.append(
            Row(
                "word-encode-lines",
                "word-encode-lines",
                "word: encode line by line",
                "tokenizers",
                lambda: clock(lambda: [encode(x) for x in lines]),
                lambda: clock(lambda: [hf_encode(x).ids for x in lines]),
                len(text.encode("utf-8")) / 1e6,
            )
        )
    return rows + batch_rows(tok, lines, ids, "word", "word", cases)


def learn_in_child(learner: str, path: str, merges: int) -> dict[str, Any]:
    """What ``--learner`` prints: the seconds one learning call took in a fresh process, and its merges."""
    command = [sys.executable, os.path.abspath(__file__), "--learner", learner, "--file", path, "--merges", str(merges)]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **ONE_THREAD}, check=False)
    if done.returncode != 0:
        raise Disagreement(f"the {learner} learner's process failed: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def learn_row(path: str, merges: int, notes: list[str]) -> list[Row]:
    if not have("tokenizers"):
        notes.append("learn left out: tokenizers is not installed")
        return []
    learnt: dict[str, set[int]] = {"bytepair": set(), "tokenizers": set()}

    def side(learner: str) -> Callable[[], float]:
        def run() -> float:
            result = learn_in_child(learner, path, merges)
            learnt[learner].add(result["merges"])
            return float(result["seconds"])

        return run

    def note() -> str:
        counts = {name: ", ".join(map(str, sorted(found))) for name, found in learnt.items()}
        return f"merges learnt: bytepair {counts['bytepair']}, tokenizers {counts['tokenizers']}"

    label = f"word: learn {merges:,} merges"
    return [Row("learn", "learn", label, "tokenizers", side("bytepair"), side("tokenizers"), None, note=note)]


def learn_once(learner: str, path: str, merges: int) -> dict[str, Any]:
    """``--learner``: learn *merges* merges from the file at *path* once, in this (fresh) process.

    Imports and, for Hugging Face, the alphabet that sets its ``vocab_size`` (the characters,
    and those ending a word with ``</w>``, then *merges* more) come before the clock.
    """
    if learner == "bytepair":
        from bytepair.subword import learn

        if backend.compiled():
            import bytepair.subword._kernels  # noqa: F401  (loaded before the clock, as tokenizers is)
        start = time.perf_counter()
        tok = learn(Path(path), merges)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "merges": len(tok.merges), "kernels": backend.describe()}
    os.environ.update(ONE_THREAD)
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    words = set(Path(path).read_text(encoding="utf-8").split())
    alphabet = {ch for word in words for ch in word}
    finals = {word[-1] for word in words}
    hf = Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(
        vocab_size=len(alphabet) + len(finals) + merges,
        min_frequency=2,
        end_of_word_suffix="</w>",
        show_progress=False,
    )
    start = time.perf_counter()
    hf.train([path], trainer)
    seconds = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        hf.model.save(folder)
        count = len((Path(folder) / "merges.txt").read_text(encoding="utf-8").split("\n")[1:-1])
    return {"seconds": seconds, "merges": count}


def run(rows: list[Row], runs: int) -> None:
    """*runs* runs; in each, every row's two sides one after the other, the first row rotating
    from run to run and the side that goes first swapping."""
    for r in range(runs):
        for row in rows[r % len(rows) :] + rows[: r % len(rows)]:
            if r % 2 == 0:
                ours = row.ours()
                theirs = row.theirs()
            else:
                theirs = row.theirs()
                ours = row.ours()
            row.times.append((ours, theirs))


def machine() -> dict[str, Any]:
    from bytepair._threads import resolve_threads
    from bytepair.cli.bench import machine_info

    info = machine_info()
    info["usable_cores"] = resolve_threads(0)
    info["load_average"] = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    for peer in ("tiktoken", "tokenizers"):
        if have(peer):
            info[peer] = __import__(peer).__version__
    return info


def figure(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:.2f} s" if value >= 1 else f"{value:.3f} s"
    return f"{value:.1f} MB/s" if value >= 10 else f"{value:.2f} MB/s"


def report(results: dict[str, dict[str, Any]], header: list[str], notes: list[str]) -> None:
    for line in header:
        print(line)
    print()
    print("| case | bytepair | other side | ratio |")
    print("|:--|--:|:--|--:|")
    for r in results.values():
        ours, theirs = figure(r["bytepair"], r["unit"]), figure(r["theirs"], r["unit"])
        kind = "time" if r["unit"] == "s" else "speed"
        print(f"| {r['label']} | {ours} | {r['other']} {theirs} | {r['ratio']:.2f}x {kind} |")
    print()
    print(
        "ratio: bytepair's speed over the other side's (higher: bytepair faster), or for learning its time over "
        "the other's (lower: bytepair faster); the median of the runs' own ratios."
    )
    for r in results.values():
        if "note" in r:
            print(f"{r['label']}: {r['note']}")
    for note in notes:
        print(f"note: {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=float, default=10.0, help="MB of text (0: the joined texts as they are)")
    parser.add_argument("--merges", type=int, default=32000, help="merges learnt, and learnt in the learn case")
    parser.add_argument("--runs", type=int, default=5, help="timed runs; medians (5)")
    parser.add_argument("--patterns", default=",".join(PATTERN_NAMES), help="the byte scheme's patterns (all three)")
    parser.add_argument("--only", help=f"comma-separated cases of {', '.join(CASES)} (all)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--learner", choices=("bytepair", "tokenizers"), help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.learner:
        print(json.dumps(learn_once(args.learner, args.file, args.merges)))
        return 0
    patterns = cast("list[Pattern]", [p for p in args.patterns.split(",") if p])
    cases = [c for c in args.only.split(",") if c] if args.only else list(CASES)
    if not patterns or set(patterns) - set(PATTERN_NAMES):
        parser.error(f"--patterns: a comma-separated list of {', '.join(PATTERN_NAMES)}, not {args.patterns!r}")
    if not cases or set(cases) - set(CASES):
        parser.error(f"--only: a comma-separated list of {', '.join(CASES)}, not {args.only!r}")
    if args.size < 0 or args.merges < 1 or args.runs < 1:
        parser.error("--size must be >= 0, --merges and --runs >= 1")
    subword = subword_bench()
    corpus = Path(subword.SHARED) / "corpus"
    if not corpus.is_dir():
        print(f"{PROG}: {corpus} is absent: the corpora live in ../shared beside the repo", file=sys.stderr)
        return 2
    os.environ.update(ONE_THREAD)  # Hugging Face on one thread, here and in the learners' processes
    text: str = subword.reference_text(args.size)
    lines = text.splitlines(keepends=True)
    wanted = set(cases)
    notes: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "text.txt")
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        try:
            rows: list[Row] = []
            if wanted - {"word-encode-lines", "learn"}:
                for pattern in patterns:
                    rows += byte_rows(lines, text, pattern, args.merges, wanted, notes, folder)
            if wanted & {"word-encode-lines", "encode-batch", "decode-batch"}:
                rows += word_rows(lines, text, args.merges, wanted, notes)
            if "learn" in wanted:
                rows += learn_row(path, args.merges, notes)
            rows.sort(key=lambda row: CASES.index(row.case))
            prepared = time.perf_counter()
            gc.collect()
            gc.freeze()  # the set-up's objects (every line's ids) out of the collector's passes while timing
            try:
                if rows:
                    run(rows, args.runs)
            finally:
                gc.unfreeze()
        except Disagreement as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
    finished = time.perf_counter()
    info = machine()
    mb = len(text.encode("utf-8")) / 1e6
    runs = f"medians of {args.runs} runs" if args.runs > 1 else "1 run"
    header = [
        f"command: {shlex.join(sys.orig_argv)}",
        f"kernels: {backend.describe()}",
        f"machine: {info['platform']}, {info['cpu_count']} cores ({info['usable_cores']} usable, so threads=0 is "
        f"{info['usable_cores']} threads), Python {info['python']}, load average {info['load_average']}"
        + "".join(f"; {peer} {info[peer]}" for peer in ("tiktoken", "tokenizers") if peer in info),
        f"text: {mb:.2f} MB, {len(lines):,} lines (the English texts of {corpus}); {args.merges:,} merges; "
        f"{runs}; set-up and checks {prepared - started:.1f} s, runs {finished - prepared:.1f} s",
    ]
    results = {row.key: row.summary() for row in rows}
    report(results, header, notes)
    if args.json:
        document = {
            "command": sys.orig_argv,
            "kernels": backend.describe(),
            "machine": info,
            "text": {"mb": mb, "lines": len(lines), "size": args.size},
            "merges": args.merges,
            "runs": args.runs,
            "patterns": patterns,
            "seconds": {"setup": prepared - started, "runs": finished - prepared},
            "cases": results,
            "notes": notes,
        }
        Path(args.json).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
