"""tiktoken's rank file: tiktoken loads what we write and encodes as we do; we load its ranks and encode as it does."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bytepair.subword import (
    MalformedModelError,
    ModelNotFoundError,
    Tokenizer,
    UnsupportedModelError,
    learn,
)
from bytepair.subword.formats import bytes_to_unicode
from bytepair.subword.ranks import merges_from_ranks, rank_merge
from bytepair.subword.tokenizer_json import GPT2_PATTERN
from tests.helpers import CORPUS
from tests.subword_reference import ENGLISH

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test extra")
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

TRAINING = [
    "Hello world! The café's 3 dogs ran 1,234 miles 😀😀 in 2024.\n",
    "  naïve    résumé\tcoöperate 😀 ½ Ⅻ x² \n",
    "it's they're we've I'm you'll he'd\n",
] * 5

known = st.characters(exclude_categories=("Cs", "Cn"))  # no lone surrogates: tiktoken replaces them
texts = st.text(alphabet=st.one_of(known, st.sampled_from(" \t\n'sdl1½²Ⅻ\x1c\x85\xa0\u3000")), max_size=60)


@pytest.fixture(scope="module", autouse=True)
def _no_tiktoken_cache() -> Iterator[None]:
    """tiktoken caches every file it loads under the sha1 of its *path* (in /tmp/data-gym-cache) and
    returns the cached bytes for a path it has seen: temporary paths come back, so caching is off."""
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""
    yield
    if saved is None:
        del os.environ["TIKTOKEN_CACHE_DIR"]
    else:
        os.environ["TIKTOKEN_CACHE_DIR"] = saved


def _dumped(ranks: dict[bytes, int]) -> bytes:
    """``tiktoken.load.dump_tiktoken_bpe``'s bytes (which needs blobfile to write them)."""
    return b"".join(
        base64.b64encode(token) + b" " + str(rank).encode() + b"\n"
        for token, rank in sorted(ranks.items(), key=lambda x: x[1])
    )


def _encoding(path: Path) -> Any:
    ranks = load_tiktoken_bpe(str(path))
    return tiktoken.Encoding("test", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> tuple[Tokenizer, Any]:
    tok = learn(TRAINING, 300, scheme="byte")
    path = tmp_path_factory.mktemp("ours") / "model.tiktoken"
    assert tok.save_tiktoken(path) == {i: i for i in tok.vocab.values()}  # ranks are our ids
    return tok, _encoding(path)


@pytest.fixture(scope="module")
def theirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Tokenizer, Any]:
    """Ranks tiktoken's own (educational) trainer made, written by tiktoken's dump, loaded by us."""
    from tiktoken._educational import bpe_train

    text = "".join(TRAINING) + Path(__file__).read_text(encoding="utf-8")  # some code, too
    ranks = bpe_train(text, 256 + 200, GPT2_PATTERN, visualise=None)
    path = tmp_path_factory.mktemp("theirs") / "model.tiktoken"
    path.write_bytes(_dumped(ranks))
    return Tokenizer.load(path), tiktoken.Encoding("t", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})


def _english() -> list[str]:
    paths = [CORPUS / name for name in ENGLISH]
    if not all(path.exists() for path in paths):
        pytest.skip(f"{CORPUS} is absent: the corpora live in ../shared beside the repo")
    return [path.read_text(encoding="utf-8") for path in paths]


# -- both directions ---------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(texts)
def test_tiktoken_encodes_like_us_with_our_rank_file(ours: tuple[Tokenizer, Any], text: str) -> None:
    tok, enc = ours
    ids = tok.encode(text)
    assert enc.encode_ordinary(text) == ids
    assert enc.decode(ids) == text == tok.decode(ids)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_we_encode_like_tiktoken_with_its_ranks(theirs: tuple[Tokenizer, Any], text: str) -> None:
    tok, enc = theirs
    ids = enc.encode_ordinary(text)
    assert tok.encode(text) == ids
    assert tok.decode(ids) == text


def test_both_directions_on_the_corpus_texts(tmp_path: Path) -> None:
    texts = _english()
    tok = learn(texts[0].splitlines(keepends=True), 2000, scheme="byte")
    tok.save(tmp_path / "model.tiktoken", format="tiktoken")
    enc = _encoding(tmp_path / "model.tiktoken")
    loaded = Tokenizer.load(tmp_path / "model.tiktoken")  # found by its first line
    assert (loaded.merges, loaded.vocab) == (tok.merges, tok.vocab)
    for text in texts:
        ids = tok.encode(text)
        assert enc.encode_ordinary(text) == ids
        assert loaded.encode(text) == ids


