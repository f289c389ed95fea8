"""Tokenizer: apply-bpe's lines, encode/decode, save/load, and its errors."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bytepair.subword import (
    InvalidIdError,
    MalformedMergesError,
    MalformedModelError,
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


# -- unknown symbols: unk_token, as Hugging Face's BPE model does --------------------------------------


def test_encode_unknown_character_says_how_to_set_an_unk_token() -> None:
    tok = learn(["low lower"], 3)
    with pytest.raises(UnknownSymbolError, match="unk_token="):
        tok.encode("lazy")


def test_unk_token_takes_the_next_free_id_and_decodes_to_its_text(kernels: str) -> None:
    plain = learn(["low lower lowest", "newer wider"] * 3, 10)
    tok = learn(["low lower lowest", "newer wider"] * 3, 10, unk_token="<unk>")
    assert tok.vocab == {**plain.vocab, "<unk>": max(plain.vocab.values()) + 1}
    unk = tok.vocab["<unk>"]
    assert tok.tokenize("lazy lowest") == ["l", "<unk>", "<unk>", "<unk>", "lo", "west</w>"]
    assert tok.encode("lazy lowest") == [tok.vocab["l"], unk, unk, unk, tok.vocab["lo"], tok.vocab["west</w>"]]
    assert tok.decode([unk]) == "<unk>"
    assert tok.decode(tok.encode("lowest q")) == "lowest <unk>"
    assert tok.apply("lazy") == "l@@ a@@ z@@ y"  # apply-bpe's line spells the characters, as subword-nmt does
    assert "unk_token='<unk>'" in repr(tok)


def test_unk_token_already_in_the_vocabulary_keeps_its_id() -> None:
    tok = learn(["ab ab"], 1)
    vocab = {**tok.vocab, "[UNK]": 100}
    with_unk = Tokenizer(tok.merges, vocab=vocab, unk_token="[UNK]")
    assert with_unk.vocab == vocab and with_unk.encode("ab z") == [tok.vocab["ab</w>"], 100]
    with pytest.raises(ValueError, match="unk_token"):
        Tokenizer(tok.merges, unk_token="")


def test_byte_scheme_unk_token_for_bytes_without_an_id(tmp_path: Path) -> None:
    tok = learn(["hello hello"], 5, scheme="byte")
    vocab = {token: i for token, i in tok.vocab.items() if token != "z"}  # a loaded model may lack bytes
    tok = Tokenizer(tok.merges, scheme="byte", vocab=vocab, unk_token="<unk>")
    ids = tok.encode("hello zz")
    assert ids[-2:] == [tok.vocab["<unk>"]] * 2 and tok.decode(ids) == "hello <unk><unk>"
    assert (
        Tokenizer(tok.merges, scheme="byte", vocab=vocab, unk_token="\u2047").decode([tok.vocab["<unk>"]]) == "\u2047"
    )


def _hf_word_model(tok: Tokenizer):  # type: ignore[no-untyped-def]
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test extra")
    model = tokenizers.models.BPE(
        vocab=tok.vocab, merges=tok.merges, unk_token=tok.unk_token, end_of_word_suffix="</w>"
    )
    hf = tokenizers.Tokenizer(model)
    hf.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    hf.decoder = tokenizers.decoders.BPEDecoder(suffix="</w>")
    return hf


@settings(max_examples=100, deadline=None)
@given(st.lists(lines, min_size=1, max_size=10), st.integers(0, 30), st.lists(st.text("abcdeéxyz", max_size=8)))
def test_unknown_symbols_become_the_unk_token_as_in_hugging_face(
    training: list[str], merges: int, other: list[str]
) -> None:
    tok = learn(training, merges, unk_token="<unk>")
    hf = _hf_word_model(tok)
    text = " ".join(other)
    found = hf.encode(text)
    assert tok.encode(text) == found.ids
    assert tok.tokenize(text) == found.tokens
    assert tok.decode(found.ids) == hf.decode(found.ids)


# -- subword-nmt's vocabulary file ---------------------------------------------------------------------


def _get_vocab(text: str, path: Path) -> Path:
    get_vocab = pytest.importorskip("subword_nmt.get_vocab", reason="subword-nmt is a test extra").get_vocab
    with path.open("w", encoding="utf-8") as out:
        get_vocab(io.StringIO(text), out)
    return path


def test_a_vocabulary_file_gives_every_character_of_the_training_text_an_id(tmp_path: Path) -> None:
    text = english("calgary/paper2")
    tok = learn(text.split("\n"), 300)
    tok.save(tmp_path / "codes")
    bare = Tokenizer.load(tmp_path / "codes")
    rare = next(ch for ch in sorted(set(text) - {" ", "\n"}) if ch not in bare.vocab and ch + "</w>" not in bare.vocab)
    with pytest.raises(UnknownSymbolError):
        bare.encode(rare)
    loaded = Tokenizer.load(tmp_path / "codes", vocab=_get_vocab(text, tmp_path / "vocab"))
    assert loaded.vocab == tok.vocab  # the ids learn gives: the characters in both forms, then the merges
    assert loaded.encode(text) == tok.encode(text)
    segmented = "\n".join(snmt_apply((tmp_path / "codes").read_text(encoding="utf-8"), text.split("\n")))
    from_segments = Tokenizer.load(tmp_path / "codes", vocab=_get_vocab(segmented, tmp_path / "seg-vocab"))
    assert from_segments.decode(from_segments.encode(text)) == " ".join(text.split())


def test_vocabulary_file_errors(tmp_path: Path) -> None:
    codes = tmp_path / "codes"
    codes.write_text("#version: 0.2\na b\n", encoding="utf-8")
    with pytest.raises(ModelNotFoundError, match="no such vocabulary file"):
        Tokenizer.load(codes, vocab=tmp_path / "absent")
    (tmp_path / "vocab").write_text("ab 3\n\nc 1\nd x\n", encoding="utf-8")
    with pytest.raises(MalformedModelError, match=r"vocab:4: 'd x' is not a vocabulary line"):
        Tokenizer.load(codes, vocab=tmp_path / "vocab")
    (tmp_path / "vocab").write_text("ab 3\nc 1\n", encoding="utf-8")
    tok = Tokenizer.load(codes, vocab=tmp_path / "vocab", unk_token="<unk>")
    assert tok.encode("abc cq") == [tok.vocab[t] for t in ("ab", "c</w>", "c", "<unk>")]


def test_save_writes_through_a_temporary_file(tmp_path: Path) -> None:
    tok = learn(["low lower lowest"] * 2, 5)
    path = tmp_path / "codes"
    path.write_text("old", encoding="utf-8")
    tok.save(path)
    tok.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["codes"] and Tokenizer.load(path).merges == tok.merges


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("codes", "#version: 0.2\na b\n", "codes"),
        ("codes", "", "codes"),
        ("model.json", '\ufeff  {"model": {}}', "tokenizer.json"),
        ("model", "IQ== 0\nIg== 1\n", "tiktoken"),
        ("model.txt", "IQ== 0\r\n", "tiktoken"),
        ("model.tiktoken", "a b\n", "codes"),  # the content decides, when there is one
        ("absent.json", None, "tokenizer.json"),
        ("absent.tiktoken", None, "tiktoken"),
        ("absent", None, "codes"),
    ],
)
def test_detect_format(tmp_path: Path, name: str, content: str | None, expected: str) -> None:
    from bytepair.subword.formats import detect_format

    if content is not None:
        (tmp_path / name).write_text(content, encoding="utf-8")
    assert detect_format(tmp_path / name) == expected
    assert detect_format(tmp_path) == "gpt2"


def test_a_pipe_is_a_codes_file_and_is_not_read_to_detect_it(tmp_path: Path) -> None:
    import os

    from bytepair.subword.formats import detect_format

    os.mkfifo(tmp_path / "pipe")
    assert detect_format(tmp_path / "pipe") == "codes"  # returns at once: nothing opened the pipe


def test_threads_share_one_tokenizer_on_the_numpy_path() -> None:
    # the numpy path's cache of words grows by replacing its arrays: threads encoding with one
    # tokenizer at once must each get their own text's ids (they once indexed past an array's end)
    import threading

    from tests.helpers import kernels

    lines = [f"line {k}: the {k % 7} quick brown foxes, {k * 13 % 101} lazy dogs" for k in range(600)]
    with kernels("numpy"):
        tok = learn(lines[:100], 120, scheme="byte")
        want = [Tokenizer(tok.merges, scheme="byte", vocab=tok.vocab).encode(line) for line in lines]
        failures: list[BaseException] = []

        def work(first: int) -> None:
            try:
                for k in range(first, len(lines), 4):
                    assert tok.encode(lines[k]) == want[k]
            except BaseException as exc:  # reported below
                failures.append(exc)

        workers = [threading.Thread(target=work, args=(first,)) for first in range(4)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    assert not failures, failures[:2]


@pytest.mark.parametrize("was_enabled", [True, False])
def test_encode_batch_pauses_the_collector_and_leaves_it_as_found(kernels: str, was_enabled: bool) -> None:
    """A batch makes one list per text. The cyclic collector's own collections, which walked every
    list made so far again and again, wait until the batch is done; a collector that was on sees
    the batch collect only its young objects (a few times: after blocks of texts, and once at
    the end), and none is due as the call returns. It is left on or off as it was, after a
    failed batch too."""
    import gc

    tok = learn(["low lower lowest newer wider"] * 3, 12)
    texts = ["low lower", "newer wider lowest"] * 6000  # twelve thousand lists: 17 collections due, two of gen 1
    started: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.collect()
    (gc.enable if was_enabled else gc.disable)()
    gc.callbacks.append(note)
    try:
        for threads in (1, 2):
            del started[:]
            ids = tok.encode_batch(texts, threads=threads)
            if was_enabled:
                assert 1 <= len(started) <= len(texts) // 2048 + 2, started
                assert set(started) == {0}, started
                assert gc.get_count()[0] <= gc.get_threshold()[0]
            else:
                assert started == []
            assert ids == [tok.encode("low lower"), tok.encode("newer wider lowest")] * 6000
            assert gc.isenabled() is was_enabled
        with pytest.raises(UnknownSymbolError):
            tok.encode_batch(["low", "zoo"], threads=2)
        assert gc.isenabled() is was_enabled
    finally:
        gc.callbacks.remove(note)
        gc.enable()


def test_a_collection_inside_a_batch_may_encode_on_the_same_tokenizer(kernels: str) -> None:
    """The batch's own collections run the collector's callbacks (and finalisers) in the middle of
    its shares; a callback that encodes, or runs a batch, with the same tokenizer gets its ids,
    and the interrupted batch still gets its own."""
    import gc

    tok = learn(["low lower lowest newer wider"] * 3, 12)
    texts = ["low lower", "newer wider lowest", "wider low"] * 3000
    want = [tok.encode(text) for text in texts[:3]] * 3000
    other = tok.encode("lowest newer")
    inside: list[bool] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and len(inside) < 20:
            inside.append(tok.encode("lowest newer") == other)
            inside.append(tok.encode_batch(["wider low", "low lower"], threads=2) == [want[2], want[0]])

    gc.collect()
    gc.enable()
    gc.callbacks.append(note)
    try:
        for threads in (1, 2):
            assert tok.encode_batch(texts, threads=threads) == want
    finally:
        gc.callbacks.remove(note)
    assert inside and all(inside), inside
