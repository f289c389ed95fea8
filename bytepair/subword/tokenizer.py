"""The Tokenizer: a learnt (or loaded) list of merges, and what it does to text.

Applying merges to a word is subword-nmt's and GPT-2's rule: among the word's
adjacent pairs take the one merged earliest in training, merge all its
occurrences left to right, repeat until no pair of the word was ever merged.
Each distinct word is tokenized once and kept in a cache, so text of ordinary
vocabulary costs a split and a lookup per word: on the compiled path ``encode``
and ``decode`` are one compiled call each (``_compiled.Encoder``: the split, the
cache and the merges in C, no Python loop per word).

* ``word`` scheme: words are split as subword-nmt splits them, symbols are
  characters with ``</w>`` glued to the last one; tokens keep the ``</w>``
  (``["low", "er</w>"]``), so :meth:`Tokenizer.decode` knows where words end.
  :meth:`Tokenizer.apply` gives ``subword-nmt apply-bpe``'s line instead
  (``low@@ er``). ``decode(encode(s))`` is *s* with its whitespace normalised.
* ``byte`` scheme: chunks are cut by GPT-2's pattern (or tiktoken's cl100k_base or
  o200k_base pattern, ``pattern=``), symbols are the chunk's UTF-8 bytes spelt with
  GPT-2's printable characters; ``decode(encode(s)) == s``
  for every ``str``.

A symbol the vocabulary lacks (a character never met in training, a byte a loaded
model has no id for) raises :class:`UnknownSymbolError` in :meth:`Tokenizer.encode`,
unless the tokenizer has an ``unk_token``: then it becomes that token, as in
Hugging Face ``tokenizers`` (one unknown symbol, one unk token; merges never
cross it, since no merge holds a symbol that has no id).
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from itertools import chain, pairwise, repeat
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import backend
from .._threads import resolve_threads
from .errors import InvalidIdError, UnknownSymbolError, UnsupportedModelError, VocabMismatchError
from .formats import (
    FORMATS,
    Format,
    bytes_to_unicode,
    detect_format,
    read_codes,
    read_gpt2,
    read_vocab_file,
    unicode_to_bytes,
    write_codes,
    write_gpt2,
)
from .words import SCHEMES, WORD_END, Pattern, Scheme, check_pattern, pattern_of, split_chunks, split_words

__all__ = ["Tokenizer"]


_SPACE_OR_LINE_END = re.compile("( |\n)")
_ASCII_OTHER_SPACE = ("\t", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "  ", " \n", "\n ")
_OTHER_SPACE = re.compile(r"[^\S \n]|  | \n|\n ")


def _plain(text: str) -> bool:
    """Whether *text* is lines of words between single spaces: no other whitespace, no blanks at line ends."""
    if text.startswith(" ") or text.endswith(" "):
        return False
    if text.isascii():
        return not any(space in text for space in _ASCII_OTHER_SPACE)
    return not _OTHER_SPACE.search(text)


def _whole_lines(batch: list[str], text: str) -> bool:
    """Whether *text*, the join of *batch*, splits at its newlines into the lines of *batch*:
    each line but the last ends with its newline and holds no other (``["a", "a"]`` joins to
    one word, where applied line by line they are two)."""
    ends = len(batch) - 1 + batch[-1].endswith("\n")
    return text.count("\n") == ends and all(line.endswith("\n") for line in batch[:-1])


def _batches(lines: Iterable[str], size: int = 4096) -> Iterator[list[str]]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _use_kernels(nsymbols: int) -> bool:
    """Whether the compiled merge table runs (``bytepair.backend`` decides, once per process)."""
    return backend.compiled()


def _unknown_symbol(word: str, token: str) -> UnknownSymbolError:
    return UnknownSymbolError(
        f"{word!r}: the vocabulary has no token {token!r}"
        " (give the tokenizer an unk_token= to encode unknown symbols as one token)"
    )


_CACHE_LIMIT = 1 << 20  # distinct words kept tokenized; the cache is emptied when it grows past this

MIN_SHARE = 1 << 15
"""Least work (characters to encode, ids to decode) worth a thread of its own in a batch."""


_thread_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()
_NUMPY_CACHE_LOCK = threading.RLock()
"""The numpy path's cache of words (``_flat``, ``_starts``, ``_lens``, ``_index``) is read and
grown under this lock: growing replaces its arrays, and a reader in another thread mixing old
and new ones indexed past their end. (The numpy path runs one thread at a time anyway, under
the GIL; a module lock keeps tokenizers picklable.)"""


YOUNG_COLLECTION = 1 << 10
"""Objects made since the last collection past which a batch collects them (``_collect_young``):
in effect after every block of texts (``_compiled``'s ``BLOCK``, 2048). Small collections
are cheap ones: on 10 MB of lines a two-thread batch took 65-69 ms collecting at 1024 or
2048 objects, 76 at 4096 and 8192, 83-90 with one collection at the end."""


@contextlib.contextmanager
def _collector_paused() -> Iterator[bool]:
    """Python's cyclic garbage collector's own collections off while a batch makes its result
    lists; yields whether the collector was on. If it was, the batch collects the youngest
    generation itself as it goes (``_collect_young``) and once more at the end, and the
    collector is then on again.

    Each list made counts toward the next collection, and the collector's own collections,
    under the GIL, walked every list made so far again and again as the lists reached the
    older generations: on 10 MB of lines they took two thirds of ``encode_batch``'s time,
    and held up the other threads (``timeit`` pauses the collector for the same reason).
    Collected young, in blocks, each list is walked once in the call, as a collection at
    its end would walk it, but by the thread that made it, while the others encode. (That
    last collection of every list, run alone, took a third of a two-thread batch.) The
    older generations are left to the collector's own schedule, as after any call."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield was_enabled
    finally:
        if was_enabled:
            if gc.get_count()[0] > gc.get_threshold()[0]:  # due: now, of the youngest only (the
                gc.collect(0)  # collector's own choice could be an older generation: every list again)
            gc.enable()


def _collect_young() -> None:
    """Collect the youngest generation once it holds ``YOUNG_COLLECTION`` objects (called by a
    batch's shares after each block of lists, while the collector is paused)."""
    if gc.get_count()[0] >= YOUNG_COLLECTION:
        gc.collect(0)


def _thread_pool(workers: int) -> ThreadPoolExecutor:
    """Worker threads for batches, one pool per size, kept for the life of the process."""
    from concurrent.futures import ThreadPoolExecutor  # imported on first use: start-up stays short

    with _pools_lock:
        pool = _thread_pools.get(workers)
        if pool is None:
            pool = _thread_pools[workers] = ThreadPoolExecutor(workers, thread_name_prefix="bytepair-subword")
        return pool


def _in_shares(job: Callable[..., Any], items: list[Any], out: list[Any], workers: int, *extra: Any) -> list[Any]:
    """``job(items, lo, hi, out, *extra)`` for each share of *items*, the first in the caller's thread and the
    others on worker threads at the same time; their results in order. Every share is done before
    this returns or raises (the first error, in share order). The shares are of about equal
    work, at least ``MIN_SHARE`` each (``_compiled.share_edges``)."""
    from . import _kernels

    edges = _kernels.share_edges(items, workers, MIN_SHARE)
    if len(edges) <= 1:
        return [job(items, 0, len(items), out, *extra)]
    from concurrent.futures import wait

    pool = _thread_pool(len(edges) - 1)
    futures = [pool.submit(job, items, lo, hi, out, *extra) for lo, hi in edges[1:]]
    try:
        first = job(items, *edges[0], out, *extra)
    finally:
        wait(futures)
    return [first, *(future.result() for future in futures)]


class Tokenizer:
    """Merges in order, a vocabulary (token -> id), and tokenize/encode/decode/apply/save/load.

    *alphabet* is the base symbols, in id order (word scheme: the characters met
    in training, sorted; byte scheme: the 256 bytes). When *vocab* is not given
    the ids are the alphabet's, then one per merge result in merge order.

    *unk_token* (say ``"<unk>"``) is what a symbol outside the vocabulary becomes in
    :meth:`tokenize` and :meth:`encode`; it is added to the vocabulary with the next
    free id (one more than the largest) when it is not there, and its id decodes to
    its text. Without it such a symbol raises :class:`UnknownSymbolError`.

    *pattern* is the byte scheme's pre-split: ``"gpt2"`` (the default), ``"cl100k"`` or
    ``"o200k"`` (tiktoken's cl100k_base and o200k_base patterns, :data:`.words.PATTERNS`);
    the word scheme has none (``None``).
    """

    def __init__(
        self,
        merges: Sequence[tuple[str, str]],
        *,
        scheme: Scheme = "word",
        alphabet: Sequence[str] | None = None,
        vocab: dict[str, int] | None = None,
        unk_token: str | None = None,
        pattern: Pattern | None = None,
    ) -> None:
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, not {scheme!r}")
        if scheme == "word" and pattern is not None:
            raise ValueError("pattern= is the byte scheme's pre-split; the word scheme splits on spaces")
        self.scheme: Scheme = scheme
        self.pattern: Pattern | None = None if scheme == "word" else check_pattern(pattern or "gpt2")
        self.merges: list[tuple[str, str]] = [(left, right) for left, right in merges]
        if vocab is None:
            vocab = _default_vocab(self.merges, scheme, alphabet)
        else:
            _check_vocab(vocab, self.merges)
        self.vocab: dict[str, int] = dict(vocab)
        if unk_token is not None and (not isinstance(unk_token, str) or not unk_token):
            raise ValueError(f"unk_token must be a non-empty str or None, not {unk_token!r}")
        self.unk_token: str | None = unk_token
        self._unk_id: int | None = None
        if unk_token is not None:
            if unk_token not in self.vocab:
                self.vocab[unk_token] = max(self.vocab.values(), default=-1) + 1
            self._unk_id = self.vocab[unk_token]
        self._tokens = {i: token for token, i in self.vocab.items()}
        self._ranks: dict[tuple[str, str], int] = {}
        for rank, pair in enumerate(self.merges):
            self._ranks.setdefault(pair, rank)  # a repeated merge keeps its first rank, as in subword-nmt
        self._cache: dict[str, tuple[str, ...]] = {}  # word -> tokens, for the Python path
        self._applied: dict[str, dict[str, str]] = {}  # separator -> word -> apply-bpe's spelling
        self._index: dict[str, int] = {}  # word -> its place in _starts/_lens
        self._flat: Any = np.zeros(0, np.int64)  # token ids, word after word
        self._starts: Any = np.zeros(0, np.int64)
        self._lens: Any = np.zeros(0, np.int64)
        self._table: Any = None  # the compiled encoder's merge table, made on first use
        self._encoder: Any = None  # the compiled encoder (_compiled.Encoder), made on first use

    def __repr__(self) -> str:
        unk = f" unk_token={self.unk_token!r}" if self.unk_token is not None else ""
        pattern = f" pattern={self.pattern!r}" if self.pattern not in (None, "gpt2") else ""
        return f"<Tokenizer scheme={self.scheme!r}{pattern} merges={len(self.merges)} vocab={len(self.vocab)}{unk}>"

    # -- one word -------------------------------------------------------------------------------

    def _symbols(self, word: str) -> list[str]:
        if self.scheme == "word":
            return [*word[:-1], word[-1] + WORD_END]
        table = bytes_to_unicode()
        return [table[b] for b in word.encode("utf-8", "surrogatepass")]

    def tokenize_word(self, word: str) -> tuple[str, ...]:
        """The tokens of one word (word scheme) or pre-split chunk (byte scheme)."""
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        symbols = self._symbols(word)
        ranks = self._ranks
        while len(symbols) > 1:
            best = None
            best_rank = len(self.merges)  # above every rank (a repeated merge keeps its first)
            for pair in pairwise(symbols):
                rank = ranks.get(pair)
                if rank is not None and rank < best_rank:
                    best, best_rank = pair, rank
            if best is None:
                break
            first, second = best
            merged = first + second
            out: list[str] = []
            i, n = 0, len(symbols)
            while i < n:
                if i < n - 1 and symbols[i] == first and symbols[i + 1] == second:
                    out.append(merged)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            symbols = out
        tokens = tuple(symbols)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[word] = tokens
        return tokens

    def _slots(self, words: list[str]) -> Any:
        """Each word's place in the id cache (an int64 array), tokenizing the words it lacks first."""
        index = self._index
        slots = np.fromiter(map(index.get, words, repeat(-1)), np.int64, len(words))
        new = np.flatnonzero(slots < 0)
        if len(new):
            self._fill(dict.fromkeys(words[i] for i in new.tolist()), strict=True)  # in order: the first error
            slots[new] = [index[words[i]] for i in new.tolist()]
        return slots

    def _fill(self, missing: Collection[str], *, strict: bool) -> None:
        with _NUMPY_CACHE_LOCK:
            self._fill_now(missing, strict=strict)

    def _fill_now(self, missing: Collection[str], *, strict: bool) -> None:
        """Tokenize *missing* words into the id cache: compiled on the compiled path.

        The cache is the token ids of every word back to back (``_flat``), each
        word's ``_starts``/``_lens`` and ``_index`` (word -> its place): encode
        gathers a text's ids from it with numpy, without a list per word. A word
        holding a symbol the vocabulary lacks gets the unk token's id there, if
        the tokenizer has one; else it raises :class:`UnknownSymbolError` when
        *strict* (for the first such word of *missing*, and the cache is left as it
        was), or stays out of the cache (``tokenize`` and ``apply`` still tokenize
        it, as strings).
        """
        if not missing:
            return
        if len(self._index) + len(missing) > _CACHE_LIMIT:
            self._clear_cache()
        words = list(missing)
        flats, starts, lens = [self._flat], [self._starts], [self._lens]
        base = len(self._flat)
        index: dict[str, int] = {}  # the new words' places: entered with the arrays, after the last error
        if _use_kernels(sum(map(len, words))):
            flat, lengths, known = self._spell(words)
            covered = [word for word, k in zip(words, known, strict=True) if k]
            merged, slot_starts, merged_lengths = self._merge_table().apply(flat, lengths)
            first = len(self._index)
            index.update(zip(covered, range(first, first + len(covered)), strict=True))
            flats.append(merged)
            starts.append(slot_starts + base)
            lens.append(merged_lengths)
            base += len(merged)
            words = [word for word, k in zip(words, known, strict=True) if not k]
        vocab = self.vocab
        unk = self._unk_id
        ids: list[int] = []
        word_lens: list[int] = []
        for word in words:
            try:
                if unk is None:
                    tokens = [vocab[token] for token in self.tokenize_word(word)]
                else:
                    tokens = [vocab.get(token, unk) for token in self.tokenize_word(word)]
            except KeyError as exc:
                if strict:
                    raise _unknown_symbol(word, exc.args[0]) from None
                continue
            index[word] = len(self._index) + len(index)
            ids.extend(tokens)
            word_lens.append(len(tokens))
        if word_lens:
            counts = np.array(word_lens, np.int64)
            flats.append(np.array(ids, np.int64))
            starts.append(base + np.cumsum(counts) - counts)
            lens.append(counts)
        self._flat, self._starts, self._lens = (np.concatenate(parts) for parts in (flats, starts, lens))
        self._index.update(index)

    def _clear_cache(self) -> None:
        self._index = {}
        self._flat = self._starts = self._lens = np.zeros(0, np.int64)
        self._cache.clear()
        self._applied.clear()

    def _word_ids(self, word: str) -> list[int] | None:
        """The cached token ids of one word, or None."""
        with _NUMPY_CACHE_LOCK:
            slot = self._index.get(word)
            if slot is None:
                return None
            start = int(self._starts[slot])
            return self._flat[start : start + int(self._lens[slot])].tolist()  # type: ignore[no-any-return]

    def _spell(self, words: list[str]) -> tuple[Any, Any, list[bool]]:
        """The initial symbol ids of *words* back to back, their lengths, and which words the vocabulary covers."""
        vocab = self.vocab
        if self.scheme == "byte":
            encoded = [word.encode("utf-8", "surrogatepass") for word in words]
            lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
            table = self._byte_ids()
            flat = table[np.frombuffer(b"".join(encoded), np.uint8)]
        else:
            lengths = np.fromiter(map(len, words), np.int64, len(words))
            points = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), np.uint32)
            chars, where = np.unique(points, return_inverse=True)
            inner = np.array([vocab.get(chr(ch), -1) for ch in chars.tolist()], np.int64)
            final = np.array([vocab.get(chr(ch) + WORD_END, -1) for ch in chars.tolist()], np.int64)
            flat = inner[where]
            ends = np.cumsum(lengths) - 1
            flat[ends] = final[where[ends]]
        bad = np.add.reduceat((flat < 0).astype(np.int64), np.cumsum(lengths) - lengths)
        known = (bad == 0).tolist()
        if not all(known):
            keep = np.repeat(np.asarray(known), lengths)
            return flat[keep], lengths[np.asarray(known)], known
        return flat, lengths, known

    def _byte_ids(self) -> Any:
        table = np.full(256, -1, np.int64)
        for byte, ch in enumerate(bytes_to_unicode()):
            table[byte] = self.vocab.get(ch, -1)
        return table

    def _compiled_encoder(self) -> Any:
        """The compiled encoder (:class:`._compiled.Encoder`), made on first use."""
        if self._encoder is None:
            from . import _kernels

            self._encoder = _kernels.encoder(
                self.merges, self.vocab, self.scheme, self.pattern, self._unk_id, self._unknown_word
            )
        return self._encoder

    def _unknown_word(self, word: str) -> UnknownSymbolError:
        """The error for *word*, which holds a symbol without an id: it names the first."""
        vocab = self.vocab
        token = next((symbol for symbol in self._symbols(word) if symbol not in vocab), word)
        return _unknown_symbol(word, token)

    def _merge_table(self) -> Any:
        if self._table is None:
            from . import _kernels

            self._table = _kernels.MergeTable(self.merges, self.vocab)
        return self._table

    def _pieces(self, words: list[str]) -> list[tuple[str, ...]]:
        """The tokens of each of *words* (as strings, so words with unknown symbols are tokenized too)."""
        self._fill({word for word in words if word not in self._cache and word not in self._index}, strict=False)
        return [self._word_pieces(word) for word in words]

    def _word_pieces(self, word: str) -> tuple[str, ...]:
        pieces = self._cache.get(word)
        if pieces is None:
            ids = self._word_ids(word)
            if ids is None or self._unk_id in ids:  # the unk token stands for symbols: spell them
                return self.tokenize_word(word)
            pieces = self._cache[word] = tuple(self._tokens[i] for i in ids)
        return pieces

    # -- text -----------------------------------------------------------------------------------

    def words(self, text: str) -> list[str]:
        """The words (word scheme) or chunks (byte scheme) *text* is cut into before merging."""
        return split_chunks(text, self.pattern) if self.pattern is not None else split_words(text)

    def tokenize(self, text: str) -> list[str]:
        """The tokens of *text*, in order (a symbol outside the vocabulary as the unk token, if any)."""
        pieces = chain.from_iterable(self._pieces(self.words(text)))
        unk = self.unk_token
        if unk is None:
            return list(pieces)
        vocab = self.vocab
        return [piece if piece in vocab else unk for piece in pieces]

    def encode(self, text: str) -> list[int]:
        """The token ids of *text*. A symbol the vocabulary lacks is the unk token's id, or,
        without an unk token, :class:`UnknownSymbolError`.

        On the compiled path one compiled call cuts the text, looks its words up in the
        cache of words met before and merges only the new ones.
        """
        if backend.compiled():
            encoder = self._encoder
            if encoder is None:
                encoder = self._compiled_encoder()
            return encoder.encode(text)  # type: ignore[no-any-return]
        words = self.words(text)
        with _NUMPY_CACHE_LOCK:  # the cache's arrays are replaced as it grows: one thread at a time
            slots = self._slots(words)
            lens, starts, flat = self._lens[slots], self._starts[slots], self._flat
        if not len(lens):
            return []
        shift = starts - (np.cumsum(lens) - lens)  # where each word's ids move to
        return flat[np.repeat(shift, lens) + np.arange(int(lens.sum()))].tolist()  # type: ignore[no-any-return]

    def decode(self, ids: Iterable[int]) -> str:
        """The text of *ids*; :class:`InvalidIdError` for an id that is not in the vocabulary.

        The unk token's id decodes to the unk token's text (in the word scheme it
        carries no word end: the word it ends runs on into the next, as in
        Hugging Face's decoder).
        """
        if backend.compiled():
            if isinstance(ids, np.ndarray):
                ids = ids.tolist()
            if isinstance(ids, (list, tuple)):
                encoder = self._encoder
                if encoder is None:
                    encoder = self._compiled_encoder()
                text = encoder.decode(ids)
                if text is not None:
                    return text  # type: ignore[no-any-return]
        return self._decode(ids)

    def encode_batch(self, texts: Iterable[str], threads: int = 0) -> list[list[int]]:
        """:meth:`encode` of each of *texts*, on *threads* threads (0: one per core).

        On the compiled path the texts are cut into one share per thread, of about
        equal length, each encoded with the GIL released. The cache of words is read
        by all of them and written by none while they run: each share keeps the words
        new to it in a cache of its own, and those are added to the shared cache when
        every share is done (so two shares may both tokenize a word new to both). The
        ids are :meth:`encode`'s. On the numpy path the texts are encoded one by one.

        Python's cyclic garbage collector's own collections are paused while the call makes
        its lists (they walked every list made so far, again and again, and took most of the
        time); if it was on, the call collects its young objects itself, block by block in
        each thread, and leaves it on.
        """
        batch = list(texts)
        workers = resolve_threads(threads)
        if not backend.compiled():
            with _collector_paused():
                return [self.encode(text) for text in batch]
        encoder = self._encoder
        if encoder is None:
            encoder = self._compiled_encoder()
        out: list[Any] = [None] * len(batch)
        with _collector_paused() as collecting:
            encoder.hold()
            try:
                found = _in_shares(encoder.encode_share, batch, out, workers, _collect_young if collecting else None)
            finally:
                encoder.release()
            for words in found:
                encoder.adopt(words)
        return out

    def decode_batch(self, batch: Iterable[Iterable[int]], threads: int = 0) -> list[str]:
        """:meth:`decode` of each of *batch*, on *threads* threads (0: one per core); the first
        item holding an id outside the vocabulary raises :class:`InvalidIdError`."""
        items: list[Any] = [ids.tolist() if isinstance(ids, np.ndarray) else ids for ids in batch]
        items = [ids if isinstance(ids, (list, tuple)) else list(ids) for ids in items]
        workers = resolve_threads(threads)
        if not backend.compiled():
            return [self.decode(ids) for ids in items]
        encoder = self._encoder
        if encoder is None:
            encoder = self._compiled_encoder()
        out: list[Any] = [None] * len(items)
        _in_shares(encoder.decode_share, items, out, workers)
        for k, text in enumerate(out):
            if text is None:  # an item the compiled decoder left to the Python one: it decodes or raises
                out[k] = self._decode(items[k])
        return out

    def _decode(self, ids: Iterable[int]) -> str:
        tokens = self._tokens
        try:
            pieces = [tokens[i] for i in ids]
        except (KeyError, TypeError) as exc:
            bad = exc.args[0] if exc.args else ids
            raise InvalidIdError(f"{bad!r} is not an id of this vocabulary (0 to {len(tokens) - 1})") from None
        if self.scheme == "word":
            text = "".join(pieces).replace(WORD_END, " ")
            return text[:-1] if text.endswith(" ") else text
        table = unicode_to_bytes()
        unk = self.unk_token
        data = None
        if unk is None or unk not in pieces:
            with contextlib.suppress(KeyError):
                data = bytes(table[ch] for ch in "".join(pieces))
        if data is None:  # the unk token, or tokens of a loaded vocabulary spelt outside GPT-2's byte map, are text
            data = b"".join(piece.encode("utf-8") if piece == unk else _piece_bytes(piece, table) for piece in pieces)
        try:
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:  # ids that cut a character in two: replaced, as GPT-2's decoders do
            return data.decode("utf-8", "replace")

    def apply_lines(self, lines: Iterable[str], separator: str = "@@") -> Iterator[str]:
        """:meth:`apply` to each of *lines*, tokenizing the new words of many lines at a time."""
        for batch in _batches(lines):
            self._prepare(batch, separator)
            for line in batch:
                yield self.apply(line, separator)

    def apply_text(self, lines: Iterable[str], separator: str = "@@") -> Iterator[str]:
        """``subword-nmt apply-bpe``'s output for *lines* (each with its line end), in pieces of
        many lines: their concatenation is ``"".join(map(apply, lines))``, made faster.

        A batch of plain lines (words between single spaces, no other whitespace,
        no blanks at line ends) is done in one split and one join.
        """
        for batch in _batches(lines):
            text = "".join(batch)
            if not (_plain(text) and _whole_lines(batch, text)):
                self._prepare(batch, separator)
                yield "".join([self.apply(line, separator) for line in batch])
                continue
            parts = _SPACE_OR_LINE_END.split(text)  # words at even places, separators at odd ones
            words = parts[0::2]
            applied = self._applied.setdefault(separator, {})
            new = {word for word in words if word not in applied}
            new.discard("")
            if new:
                self._prepare_words(new, separator)
            parts[0::2] = [applied[word] if word else word for word in words]
            yield "".join(parts)

    def _prepare(self, lines: list[str], separator: str) -> None:
        """Tokenize the new words of *lines* in one batch (compiled when large), ready for :meth:`apply`."""
        applied = self._applied.setdefault(separator, {})
        words = {word for line in lines for word in line.strip("\r\n ").split(" ") if word not in applied}
        words.discard("")
        if words:
            self._prepare_words(words, separator)

    def _prepare_words(self, words: set[str], separator: str) -> None:
        self._fill({word for word in words if word not in self._cache and word not in self._index}, strict=False)
        applied = self._applied.setdefault(separator, {})
        if len(applied) + len(words) > _CACHE_LIMIT:
            applied.clear()
        for word in words:
            applied[word] = self._apply_word(word, separator)

    def apply(self, line: str, separator: str = "@@") -> str:
        """``subword-nmt apply-bpe``'s output for one *line*: a word's pieces joined by ``@@ ``.

        Leading and trailing ``'\\r\\n '`` are kept, runs of spaces inside become one.
        Word scheme only.
        """
        if self.scheme != "word":
            raise ValueError("apply gives subword-nmt's output: it needs a word-scheme tokenizer")
        stripped = line.strip("\r\n ")
        if not stripped:
            return line
        words = stripped.split(" ")
        if "" in words:  # runs of spaces
            words = [word for word in words if word]
        applied = self._applied.get(separator)
        if applied is None:
            applied = self._applied[separator] = {}
        try:
            body = " ".join([applied[word] for word in words])
        except KeyError:
            if len(applied) > _CACHE_LIMIT:
                applied.clear()
            for word in words:
                if word not in applied:
                    applied[word] = self._apply_word(word, separator)
            body = " ".join([applied[word] for word in words])
        if stripped is line:
            return body
        leading = len(line) - len(line.lstrip("\r\n "))
        trailing = len(line) - len(line.rstrip("\r\n "))
        return line[:leading] + body + (line[len(line) - trailing :] if trailing else "")

    def _apply_word(self, word: str, separator: str) -> str:
        """One word as apply-bpe writes it: ``low@@ er`` (the last piece without ``</w>``)."""
        pieces = self._word_pieces(word)
        last = pieces[-1]
        out = [piece + separator for piece in pieces[:-1]]
        out.append(last[: -len(WORD_END)] if last.endswith(WORD_END) else last)
        return " ".join(out)

    # -- files ----------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str], format: Format | None = None) -> None:
        """Write the model at *path* in *format* (one of :data:`~.formats.FORMATS`).

        Without *format*: a word-scheme model is a subword-nmt codes file, a byte-scheme
        one a GPT-2 directory (``vocab.json`` and ``merges.txt`` in the directory
        *path*, made if missing). ``"codes"`` is for the word scheme; ``"gpt2"``,
        ``"tokenizer.json"`` (Hugging Face's one file) and ``"tiktoken"`` (a rank
        file, :meth:`save_tiktoken`) are for the byte scheme. Files are written
        through a temporary file renamed into place.

        The pre-split pattern is kept by ``tokenizer.json`` (its ``Split``); a rank file
        holds none (give it to :meth:`load_tiktoken`), and a GPT-2 directory is GPT-2's
        pattern only: a model with another pattern raises :class:`UnsupportedModelError`
        there (save it as ``tokenizer.json``).
        """
        if format is None:
            format = "codes" if self.scheme == "word" else "gpt2"
        if format not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
        if (format == "codes") != (self.scheme == "word"):
            wanted = "a word-scheme (subword-nmt)" if format == "codes" else "a byte-scheme (GPT-2)"
            raise ValueError(f"format {format!r} holds {wanted} model; this one is {self.scheme}-scheme")
        if format == "codes":
            write_codes(path, self.merges)
        elif format == "gpt2":
            if self.pattern != "gpt2":
                raise UnsupportedModelError(
                    f"a GPT-2 directory (vocab.json + merges.txt) cuts text by GPT-2's pattern; this model cuts by "
                    f"{self.pattern}'s: save it with format='tokenizer.json', which keeps the pattern (or 'tiktoken', "
                    f"then load it with pattern={self.pattern!r})"
                )
            write_gpt2(path, self.vocab, self.merges)
        elif format == "tokenizer.json":
            from .tokenizer_json import write_tokenizer_json

            write_tokenizer_json(path, self.vocab, self.merges, self.unk_token, self.pattern or "gpt2")
        else:
            self.save_tiktoken(path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        format: Format | None = None,
        vocab: str | os.PathLike[str] | None = None,
        unk_token: str | None = None,
        pattern: str | None = None,
    ) -> Tokenizer:
        """The model at *path*, in *format*, or in the format :func:`~.formats.detect_format` finds.

        Detected: a directory is GPT-2's (byte scheme); a file starting with ``{`` a
        Hugging Face ``tokenizer.json`` (byte scheme, see :mod:`.tokenizer_json` for
        what is read); one whose first line is ``<base64> <rank>`` a tiktoken rank
        file (:meth:`load_tiktoken`, GPT-2's pattern); anything else a subword-nmt
        codes file (word scheme).

        *vocab* (codes files only) is a subword-nmt vocabulary file (``get-vocab``'s
        ``token count`` lines): every character of its tokens joins the alphabet, so a
        model loaded from codes has an id for every character of the text the
        vocabulary was counted on, not only for those its merges mention. The ids
        are then those :func:`~bytepair.subword.learn` gives: the characters in both
        forms (``c``, ``c</w>``), sorted, then one per merge result. The file's order
        and counts do not set ids.

        *unk_token* is :class:`Tokenizer`'s; a ``tokenizer.json`` names its own,
        which *unk_token* replaces when given.

        *pattern* (byte scheme: ``"gpt2"``, ``"cl100k"``, ``"o200k"``, or one of their
        regexes) is the pre-split of a rank file or a GPT-2 directory, which do not
        record one (default ``"gpt2"``); a ``tokenizer.json`` records its own, and a
        *pattern* that differs from it is a ``ValueError``.
        """
        if format is None:
            format = detect_format(path)
        if format not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
        if vocab is not None and format != "codes":
            raise ValueError("vocab= is a subword-nmt vocabulary file: it goes with a codes file")
        if pattern is not None and format == "codes":
            raise ValueError("pattern= is the byte scheme's pre-split: a codes file holds a word-scheme model")
        if format == "gpt2":
            table, merges = read_gpt2(path)
            return cls(merges, scheme="byte", vocab=table, unk_token=unk_token, pattern=_pattern(pattern or "gpt2"))
        if format == "tokenizer.json":
            from .tokenizer_json import read_tokenizer_json

            model = read_tokenizer_json(path)
            if pattern is not None and _pattern(pattern) != model.pattern:
                raise ValueError(f"{os.fspath(path)} cuts text by {model.pattern}'s pattern, not by {pattern!r}")
            unk = model.unk_token if unk_token is None else unk_token
            return cls(model.merges, scheme="byte", vocab=model.vocab, unk_token=unk, pattern=model.pattern)
        if format == "tiktoken":
            return cls.load_tiktoken(path, pattern or "gpt2", unk_token=unk_token)
        merges = read_codes(path)
        alphabet = None
        if vocab is not None:
            chars = _base_chars(merges) | {ch for token in read_vocab_file(vocab) for ch in token}
            alphabet = sorted(chars | {ch + WORD_END for ch in chars})
        return cls(merges, scheme="word", alphabet=alphabet, unk_token=unk_token)

    def save_tiktoken(self, path: str | os.PathLike[str]) -> dict[int, int]:
        """Write a byte-scheme model as a tiktoken rank file at *path*; returns each id's rank.

        Written: the 256 bytes and every merge result (tiktoken keeps the unk token and
        other added tokens apart, as ``special_tokens``: they are left out). The ranks
        are the ids whenever the ids of merge results grow in merge order (every model
        bytepair learns, GPT-2's, Hugging Face's trainer's): then tiktoken gives
        bytepair's ids. Otherwise the bytes get ranks 0-255 in the order of their ids
        and the merge results 256 on in merge order, and the returned map says which.
        A model whose merges tiktoken cannot reproduce (two merges making one token, a
        merge tiktoken's rank rule would make from other parts) raises
        :class:`~.errors.UnsupportedModelError` and writes nothing.
        """
        from .ranks import merges_from_ranks, write_ranks

        if self.scheme != "byte":
            raise ValueError("a tiktoken rank file holds a byte-scheme (GPT-2) model; this one is word-scheme")
        table = unicode_to_bytes()
        byte_ids: list[int] = []
        for byte, ch in enumerate(bytes_to_unicode()):
            if ch not in self.vocab:
                raise UnsupportedModelError(f"tiktoken needs every byte: byte {byte:#04x} ({ch!r}) has no id")
            byte_ids.append(self.vocab[ch])
        made: list[str] = []
        for number, (left, right) in enumerate(self.merges, start=1):
            if left + right in made:
                raise UnsupportedModelError(
                    f"merge {number} ({left} {right}) makes {left + right!r} again: a rank file names each token once"
                )
            made.append(left + right)
        try:
            spelt = {token: bytes(table[ch] for ch in token) for token in (*bytes_to_unicode(), *made)}
        except KeyError as exc:
            raise UnsupportedModelError(f"a merge result holds {exc.args[0]!r}, not a GPT-2 byte character") from None
        made_ids = [self.vocab[token] for token in made]
        if all(a < b for a, b in pairwise(made_ids)):
            ids = {token: self.vocab[token] for token in spelt}
        else:
            order = sorted(range(256), key=byte_ids.__getitem__)
            ids = {bytes_to_unicode()[byte]: rank for rank, byte in enumerate(order)}
            ids.update((token, 256 + k) for k, token in enumerate(made))
        ranks = {spelt[token]: rank for token, rank in ids.items()}
        ours = [(spelt[left], spelt[right]) for left, right in self.merges]
        theirs = merges_from_ranks(ranks, "these merges as ranks")
        for number, (mine, other) in enumerate(zip(ours, theirs, strict=True), start=1):
            if mine != other:
                raise UnsupportedModelError(
                    f"merge {number} joins {mine!r}; tiktoken, merging by the ranks, would join {other!r}: "
                    "a rank file cannot hold these merges"
                )
        write_ranks(path, ranks)
        return {self.vocab[token]: rank for token, rank in ids.items()}

    @classmethod
    def load_tiktoken(
        cls, path: str | os.PathLike[str], pattern: str = "gpt2", *, unk_token: str | None = None
    ) -> Tokenizer:
        """A byte-scheme model from a tiktoken rank file: ids are the ranks, merges rebuilt from them.

        The merges are rebuilt as tiktoken's converters do (:func:`.ranks.merges_from_ranks`):
        for each token in rank order, the split into two lower-ranked tokens that merging
        its bytes by rank ends in. *pattern* is the pre-split, which a rank file does not
        record: ``"gpt2"`` (tiktoken's ``gpt2`` and ``r50k_base``), ``"cl100k"``
        (``cl100k_base``) or ``"o200k"`` (``o200k_base``), by name or as tiktoken's
        ``pat_str``; another regex raises :class:`UnsupportedModelError`.
        """
        from .ranks import merges_from_ranks, read_ranks

        name = _pattern(pattern)
        ranks = read_ranks(path)
        merges = merges_from_ranks(ranks, os.fspath(path))
        table = bytes_to_unicode()

        def spell(token: bytes) -> str:
            return "".join(table[b] for b in token)

        vocab = {spell(token): rank for token, rank in ranks.items()}
        return cls(
            [(spell(a), spell(b)) for a, b in merges], scheme="byte", vocab=vocab, unk_token=unk_token, pattern=name
        )


