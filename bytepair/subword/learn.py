"""Learning merges: the engine, over distinct words weighted by how often they occur.

The loop is the compressor's (count adjacent pairs, merge the most frequent,
update the counts), on a different input: every distinct word once, as a list
of symbol ids, with its count as weight. Per merge:

* the best pair is the top of a heap keyed ``(-count, left, right)`` with the
  strings' order reversed, so among equal counts the lexicographically
  greater pair ``(left, right)`` wins: subword-nmt's ``max(stats, key=lambda x:
  (stats[x], x))``. Counts only fall, except those of pairs holding the symbol
  just made, so entries go stale lazily: a popped entry whose count has fallen
  is pushed back with its true count;
* an index from each pair to the words holding it lets a merge visit only
  those words, and only the pairs beside each occurrence change: the pairs an
  occurrence overlapped lose the word's weight, the pairs beside the new
  symbol gain it.

Symbols are identified by their string: a merge whose result already exists
(two merges can spell the same string) reuses its id, as subword-nmt does.
It stops after *merges* merges or when the best count is below
*min_frequency*. The compiled path (:mod:`._kernels`, Cython) gives the same merges.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .formats import bytes_to_unicode
from .tokenizer import Tokenizer
from .words import SCHEMES, WORD_END, Corpus, Pattern, Scheme, check_pattern, count_words

__all__ = ["Learnt", "MergeObserver", "learn", "learn_merges", "learn_python", "spell", "word_symbols"]

MergeObserver = Callable[[int, int], None]
"""Called as ``observer(done, count)`` after each merge, with the merge's count."""

IntArray = npt.NDArray[np.integer[Any]]


@dataclass(frozen=True)
class Learnt:
    """What the engine found: the alphabet (sorted) and the merges, in order, with their counts."""

    alphabet: list[str]
    merges: list[tuple[str, str]]
    counts: list[int]


def word_symbols(word: str, scheme: Scheme) -> list[str]:
    """The initial symbols of *word*: characters with ``</w>`` glued to the last (word), or mapped bytes (byte)."""
    if scheme == "word":
        return [*word[:-1], word[-1] + WORD_END]
    table = bytes_to_unicode()
    return [table[b] for b in word.encode("utf-8", "surrogatepass")]


def learn(
    corpus: Corpus | None = None,
    merges: int | None = None,
    *,
    counts: Mapping[str, int] | None = None,
    min_frequency: int = 2,
    scheme: Scheme = "word",
    observer: MergeObserver | None = None,
    unk_token: str | None = None,
    pattern: Pattern | None = None,
) -> Tokenizer:
    """Learn up to *merges* merges from *corpus* (lines, a path or a list of paths) or from *counts*.

    *counts* are word (or chunk) counts from :func:`~bytepair.subword.count_words`,
    summed over the parts of a corpus as needed; give *corpus* or *counts*, not both.
    *unk_token* (say ``"<unk>"``) is what a character never met in training becomes
    when encoding, with the id after the merges' (see :class:`Tokenizer`).
    *pattern* is the byte scheme's pre-split (``"gpt2"``, the default, ``"cl100k"`` or
    ``"o200k"``): it cuts the corpus, and the tokenizer keeps it.
    """
    if merges is None or isinstance(merges, bool) or not isinstance(merges, int) or merges < 0:
        raise ValueError(f"merges must be a non-negative int, not {merges!r}")
    if (corpus is None) == (counts is None):
        raise ValueError("give a corpus or counts, not both and not neither")
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, not {scheme!r}")
    if scheme == "word" and pattern is not None:
        raise ValueError("pattern= is the byte scheme's pre-split; the word scheme splits on spaces")
    if counts is None:
        assert corpus is not None
        counts = count_words(corpus, scheme=scheme, pattern=check_pattern(pattern or "gpt2"))
    found = learn_merges(counts, merges, min_frequency=min_frequency, scheme=scheme, observer=observer)
    return Tokenizer(found.merges, scheme=scheme, alphabet=found.alphabet, unk_token=unk_token, pattern=pattern)


