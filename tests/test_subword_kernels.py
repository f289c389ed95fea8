"""The compiled subword loops (``bytepair.subword._compiled``, through ``_kernels``) against the Python engine.

The learner must give :func:`learn_python`'s merges, counts and new symbols for every
input (both schemes, any min_frequency, ties decided by code point order); the merge
table must give the Python tokenizer's tokens for every word. Both are called
directly here, whatever path the library takes; the last tests run the library on
each path (the ``kernels`` fixture).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "bytepair.subword._compiled",
    reason="the compiled kernels are not built (pip install . with a C compiler; see docs/kernels.md)",
)

from bytepair.subword import Tokenizer, _compiled, _kernels, count_words, learn, learn_merges
from bytepair.subword.learn import learn_python, spell, word_symbols
from tests.helpers import NOT_BUILT, compiled_available, use_kernels
from tests.subword_reference import ENGLISH, english, snmt_apply, snmt_learn

Result = tuple[list[tuple[int, int]], list[int], list[str]]


def _compiled_learn(counts: Mapping[str, int], merges: int, min_frequency: int = 2, scheme: str = "word") -> Result:
    alphabet, flat, lengths, freqs = spell(counts, scheme)  # type: ignore[arg-type]
    symbols = list(alphabet)
    pairs, found = _kernels.learn(flat, lengths, freqs, symbols, merges, min_frequency)
    return pairs, found, symbols


def _python_learn(counts: Mapping[str, int], merges: int, min_frequency: int = 2, scheme: str = "word") -> Result:
    alphabet, flat, lengths, freqs = spell(counts, scheme)  # type: ignore[arg-type]
    symbols = list(alphabet)
    pairs, found = learn_python(flat, lengths, freqs, symbols, merges, min_frequency)
    return pairs, found, symbols


def _named(result: Result) -> list[tuple[str, str]]:
    pairs, _, symbols = result
    return [(symbols[a], symbols[b]) for a, b in pairs]


# -- the learner on generated words ----------------------------------------------------------------

# few letters, so pairs tie often and the tie rule decides; U+FFFF sorts below U+1F600 by code point
# (not by UTF-16 units); a lone surrogate; the marker's own characters
word_counts = st.dictionaries(
    st.text(alphabet="abcab\u00e9\uffff\U0001f600\ud800", min_size=1, max_size=10), st.integers(1, 6), max_size=40
)
marked_counts = st.dictionaries(st.text(alphabet="ab</w>", min_size=1, max_size=9), st.integers(1, 4), max_size=30)
# many words of one count: every pair ties with others
tied_counts = (
    st.lists(st.text(alphabet="abcd", min_size=2, max_size=6), max_size=30)
    .map(dict.fromkeys)
    .map(lambda words: dict.fromkeys(words, 3))
)


@settings(max_examples=300, deadline=None)
@given(word_counts, st.integers(0, 80), st.integers(1, 3), st.sampled_from(["word", "byte"]))
def test_compiled_equals_python(counts: dict[str, int], merges: int, min_frequency: int, scheme: str) -> None:
    assert _compiled_learn(counts, merges, min_frequency, scheme) == _python_learn(
        counts, merges, min_frequency, scheme
    )


@settings(max_examples=200, deadline=None)
@given(st.one_of(marked_counts, tied_counts), st.integers(0, 60), st.integers(1, 2), st.sampled_from(["word", "byte"]))
def test_compiled_equals_python_on_ties_and_the_marker(
    counts: dict[str, int], merges: int, min_frequency: int, scheme: str
) -> None:
    assert _compiled_learn(counts, merges, min_frequency, scheme) == _python_learn(
        counts, merges, min_frequency, scheme
    )


def test_a_merge_that_spells_an_existing_symbol_reuses_it() -> None:
    """Text holding a literal '</w>': ('a</', 'w>') spells 'a</w>', already the symbol of a word-final
    'a'; both engines give the two one id (symbols are strings, as in subword-nmt)."""
    counts = {"a</w>b": 4, "bb": 5, "aa</w>a": 2, "a</w>a": 3}
    pairs, found, symbols = _python_learn(counts, 50, 1)
    assert len(symbols) - len(spell(counts, "word")[0]) < len(pairs)  # a merge made no new symbol
    assert (pairs, found, symbols) == _compiled_learn(counts, 50, 1)
    text = "\n".join(" ".join([word] * n) for word, n in counts.items())
    assert learn(text.split("\n"), 50, min_frequency=1).merges == snmt_learn(text, 50, 1)


def test_equal_counts_go_by_code_point_not_by_id() -> None:
    """'\\uffff' has a smaller id than '😀' here and a smaller code point: the pair holding '😀' wins the
    tie. 'z' then 'ab': the greater left string wins before the right one is looked at."""
    counts = {"\uffffx": 2, "\U0001f600x": 2, "zq": 2, "ab": 2}
    assert _named(_compiled_learn(counts, 4, 1))[:2] == [("\U0001f600", "x</w>"), ("\uffff", "x</w>")]
    assert _compiled_learn(counts, 4, 1) == _python_learn(counts, 4, 1)


def test_min_frequency_stops_the_loop() -> None:
    counts = {"abab": 1, "cd": 3}
    assert _named(_compiled_learn(counts, 10, 3)) == [("c", "d</w>")]
    assert _compiled_learn(counts, 10, 4) == ([], [], spell(counts, "word")[0])
    for floor in (1, 2, 3, 4):
        assert _compiled_learn(counts, 10, floor) == _python_learn(counts, 10, floor)


# -- the seeds' worked examples ----------------------------------------------------------------------


def test_seed_000_low_lower_lowest() -> None:
    """seeds/000: subword-nmt's rule takes (w,e) of the three pairs counting 3; then all count 1."""
    counts = count_words(["low lower lowest", "newer wider"])
    result = _compiled_learn(counts, 20)
    assert result == _python_learn(counts, 20)
    assert _named(result) == [("w", "e"), ("l", "o"), ("we", "r</w>")] and result[1] == [3, 3, 2]


