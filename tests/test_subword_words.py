"""Cutting text into words (subword-nmt's rule) and chunks (GPT-2's), and counting them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.subword import count_words
from bytepair.subword.words import iter_lines, split_chunks, split_words

# every kind of whitespace and line break str.splitlines and str.split know, among letters
spaced = st.text(alphabet=st.sampled_from("ab é \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u2029\u3000"), max_size=40)


def subword_nmt_words(text: str) -> list[str]:
    """What subword-nmt's learn-bpe counts: codecs' lines (str.splitlines), each strip('\\r\\n ').split(' ')."""
    return [w for line in text.splitlines(keepends=True) for w in line.strip("\r\n ").split(" ") if w]


@settings(max_examples=500)
@given(spaced)
def test_split_words_is_subword_nmts(text: str) -> None:
    assert split_words(text) == subword_nmt_words(text)


@settings(deadline=None)  # the first byte-scheme call builds GPT-2's pattern
@given(st.lists(spaced, max_size=6), st.integers(0, 6))
def test_counts_add_across_chunks(lines: list[str], cut: int) -> None:
    assert count_words(lines[:cut]) + count_words(lines[cut:]) == count_words(lines)
    assert count_words(lines[:cut], scheme="byte") + count_words(lines[cut:], scheme="byte") == count_words(
        lines, scheme="byte"
    )


@settings(deadline=None)
@given(st.text())
def test_chunks_join_to_the_text(text: str) -> None:
    assert "".join(split_chunks(text)) == text


def test_chunks_are_gpt2s() -> None:
    assert split_chunks("Hello  world's 12ab!!\n\n x") == [
        "Hello",
        " ",
        " world",
        "'s",
        " 12",
        "ab",
        "!!",
        "\n\n",
        " x",
    ]


def test_corpus_kinds(tmp_path: Path) -> None:
    path = tmp_path / "text.txt"
    path.write_bytes(b"one two\r\nthree\n")
    assert list(iter_lines(path)) == ["one two\r\n", "three\n"]
    assert list(iter_lines(str(path))) == list(iter_lines([path]))
    assert list(iter_lines(["a b", "c"])) == ["a b", "c"]
    with pytest.raises(TypeError, match="lines"):
        list(iter_lines([b"bytes"]))  # type: ignore[list-item]


def test_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="scheme"):
        count_words(["a"], scheme="char")  # type: ignore[arg-type]


@settings(max_examples=50)
@given(spaced, st.integers(1, 12))
def test_files_read_in_blocks_count_as_lines(text: str, block: int) -> None:
    import tempfile

    from bytepair.subword import words

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "text"
        path.write_bytes(text.encode("utf-8"))
        saved = words._BLOCK
        words._BLOCK = block  # blocks of a few characters: words meet block edges
        try:
            assert count_words(path) == count_words([path]) == count_words([text])
        finally:
            words._BLOCK = saved