def learn_merges(
    counts: Mapping[str, int],
    merges: int,
    *,
    min_frequency: int = 2,
    scheme: Scheme = "word",
    observer: MergeObserver | None = None,
) -> Learnt:
    """The merges (and their counts) learnt from word *counts*: the engine without the Tokenizer."""
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, int) or min_frequency < 1:
        raise ValueError(f"min_frequency must be a positive int, not {min_frequency!r}")
    alphabet, flat, lengths, freqs = spell(counts, scheme)
    symbols = list(alphabet)
    if _use_kernels(len(flat)):
        from . import _kernels

        pairs, merge_counts = _kernels.learn(flat, lengths, freqs, symbols, merges, min_frequency, observer)
    else:
        pairs, merge_counts = learn_python(flat, lengths, freqs, symbols, merges, min_frequency, observer)
    return Learnt(alphabet, [(symbols[a], symbols[b]) for a, b in pairs], merge_counts)


def spell(counts: Mapping[str, int], scheme: Scheme) -> tuple[list[str], IntArray, IntArray, IntArray]:
    """The alphabet and the words of two symbols or more, as symbol ids back to back, their lengths and counts.

    Word scheme: the alphabet is every character met and the same with
    ``</w>``, sorted, so character *k* of the sorted ones has id ``2k`` and its
    word-final form ``2k + 1``. Byte scheme: the 256 bytes, id = byte value.
    """
    weighted = [(word, count) for word, count in counts.items() if word and count > 0]
    words = [word for word, _ in weighted]
    if scheme == "byte":
        alphabet = list(bytes_to_unicode())
        encoded = [word.encode("utf-8", "surrogatepass") for word in words]
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        flat = np.frombuffer(b"".join(encoded), np.uint8).astype(np.int32)
    else:
        lengths = np.fromiter(map(len, words), np.int64, len(words))
        points = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), np.uint32)
        chars = np.unique(points)
        flat = (2 * np.searchsorted(chars, points)).astype(np.int32)
        flat[np.cumsum(lengths) - 1] += 1  # the last character of each word carries </w>
        alphabet = [symbol for ch in map(chr, chars.tolist()) for symbol in (ch, ch + WORD_END)]
    freqs = np.fromiter((count for _, count in weighted), np.int64, len(weighted))
    keep = lengths > 1  # a word of one symbol holds no pair
    if not keep.all():
        flat = flat[np.repeat(keep, lengths)]
        lengths, freqs = lengths[keep], freqs[keep]
    return alphabet, flat, lengths, freqs


def _use_kernels(nsymbols: int) -> bool:
    """Whether the compiled learner runs (``bytepair.backend`` decides, once per process)."""
    from .. import backend

    return backend.compiled()


def _reverse_key(symbol: str) -> tuple[int, ...]:
    """A key whose order is the reverse of *symbol*'s string order (the end sorts above any character)."""
    return (*(-ord(ch) for ch in symbol), 1)


def learn_python(
    flat: IntArray,
    lengths: IntArray,
    freqs: IntArray,
    symbols: list[str],
    merges: int,
    min_frequency: int,
    observer: MergeObserver | None = None,
) -> tuple[list[tuple[int, int]], list[int]]:
    """The pure-Python engine over words (symbol ids in *flat*, *lengths* of two or more) weighted by *freqs*.

    *symbols* (id -> string) grows by the new symbols. Returns the merged id
    pairs and their counts. Inside, a word is a ``str`` with one character per
    symbol id (``chr(id)``), so a merge is ``str.replace`` (left to right, without
    overlaps, as subword-nmt replaces) and a pair is a two-character key.
    """
    ids = {symbol: i for i, symbol in enumerate(symbols)}
    keys = [_reverse_key(symbol) for symbol in symbols]
    whole = flat.astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
    ends = np.cumsum(lengths).tolist()
    spelt = [whole[end - n : end] for end, n in zip(ends, lengths.tolist(), strict=True)]
    weights = freqs.tolist()
    counts, where = _count_pairs(flat, lengths, freqs)
    heap = [(-count, keys[ord(pair[0])], keys[ord(pair[1])], pair) for pair, count in counts.items()]
    heapq.heapify(heap)
    done: list[tuple[int, int]] = []
    done_counts: list[int] = []
    while len(done) < merges and heap:
        top_count, _, _, pair = heap[0]
        count = counts.get(pair, 0)
        if count != -top_count:  # stale: the pair's count fell since this entry was pushed
            if 0 < count < -top_count:
                heapq.heapreplace(heap, (-count, keys[ord(pair[0])], keys[ord(pair[1])], pair))
            else:
                heapq.heappop(heap)
            continue
        if count < min_frequency:
            break
        heapq.heappop(heap)
        a, b = ord(pair[0]), ord(pair[1])
        merged = symbols[a] + symbols[b]
        c = ids.get(merged)
        if c is None:
            c = ids[merged] = len(symbols)
            symbols.append(merged)
            keys.append(keys[a][:-1] + keys[b])  # the reversed key of the joined strings
        grown = _merge_words(spelt, weights, where.pop(pair), pair, chr(c), counts, where)
        counts.pop(pair, None)
        for new in grown:
            heapq.heappush(heap, (-counts[new], keys[ord(new[0])], keys[ord(new[1])], new))
        done.append((a, b))
        done_counts.append(count)
        if observer is not None:
            observer(len(done), count)
    return done, done_counts


