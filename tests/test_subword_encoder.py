"""The compiled encoder (``_compiled.Encoder``): ``encode`` and ``decode`` in one compiled call each.

Held to the Python tokenizer (``tokenize_word``, the numpy path's ``encode``, ``_decode``) on
generated text of both schemes, with and without an unk token, with symbols that have no id;
and to what a cache must not change: the ids of a word do not depend on what was met before.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "bytepair.subword._compiled",
    reason="the compiled kernels are not built (pip install . with a C compiler; see docs/kernels.md)",
)

from bytepair import backend
from bytepair.subword import InvalidIdError, Tokenizer, UnknownSymbolError, learn
from bytepair.subword.formats import bytes_to_unicode
from tests.helpers import NOT_BUILT, compiled_available
from tests.subword_reference import english

pytestmark = pytest.mark.skipif(not compiled_available(), reason=NOT_BUILT)

TRAINING = [
    "Hello world! The café's 3 dogs ran 1,234 miles 😀😀 in 2024.\n",
    "  naïve    résumé\tcoöperate 😀 ½ Ⅻ x² \n",
    "it's they're we've I'm you'll he'd low lower lowest newer wider\n",
] * 5

# text that mixes what the training met with what it did not: symbols without an id, in the word scheme
texts = st.text(
    alphabet=st.one_of(st.sampled_from("low erniaé😀 \n\t\r\x0b\x85\u2028'sdl1</w>"), st.characters()), max_size=60
)


@pytest.fixture(scope="module", params=["word", "byte"])
def scheme(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _python(tok: Tokenizer, text: str) -> list[int]:
    """The ids of *text* by the Python tokenizer, word by word (the unk token for a symbol without an id)."""
    unk = tok._unk_id
    ids = []
    for word in tok.words(text):
        for token in tok.tokenize_word(word):
            if token not in tok.vocab and unk is None:
                raise UnknownSymbolError(token)
            ids.append(tok.vocab.get(token, unk))  # type: ignore[arg-type]
    return ids


def _numpy(tok: Tokenizer, text: str) -> list[int]:
    with backend.use("numpy"):
        return tok.encode(text)


@pytest.fixture(scope="module")
def models() -> Iterator[dict[tuple[str, bool], Tokenizer]]:
    found = {}
    for scheme in ("word", "byte"):
        for unk in (False, True):
            found[scheme, unk] = learn(TRAINING, 150, scheme=scheme, unk_token="<unk>" if unk else None)  # type: ignore[arg-type]
    yield found


@settings(max_examples=300, deadline=None)
@given(text=texts, scheme=st.sampled_from(["word", "byte"]), unk=st.booleans())
def test_encode_equals_the_python_tokenizer(
    models: dict[tuple[str, bool], Tokenizer], text: str, scheme: str, unk: bool
) -> None:
    tok = models[scheme, unk]
    try:
        expected = _python(tok, text)
    except UnknownSymbolError:
        with pytest.raises(UnknownSymbolError) as compiled:
            tok.encode(text)
        with pytest.raises(UnknownSymbolError) as numpy_path:
            _numpy(tok, text)
        assert str(compiled.value) == str(numpy_path.value)
        return
    assert tok.encode(text) == expected == _numpy(tok, text)


def test_unknown_symbol_message_names_the_word_and_the_symbol() -> None:
    tok = learn(["low lower lowest"] * 2, 10)
    for path in ("compiled", "numpy"):
        with backend.use(path), pytest.raises(UnknownSymbolError, match=r"^'lazy': the vocabulary has no token 'a' \("):
            tok.encode("low lazy")
    byte = Tokenizer([], scheme="byte", vocab={ch: i for i, ch in enumerate(bytes_to_unicode()[:128])})
    with pytest.raises(UnknownSymbolError, match=r"^' é': the vocabulary has no token 'Ã'"):
        byte.encode("a é")


def test_byte_scheme_bytes_without_an_id_become_the_unk_token() -> None:
    vocab = {ch: i for i, ch in enumerate(bytes_to_unicode()[:128])}
    tok = Tokenizer([], scheme="byte", vocab=vocab, unk_token="<unk>")
    assert tok.encode("aé") == [97, 128, 128] == _numpy(tok, "aé")
    assert tok.decode([97, 128]) == "a<unk>" == tok._decode([97, 128])


@pytest.mark.parametrize("name", ["canterbury/alice29.txt", "calgary/paper2"])
def test_encode_equals_the_numpy_path_on_english(scheme: str, name: str) -> None:
    text = english(name)
    tok = learn(text.split("\n"), 2000, scheme=scheme)  # type: ignore[arg-type]
    lines = text.split("\n")
    assert [tok.encode(line) for line in lines] == [_numpy(tok, line) for line in lines]
    assert tok.encode(text) == _numpy(tok, text)
    assert tok.decode(tok.encode(text)) == tok._decode(tok.encode(text))


def test_the_cache_does_not_change_ids(scheme: str) -> None:
    """Words met in any order, in texts of any size, give the ids a fresh tokenizer gives."""
    tok = learn(TRAINING, 150, scheme=scheme)  # type: ignore[arg-type]
    words = tok.words("".join(TRAINING))
    rng = random.Random(5)
    for _ in range(50):
        text = (
            "".join(rng.choices(words, k=rng.randint(0, 40)))
            if scheme == "byte"
            else " ".join(rng.choices(words, k=rng.randint(0, 40)))
        )
        fresh = Tokenizer(tok.merges, scheme=tok.scheme, vocab=tok.vocab)
        assert tok.encode(text) == fresh.encode(text) == _python(fresh, text)
    if scheme == "word":  # (joined chunks of the byte scheme may cut into other chunks)
        assert len(tok._compiled_encoder()) == len(set(words))


def test_while_a_batch_reads_the_cache_encode_leaves_it_alone() -> None:
    tok = learn(TRAINING, 100, scheme="byte")
    encoder = tok._compiled_encoder()
    tok.encode("Hello")
    known = len(encoder)
    encoder.hold()
    try:
        assert tok.encode("Hello world, never met before") == _python(tok, "Hello world, never met before")
        assert len(encoder) == known
    finally:
        encoder.release()
    tok.encode("Hello world, never met before")
    assert len(encoder) > known


@settings(max_examples=300, deadline=None)
@given(data=st.data(), scheme=st.sampled_from(["word", "byte"]), unk=st.booleans())
def test_decode_equals_the_python_decoder(
    models: dict[tuple[str, bool], Tokenizer], data: st.DataObject, scheme: str, unk: bool
) -> None:
    tok = models[scheme, unk]
    ids = data.draw(st.lists(st.sampled_from(sorted(tok.vocab.values())), max_size=30))
    assert tok.decode(ids) == tok._decode(ids)
    assert tok.decode(tuple(ids)) == tok._decode(ids)


def test_decode_of_word_ends_split_across_tokens() -> None:
    """``"".join(tokens).replace("</w>", " ")``: a marker spelt across two tokens counts too."""
    tok = learn(["a</ w> b</w>"] * 3, 20, min_frequency=1)
    ids = [tok.vocab["a"], tok.vocab["<"], tok.vocab["/"], tok.vocab["w"], tok.vocab[">"], tok.vocab["b</w>"]]
    assert tok.decode(ids) == tok._decode(ids) == "a b"


def test_decode_of_what_is_not_an_id() -> None:
    tok = learn(TRAINING, 50, scheme="byte")
    for bad in ([10**6], [-1], [2**70], ["x"], [None]):
        with pytest.raises(InvalidIdError):
            tok.decode(bad)
    assert tok.decode([104.0, True]) == tok._decode([104, 1])  # what the dict lookup took before, still taken
    assert tok.decode(iter([104, 105])) == "hi"
    np = pytest.importorskip("numpy")
    assert tok.decode(np.array([104, 105])) == "hi"


def test_decode_of_a_cut_character_and_of_a_lone_surrogate() -> None:
    tok = learn(TRAINING, 50, scheme="byte")
    assert tok.decode([0xF0, 0x9F]) == "\ufffd" == tok._decode([0xF0, 0x9F])
    assert tok.decode(tok.encode("\ud800 x")) == "\ud800 x"
    word = learn(["a\ud800 b"] * 3, 5)
    assert word.decode(word.encode("a\ud800 b")) == "a\ud800 b"


def test_sparse_ids_decode_through_python() -> None:
    vocab = {ch: i * 1000 for i, ch in enumerate(bytes_to_unicode())}
    tok = Tokenizer([], scheme="byte", vocab=vocab)
    assert tok.decode(tok.encode("hi")) == "hi"
    assert tok.encode("hi") == [104000, 105000]


# -- batches ------------------------------------------------------------------------------------------


@pytest.fixture
def small_shares(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every text its own share's worth: small batches are cut into as many shares as threads."""
    from bytepair.subword import tokenizer

    monkeypatch.setattr(tokenizer, "MIN_SHARE", 1)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.lists(texts, max_size=12),
    scheme=st.sampled_from(["word", "byte"]),
    threads=st.integers(0, 4),
)
def test_encode_batch_is_encode_of_each(
    models: dict[tuple[str, bool], Tokenizer], small_shares: None, batch: list[str], scheme: str, threads: int
) -> None:
    tok = models[scheme, True]
    fresh = Tokenizer(tok.merges, scheme=tok.scheme, vocab=tok.vocab, unk_token=tok.unk_token)
    assert tok.encode_batch(batch, threads=threads) == [fresh.encode(text) for text in batch]
    ids = [fresh.encode(text) for text in batch]
    assert tok.decode_batch(ids, threads=threads) == [fresh.decode(i) for i in ids]


