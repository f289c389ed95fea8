"""bytepair.subword.learn against the real subword-nmt, and the seeds' worked examples."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.subword import count_words, learn, learn_merges
from bytepair.subword.learn import learn_python
from tests.subword_reference import ENGLISH, english, snmt_learn

# words of a few letters, so pairs tie often and the tie rule is what decides
words = st.text(alphabet="abcdeé", min_size=1, max_size=8)
texts = st.lists(st.lists(words, max_size=12).map(" ".join), min_size=1, max_size=30).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(texts, st.integers(1, 60), st.integers(1, 3))
def test_merges_equal_subword_nmt_on_generated_text(text: str, merges: int, min_frequency: int) -> None:
    expected = snmt_learn(text, merges, min_frequency)
    assert learn(text.split("\n"), merges, min_frequency=min_frequency).merges == expected


# text holding the marker itself and backslashes (subword-nmt escapes them in its regex replacement)
marked = st.text(alphabet="ab</w>\\é", min_size=1, max_size=9)
marked_texts = st.lists(st.lists(marked, max_size=10).map(" ".join), min_size=1, max_size=20).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(marked_texts, st.integers(1, 80), st.integers(1, 2))
def test_merges_equal_subword_nmt_on_text_holding_the_marker(text: str, merges: int, min_frequency: int) -> None:
    assert learn(text.split("\n"), merges, min_frequency=min_frequency).merges == snmt_learn(
        text, merges, min_frequency
    )


@pytest.mark.parametrize("name", ENGLISH)
def test_merges_equal_subword_nmt_on_english_texts(name: str) -> None:
    text = english(name)
    assert learn(text.split("\n"), 1000).merges == snmt_learn(text, 1000)


def test_seed_000_low_lower_lowest() -> None:
    """seeds/000: its text says (e,r) first 'appears 3 times'; its code (a separate '</w>' and first
    appearance breaking ties) learns (l,o) first. subword-nmt's rules (</w> glued, the greater pair
    among equal counts) give neither: (w,e), (l,o) and (e,r</w>) all count 3 and (w,e) is the greatest."""
    tok = learn(["low lower lowest", "newer wider"], 20)
    assert tok.merges == snmt_learn("low lower lowest\nnewer wider", 20)
    assert tok.merges[0] == ("w", "e")
    assert len(tok.merges) == 3  # then every pair counts 1, below min_frequency 2


def test_seed_000_first_appearance_code() -> None:
    """seeds/000's own code (max(pairs, key=pairs.get) over a Counter filled word by word, '</w>' a
    symbol of its own) learns (l,o), (lo,w), (e,r), (er,</w>): first appearance breaks the ties,
    which our rule does not; with one word per distinct spelling and min_frequency 1 our first merge
    among the three pairs counting 3 is still the greatest, (w,e)."""
    counts = Counter(["low", "lower", "lowest", "newer", "wider"])
    found = learn_merges(counts, 1, min_frequency=1)
    assert found.merges == [("w", "e")] and found.counts == [3]


def test_seed_001_low_low_low() -> None:
    """seeds/001: 'low low low lower newest' without '</w>'; its code takes (l,o) (4 times, first
    seen). With '</w>' glued, (l,o) counts 4 and (o,w</w>) 3, so (l,o) is first here too."""
    tok = learn(["low low low lower newest"], 1)
    assert tok.merges == [("l", "o")]
    assert learn_merges(count_words(["low low low lower newest"]), 1).counts == [4]


def test_seed_002_low_lowest_newer_wider() -> None:
    """seeds/002 (a '·' end symbol of its own) merges (r,·), (l,o), (lo,w), (e,r·): no one rule gives
    that order. All five pairs count 2; subword-nmt's rule takes the greatest, (w,e), then
    (l,o) ... we follow subword-nmt and check against it."""
    tok = learn(["low lowest newer wider"], 4)
    assert tok.merges == snmt_learn("low lowest newer wider", 4)
    assert tok.merges[0] == ("w", "e")


def test_seed_003_counts_weigh_words() -> None:
    """seeds/003: {'this': 10, 'book': 2, 'thor': 7, 'soon': 3}: (t,h) counts 10 + 7 = 17 and is first."""
    found = learn_merges({"this": 10, "book": 2, "thor": 7, "soon": 3}, 1)
    assert found.merges == [("t", "h")] and found.counts == [17]


def test_seed_004_aaabdaaabac() -> None:
    """seeds/004: 'aaabdaaabac' as one word: (a,a) counts 4 (overlaps counted), then (aa,a) and (a,b)
    tie at 2 (the text takes (aa,a), the first met; the greater pair is also (aa,a)), then (aaa,b);
    then every pair counts 1 and min_frequency 2 stops it, as the text stops."""
    found = learn_merges({"aaabdaaabac": 1}, 10)
    assert found.merges == [("a", "a"), ("aa", "a"), ("aaa", "b")]
    assert found.counts == [4, 2, 2]
    assert found.merges == snmt_learn("aaabdaaabac", 10)


def test_counts_add_across_chunks() -> None:
    lines = ["the cat sat", "on the mat", "the end"]
    assert count_words(lines[:2]) + count_words(lines[2:]) == count_words(lines)
    assert learn(counts=count_words(lines[:2]) + count_words(lines[2:]), merges=5).merges == learn(lines, 5).merges


def test_corpus_as_path_and_list_of_paths(tmp_path: pytest.TempPathFactory) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    one.write_text("low lower lowest\n", encoding="utf-8")
    two.write_text("newer wider\n", encoding="utf-8")
    expected = learn(["low lower lowest", "newer wider"], 10).merges
    assert learn([one, two], 10).merges == expected
    assert learn(str(one), 10).merges == learn(["low lower lowest"], 10).merges


@pytest.mark.parametrize("bad", [-1, None, 1.5, True])
def test_bad_merges_argument(bad: object) -> None:
    with pytest.raises(ValueError, match="merges"):
        learn(["a b"], bad)  # type: ignore[arg-type]


def test_corpus_or_counts_not_both() -> None:
    with pytest.raises(ValueError, match="not both"):
        learn(["a"], 1, counts={"a": 1})


def test_python_engine_symbols_grow_in_place() -> None:
    symbols = ["a", "b</w>"]
    pairs, counts = learn_python(np.array([0, 1]), np.array([2]), np.array([3]), symbols, 5, 2)
    assert pairs == [(0, 1)] and counts == [3] and symbols == ["a", "b</w>", "ab</w>"]