def test_seed_000_first_appearance_code() -> None:
    """seeds/000's code takes (l,o) by first appearance; ours takes the greatest of the pairs counting 3."""
    counts = {"low": 1, "lower": 1, "lowest": 1, "newer": 1, "wider": 1}
    result = _compiled_learn(counts, 1, 1)
    assert _named(result) == [("w", "e")] and result[1] == [3]


def test_seed_001_low_low_low() -> None:
    counts = count_words(["low low low lower newest"])
    result = _compiled_learn(counts, 1)
    assert _named(result) == [("l", "o")] and result[1] == [4]


def test_seed_002_low_lowest_newer_wider() -> None:
    counts = count_words(["low lowest newer wider"])
    result = _compiled_learn(counts, 4)
    assert result == _python_learn(counts, 4)
    assert _named(result) == snmt_learn("low lowest newer wider", 4) and _named(result)[0] == ("w", "e")


def test_seed_003_counts_weigh_words() -> None:
    result = _compiled_learn({"this": 10, "book": 2, "thor": 7, "soon": 3}, 1)
    assert _named(result) == [("t", "h")] and result[1] == [17]


def test_seed_004_aaabdaaabac() -> None:
    """Overlaps count ((a,a) 4), a merge replaces left to right, then min_frequency 2 stops it."""
    result = _compiled_learn({"aaabdaaabac": 1}, 10)
    assert _named(result) == [("a", "a"), ("aa", "a"), ("aaa", "b")] and result[1] == [4, 2, 2]
    assert result == _python_learn({"aaabdaaabac": 1}, 10)


# -- the learner on the corpus texts -------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["word", "byte"])
@pytest.mark.parametrize("name", ENGLISH)
def test_compiled_equals_python_on_english(name: str, scheme: str) -> None:
    counts = count_words(english(name).split("\n"), scheme=scheme)  # type: ignore[arg-type]
    assert _compiled_learn(counts, 2000, 2, scheme) == _python_learn(counts, 2000, 2, scheme)


@pytest.mark.parametrize("name", ENGLISH[:4])
def test_compiled_equals_subword_nmt(name: str) -> None:
    text = english(name)
    assert _named(_compiled_learn(count_words(text.split("\n")), 3000)) == snmt_learn(text, 3000)


def test_counts_and_merges_on_joined_english() -> None:
    text = "\n".join(english(name) for name in ENGLISH[4:8])
    counts = count_words(text.split("\n"))
    result = _compiled_learn(counts, 4000)
    assert result == _python_learn(counts, 4000)
    assert _named(result) == snmt_learn(text, 4000)
    assert result[1] == sorted(result[1], reverse=True)  # a best count never rises


