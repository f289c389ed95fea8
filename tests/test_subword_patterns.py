"""The byte scheme's three pre-split patterns (GPT-2's, tiktoken's cl100k_base and o200k_base), held to
tiktoken's own regex engine (Rust's fancy-regex): the Unicode classes on every code point, the cuts on
generated text, and the ids of a model saved as a rank file and loaded into tiktoken with the pattern.

tiktoken is the oracle for cuts too: an ``Encoding`` whose pattern is ``^(?:PATTERN)`` and whose ranks
are the 256 bytes encodes only the first match of a text (tiktoken drops what no match covers), so
cutting a text chunk by chunk with it gives the pattern's cuts (no pattern looks behind, so the rest
of a text cuts as it would in place).
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair import backend
from bytepair.subword import Tokenizer, UnsupportedModelError, learn
from bytepair.subword.cli import main as subword_main
from bytepair.subword.words import HF_PATTERNS, PATTERNS, _class_bytes, chunk_regex, split_chunks
from tests.helpers import CORPUS, NOT_BUILT, compiled_available
from tests.subword_reference import ENGLISH

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a test extra")
from tiktoken.load import load_tiktoken_bpe  # noqa: E402

NAMES = tuple(PATTERNS)
BYTES = {bytes([b]): b for b in range(256)}

# letters of many scripts and both cases, marks, digits and other numbers, apostrophes and the letters
# of contractions in both cases (and U+017F, an s to a case-insensitive regex), whitespace of every kind,
# emoji, punctuation, slashes
SAMPLES = (
    " \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2028\u3000\x1c"
    "'sStTdDmMlLvVeErR\u017f"
    "aZéÉǅʰあ中Σ\u03c3Жжא\u0e01"
    "\u0301\u0300\u0903\u20dd"
    "0789٣½²Ⅻ"
    '😀👩\u200d👧!.,/-_"()'
)
known = st.characters(exclude_categories=("Cs", "Cn"))  # no lone surrogates: tiktoken replaces them
texts = st.text(alphabet=st.one_of(st.sampled_from(SAMPLES), known), max_size=40)


@pytest.fixture(scope="module", autouse=True)
def _no_tiktoken_cache() -> Iterator[None]:
    """tiktoken caches rank files by the sha1 of their path: temporary paths come back, so caching is off."""
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""
    yield
    if saved is None:
        del os.environ["TIKTOKEN_CACHE_DIR"]
    else:
        os.environ["TIKTOKEN_CACHE_DIR"] = saved


def _encoding(pattern: str, ranks: dict[bytes, int] = BYTES) -> Any:
    return tiktoken.Encoding("bytepair-test", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})


_FIRST: dict[str, Any] = {}


def tiktoken_cuts(text: str, name: str) -> list[str]:
    """*text* cut by pattern *name* with tiktoken's regex engine, a chunk at a time."""
    encoding = _FIRST.get(name)
    if encoding is None:
        encoding = _FIRST[name] = _encoding(f"^(?:{PATTERNS[name]})")  # type: ignore[index]
    chunks = []
    while text:
        chunk = bytes(encoding.encode_ordinary(text)).decode("utf-8")
        assert chunk and text.startswith(chunk)
        chunks.append(chunk)
        text = text[len(chunk) :]
    return chunks


def _members(regex: str) -> set[int]:
    """The code points tiktoken's regex *regex* matches (every code point but the surrogates, at once)."""
    text = "".join(chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp < 0xE000)
    return {ord(ch) for ch in bytes(_encoding(regex).encode_ordinary(text)).decode("utf-8")}


# -- the Unicode classes, on every code point --------------------------------------------------------------

LETTER, NUMBER, SPACE, HEAD, TAIL = 1, 2, 4, 8, 16


def _ours(test: Any) -> set[int]:
    return {cp for cp, bits in enumerate(_class_bytes()) if test(bits, unicodedata.category(chr(cp)))}


CLASSES = {
    r"\p{L}": lambda bits, cat: bits & LETTER,
    r"\p{N}": lambda bits, cat: bits & NUMBER,
    r"\s": lambda bits, cat: bits & SPACE,
    r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]": lambda bits, cat: bits & HEAD,
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]": lambda bits, cat: bits & TAIL,
    r"\p{Lu}": lambda bits, cat: cat == "Lu",
    r"\p{Ll}": lambda bits, cat: cat == "Ll",
    r"\p{Lt}": lambda bits, cat: cat == "Lt",
    r"\p{Lm}": lambda bits, cat: cat == "Lm",
    r"\p{Lo}": lambda bits, cat: cat == "Lo",
    r"\p{M}": lambda bits, cat: (bits & HEAD) and not (bits & LETTER),
}


