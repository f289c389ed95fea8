"""Subword BPE benchmark: learning merges and encoding, bytepair against subword-nmt and Hugging Face.

    python benchmarks/subword.py [--size 10] [--merges 32000] [--only NAME,...] [--json FILE]

The text is the English books and papers of ../shared/corpus (Canterbury
alice29, asyoulik, lcet10, plrabn12; Calgary book1, book2, paper1-6, news),
each line's whitespace runs made single spaces, joined, and repeated (or cut) to
``--size`` MB (10 by default; 0 keeps the joined texts as they are, 3.1 MB).

The text is written to a temporary file once; each case runs in a fresh child
process (this script with ``--case``) that reads the file itself, so its peak RSS
(``ru_maxrss``) is its own, holds no copy of the text, and a compiled kernel's
import is counted where it is paid. Encoding goes through the file in pieces of
about 1 MB (tokens are counted, not kept). Cases, each skipped when its package is missing:

* ``bytepair-numpy`` / ``bytepair-compiled``: ``bytepair.subword`` (word scheme)
  with ``BYTEPAIR_KERNELS=numpy|compiled``; count = ``count_words(path)``, learn =
  the engine (total = both); encode = ``Tokenizer.encode`` of each piece (a
  cache of words).
* ``subword-nmt``: ``learn_bpe`` in-process on the file (its own word counting
  included), ``BPE.process_line`` per line to encode. Slow: about 50 s for
  10 MB on an idle core.
* ``hf-tokenizers``: a BPE model with ``end_of_word_suffix="</w>"``, the
  ``WhitespaceSplit`` pre-tokenizer and ``BpeTrainer(min_frequency=2)``, trained
  on the file; ``encode_batch`` of each piece's lines, one thread
  (``RAYON_NUM_THREADS=1``).

Merges learnt by bytepair and subword-nmt are compared (same list, or the first
difference); Hugging Face learns another order of ties (its own rule), so only
its merge count is shown. Figures from a shared machine wander: compare cases
of the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout's bytepair, ahead of any installed copy

SHARED = Path(os.environ.get("BYTEPAIR_SHARED", HERE.parent.parent / "shared"))
ENGLISH = [
    "canterbury/alice29.txt",
    "canterbury/asyoulik.txt",
    "canterbury/lcet10.txt",
    "canterbury/plrabn12.txt",
    "calgary/book1",
    "calgary/book2",
    *(f"calgary/paper{i}" for i in range(1, 7)),
    "calgary/news",
]
CASES = ("bytepair-numpy", "bytepair-compiled", "subword-nmt", "hf-tokenizers")


def reference_text(size_mb: float) -> str:
    """The English texts, whitespace normalised, joined, repeated or cut to *size_mb* MB (0: as they are)."""
    parts = []
    for name in ENGLISH:
        text = (SHARED / "corpus" / name).read_text(encoding="utf-8")
        parts.append("\n".join(" ".join(line.split()) for line in text.split("\n")))
    text = "\n".join(parts)
    if size_mb <= 0:
        return text
    target = int(size_mb * 1e6)
    text = (text + "\n") * (target // (len(text) + 1) + 1)
    cut = text.rfind("\n", 0, target)
    return text[: cut + 1 if cut > 0 else target]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def chunks(path: str, size: int = 1 << 20) -> Iterator[str]:
    """The file's text in pieces of about *size* characters, cut after a line."""
    with open(path, encoding="utf-8") as stream:
        while True:
            piece = stream.read(size)
            if not piece:
                return
            piece += stream.readline()
            yield piece


def run_bytepair(path: str, merges: int, kernels: str) -> dict[str, object]:
    os.environ["BYTEPAIR_KERNELS"] = kernels
    from bytepair.subword import count_words, learn

    t0 = time.perf_counter()
    counts = count_words(Path(path))
    t1 = time.perf_counter()
    tok = learn(counts=counts, merges=merges)
    t2 = time.perf_counter()
    tokens = sum(len(tok.encode(piece)) for piece in chunks(path))
    t3 = time.perf_counter()
    return {
        "count_s": t1 - t0,
        "learn_s": t2 - t1,
        "total_s": t2 - t0,
        "merges": [f"{a} {b}" for a, b in tok.merges],
        "encode_mb_s": os.path.getsize(path) / 1e6 / (t3 - t2),
        "tokens": tokens,
    }