def test_observer_hears_every_merge_as_in_python() -> None:
    counts = count_words(["low lower lowest newer wider"] * 3 + ["aaabdaaabac"])
    alphabet, flat, lengths, freqs = spell(counts, "word")
    heard: dict[str, list[tuple[int, int]]] = {"python": [], "compiled": []}
    learn_python(flat, lengths, freqs, list(alphabet), 30, 1, lambda *call: heard["python"].append(call))
    _kernels.learn(flat, lengths, freqs, list(alphabet), 30, 1, lambda *call: heard["compiled"].append(call))
    assert heard["compiled"] == heard["python"] and len(heard["python"]) > 5


def test_inputs_are_not_changed() -> None:
    alphabet, flat, lengths, freqs = spell(count_words(["low lower lowest newer wider"] * 3), "word")
    before = flat.copy(), lengths.copy(), freqs.copy()
    _kernels.learn(flat, lengths, freqs, list(alphabet), 30, 1)
    assert all(np.array_equal(x, y) for x, y in zip(before, (flat, lengths, freqs), strict=True))


def test_threads_learn_at_once() -> None:
    """The loop runs without the GIL: two threads learning at once get what one thread gets."""
    counts = count_words(["low lower lowest newer wider slower", "aaabdaaabac the cat sat on the mat"] * 50)
    expected = _python_learn(counts, 40, 1)
    results: list[Result] = []
    threads = [threading.Thread(target=lambda: results.append(_compiled_learn(counts, 40, 1))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 4


# -- hostile and edge inputs -------------------------------------------------------------------------


@pytest.mark.parametrize("merges", [0, -5, 10**30])
def test_any_number_of_merges(merges: int) -> None:
    counts = {"aaabdaaabac": 3, "abc": 2}
    assert _compiled_learn(counts, merges, 1) == _python_learn(counts, merges, 1)


def test_no_words() -> None:
    assert _compiled_learn({}, 10) == _python_learn({}, 10) == ([], [], spell({}, "word")[0])
    assert _compiled_learn({"a": 5, "b": 1}, 10) == _python_learn({"a": 5, "b": 1}, 10)


def test_min_frequency_below_one_acts_as_one() -> None:
    counts = {"abab": 1, "cd": 3}
    assert _compiled_learn(counts, 10, 0) == _compiled_learn(counts, 10, 1) == _python_learn(counts, 10, 0)


def _arrays(ids: list[int], lengths: list[int], freqs: list[int]) -> tuple[Any, Any, Any]:
    return np.array(ids, np.int32), np.array(lengths, np.int64), np.array(freqs, np.int64)


@pytest.mark.parametrize(
    ("ids", "lengths", "freqs", "message"),
    [
        ([0, 1, 1], [2, 2], [1, 1], "do not add up"),
        ([0, 1, 1], [2], [1], "do not add up"),
        ([0, 1, 1, 0], [5, -1], [1, 1], "do not add up"),
        ([0, 1], [2], [1, 1], "2 counts"),
        ([0, 2], [2], [1], "outside 0 .. 1"),
        ([0, -1], [2], [1], "outside 0 .. 1"),
    ],
)
def test_the_loop_refuses_inconsistent_arrays(
    ids: list[int], lengths: list[int], freqs: list[int], message: str
) -> None:
    sym, length, freq = _arrays(ids, lengths, freqs)
    chars, clen = np.array([97, 98], np.int32), np.array([1, 1], np.int64)
    with pytest.raises(ValueError, match=message):
        _compiled.learn(sym, length, freq, chars, clen, 5, 1)


def test_the_loop_refuses_strings_that_do_not_add_up_and_min_frequency_zero() -> None:
    sym, length, freq = _arrays([0, 1], [2], [1])
    with pytest.raises(ValueError, match="string lengths"):
        _compiled.learn(sym, length, freq, np.array([97, 98], np.int32), np.array([1, 2], np.int64), 5, 1)
    with pytest.raises(ValueError, match="min_frequency"):
        _compiled.learn(sym, length, freq, np.array([97, 98], np.int32), np.array([1, 1], np.int64), 5, 0)


def test_the_loop_merges_in_place_and_numbers_new_symbols() -> None:
    sym, length, freq = _arrays([0, 0, 0, 1, 0, 0], [4, 2], [1, 1])
    lefts, rights, counts, nsymbols = _compiled.learn(
        sym, length, freq, np.array([97, 98], np.int32), np.array([1, 1], np.int64), 5, 1
    )
    # (a,a) 2 + 1 (overlaps count); then (aa,a) and (a,b) tie at 1 and 'aa' > 'a'; then (aaa,b)
    assert (lefts.tolist(), rights.tolist(), counts.tolist(), nsymbols) == ([0, 2, 3], [0, 0, 1], [3, 1, 1], 5)
    assert length.tolist() == [1, 1] and sym[0] == 4 and sym[4] == 2


def test_symbols_spelt_alike_take_the_later_id_as_python_does() -> None:
    """Two symbols with one string (only a direct call can make them): a merge spelling it takes the
    later id, as the Python engine's dict does."""
    symbols = ["a", "b", "ab", "ab"]
    flat, lengths, freqs = np.array([0, 1, 2, 2], np.int32), np.array([2, 2]), np.array([3, 1])
    python_symbols, compiled_symbols = list(symbols), list(symbols)
    expected = learn_python(flat, lengths, freqs, python_symbols, 5, 1)
    assert _kernels.learn(flat, lengths, freqs, compiled_symbols, 5, 1) == expected
    assert compiled_symbols == python_symbols


# -- the merge table (encoding) -----------------------------------------------------------------------


def _table_tokens(tok: Tokenizer, words: list[str]) -> dict[str, list[int]]:
    """Each word the vocabulary covers, merged by the compiled table (ids)."""
    spelt: dict[str, list[int]] = {}
    for word in words:
        with contextlib.suppress(KeyError):
            spelt[word] = [tok.vocab[s] for s in word_symbols(word, tok.scheme)]
    lengths = np.array([len(ids) for ids in spelt.values()], np.int64)
    flat = np.array([i for ids in spelt.values() for i in ids], np.int64)
    merged, starts, merged_lengths = _kernels.MergeTable(tok.merges, tok.vocab).apply(flat, lengths)
    assert merged.dtype == starts.dtype == merged_lengths.dtype == np.int64
    return {
        word: merged[start : start + n].tolist()
        for word, start, n in zip(spelt, starts.tolist(), merged_lengths.tolist(), strict=True)
    }


def _python_tokens(tok: Tokenizer, words: list[str]) -> dict[str, list[int]]:
    """Each covered word through the Python tokenizer (a fresh one: no cache shared)."""
    fresh = Tokenizer(tok.merges, scheme=tok.scheme, vocab=tok.vocab)
    out: dict[str, list[int]] = {}
    for word in words:
        with contextlib.suppress(KeyError):
            out[word] = [fresh.vocab[t] for t in fresh.tokenize_word(word)]
    return out


@pytest.mark.parametrize("scheme", ["word", "byte"])
def test_table_equals_python_on_english(scheme: str) -> None:
    tok = learn(english("canterbury/alice29.txt").split("\n"), 2000, scheme=scheme)  # type: ignore[arg-type]
    words = sorted(set(tok.words(english("calgary/paper2"))))
    expected = _python_tokens(tok, words)
    assert len(expected) > 0.9 * len(words)
    assert _table_tokens(tok, words) == expected


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(alphabet="abcé😀 \n", max_size=30), min_size=1, max_size=8),
    st.text(alphabet="abcdé😀 \n\t", max_size=60),
    st.sampled_from(["word", "byte"]),
    st.integers(1, 60),
)
def test_table_equals_python_on_generated_text(training: list[str], text: str, scheme: str, merges: int) -> None:
    tok = learn(training, merges, scheme=scheme, min_frequency=1)  # type: ignore[arg-type]
    words = list(dict.fromkeys(tok.words(text)))
    assert _table_tokens(tok, words) == _python_tokens(tok, words)


