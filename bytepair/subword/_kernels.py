"""The subword tokenizer's compiled path: learning merges and applying them, in :mod:`._compiled` (Cython).

Import this module only where the extension is built (``bytepair.backend``
checks): it imports :mod:`._compiled` at its top. The loops and their layout are
described there; here the library's objects (symbol strings, a vocabulary) become
the arrays the loops take, and back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import _compiled
from .formats import bytes_to_unicode, unicode_to_bytes
from .words import _MODES, WORD_END, Pattern, char_classes

IntArray = npt.NDArray[np.integer[Any]]
share_edges = _compiled.share_edges
MergeObserver = Callable[[int, int], None]
"""As in ``learn`` (the reference), which imports this module: not the other way round."""

__all__ = ["MergeTable", "encoder", "learn", "share_edges"]


def learn(
    flat: IntArray,
    lengths: IntArray,
    freqs: IntArray,
    symbols: list[str],
    merges: int,
    min_frequency: int,
    observer: MergeObserver | None = None,
) -> tuple[list[tuple[int, int]], list[int]]:
    """The compiled counterpart of :func:`.learn.learn_python`, with the same arguments and result.

    *symbols* grows by the new symbols, as there. *observer* is told of every
    merge after the loop (the loop runs without the GIL, calling nothing).
    A *min_frequency* below 1 acts as 1 (a pair that occurs in no word is never merged).
    """
    length = np.array(lengths, np.int64)  # the loop writes the merged lengths: a copy
    sym = np.array(flat, np.int32)  # merged in place: a copy
    freq = np.ascontiguousarray(freqs, np.int64)
    clen = np.fromiter(map(len, symbols), np.int64, len(symbols))
    chars = np.frombuffer("".join(symbols).encode("utf-32-le", "surrogatepass"), np.uint32).astype(np.int32)
    # no more merges can happen than symbols can be taken out of words (and merges may be any int)
    merges = max(0, min(merges, len(sym)))
    lefts, rights, found, _ = _compiled.learn(sym, length, freq, chars, clen, merges, max(1, min_frequency))
    ids = {symbol: i for i, symbol in enumerate(symbols)}
    pairs = list(zip(lefts.tolist(), rights.tolist(), strict=True))
    for a, b in pairs:
        merged = symbols[a] + symbols[b]
        if merged not in ids:  # the loop numbered new symbols in this same order
            ids[merged] = len(symbols)
            symbols.append(merged)
    counts: list[int] = found.tolist()
    if observer is not None:
        for number, count in enumerate(counts, start=1):
            observer(number, count)
    return pairs, counts


class MergeTable:
    """A tokenizer's merges as the compiled encoder's table (ids of the vocabulary)."""

    def __init__(self, merges: list[tuple[str, str]], vocab: dict[str, int]) -> None:
        lefts = np.array([vocab[a] for a, _ in merges], np.int64)
        rights = np.array([vocab[b] for _, b in merges], np.int64)
        mades = np.array([vocab[a + b] for a, b in merges], np.int64)
        self.ranks = _compiled.MergeRanks(lefts, rights, mades)

    def apply(self, flat: IntArray, lengths: IntArray) -> tuple[IntArray, IntArray, IntArray]:
        """Merge words (initial symbol ids *flat*, *lengths*): the merged ids (each word where it
        started, a gap after it), each word's start and its merged length."""
        length = np.array(lengths, np.int64)  # becomes the merged lengths
        sym = np.array(flat, np.int64)  # merged in place: a copy
        start = self.ranks.apply(sym, length)
        return sym, start, length


_SPARSE = 4
"""Ids spread wider than this many times the vocabulary's size get no decoding table (decode
then takes the Python path): the table has a row per id up to the largest."""


def encoder(
    merges: list[tuple[str, str]],
    vocab: dict[str, int],
    scheme: Literal["word", "byte"],
    pattern: Pattern | None,
    unk: int | None,
    unknown: Callable[[str], Exception],
) -> _compiled.Encoder:
    """A tokenizer as the compiled :class:`._compiled.Encoder`: its merges, how its scheme cuts
    text, each symbol's id and each id's bytes (as the Python decoder spells them).

    *unknown(word)* makes the exception for a word that holds a symbol without an id (there is
    no unk token then); it is called with the GIL held.
    """
    ranks = MergeTable(merges, vocab).ranks
    tokens = {i: token for token, i in vocab.items()}
    size = max(tokens, default=-1) + 1
    if size > _SPARSE * len(tokens) + 1024:
        size = 0  # no table: decode takes the Python path
    starts = np.full(size, -1, np.int64)
    lengths = np.zeros(size, np.int64)
    spelt: list[bytes] = []
    at = 0
    table = unicode_to_bytes()
    for i in range(size):
        token = tokens.get(i)
        if token is None:
            continue
        if scheme == "word" or i == unk:
            data = token.encode("utf-8", "surrogatepass")
        else:  # a character outside GPT-2's byte map stands for its own UTF-8, as in Tokenizer.decode
            data = b"".join(bytes((table[ch],)) if ch in table else ch.encode("utf-8", "surrogatepass") for ch in token)
        starts[i] = at
        lengths[i] = len(data)
        spelt.append(data)
        at += len(data)
    if scheme == "word":
        inner = {ord(token): i for token, i in vocab.items() if len(token) == 1}
        final = {
            ord(token[0]): i
            for token, i in vocab.items()
            if len(token) == 1 + len(WORD_END) and token.endswith(WORD_END)
        }
        points = sorted(inner.keys() | final.keys())
        byte_ids = np.zeros(0, np.int64)
        mode, classes = 0, None
    else:
        byte_ids = np.array([vocab.get(ch, -1) for ch in bytes_to_unicode()], np.int64)
        inner = final = {}
        points = []
        assert pattern is not None
        mode, classes = _MODES[pattern], char_classes()
    return _compiled.Encoder(
        mode,
        ranks,
        classes,
        byte_ids,
        np.array(points, np.int64),
        np.array([inner.get(cp, -1) for cp in points], np.int64),
        np.array([final.get(cp, -1) for cp in points], np.int64),
        -1 if unk is None else unk,
        unknown,
        np.frombuffer(b"".join(spelt), np.uint8),
        starts,
        lengths,
        1 if scheme == "word" else 0,
        "surrogatepass",
        size,
    )
