"""Cutting text into the words BPE learns from, and counting them.

Two schemes, two cuts:

* ``word`` (Sennrich's subword-nmt): a line is split on the space character
  only; tabs and other whitespace stay inside words. subword-nmt reads its input
  with ``codecs``, whose lines end at every ``str.splitlines`` boundary, and strips
  only ``'\\r\\n '`` from their ends; so ``\\r`` and ``\\n`` separate words, while the
  rarer line breaks (``\\v \\f \\x1c \\x1d \\x1e \\x85 \\u2028 \\u2029``) end the word they
  follow and stay glued to it. :func:`split_words` reproduces that on any text.
* ``byte`` (GPT-2): the text is cut into chunks by a pre-split pattern:
  GPT-2's (letters, digits, punctuation runs, each with its leading space; runs
  of whitespace), or tiktoken's cl100k_base or o200k_base (:data:`PATTERNS`).
  On the compiled path each pattern is a hand-written scanner (``_compiled.pyx``)
  over a table of each code point's classes, :func:`char_classes`, built from
  :mod:`unicodedata` on first use; on the numpy path the standard library's
  ``re`` runs the pattern with ``\\p{L}``, ``\\p{N}`` and the rest spelt out as
  classes from the same tables (:func:`chunk_regex`). What differs from the
  reference engines is only the Unicode version of the tables
  (``unicodedata.unidata_version``), and ``\\s``: Python's includes
  ``\\x1c``-``\\x1f``, which Unicode's White_Space property (the ``\\s`` of
  Rust's regex in tiktoken and of Oniguruma in Hugging Face ``tokenizers``) does
  not; both paths use the White_Space set.

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
from typing import TYPE_CHECKING, Literal, TypeAlias

from .. import backend

if TYPE_CHECKING:
    from ._compiled import CharClasses

__all__ = [
    "HF_PATTERNS",
    "PATTERNS",
    "SCHEMES",
    "WORD_END",
    "Corpus",
    "Pattern",
    "Scheme",
    "char_classes",
    "check_pattern",
    "chunk_regex",
    "count_words",
    "gpt2_pattern",
    "iter_lines",
    "pattern_of",
    "split_chunks",
    "split_words",
]

WORD_END = "</w>"
"""subword-nmt's end-of-word marker, glued to a word's last character (``r</w>``)."""

Scheme: TypeAlias = Literal["word", "byte"]
SCHEMES: tuple[Scheme, ...] = ("word", "byte")

Pattern: TypeAlias = Literal["gpt2", "cl100k", "o200k"]
"""The byte scheme's pre-split patterns, by the name of tiktoken's encoding that uses them."""

PATTERNS: dict[Pattern, str] = {
    "gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    # tiktoken_ext/openai_public.py (tiktoken 0.14), character for character
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
    "o200k": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}
"""Each pattern as its reference spells it: GPT-2's (as GPT-2 and Hugging Face write it),
tiktoken's cl100k_base and o200k_base ``pat_str``."""

HF_PATTERNS: dict[Pattern, str] = {
    **PATTERNS,
    # Oniguruma (Hugging Face's regex engine) reads `{1,3}+` as a repeat of `{1,3}`, not as possessive
    "cl100k": PATTERNS["cl100k"].replace(r"\p{N}{1,3}+", r"\p{N}{1,3}"),
}
"""Each pattern as a Hugging Face ``tokenizer.json`` ``Split`` spells it (the cuts of :data:`PATTERNS`)."""

_SPELLINGS: dict[str, Pattern] = {
    **{regex: name for name, regex in PATTERNS.items()},
    **{regex: name for name, regex in HF_PATTERNS.items()},
    # tiktoken's spellings of GPT-2's pattern (gpt2, r50k_base): the same cuts
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+": "gpt2",
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s": "gpt2",
}
"""Every regex read as one of the patterns."""

_NAMES: dict[str, Pattern] = {
    **{name: name for name in PATTERNS},
    # tiktoken's encodings that cut by them
    "r50k_base": "gpt2",
    "p50k_base": "gpt2",
    "cl100k_base": "cl100k",
    "o200k_base": "o200k",
}

_MODES: dict[Pattern, int] = {"gpt2": 1, "cl100k": 2, "o200k": 3}
"""Each pattern's number in the compiled encoder (0 is the word scheme's split)."""

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


def check_pattern(pattern: str) -> Pattern:
    """*pattern* if it names a pattern of :data:`PATTERNS`, else ``ValueError``."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {tuple(PATTERNS)}, not {pattern!r}")
    return pattern


def pattern_of(pattern: str) -> Pattern | None:
    """The name of *pattern*, given by name (or by the name of a tiktoken encoding that cuts by
    it: ``r50k_base``, ``cl100k_base``...) or as a regex in a spelling of :data:`PATTERNS`,
    :data:`HF_PATTERNS` or tiktoken's spellings of GPT-2's; None for any other."""
    return _NAMES.get(pattern) or _SPELLINGS.get(pattern)


# the class bits of the compiled scanners (_compiled.pyx: LETTER, NUMBER, SPACE, HEAD, TAIL)
_LETTER, _NUMBER, _SPACE, _HEAD, _TAIL = 1, 2, 4, 8, 16
_CATEGORY_BITS = {
    "Lu": _LETTER | _HEAD,
    "Lt": _LETTER | _HEAD,
    "Ll": _LETTER | _TAIL,
    "Lm": _LETTER | _HEAD | _TAIL,
    "Lo": _LETTER | _HEAD | _TAIL,
    "Mn": _HEAD | _TAIL,
    "Mc": _HEAD | _TAIL,
    "Me": _HEAD | _TAIL,
    "Nd": _NUMBER,
    "Nl": _NUMBER,
    "No": _NUMBER,
}


def _white_space() -> list[int]:
    """The code points of Unicode's White_Space property (spelt in ``_WHITE_SPACE``)."""
    return [cp for cp in range(0x3001) if re.fullmatch(f"[{_WHITE_SPACE}]", chr(cp))]