@pytest.mark.parametrize("regex", list(CLASSES))
def test_classes_equal_tiktokens_on_every_code_point(regex: str) -> None:
    """Equal on every code point this Python's Unicode tables assign. tiktoken's tables are newer
    (they know Unicode 16's letters, such as U+1C89; Python 3.11 has Unicode 14.0): the code points it knows and this
    Python does not are cut here as unassigned (``[^\\s\\p{L}\\p{N}]``), and are the only difference."""
    theirs = _members(regex)
    ours = _ours(CLASSES[regex]) - set(range(0xD800, 0xE000))
    assert not ours - theirs
    newer = theirs - ours
    assert all(unicodedata.category(chr(cp)) == "Cn" for cp in newer)


@pytest.mark.skipif(not compiled_available(), reason=NOT_BUILT)
def test_the_compiled_table_is_the_class_bytes() -> None:
    from bytepair.subword.words import char_classes

    table = char_classes()
    flat = _class_bytes()
    assert all(table.of(cp) == flat[cp] for cp in range(sys.maxunicode + 1))


@pytest.mark.parametrize("letter", "sdmtlver")
def test_case_insensitive_contraction_letters_are_tiktokens(letter: str) -> None:
    """``(?i:...)`` folds as Rust's regex does: 's' also matches U+017F (long s); the others only change case."""
    assert _members(f"(?i:{letter})") == {ord(letter), ord(letter.upper()), *([0x17F] if letter == "s" else [])}


# -- the cuts --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_cuts_equal_tiktokens(name: str, text: str) -> None:
    expected = tiktoken_cuts(text, name)
    assert chunk_regex(name).findall(text) == expected  # type: ignore[arg-type]
    if compiled_available():
        from bytepair.subword import _compiled
        from bytepair.subword.words import _MODES, char_classes

        assert _compiled.split(text, _MODES[name], char_classes()) == expected  # type: ignore[index]


@pytest.mark.parametrize(
    ("name", "text", "cuts"),
    [
        ("gpt2", "it's  12345\n\n", ["it", "'s", " ", " 12345", "\n\n"]),
        ("cl100k", "it'S  12345\n\n", ["it", "'S", " ", " ", "123", "45", "\n\n"]),
        ("cl100k", "x!!\n\n ab", ["x", "!!\n\n", " ab"]),
        ("o200k", "THE CAFÉ'S naïve/\n", ["THE", " CAFÉ'S", " naïve", "/\n"]),
        ("o200k", "HelloWORLD", ["Hello", "WORLD"]),
        ("cl100k", "Hello  \n  ", ["Hello", "  \n  "]),
        ("o200k", "Hello  \n  ", ["Hello", "  \n", "  "]),
    ],
)
def test_cuts_of_examples(name: str, text: str, cuts: list[str]) -> None:
    assert split_chunks(text, name) == cuts == tiktoken_cuts(text, name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", NAMES)
def test_cuts_on_both_paths(kernels: str, name: str) -> None:
    text = "".join(SAMPLES) * 3 + "The CAFÉ'S 12345 naïve\t\u017f'S /x//\r\n  "
    assert split_chunks(text, name) == tiktoken_cuts(text, name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None)
@given(text=texts)
def test_cuts_equal_hugging_faces_split(name: str, text: str) -> None:
    """The ``Split`` bytepair writes into a ``tokenizer.json`` (:data:`HF_PATTERNS`) cuts as tiktoken does
    in Hugging Face's Oniguruma too."""
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test extra")
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(HF_PATTERNS[name]), behavior="isolated")  # type: ignore[index]
    assert [piece for piece, _ in split.pre_tokenize_str(text)] == split_chunks(text, name)  # type: ignore[arg-type]


# -- a model cut by each pattern, in tiktoken and back ------------------------------------------------------


def _english() -> list[str]:
    paths = [CORPUS / name for name in ENGLISH]
    if not all(path.exists() for path in paths):
        pytest.skip(f"{CORPUS} is absent: the corpora live in ../shared beside the repo")
    return [path.read_text(encoding="utf-8") for path in paths]


@pytest.fixture(scope="module", params=NAMES)
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Tokenizer, Any, Path]:
    """A model learnt with each pattern (on English, or on the samples without the corpus), saved as a rank
    file, and tiktoken's Encoding of that file with the pattern."""
    name = request.param
    paths = [CORPUS / "canterbury/alice29.txt", CORPUS / "calgary/paper1"]
    training = (
        [line for path in paths for line in path.read_text(encoding="utf-8").splitlines(keepends=True)]
        if all(path.exists() for path in paths)
        else [SAMPLES * 3, "The CAFÉ'S 12345 naïve\n"] * 20
    )
    tok = learn(training, 1200, scheme="byte", pattern=name)
    assert tok.pattern == name
    path = tmp_path_factory.mktemp(name) / "model.tiktoken"
    tok.save_tiktoken(path)
    return tok, _encoding(PATTERNS[name], load_tiktoken_bpe(str(path))), path


