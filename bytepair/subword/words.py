"""Cutting text into the words BPE learns from, and counting them.

Two schemes, two cuts:

* ``word`` (Sennrich's subword-nmt): a line is split on the space character
  only; tabs and other whitespace stay inside words. subword-nmt reads its input
  with ``codecs``, whose lines end at every ``str.splitlines`` boundary, and strips
  only ``'\\r\\n '`` from their ends; so ``\\r`` and ``\\n`` separate words, while the
  rarer line breaks (``\\v \\f \\x1c \\x1d \\x1e \\x85 \\u2028 \\u2029``) end the word they
  follow and stay glued to it. :func:`split_words` reproduces that on any text.
* ``byte`` (GPT-2): the text is cut into chunks by GPT-2's pattern (letters,
  digits, punctuation runs, each with its leading space; runs of whitespace).
  The standard library's ``re`` has no ``\\p{L}``/``\\p{N}``, so :func:`gpt2_pattern`
  builds those classes from :mod:`unicodedata` once, on first use. What still
  differs from GPT-2's regex is only the Unicode version of the tables
  (``unicodedata.unidata_version``), and ``\\s``: Python's includes
  ``\\x1c``-``\\x1f``, which Unicode's White_Space property (and so Oniguruma's
  ``\\s`` in Hugging Face ``tokenizers``) does not; the pattern here spells the
  White_Space set out instead of using ``\\s``.

:func:`count_words` returns a :class:`collections.Counter`: counts of separate
chunks of a corpus add up with ``+`` (or ``Counter.update``), so a corpus can be
counted in parallel and learnt from the sum.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal, TypeAlias

__all__ = [
    "SCHEMES",
    "WORD_END",
    "Corpus",
    "Scheme",
    "count_words",
    "gpt2_pattern",
    "iter_lines",
    "split_chunks",
    "split_words",
]

WORD_END = "</w>"
"""subword-nmt's end-of-word marker, glued to a word's last character (``r</w>``)."""

Scheme: TypeAlias = Literal["word", "byte"]
SCHEMES: tuple[Scheme, ...] = ("word", "byte")

Corpus: TypeAlias = "str | os.PathLike[str] | Iterable[str] | Iterable[os.PathLike[str]]"
"""A path (``str`` or path-like), a list of path-like objects, or an iterable of lines (``str``)."""

# line breaks of str.splitlines other than \r and \n: subword-nmt's codecs reader ends a line
# (and so a word) after each, and its strip('\r\n ') leaves them on the word
_OTHER_BREAKS = re.compile("([\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])")
_CR_LF_TO_SPACE = str.maketrans("\r\n", "  ")
# whitespace other than space, \r and \n: without any, str.split() cuts exactly as subword-nmt does
_OTHER_SPACE = re.compile(r"[^\S \n\r]")
_ASCII_OTHER_SPACE = ("\t", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")

# Unicode's White_Space property: what \s means in GPT-2's pattern (Python's \s adds \x1c-\x1f)
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def split_words(text: str) -> list[str]:
    """The words subword-nmt's ``learn-bpe`` and ``apply-bpe`` see in *text*, in order."""
    if text.isascii():  # a few byte scans instead of a regex over the text
        if not any(space in text for space in _ASCII_OTHER_SPACE):
            return text.split()
    elif not _OTHER_SPACE.search(text):
        return text.split()
    if _OTHER_BREAKS.search(text):
        text = _OTHER_BREAKS.sub(r"\1 ", text)
    return [word for word in text.translate(_CR_LF_TO_SPACE).split(" ") if word]