REPEATED = [("a", "b"), ("b", "c</w>"), ("a", "b"), ("ab", "c</w>")]  # a codes file may list a merge twice


def test_table_keeps_a_repeated_merges_first_rank() -> None:
    """The first rank of a repeated merge counts, and the merges after it still apply: subword-nmt's
    apply-bpe gives 'abc bc ab@@ abc c@@ a@@ b'."""
    tok = Tokenizer(REPEATED)
    codes = "\n".join(["#version: 0.2", *(f"{a} {b}" for a, b in REPEATED)]) + "\n"
    assert snmt_apply(codes, ["abc bc ababc cab"]) == ["abc bc ab@@ abc c@@ a@@ b"]
    tokens = {
        word: [tok.vocab[t] for t in expected]
        for word, expected in [
            ("abc", ["abc</w>"]),
            ("bc", ["bc</w>"]),
            ("ababc", ["ab", "abc</w>"]),
            ("cab", ["c", "a", "b</w>"]),
        ]
    }
    assert _table_tokens(tok, list(tokens)) == tokens


def test_python_tokenizer_after_a_repeated_merge() -> None:
    """A merge ranked after a repeated one applies on both paths (the Python tokenizer once
    began its search below it)."""
    tok = Tokenizer(REPEATED)
    assert _python_tokens(tok, ["abc"]) == _table_tokens(tok, ["abc"])