def test_tiktoken_encodes_the_corpus_as_we_do(model: tuple[Tokenizer, Any, Path]) -> None:
    tok, encoding, path = model
    loaded = Tokenizer.load_tiktoken(path, tok.pattern or "gpt2")
    for text in _english():
        ids = tok.encode(text)
        assert encoding.encode_ordinary(text) == ids == loaded.encode(text)
        assert tok.decode(ids) == text
    lines = _english()[0].splitlines(keepends=True)
    assert tok.encode_batch(lines, threads=2) == encoding.encode_ordinary_batch(lines)


@settings(max_examples=200, deadline=None)
@given(text=texts)
def test_tiktoken_encodes_generated_text_as_we_do(model: tuple[Tokenizer, Any, Path], text: str) -> None:
    tok, encoding, _ = model
    assert tok.encode(text) == encoding.encode_ordinary(text)


def test_numpy_path_encodes_as_tiktoken(model: tuple[Tokenizer, Any, Path]) -> None:
    tok, encoding, _ = model
    text = "".join(SAMPLES) * 2 + "It's THE CAFÉ'S 123456 naïve café\r\n\n  x"
    with backend.use("numpy"):
        assert tok.encode(text) == encoding.encode_ordinary(text)


# -- files --------------------------------------------------------------------------------------------------


def test_tokenizer_json_keeps_the_pattern_and_hugging_face_reads_it(
    model: tuple[Tokenizer, Any, Path], tmp_path: Path
) -> None:
    tok, encoding, _ = model
    tok.save(tmp_path / "tokenizer.json", format="tokenizer.json")
    loaded = Tokenizer.load(tmp_path / "tokenizer.json")
    assert loaded.pattern == tok.pattern and loaded.merges == tok.merges
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is a test extra")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in [*_english()[:3], "".join(SAMPLES) * 2]:
        assert hf.encode(text).ids == tok.encode(text) == encoding.encode_ordinary(text)
    if tok.pattern != "gpt2":
        with pytest.raises(ValueError, match="cuts text by"):
            Tokenizer.load(tmp_path / "tokenizer.json", pattern="gpt2")


def test_a_gpt2_directory_holds_gpt2s_pattern_only(model: tuple[Tokenizer, Any, Path], tmp_path: Path) -> None:
    tok, _, _ = model
    if tok.pattern == "gpt2":
        tok.save(tmp_path / "model")
        assert Tokenizer.load(tmp_path / "model", pattern="cl100k").pattern == "cl100k"  # as the caller says
        return
    with pytest.raises(UnsupportedModelError, match=r"format='tokenizer\.json'"):
        tok.save(tmp_path / "model")
    assert not (tmp_path / "model").exists()


def test_pattern_arguments() -> None:
    with pytest.raises(ValueError, match="pattern must be one of"):
        Tokenizer([], scheme="byte", pattern="p50k")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="the word scheme splits on spaces"):
        Tokenizer([], pattern="gpt2")
    with pytest.raises(ValueError, match="the word scheme splits on spaces"):
        learn(["a b"], 1, pattern="o200k")
    assert Tokenizer([], scheme="byte").pattern == "gpt2" and Tokenizer([]).pattern is None
    assert "pattern='o200k'" in repr(Tokenizer([], scheme="byte", pattern="o200k"))


def test_command_line_learns_and_encodes_with_a_pattern(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, model = tmp_path / "text.txt", tmp_path / "model.json"
    text.write_text("THE CAFÉ'S menu, it's 12345\n" * 5, encoding="utf-8")
    learning = ["learn", "-s", "30", "--scheme", "byte", "--pattern", "o200k", "-i", str(text), "-o", str(model)]
    assert subword_main(learning) == 0
    tok = Tokenizer.load(model)
    assert tok.pattern == "o200k"
    tok.save_tiktoken(tmp_path / "model.tiktoken")
    text.write_text("THE CAFÉ'S 12345\n", encoding="utf-8")
    encoding = ["encode", "-m", str(tmp_path / "model.tiktoken"), "--pattern", "o200k", "--ids", "-i", str(text)]
    assert subword_main(encoding) == 0
    assert capsys.readouterr().out.split() == [str(i) for i in tok.encode("THE CAFÉ'S 12345")]