def test_a_batch_raises_for_its_first_unknown_word(small_shares: None) -> None:
    tok = learn(["low lower lowest"] * 2, 10)
    batch = ["low", "low lazy", "low", "lazy zoo", "lower"] * 3
    for threads in (1, 2, 4):
        with pytest.raises(UnknownSymbolError, match=r"^'lazy'"):
            tok.encode_batch(batch, threads=threads)
    assert tok.encode_batch(["low lower"] * 9, threads=3) == [tok.encode("low lower")] * 9
    with pytest.raises(TypeError, match="text 1 is a bytes"):
        tok.encode_batch(["low", b"low"], threads=1)  # type: ignore[list-item]


def test_decode_batch_takes_any_sequences_of_ids_and_raises_for_a_bad_one(small_shares: None) -> None:
    np = pytest.importorskip("numpy")
    tok = learn(TRAINING, 100, scheme="byte")
    ids = tok.encode("Hello world")
    assert tok.decode_batch([ids, tuple(ids), np.array(ids), iter(ids), []], threads=2) == ["Hello world"] * 4 + [""]
    with pytest.raises(InvalidIdError, match="10000000"):
        tok.decode_batch([ids, [1, 10_000_000], ["x"]], threads=2)


@pytest.mark.parametrize("threads", [True, 1.5, "2"])
def test_threads_must_be_an_int(threads: object) -> None:
    tok = learn(TRAINING, 10, scheme="byte")
    with pytest.raises(TypeError, match="threads must be an integer"):
        tok.encode_batch(["x"], threads=threads)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threads must be >= 0"):
        tok.decode_batch([[1]], threads=-1)