def _ranges(codepoints: list[int]) -> str:
    """A regex class body for *codepoints* (sorted), as ``a-b`` ranges."""
    parts: list[str] = []
    start = prev = codepoints[0]
    for cp in [*codepoints[1:], -1]:
        if cp == prev + 1:
            prev = cp
            continue
        parts.append(re.escape(chr(start)) if start == prev else f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
        start = prev = cp
    return "".join(parts)


@functools.cache
def gpt2_pattern() -> re.Pattern[str]:
    """GPT-2's pre-split pattern, with ``\\p{L}``, ``\\p{N}`` and ``\\s`` spelt out as classes.

    Built once (a quarter of a second: every code point's category is looked up).
    """
    category = unicodedata.category
    letters: list[int] = []
    numbers: list[int] = []
    for cp in range(sys.maxunicode + 1):
        major = category(chr(cp))[0]
        if major == "L":
            letters.append(cp)
        elif major == "N":
            numbers.append(cp)
    lt, nm, ws = _ranges(letters), _ranges(numbers), _WHITE_SPACE
    return re.compile(rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{lt}]+| ?[{nm}]+| ?[^{ws}{lt}{nm}]+|[{ws}]+(?![^{ws}])|[{ws}]+")


def split_chunks(text: str) -> list[str]:
    """The chunks GPT-2's pattern cuts *text* into (their concatenation is *text*)."""
    return gpt2_pattern().findall(text)


def iter_lines(corpus: Corpus) -> Iterator[str]:
    """The lines of *corpus*: a path, a list of path-like objects, or an iterable of lines.

    A ``str`` is a path; a list of ``str`` is lines (pass :class:`pathlib.Path`
    objects for a list of paths). Files are read as UTF-8, a line at a time.
    """
    if isinstance(corpus, (str, os.PathLike)):
        yield from _file_lines(Path(corpus))
        return
    for item in corpus:
        if isinstance(item, os.PathLike):
            yield from _file_lines(Path(item))
        elif isinstance(item, str):
            yield item
        else:
            raise TypeError(f"a corpus holds lines (str) or paths (os.PathLike), not {type(item).__name__}")


def _file_lines(path: Path) -> Iterator[str]:
    # newline="" keeps every line's own ending: the byte scheme's chunks hold it
    with path.open(encoding="utf-8", newline="") as stream:
        yield from stream


def count_words(lines: Corpus, *, scheme: Scheme = "word") -> Counter[str]:
    """How often each word (``word``) or pre-split chunk (``byte``) occurs in *lines*.

    The counts of separate parts of a corpus add up (``a + b``) to the counts of
    the whole, when the parts are cut between lines.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, not {scheme!r}")
    counts: Counter[str] = Counter()
    if scheme == "word":
        for block in _word_blocks(lines):
            counts.update(split_words(block))
        return counts
    batch: list[str] = []
    size = 0
    for line in iter_lines(lines):
        batch.extend(split_chunks(line))  # each line cut on its own, as Hugging Face's trainer cuts them
        size += len(line)
        if size >= 1 << 20:  # a megabyte of text at a time: one count per batch
            counts.update(batch)
            batch.clear()
            size = 0
    counts.update(batch)
    return counts


def _word_blocks(corpus: Corpus) -> Iterator[str]:
    """*corpus* as blocks of about 4 MB that end at a line end (no word spans two blocks).

    Files are read a block at a time, not a line at a time; lines are joined with
    ``\n``, so lines given without their end are kept apart.
    """
    if isinstance(corpus, (str, os.PathLike)):
        yield from _file_blocks(Path(corpus))
        return
    batch: list[str] = []
    size = 0
    for item in corpus:
        if isinstance(item, os.PathLike):
            if batch:
                yield "\n".join(batch)
                batch, size = [], 0
            yield from _file_blocks(Path(item))
        elif isinstance(item, str):
            batch.append(item)
            size += len(item)
            if size >= _BLOCK:
                yield "\n".join(batch)
                batch, size = [], 0
        else:
            raise TypeError(f"a corpus holds lines (str) or paths (os.PathLike), not {type(item).__name__}")
    if batch:
        yield "\n".join(batch)


def _file_blocks(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8", newline="") as stream:
        while block := stream.read(_BLOCK):
            yield block + stream.readline()


_BLOCK = 1 << 22