def _pattern(pattern: str) -> Pattern:
    """The name of a pre-split *pattern* given by name or as a regex; UnsupportedModelError for another."""
    name = pattern_of(pattern)
    if name is None:
        raise UnsupportedModelError(
            f"pattern {pattern!r}: bytepair cuts text by GPT-2's, cl100k_base's and o200k_base's patterns only "
            "(pattern='gpt2', 'cl100k', 'o200k', or tiktoken's pat_str of one of them)"
        )
    return name


def _piece_bytes(piece: str, table: dict[str, int]) -> bytes:
    """A byte-level token's bytes; a character outside GPT-2's byte map stands for its own UTF-8."""
    return b"".join(bytes((table[ch],)) if ch in table else ch.encode("utf-8", "surrogatepass") for ch in piece)


def _default_vocab(merges: list[tuple[str, str]], scheme: Scheme, alphabet: Sequence[str] | None) -> dict[str, int]:
    """The alphabet's ids, then one id per new merge result, in merge order."""
    if alphabet is None:
        if scheme == "byte":
            alphabet = bytes_to_unicode()
        else:  # a loaded codes file: the characters of the symbols no merge makes, in both forms
            chars = _base_chars(merges)
            alphabet = sorted(chars | {ch + WORD_END for ch in chars})
    vocab: dict[str, int] = {}
    for token in chain(alphabet, (left + right for left, right in merges)):
        vocab.setdefault(token, len(vocab))
    return vocab


def _base_chars(merges: list[tuple[str, str]]) -> set[str]:
    """The characters of a codes file: its symbols that no merge makes, without ``</w>``."""
    made = {left + right for left, right in merges}
    return {s.removesuffix(WORD_END) for pair in merges for s in pair if s not in made}


def _check_vocab(vocab: dict[str, int], merges: list[tuple[str, str]]) -> None:
    """Every merge's parts and result have ids, and no two tokens share one."""
    for number, (left, right) in enumerate(merges, start=1):
        for token in (left, right, left + right):
            if token not in vocab:
                raise VocabMismatchError(f"merge {number} ({left} {right}): {token!r} is not in the vocabulary")
    if len(set(vocab.values())) != len(vocab):
        raise VocabMismatchError("the vocabulary gives one id to two tokens")
    if any(i < 0 for i in vocab.values()):
        raise VocabMismatchError("the vocabulary holds a negative id")