def test_table_takes_ids_past_two_to_the_31() -> None:
    """A vocabulary may give any non-negative ids (vocab.json): the table keys a pair by both ids whole."""
    tok = learn(["low lower lowest newer wider"] * 3, 20, scheme="byte")
    vocab = {token: (i * 0x1_0000_0001 + 5) << 20 for i, token in enumerate(tok.vocab)}
    big = Tokenizer(tok.merges, scheme="byte", vocab=vocab)
    words = big.words("low lower lowest newer wider slowest")
    assert _table_tokens(big, words) == _python_tokens(big, words)


def test_table_apply_edge_inputs() -> None:
    table = _kernels.MergeTable([("a", "b")], {"a": 0, "b": 1, "ab": 2})
    merged, starts, lengths = table.apply(np.array([], np.int64), np.array([], np.int64))
    assert merged.size == starts.size == lengths.size == 0
    merged, starts, lengths = table.apply(np.array([0, 1, -1, 0, 1, 7, 1], np.int64), np.array([2, 0, 5]))
    assert lengths.tolist() == [1, 0, 4] and starts.tolist() == [0, 2, 2]
    assert merged[:1].tolist() == [2] and merged[2:6].tolist() == [-1, 2, 7, 1]  # ids no merge has stay
    with pytest.raises(ValueError, match="do not add up"):
        table.apply(np.array([0, 1], np.int64), np.array([3]))
    with pytest.raises(ValueError, match="negative id"):
        _compiled.MergeRanks(np.array([-1]), np.array([0]), np.array([1]))
    with pytest.raises(ValueError, match="made ids"):
        _compiled.MergeRanks(np.array([0]), np.array([0]), np.array([], np.int64))


# -- the library on each path ---------------------------------------------------------------------------


@contextlib.contextmanager
def _path(path: str) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        use_kernels(path, patch)
        yield


def test_both_paths_equal_subword_nmt(kernels: str) -> None:
    text = english(ENGLISH[0])
    assert learn(text.split("\n"), 3000).merges == snmt_learn(text, 3000)


def test_counts_on_both_paths(kernels: str) -> None:
    found = learn_merges(count_words(["aaabdaaabac", "low lower lowest newer wider"] * 2), 50, min_frequency=1)
    assert found.counts == _python_learn(count_words(["aaabdaaabac", "low lower lowest newer wider"] * 2), 50, 1)[1]


@pytest.mark.parametrize("scheme", ["word", "byte"])
def test_encoders_agree_on_english(kernels: str, scheme: str) -> None:
    text = english("calgary/paper2")
    training = [*english("canterbury/alice29.txt").split("\n"), text]  # every character of text is met
    tok = learn(training, 2000, scheme=scheme)  # type: ignore[arg-type]
    fresh = Tokenizer(tok.merges, scheme=tok.scheme, vocab=tok.vocab)
    expected = [fresh.vocab[t] for word in fresh.words(text) for t in fresh.tokenize_word(word)]
    assert tok.encode(text) == expected
    if scheme == "word":
        lines = text.split("\n")
        applied = Tokenizer(tok.merges, vocab=tok.vocab)
        assert list(Tokenizer(tok.merges, vocab=tok.vocab).apply_lines(lines)) == [applied.apply(x) for x in lines]


@pytest.mark.skipif(not compiled_available(), reason=NOT_BUILT)
@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abcé😀 \n", max_size=30), min_size=1, max_size=8), st.text(max_size=60))
def test_encoders_agree_on_generated_text(training: list[str], text: str) -> None:
    tok = learn(training, 40, scheme="byte", min_frequency=1)
    fresh = Tokenizer(tok.merges, scheme="byte", vocab=tok.vocab)
    expected = [fresh.vocab[t] for word in fresh.words(text) for t in fresh.tokenize_word(word)]
    for path in ("numpy", "compiled"):
        with _path(path):
            assert Tokenizer(tok.merges, scheme="byte", vocab=tok.vocab).encode(text) == expected
