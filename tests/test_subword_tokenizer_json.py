"""Hugging Face's ``tokenizer.json``: we write what ``tokenizers`` loads, we read what it writes, same ids."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.subword import (
    MalformedModelError,
    ModelNotFoundError,
    Tokenizer,
    UnsupportedModelError,
    learn,
)
from bytepair.subword.tokenizer_json import GPT2_PATTERN, tokenizer_json
from tests.helpers import CORPUS
from tests.subword_reference import ENGLISH

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test extra")

TRAINING = [
    "Hello world! The café's 3 dogs ran 1,234 miles 😀😀 in 2024.\n",
    "  naïve    résumé\tcoöperate 😀 ½ Ⅻ x² \n",
    "it's they're we've I'm you'll he'd\n",
] * 5

# characters this Python's Unicode tables assign (newer ones may be cut otherwise), no lone surrogates
# (tokenizers takes Rust strings), and the ones GPT-2's pattern treats specially
known = st.characters(exclude_categories=("Cs", "Cn"))
texts = st.text(alphabet=st.one_of(known, st.sampled_from(" \t\n'sdl1½²Ⅻ\x1c\x85\xa0\u3000")), max_size=60)


def _english() -> list[str]:
    paths = [CORPUS / name for name in ENGLISH]
    if not all(path.exists() for path in paths):
        pytest.skip(f"{CORPUS} is absent: the corpora live in ../shared beside the repo")
    return [path.read_text(encoding="utf-8") for path in paths]


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> tuple[Tokenizer, Any]:
    """A model bytepair learnt, and Hugging Face's Tokenizer loaded from the tokenizer.json bytepair wrote."""
    tok = learn(TRAINING, 300, scheme="byte", unk_token="<unk>")
    path = tmp_path_factory.mktemp("ours") / "tokenizer.json"
    tok.save(path, format="tokenizer.json")
    return tok, tokenizers.Tokenizer.from_file(str(path))


def _hf_trained(lines: list[str], vocab_size: int, pre_tokenizer: Any = None, **model: Any) -> Any:
    hf = tokenizers.Tokenizer(tokenizers.models.BPE(**model))
    hf.pre_tokenizer = pre_tokenizer or tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    hf.decoder = tokenizers.decoders.ByteLevel()
    alphabet = [] if model.get("unk_token") else tokenizers.pre_tokenizers.ByteLevel.alphabet()
    specials = [model["unk_token"]] if model.get("unk_token") else []
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=alphabet, special_tokens=specials, show_progress=False
    )
    hf.train_from_iterator(lines, trainer)
    return hf


@pytest.fixture(scope="module")
def theirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Tokenizer, Any]:
    """A tokenizer.json Hugging Face's trainer wrote, and bytepair's Tokenizer loaded from it."""
    hf = _hf_trained(TRAINING, 600)
    path = tmp_path_factory.mktemp("theirs") / "tokenizer.json"
    hf.save(str(path))
    return Tokenizer.load(path), hf


# -- both directions, on generated text and on the corpus texts --------------------------------------------


@settings(max_examples=300, deadline=None)
@given(texts)
def test_hugging_face_encodes_like_us_with_our_tokenizer_json(ours: tuple[Tokenizer, Any], text: str) -> None:
    tok, hf = ours
    ids = tok.encode(text)
    assert hf.encode(text).ids == ids
    assert hf.decode(ids) == text == tok.decode(ids)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_we_encode_like_hugging_face_with_its_tokenizer_json(theirs: tuple[Tokenizer, Any], text: str) -> None:
    tok, hf = theirs
    ids = hf.encode(text).ids
    assert tok.encode(text) == ids
    assert tok.decode(ids) == text


def test_both_directions_on_the_corpus_texts(tmp_path: Path) -> None:
    texts = _english()
    tok = learn(texts[0].splitlines(keepends=True), 1500, scheme="byte")
    tok.save(tmp_path / "ours.json", format="tokenizer.json")
    hf_ours = tokenizers.Tokenizer.from_file(str(tmp_path / "ours.json"))
    hf = _hf_trained(texts[1].splitlines(keepends=True), 2000)
    hf.save(str(tmp_path / "theirs.json"))
    loaded = Tokenizer.load(tmp_path / "theirs.json")
    for text in texts:
        assert hf_ours.encode(text).ids == tok.encode(text)
        assert loaded.encode(text) == hf.encode(text).ids


