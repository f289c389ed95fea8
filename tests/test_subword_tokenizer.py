"""Tokenizer: apply-bpe's lines, encode/decode, save/load, and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bytepair.subword import (
    InvalidIdError,
    MalformedMergesError,
    ModelNotFoundError,
    SubwordError,
    Tokenizer,
    UnknownSymbolError,
    learn,
)
from bytepair.subword.formats import CODES_HEADER
from tests.subword_reference import english, snmt_apply, snmt_learn

words = st.text(alphabet="abcdeé", min_size=1, max_size=8)
lines = st.lists(words, max_size=10).map(" ".join)
# lines as apply-bpe meets them: runs of spaces, leading and trailing blanks, line ends
raw_lines = st.builds(
    lambda lead, body, trail: lead + body + trail,
    st.sampled_from(["", " ", "  ", "\r\n"]),
    st.lists(words, max_size=8).map("  ".join),
    st.sampled_from(["", "\n", " \n", "\r\n", "  "]),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(lines, min_size=1, max_size=20), st.lists(raw_lines, max_size=10), st.integers(1, 40))
def test_apply_equals_subword_nmt(training: list[str], applied: list[str], merges: int) -> None:
    text = "\n".join(training)
    learnt = snmt_learn(text, merges)
    assume(learnt)  # subword-nmt's apply-bpe cannot read a codes file without a merge
    codes = "\n".join([CODES_HEADER, *(f"{a} {b}" for a, b in learnt)]) + "\n"
    tok = learn(training, merges)
    assert [tok.apply(line) for line in applied + training] == snmt_apply(codes, applied + training)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(lines, min_size=1, max_size=10), st.lists(st.one_of(raw_lines, lines.map(lambda x: x + "\n")), max_size=12)
)
def test_apply_text_is_apply_line_by_line(training: list[str], applied: list[str]) -> None:
    tok = learn(training, 30)
    expected = "".join(Tokenizer(tok.merges).apply(line) for line in applied)
    assert "".join(tok.apply_text(applied)) == expected
    assert list(tok.apply_lines(applied)) == [Tokenizer(tok.merges).apply(line) for line in applied]


@pytest.mark.parametrize(
    "applied", [["a", "a"], ["a b", "c\n"], ["a\nb", "c\n"], ["x\n", "y"], ["a\n\n", "b"], ["", "a\n"]]
)
def test_apply_text_of_lines_without_their_ends_is_still_line_by_line(applied: list[str]) -> None:
    tok = learn(["a b c x y", "ab ab"], 10)
    assert "".join(tok.apply_text(applied)) == "".join(tok.apply(line) for line in applied)


def test_apply_equals_subword_nmt_on_english(tmp_path: Path) -> None:
    text = english("canterbury/alice29.txt")
    tok = learn(text.split("\n"), 2000)
    codes = tmp_path / "codes"
    tok.save(codes)
    other = english("canterbury/asyoulik.txt").split("\n")
    assert [tok.apply(line) for line in other] == snmt_apply(codes.read_text(encoding="utf-8"), other)


def test_tokens_keep_the_word_end_and_decode_joins_words() -> None:
    tok = learn(["low lower lowest", "newer wider"] * 3, 30)
    tokens = tok.tokenize("lower newest")
    assert tokens[-1].endswith("</w>") and "".join(tokens).replace("</w>", " ").split() == ["lower", "newest"]
    assert tok.decode(tok.encode("  lower newest   wider\n")) == "lower newest wider"
    assert [tok.vocab[t] for t in tokens] == tok.encode("lower newest")


@settings(max_examples=50, deadline=None)
@given(st.lists(lines, min_size=1, max_size=10), st.integers(0, 30))
def test_save_load_keeps_merges_and_apply(
    tmp_path_factory: pytest.TempPathFactory, training: list[str], n: int
) -> None:
    tok = learn(training, n)
    path = tmp_path_factory.mktemp("codes") / "codes"
    tok.save(path)
    assert path.read_text(encoding="utf-8").split("\n")[0] == "#version: 0.2"
    loaded = Tokenizer.load(path)
    assert loaded.merges == tok.merges
    assert [loaded.apply(line) for line in training] == [tok.apply(line) for line in training]


def test_load_reads_a_subword_nmt_codes_file(tmp_path: Path) -> None:
    path = tmp_path / "codes"
    path.write_text("#version: 0.2\nw e\nl o\nwe r</w>\n", encoding="utf-8")
    tok = Tokenizer.load(path)
    assert tok.merges == [("w", "e"), ("l", "o"), ("we", "r</w>")]
    assert tok.apply("lower") == "lo@@ wer"


def test_missing_codes_file(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="no such codes file"):
        Tokenizer.load(tmp_path / "absent")


@pytest.mark.parametrize("line", ["a", "a b c", "a  b", " "])
def test_malformed_merges_line(tmp_path: Path, line: str) -> None:
    path = tmp_path / "codes"
    path.write_text(f"#version: 0.2\nx y\n{line}\nz w\n", encoding="utf-8")
    with pytest.raises(MalformedMergesError, match=r":3: "):
        Tokenizer.load(path)


def test_codes_file_without_version_line(tmp_path: Path) -> None:
    path = tmp_path / "codes"
    path.write_text("e r\ner </w>\n", encoding="utf-8")
    with pytest.raises(MalformedMergesError, match=r":1: no '#version: 0\.2' line"):
        Tokenizer.load(path)


def test_decode_id_out_of_range() -> None:
    tok = learn(["low lower"], 3)
    with pytest.raises(InvalidIdError, match="not an id"):
        tok.decode([0, len(tok.vocab)])
    with pytest.raises(InvalidIdError):
        tok.decode([-1])


def test_encode_unknown_character() -> None:
    tok = learn(["low lower"], 3)
    with pytest.raises(UnknownSymbolError, match="no token 'a'"):
        tok.encode("lazy")


def test_errors_are_value_errors() -> None:
    for error in (InvalidIdError, MalformedMergesError, ModelNotFoundError, UnknownSymbolError):
        assert issubclass(error, SubwordError) and issubclass(error, ValueError)