def _count_pairs(
    flat: IntArray, lengths: IntArray, freqs: IntArray
) -> tuple[defaultdict[str, int], defaultdict[str, set[int]]]:
    """Every adjacent pair's weighted count, and the words holding it (numpy: one sort, no loop per pair).

    Pairs are keyed as the Python engine keys them: two characters, ``chr(left) + chr(right)``.
    """
    counts: defaultdict[str, int] = defaultdict(int)
    where: defaultdict[str, set[int]] = defaultdict(set)
    if not len(flat):
        return counts, where
    word_of = np.repeat(np.arange(len(lengths)), lengths)
    inside = word_of[:-1] == word_of[1:]  # the pair does not straddle two words
    keys = (flat[:-1].astype(np.int64) << 32 | flat[1:].astype(np.int64))[inside]
    holders = word_of[:-1][inside]
    order = np.argsort(keys, kind="stable")
    keys, holders = keys[order], holders[order]
    firsts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sums = np.add.reduceat(freqs[holders], firsts)
    distinct = keys[firsts]
    names = [
        "".join((chr(left), chr(right)))
        for left, right in zip((distinct >> 32).tolist(), (distinct & 0xFFFFFFFF).tolist(), strict=True)
    ]
    groups = np.split(holders, firsts[1:])
    counts.update(zip(names, sums.tolist(), strict=True))
    where.update((name, set(group.tolist())) for name, group in zip(names, groups, strict=True))
    return counts, where


def _merge_words(
    words: list[str],
    freqs: list[int],
    holders: set[int],
    pair: str,
    merged: str,
    counts: defaultdict[str, int],
    where: defaultdict[str, set[int]],
) -> set[str]:
    """Merge *pair* into the symbol *merged* in the words of *holders*; returns the pairs whose count grew.

    The pairs an occurrence overlapped lose the word's weight; the pairs beside
    the new symbol gain it; the merged pair itself is dropped by the caller.
    """
    grown: set[str] = set()
    for w in holders:
        old = words[w]
        new = old.replace(pair, merged)
        made = len(old) - len(new)
        if not made:  # the index is not pruned: the word lost the pair to an earlier merge
            continue
        weight = freqs[w]
        n = len(old)
        if made == 1:  # the usual case: one occurrence, its two neighbours
            p = old.find(pair)
            if p:
                counts[old[p - 1 : p + 1]] -= weight
                key = new[p - 1 : p + 1]
                counts[key] += weight
                where[key].add(w)
                grown.add(key)
            if p + 2 < n:
                counts[old[p + 1 : p + 3]] -= weight
                key = new[p : p + 2]
                counts[key] += weight
                where[key].add(w)
                grown.add(key)
        else:
            gone: set[int] = set()  # positions in old of the pairs an occurrence overlapped
            beside: set[int] = set()  # positions in new of the pairs holding a made symbol
            p = old.find(pair)
            k = 0
            while p >= 0:
                gone.update((p - 1, p + 1))
                beside.update((p - k - 1, p - k))
                k += 1
                p = old.find(pair, p + 2)
            for j in gone:
                if 0 <= j < n - 1:
                    counts[old[j : j + 2]] -= weight
            last = len(new) - 1
            for j in beside:
                if 0 <= j < last:
                    key = new[j : j + 2]
                    counts[key] += weight
                    where[key].add(w)
                    grown.add(key)
        words[w] = new
    grown.discard(pair)
    return grown