def run_subword_nmt(path: str, merges: int) -> dict[str, object]:
    from subword_nmt.apply_bpe import BPE
    from subword_nmt.learn_bpe import learn_bpe

    out = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()), open(path, encoding="utf-8") as source:
        learn_bpe(source, out, merges)
    t1 = time.perf_counter()
    bpe = BPE(io.StringIO(out.getvalue()))
    t2 = time.perf_counter()
    with open(path, encoding="utf-8") as source:
        tokens = sum(len(bpe.process_line(line).split()) for line in source)
    t3 = time.perf_counter()
    return {
        "learn_s": t1 - t0,
        "total_s": t1 - t0,
        "merges": out.getvalue().split("\n")[1:-1],
        "encode_mb_s": os.path.getsize(path) / 1e6 / (t3 - t2),
        "tokens": tokens,
    }


def run_hf(path: str, merges: int) -> dict[str, object]:
    os.environ["RAYON_NUM_THREADS"] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    alphabet = set()
    for piece in chunks(path):
        alphabet.update(piece)
    hf = Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(
        vocab_size=2 * len(alphabet) + merges, min_frequency=2, end_of_word_suffix="</w>", show_progress=False
    )
    t0 = time.perf_counter()
    hf.train([path], trainer)
    t1 = time.perf_counter()
    tokens = sum(len(e.ids) for piece in chunks(path) for e in hf.encode_batch(piece.split("\n")))
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        hf.model.save(folder)
        learnt = (Path(folder) / "merges.txt").read_text(encoding="utf-8").split("\n")[1:-1]
    return {
        "learn_s": t1 - t0,
        "total_s": t1 - t0,
        "merges_count": len(learnt),
        "encode_mb_s": os.path.getsize(path) / 1e6 / (t2 - t1),
        "tokens": tokens,
    }


def run_case(case: str, path: str, merges: int) -> dict[str, object]:
    if case == "bytepair-numpy":
        result = run_bytepair(path, merges, "numpy")
    elif case == "bytepair-compiled":
        from bytepair import backend

        os.environ["BYTEPAIR_KERNELS"] = "compiled"
        if backend._compiled_choice().name != "compiled":
            return {"skipped": f"the compiled kernels are not built: {backend._compiled_choice().reason}"}
        result = run_bytepair(path, merges, "compiled")
    elif case == "subword-nmt":
        try:
            result = run_subword_nmt(path, merges)
        except ImportError:
            return {"skipped": "subword-nmt is not installed"}
    else:
        try:
            result = run_hf(path, merges)
        except ImportError:
            return {"skipped": "tokenizers is not installed"}
    result["peak_rss_mb"] = peak_rss_mb()
    result["text_mb"] = os.path.getsize(path) / 1e6
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=float, default=10.0, help="MB of text (0: the joined texts as they are)")
    parser.add_argument("--merges", type=int, default=32000)
    parser.add_argument("--only", help=f"comma-separated cases of {', '.join(CASES)}")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not (SHARED / "corpus").is_dir():
        print(f"{SHARED / 'corpus'} is absent: the corpora live in ../shared beside the repo", file=sys.stderr)
        return 2
    if args.case:
        print(json.dumps(run_case(args.case, args.file, args.merges)))
        return 0
    cases = args.only.split(",") if args.only else list(CASES)
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "text.txt")
        with open(path, "w", encoding="utf-8") as out:
            out.write(reference_text(args.size))
        for case in cases:
            command = [sys.executable, __file__, "--case", case, "--file", path, "--merges", str(args.merges)]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                results[case] = {"skipped": f"failed: {done.stderr.strip().splitlines()[-1:]}"}
            else:
                results[case] = json.loads(done.stdout)
    reference = results.get("subword-nmt", {}).get("merges")
    print(f"learn {args.merges} merges (word scheme, min frequency 2), then encode the same text")
    print(
        f"{'case':16} {'MB':>6} {'learn s':>8} {'total s':>8} {'merges':>7} {'encode MB/s':>12} "
        f"{'peak RSS MB':>12}  same as subword-nmt"
    )
    for case, r in results.items():
        if "skipped" in r:
            print(f"{case:16} skipped: {r['skipped']}")
            continue
        learnt = r.get("merges")
        count = len(learnt) if isinstance(learnt, list) else r.get("merges_count")
        if isinstance(learnt, list) and isinstance(reference, list):
            first = next((i for i, (x, y) in enumerate(zip(learnt, reference, strict=False)) if x != y), None)
            same = "yes" if learnt == reference else f"no (first difference at merge {first})"
        else:
            same = "-"
        print(
            f"{case:16} {r['text_mb']:6.1f} {r['learn_s']:8.2f} {r['total_s']:8.2f} {count:>7} "
            f"{r['encode_mb_s']:12.2f} {r['peak_rss_mb']:12.0f}  {same}"
        )
    if args.json:
        for r in results.values():
            r.pop("merges", None)
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
