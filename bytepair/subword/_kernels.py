"""The subword tokenizer's compiled path: learning merges and applying them, in :mod:`._compiled` (Cython).

Import this module only where the extension is built (``bytepair.backend``
checks): it imports :mod:`._compiled` at its top. The loops and their layout are
described there; here the library's objects (symbol strings, a vocabulary) become
the arrays the loops take, and back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _compiled

IntArray = npt.NDArray[np.integer[Any]]
MergeObserver = Callable[[int, int], None]
"""As in ``learn`` (the reference), which imports this module: not the other way round."""

__all__ = ["MergeTable", "learn"]


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