@functools.cache
def _class_bytes() -> bytes:
    """Every code point's class bits, one byte each, from this Python's Unicode tables."""
    category = unicodedata.category
    bits = bytearray(map(_CATEGORY_BITS.get, map(category, map(chr, range(sys.maxunicode + 1))), [0] * 0x110000))
    for cp in _white_space():
        bits[cp] |= _SPACE
    return bytes(bits)


@functools.cache
def char_classes() -> CharClasses:
    """The compiled scanners' table of each code point's classes (``\\p{L}``, ``\\p{N}``, White_Space,
    o200k's ``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]`` and ``[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]``), from
    :mod:`unicodedata`: blocks of 256 code points, each distinct block stored once (about 40 KB).

    Built once, on first use (about 0.15 s: every code point's category is looked up).
    """
    import numpy as np

    from ._compiled import CharClasses

    flat = _class_bytes()
    found: dict[bytes, int] = {}
    blocks = np.empty(0x1100, np.uint16)
    for b in range(0x1100):
        blocks[b] = found.setdefault(flat[b << 8 : (b + 1) << 8], len(found))
    return CharClasses(blocks, np.frombuffer(b"".join(found), np.uint8))


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
def chunk_regex(pattern: Pattern = "gpt2") -> re.Pattern[str]:
    """*pattern* for the standard library's ``re``, with ``\\p{...}`` and ``\\s`` spelt out as classes
    (the numpy path's pre-split, and the compiled scanners' reference in the tests).

    ``$`` is ``\\Z`` (``re``'s ``$`` also matches before a last newline). Built once per
    pattern (about a quarter of a second: every code point's category is looked up).
    """
    check_pattern(pattern)
    flat = _class_bytes()
    members: dict[int, list[int]] = {bit: [] for bit in (_LETTER, _NUMBER, _HEAD, _TAIL)}
    for cp, bits in enumerate(flat):
        if bits:
            for bit, found in members.items():
                if bits & bit:
                    found.append(cp)
    lt, nm, head, tail = (_ranges(members[bit]) for bit in (_LETTER, _NUMBER, _HEAD, _TAIL))
    ws = _WHITE_SPACE
    spaces = rf"[{ws}]+(?![^{ws}])|[{ws}]+"
    if pattern == "gpt2":
        regex = rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{lt}]+| ?[{nm}]+| ?[^{ws}{lt}{nm}]+|{spaces}"
    elif pattern == "cl100k":
        regex = (
            rf"'(?i:[sdmt]|ll|ve|re)|[^\r\n{lt}{nm}]?+[{lt}]++|[{nm}]{{1,3}}+| ?[^{ws}{lt}{nm}]++[\r\n]*+"
            rf"|[{ws}]++\Z|[{ws}]*[\r\n]|[{ws}]+(?![^{ws}])|[{ws}]"
        )
    else:
        contraction = "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
        regex = (
            rf"[^\r\n{lt}{nm}]?[{head}]*[{tail}]+{contraction}|[^\r\n{lt}{nm}]?[{head}]+[{tail}]*{contraction}"
            rf"|[{nm}]{{1,3}}| ?[^{ws}{lt}{nm}]+[\r\n/]*|[{ws}]*[\r\n]+|{spaces}"
        )
    return re.compile(regex)


def gpt2_pattern() -> re.Pattern[str]:
    """GPT-2's pre-split pattern for ``re`` (:func:`chunk_regex` of ``"gpt2"``)."""
    return chunk_regex("gpt2")


def split_chunks(text: str, pattern: Pattern = "gpt2") -> list[str]:
    """The chunks *pattern* cuts *text* into (their concatenation is *text*): the compiled scanner
    on the compiled path, ``re`` on the numpy path."""
    if backend.compiled():
        from . import _compiled

        return _compiled.split(text, _MODES[check_pattern(pattern)], char_classes())
    return chunk_regex(pattern).findall(text)


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


def count_words(lines: Corpus, *, scheme: Scheme = "word", pattern: Pattern = "gpt2") -> Counter[str]:
    """How often each word (``word``) or pre-split chunk (``byte``, cut by *pattern*) occurs in *lines*.

    The counts of separate parts of a corpus add up (``a + b``) to the counts of
    the whole, when the parts are cut between lines.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, not {scheme!r}")
    check_pattern(pattern)
    counts: Counter[str] = Counter()
    if scheme == "word":
        for block in _word_blocks(lines):
            counts.update(split_words(block))
        return counts
    batch: list[str] = []
    size = 0
    for line in iter_lines(lines):
        batch.extend(split_chunks(line, pattern))  # each line cut on its own, as Hugging Face's trainer cuts them
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