small_lines = st.lists(st.text(alphabet="ab ccé😀'\n", max_size=12), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(small_lines, st.integers(1, 60), st.lists(st.text(alphabet="ab ccé😀'\nx", max_size=20), max_size=5))
def test_any_learnt_model_tiktoken_takes_encodes_as_we_do(
    tmp_path_factory: pytest.TempPathFactory, training: list[str], merges: int, other: list[str]
) -> None:
    """Few letters, so that merges overlap and tie: a model is written only when its ranks reproduce its
    merges, and then tiktoken gives our ids (both loaders agree on the merges too)."""
    tok = learn(training, merges, scheme="byte", min_frequency=1)
    path = tmp_path_factory.mktemp("any") / "model.tiktoken"
    try:
        tok.save_tiktoken(path)
    except UnsupportedModelError as exc:
        assert "again" in str(exc) or "would join" in str(exc)
        assert not path.exists()
        assume(False)
    enc = _encoding(path)
    assert Tokenizer.load_tiktoken(path).merges == tok.merges
    for text in [*training, *other]:
        assert enc.encode_ordinary(text) == tok.encode(text)


# -- ids that are not ranks; what a rank file cannot hold ---------------------------------------------------


def test_ids_out_of_merge_order_get_ranks_that_reproduce_the_merges(tmp_path: Path) -> None:
    tok = learn(TRAINING, 40, scheme="byte")
    made = [left + right for left, right in tok.merges]
    vocab = {token: i for token, i in tok.vocab.items() if token not in made}
    vocab.update((token, 1000 - k) for k, token in enumerate(made))  # merge results numbered backwards
    shuffled = Tokenizer(tok.merges, scheme="byte", vocab=vocab)
    ranks = shuffled.save_tiktoken(tmp_path / "model.tiktoken")
    assert ranks[vocab[made[0]]] == 256 and ranks[vocab[made[-1]]] == 256 + len(made) - 1
    enc = _encoding(tmp_path / "model.tiktoken")
    for text in TRAINING[:3]:
        assert enc.encode_ordinary(text) == [ranks[i] for i in shuffled.encode(text)]


def test_a_token_two_merges_make_is_refused(tmp_path: Path) -> None:
    tok = Tokenizer([("a", "b"), ("b", "c"), ("ab", "c"), ("a", "bc")], scheme="byte")
    with pytest.raises(UnsupportedModelError, match=r"merge 4 \(a bc\) makes 'abc' again"):
        tok.save_tiktoken(tmp_path / "x.tiktoken")
    assert not (tmp_path / "x.tiktoken").exists()


def test_merges_tiktoken_would_make_otherwise_are_refused(tmp_path: Path) -> None:
    """(b, c) ranks below (a, b), so tiktoken cuts 'abc' as a + bc: no rank file holds the merge (ab, c)."""
    tok = Tokenizer([("b", "c"), ("a", "b"), ("ab", "c")], scheme="byte")
    with pytest.raises(UnsupportedModelError, match=r"merge 3 joins \(b'ab', b'c'\); tiktoken.*\(b'a', b'bc'\)"):
        tok.save_tiktoken(tmp_path / "x.tiktoken")


def test_what_save_tiktoken_needs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="word-scheme"):
        learn(["low lower"] * 2, 3).save_tiktoken(tmp_path / "x")
    tok = learn(["hello"] * 2, 2, scheme="byte")
    vocab = {token: i for token, i in tok.vocab.items() if token != bytes_to_unicode()[0]}
    with pytest.raises(UnsupportedModelError, match="tiktoken needs every byte: byte 0x00"):
        Tokenizer(tok.merges, scheme="byte", vocab=vocab).save_tiktoken(tmp_path / "x")
    with_unk = learn(["hello"] * 2, 2, scheme="byte", unk_token="<unk>")
    ranks = with_unk.save_tiktoken(tmp_path / "x")
    assert with_unk.vocab["<unk>"] not in ranks and len(load_tiktoken_bpe(str(tmp_path / "x"))) == 258


def test_patterns_by_name_or_regex(tmp_path: Path, ours: tuple[Tokenizer, Any]) -> None:
    tok, _ = ours
    tok.save_tiktoken(tmp_path / "model.tiktoken")
    for pattern in (r"\w+", "cl100k_bas"):
        with pytest.raises(UnsupportedModelError, match=r"GPT-2's, cl100k_base's and o200k_base's patterns only"):
            Tokenizer.load_tiktoken(tmp_path / "model.tiktoken", pattern)
    assert Tokenizer.load_tiktoken(tmp_path / "model.tiktoken", GPT2_PATTERN).merges == tok.merges
    for pattern, name in (("cl100k_base", "cl100k"), ("o200k", "o200k"), ("r50k_base", "gpt2")):
        assert Tokenizer.load_tiktoken(tmp_path / "model.tiktoken", pattern).pattern == name


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("YQ== 0\nYg== 1\nYWI=\n", ":3: 'YWI=' is not a rank line"),
        ("YQ== 0\nYg== x\n", ":2: 'Yg== x' is not a rank line"),
        ("YQ== 0\n!!!! 1\n", ":2: '!!!! 1' is not a rank line"),
        ("YQ== 0\nYQ== 1\n", ":2: token b'a' or rank 1 is given twice"),
        ("YQ== 0\nYg== 0\n", ":2: token b'b' or rank 0 is given twice"),
    ],
)
def test_malformed_rank_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.tiktoken"
    path.write_text(text, encoding="ascii")
    with pytest.raises(MalformedModelError, match=message.replace("(", r"\(")):
        Tokenizer.load_tiktoken(path)


def test_a_token_no_merge_reaches(tmp_path: Path) -> None:
    path = tmp_path / "x.tiktoken"
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    path.write_text("\n".join([*lines, f"{base64.b64encode(b'abc').decode()} 256"]) + "\n", encoding="ascii")
    with pytest.raises(UnsupportedModelError, match=r"token b'abc' \(rank 256\) is not two lower-ranked tokens"):
        Tokenizer.load_tiktoken(path)
    with pytest.raises(ModelNotFoundError, match="no such tiktoken rank file"):
        Tokenizer.load(tmp_path / "absent.tiktoken")


def test_rank_merge_is_tiktokens_rule() -> None:
    ranks = {b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"ab": 4, b"abc": 5}
    assert rank_merge(ranks, b"abc") == [b"abc"]
    assert rank_merge(ranks, b"abc", max_rank=5) == [b"a", b"bc"]
    assert merges_from_ranks(ranks) == [(b"b", b"c"), (b"a", b"b"), (b"a", b"bc")]