def test_batches_on_the_numpy_path() -> None:
    tok = learn(TRAINING, 100, scheme="byte")
    with backend.use("numpy"):
        ids = tok.encode_batch(TRAINING, threads=2)
        assert ids == [tok.encode(text) for text in TRAINING]
        assert tok.decode_batch(ids, threads=2) == TRAINING


def test_threads_share_one_cache_without_harm(small_shares: None) -> None:
    """Batches and single calls from many threads at once, on one tokenizer: the ids of a fresh
    tokenizer every time, and the cache keeps words that every later call finds."""
    import threading

    text = english("calgary/paper1")
    lines = text.split("\n")
    tok = learn(lines, 1500, scheme="byte")
    fresh = Tokenizer(tok.merges, scheme="byte", vocab=tok.vocab)
    expected = [fresh.encode(line) for line in lines]
    failures: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(6):
                lo = rng.randrange(len(lines))
                hi = min(len(lines), lo + rng.randint(1, 400))
                if rng.random() < 0.5:
                    got = tok.encode_batch(lines[lo:hi], threads=rng.randint(1, 3))
                else:
                    got = [tok.encode(line) for line in lines[lo:hi]]
                assert got == expected[lo:hi]
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    workers = [threading.Thread(target=work, args=(seed,)) for seed in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not failures
    assert tok.encode_batch(lines, threads=2) == expected
    assert [tok.encode(line) for line in lines] == expected


def _share_edges_reference(sizes: list[int], workers: int, min_share: int) -> list[tuple[int, int]]:
    """The shares as the Python loop made them: cut at the first item whose running total
    reaches ``total * k // parts``."""
    from bisect import bisect_left
    from itertools import accumulate, pairwise

    ends = list(accumulate(sizes))
    total = ends[-1] if ends else 0
    parts = max(1, min(workers, len(sizes), total // min_share))
    cuts = [0, *(bisect_left(ends, total * k // parts) + 1 for k in range(1, parts)), len(sizes)]
    return [(lo, hi) for lo, hi in pairwise(cuts) if hi > lo]


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(
        st.one_of(st.text(max_size=40), st.lists(st.integers(0, 9), max_size=40), st.tuples(st.integers()), st.none()),
        max_size=60,
    ),
    workers=st.integers(1, 9),
    min_share=st.integers(1, 200),
)
def test_share_edges_cut_where_the_python_loop_did(items: list[object], workers: int, min_share: int) -> None:
    from bytepair.subword import _compiled

    sizes = [len(x) if isinstance(x, (str, list, tuple)) else 0 for x in items]
    edges = _compiled.share_edges(items, workers, min_share)
    assert edges == _share_edges_reference(sizes, workers, min_share)
    assert [i for lo, hi in edges for i in range(lo, hi)] == list(range(len(items)))  # every item once, in order