def test_save_then_load_keeps_the_model(ours: tuple[Tokenizer, Any], tmp_path: Path) -> None:
    tok, _ = ours
    tok.save(tmp_path / "tokenizer.json", format="tokenizer.json")
    loaded = Tokenizer.load(tmp_path / "tokenizer.json")
    assert (loaded.scheme, loaded.merges, loaded.vocab, loaded.unk_token) == ("byte", tok.merges, tok.vocab, "<unk>")
    assert Tokenizer.load(tmp_path / "tokenizer.json", unk_token="[UNK]").unk_token == "[UNK]"


def test_a_split_by_gpt2s_pattern_then_byte_level(tmp_path: Path) -> None:
    """The newer spelling of GPT-2's pre-tokenizer: Split(GPT-2's regex, Isolated), ByteLevel(use_regex=False)."""
    pre = tokenizers.pre_tokenizers
    sequence = pre.Sequence(
        [
            pre.Split(tokenizers.Regex(GPT2_PATTERN), behavior="isolated"),
            pre.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf = _hf_trained(TRAINING, 500, pre_tokenizer=sequence)
    hf.save(str(tmp_path / "tokenizer.json"))
    tok = Tokenizer.load(tmp_path / "tokenizer.json")
    for text in [*TRAINING[:3], "Ünïcödé ½ 😀  x\n\n y", "it's 12,345 café's"]:
        assert tok.encode(text) == hf.encode(text).ids


def test_merges_in_either_encoding(theirs: tuple[Tokenizer, Any], tmp_path: Path) -> None:
    tok, hf = theirs
    doc = json.loads(hf.to_str())
    assert isinstance(doc["model"]["merges"][0], list)  # tokenizers 0.20 and later write pairs
    doc["model"]["merges"] = [" ".join(pair) for pair in doc["model"]["merges"]]
    (tmp_path / "strings.json").write_text(json.dumps(doc), encoding="utf-8")
    assert Tokenizer.load(tmp_path / "strings.json").merges == tok.merges


def test_unknown_bytes_become_the_unk_token_as_in_hugging_face(tmp_path: Path) -> None:
    """A model trained without the full byte alphabet, with an unk token: bytes it never met are unk."""
    hf = _hf_trained(TRAINING, 300, unk_token="<unk>")
    hf.save(str(tmp_path / "tokenizer.json"))
    tok = Tokenizer.load(tmp_path / "tokenizer.json")
    assert tok.unk_token == "<unk>"
    text = "Hello zebra, ¿qué? 世界"
    assert tok.encode(text) == hf.encode(text).ids and tok.vocab["<unk>"] in tok.encode(text)


def test_added_tokens_join_the_vocabulary(theirs: tuple[Tokenizer, Any], tmp_path: Path) -> None:
    _, hf = theirs
    hf.add_special_tokens(["<|endoftext|>"])
    hf.save(str(tmp_path / "tokenizer.json"))
    tok = Tokenizer.load(tmp_path / "tokenizer.json")
    eot = hf.token_to_id("<|endoftext|>")
    assert tok.vocab["<|endoftext|>"] == eot and tok.decode([eot]) == "<|endoftext|>"


# -- what is refused, and why ----------------------------------------------------------------------------


def _valid() -> dict[str, Any]:
    tok = learn(["hello hello world"], 5, scheme="byte")
    return tokenizer_json(tok.vocab, tok.merges, None)


def _set(doc: dict[str, Any], where: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    *path, last = where.split(".")
    inner = doc
    for key in path:
        inner = inner[key]
    if value is KeyError:
        del inner[last]
    else:
        inner[last] = value
    return doc


SPLIT_OTHER = {
    "type": "Sequence",
    "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r"\w+|\s+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
    ],
}
SPLIT_REMOVED = copy.deepcopy(SPLIT_OTHER)
SPLIT_REMOVED["pretokenizers"][0].update(pattern={"Regex": GPT2_PATTERN}, behavior="Removed")


@pytest.mark.parametrize(
    ("where", "value", "error", "message"),
    [
        ("model.type", "WordPiece", UnsupportedModelError, "model type 'WordPiece': bytepair reads BPE models only"),
        ("model.dropout", 0.1, UnsupportedModelError, "dropout is 0.1"),
        ("model.end_of_word_suffix", "</w>", UnsupportedModelError, "end_of_word_suffix is '</w>'"),
        ("model.continuing_subword_prefix", "##", UnsupportedModelError, "continuing_subword_prefix"),
        ("model.byte_fallback", True, UnsupportedModelError, "byte_fallback is on"),
        ("model.ignore_merges", True, UnsupportedModelError, "ignore_merges is on"),
        ("normalizer", {"type": "NFKC"}, UnsupportedModelError, "normalizer 'NFKC': bytepair takes text as it is"),
        ("pre_tokenizer", {"type": "Whitespace"}, UnsupportedModelError, "pre_tokenizer Whitespace: bytepair reads"),
        ("pre_tokenizer", None, UnsupportedModelError, "no pre_tokenizer"),
        ("pre_tokenizer.add_prefix_space", True, UnsupportedModelError, "add_prefix_space"),
        ("pre_tokenizer.add_prefix_space", KeyError, MalformedModelError, "without its add_prefix_space field"),
        ("pre_tokenizer.use_regex", KeyError, None, ""),  # tokenizers' default: on
        ("pre_tokenizer.use_regex", False, UnsupportedModelError, "without use_regex"),
        ("pre_tokenizer", SPLIT_OTHER, UnsupportedModelError, "implements GPT-2's, cl100k's and o200k's patterns only"),
        ("pre_tokenizer", SPLIT_REMOVED, UnsupportedModelError, "behavior 'Removed'"),
        (
            "post_processor",
            {"type": "TemplateProcessing"},
            UnsupportedModelError,
            "post_processor 'TemplateProcessing'",
        ),
        ("decoder", {"type": "WordPiece"}, UnsupportedModelError, "decoder 'WordPiece'"),
        ("truncation", {"max_length": 512}, UnsupportedModelError, "truncation is set"),
        ("model", KeyError, MalformedModelError, "no 'model' object"),
        ("model.vocab", KeyError, MalformedModelError, "model.vocab is missing"),
        ("model.vocab", {"a": "1"}, MalformedModelError, "model.vocab['a'] is '1', not an integer id"),
        ("model.merges", KeyError, MalformedModelError, "model.merges is missing"),
        ("model.merges", ["h e l"], MalformedModelError, "merge 1 ('h e l') is not 'a b'"),
        ("model.merges", [["h"]], MalformedModelError, "merge 1"),
        ("added_tokens", [{"content": "x"}], MalformedModelError, "added token"),
    ],
)
def test_what_is_not_read(tmp_path: Path, where: str, value: Any, error: type[Exception] | None, message: str) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_set(_valid(), where, value)), encoding="utf-8")
    if error is None:
        assert Tokenizer.load(path).scheme == "byte"
        return
    with pytest.raises(error, match=re.escape(message)):
        Tokenizer.load(path)


def test_the_valid_document_of_those_tests_is_read(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(_valid()), encoding="utf-8")
    assert Tokenizer.load(path).scheme == "byte"


def test_not_json_and_missing(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text('{"model": {\n  "type": "BPE",\n}', encoding="utf-8")
    with pytest.raises(MalformedModelError, match=r"tokenizer\.json:3: not JSON"):
        Tokenizer.load(path)
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(MalformedModelError, match="top is not a JSON object"):
        Tokenizer.load(path, format="tokenizer.json")
    with pytest.raises(ModelNotFoundError, match=r"no such tokenizer\.json"):
        Tokenizer.load(tmp_path / "absent.json")


def test_a_word_scheme_model_is_not_saved_as_tokenizer_json(tmp_path: Path) -> None:
    tok = learn(["low lower"] * 2, 3)
    with pytest.raises(ValueError, match="byte-scheme"):
        tok.save(tmp_path / "tokenizer.json", format="tokenizer.json")
    with pytest.raises(ValueError, match="format must be one of"):
        tok.save(tmp_path / "x", format="sentencepiece")  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())
