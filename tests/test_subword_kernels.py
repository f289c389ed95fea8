"""The compiled learn loop gives the Python engine's merges, counts and symbols, for every input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.subword import Tokenizer, count_words, learn, learn_merges
from bytepair.subword.learn import learn_python, spell
from tests.subword_reference import ENGLISH, english, snmt_learn

KERNELS = [
    "numpy",
    pytest.param(
        "numba",
        marks=pytest.mark.skipif(not __import__("importlib").util.find_spec("numba"), reason="numba is the fast extra"),
    ),
]


@pytest.fixture(params=KERNELS)
def kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("BYTEPAIR_KERNELS", request.param)
    return str(request.param)


def _compiled(counts: dict[str, int], merges: int, min_frequency: int, scheme: str = "word") -> tuple[object, ...]:
    _kernels = pytest.importorskip("bytepair.subword._kernels", reason="numba is the fast extra")
    alphabet, flat, lengths, freqs = spell(counts, scheme)  # type: ignore[arg-type]
    symbols = list(alphabet)
    pairs, found = _kernels.learn(flat, lengths, freqs, symbols, merges, min_frequency)
    return pairs, found, symbols


def _python(counts: dict[str, int], merges: int, min_frequency: int, scheme: str = "word") -> tuple[object, ...]:
    alphabet, flat, lengths, freqs = spell(counts, scheme)  # type: ignore[arg-type]
    symbols = list(alphabet)
    pairs, found = learn_python(flat, lengths, freqs, symbols, merges, min_frequency)
    return pairs, found, symbols


word_counts = st.dictionaries(
    st.text(alphabet="abcab\u00e9\U0001f600", min_size=1, max_size=10), st.integers(1, 6), max_size=40
)


@settings(max_examples=200, deadline=None)
@given(word_counts, st.integers(0, 80), st.integers(1, 3), st.sampled_from(["word", "byte"]))
def test_compiled_equals_python(counts: dict[str, int], merges: int, min_frequency: int, scheme: str) -> None:
    assert _compiled(counts, merges, min_frequency, scheme) == _python(counts, merges, min_frequency, scheme)


def test_a_merge_that_spells_an_existing_symbol_reuses_it() -> None:
    """Text holding a literal '</w>': ('a</', 'w>') spells 'a</w>', already the symbol of a word-final
    'a'; both engines give the two one id (symbols are strings, as in subword-nmt)."""
    counts = {"a</w>b": 4, "bb": 5, "aa</w>a": 2, "a</w>a": 3}
    pairs, found, symbols = _python(counts, 50, 1)
    assert len(symbols) - len(spell(counts, "word")[0]) < len(pairs)  # a merge made no new symbol
    assert (pairs, found, symbols) == _compiled(counts, 50, 1)
    text = "\n".join(" ".join([word] * n) for word, n in counts.items())
    assert learn(text.split("\n"), 50, min_frequency=1).merges == snmt_learn(text, 50, 1)


@pytest.mark.parametrize("name", ENGLISH[:4])
def test_both_paths_equal_subword_nmt(kernels: str, name: str) -> None:
    text = english(name)
    assert learn(text.split("\n"), 3000).merges == snmt_learn(text, 3000)


def test_counts_and_merges_on_joined_english(kernels: str) -> None:
    text = "\n".join(english(name) for name in ENGLISH[4:8])
    found = learn_merges(count_words(text.split("\n")), 4000)
    assert found.merges == snmt_learn(text, 4000)
    assert found.counts == sorted(found.counts, reverse=True)  # a best count never rises


def _fresh(tok: Tokenizer) -> Tokenizer:
    return Tokenizer(tok.merges, scheme=tok.scheme, vocab=tok.vocab)


@pytest.mark.parametrize("scheme", ["word", "byte"])
def test_encoders_agree_on_english(kernels: str, scheme: str) -> None:
    text = english("calgary/paper2")
    training = [*english("canterbury/alice29.txt").split("\n"), text]  # every character of text is met
    tok = learn(training, 2000, scheme=scheme)  # type: ignore[arg-type]
    ids = tok.encode(text)
    assert ids == _reference_ids(tok, text)
    if scheme == "word":
        lines = text.split("\n")
        assert list(_fresh(tok).apply_lines(lines)) == [_fresh(tok).apply(line) for line in lines]


def _reference_ids(tok: Tokenizer, text: str) -> list[int]:
    """Word by word through the Python tokenizer, no cache shared."""
    fresh = _fresh(tok)
    return [fresh.vocab[t] for word in fresh.words(text) for t in fresh.tokenize_word(word)]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="abcé😀 \n", max_size=30), min_size=1, max_size=8), st.text(max_size=60))
def test_encoders_agree_on_generated_text(training: list[str], text: str) -> None:
    import os

    tok = learn(training, 40, scheme="byte", min_frequency=1)
    expected = _reference_ids(tok, text)
    old = os.environ.get("BYTEPAIR_KERNELS")
    try:
        for kernels in ("numpy", "numba"):
            os.environ["BYTEPAIR_KERNELS"] = kernels
            assert _fresh(tok).encode(text) == expected
    finally:
        if old is None:
            os.environ.pop("BYTEPAIR_KERNELS", None)
        else:
            os.environ["BYTEPAIR_KERNELS"] = old
