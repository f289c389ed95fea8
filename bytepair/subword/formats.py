"""The files a model lives in: subword-nmt's codes file, GPT-2's ``vocab.json`` + ``merges.txt``;
which format a path holds. (``tokenizer.json``: :mod:`.tokenizer_json`; tiktoken's rank file: :mod:`.ranks`.)

* codes file (word scheme): ``#version: 0.2``, then one merge a line, ``left right``;
  the word-final symbols carry ``</w>`` (``e r</w>``). This is what
  ``subword-nmt learn-bpe`` writes and ``apply-bpe`` reads.
* GPT-2 directory (byte scheme): ``vocab.json`` maps each token to its id,
  ``merges.txt`` is ``#version: 0.2`` and then ``left right`` a line. Tokens are
  byte strings spelt with :func:`bytes_to_unicode`'s printable characters (the
  space byte is ``Ġ``), as GPT-2, Hugging Face ``tokenizers`` and tiktoken's
  loaders expect.

* vocabulary file (word scheme, read only): ``subword-nmt get-vocab``'s output,
  ``token count`` a line; :meth:`Tokenizer.load(codes, vocab=...)
  <bytepair.subword.Tokenizer.load>` takes the characters of its tokens as the alphabet.

Readers raise :class:`~bytepair.subword.errors.ModelNotFoundError` for a missing
file and :class:`~bytepair.subword.errors.MalformedMergesError` (with the line
number) for a line that is not two symbols. Writers write through a temporary
file renamed into place (:func:`bytepair.io.atomic.atomic_output`): a reader never
meets half a model, and a failed write leaves the old file as it was.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TypeAlias

from ..io.atomic import atomic_output
from .errors import MalformedMergesError, MalformedModelError, ModelNotFoundError, VocabMismatchError

__all__ = [
    "CODES_HEADER",
    "FORMATS",
    "MERGES_NAME",
    "VOCAB_NAME",
    "bytes_to_unicode",
    "detect_format",
    "read_codes",
    "read_gpt2",
    "read_vocab_file",
    "unicode_to_bytes",
    "write_atomic",
    "write_codes",
    "write_gpt2",
]

CODES_HEADER = "#version: 0.2"
VOCAB_NAME = "vocab.json"
MERGES_NAME = "merges.txt"

Merge = tuple[str, str]

Format: TypeAlias = Literal["codes", "gpt2", "tokenizer.json", "tiktoken"]
FORMATS: tuple[Format, ...] = ("codes", "gpt2", "tokenizer.json", "tiktoken")
"""The model formats bytepair reads and writes: subword-nmt's codes file, GPT-2's directory
(``vocab.json`` + ``merges.txt``), Hugging Face's ``tokenizer.json``, tiktoken's rank file."""

_RANK_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} [0-9]+\r?")


def detect_format(path: str | os.PathLike[str]) -> Format:
    """The format of the model at *path*, from what it holds; from its name when it cannot be read.

    A directory is GPT-2's; a file whose text starts with ``{`` is a ``tokenizer.json``,
    one whose first line is ``<base64> <number>`` a tiktoken rank file, anything else
    a codes file (whose reader then says what is wrong with it). A missing file is
    told by its suffix (``.json``, ``.tiktoken``), so that the error names the
    expected file. A pipe or device (``/dev/stdin``) is a codes file: looking into
    it would consume what the reader needs.
    """
    path = Path(path)
    if path.is_dir():
        return "gpt2"
    if path.exists() and not path.is_file():
        return "codes"
    try:
        with path.open("rb") as stream:
            head = stream.read(4096)
    except OSError:
        head = b""
    start = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if start.startswith(b"{"):
        return "tokenizer.json"
    if _RANK_LINE.fullmatch(start.split(b"\n", 1)[0]):
        return "tiktoken"
    if not head and not path.exists():
        if path.suffix == ".json":
            return "tokenizer.json"
        if path.suffix == ".tiktoken":
            return "tiktoken"
    return "codes"


@functools.cache
def bytes_to_unicode() -> tuple[str, ...]:
    """GPT-2's map from each byte value to a printable character (index = byte value).

    Printable Latin-1 bytes stand for themselves; the others (controls, space,
    the soft hyphen) are moved to ``chr(256 + n)`` in byte order, so no token
    holds whitespace or a control character and ``merges.txt`` can be split on spaces.
    """
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars: dict[int, str] = {b: chr(b) for b in kept}
    moved = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + moved)
            moved += 1
    return tuple(chars[b] for b in range(256))


@functools.cache
def unicode_to_bytes() -> dict[str, int]:
    """The inverse of :func:`bytes_to_unicode`: printable character -> byte value."""
    return {ch: b for b, ch in enumerate(bytes_to_unicode())}


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelNotFoundError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise ModelNotFoundError(f"{path}: is a directory, not a {what}") from None
    except UnicodeDecodeError as exc:
        raise MalformedMergesError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ModelNotFoundError(f"{path}: cannot read the {what}: {exc.strerror}") from None


def _parse_merges(text: str, path: Path) -> list[Merge]:
    """``left right`` lines after an optional ``#version`` header, as subword-nmt reads them."""
    lines = text.rstrip("\n").split("\n") if text.strip("\r\n ") else []
    first = 0
    if lines and lines[0].startswith("#version"):
        version = lines[0].split()[-1] if lines[0].split() else ""
        if version not in ("0.2", "0.2.0"):
            raise MalformedMergesError(
                f"{path}:1: version {version!r}; only version 0.2 (the </w> glued to the last character) is read"
            )
        first = 1
    merges: list[Merge] = []
    for number, line in enumerate(lines[first:], start=first + 1):
        parts = line.strip("\r\n ").split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise MalformedMergesError(f"{path}:{number}: {line!r} is not a merge: two symbols and one space")
        merges.append((parts[0], parts[1]))
    return merges


def read_codes(path: str | os.PathLike[str]) -> list[Merge]:
    """The merges of a subword-nmt codes file (version 0.2), in order.

    A file without the ``#version`` line is version 0.1 to subword-nmt (``</w>`` a
    symbol of its own), which tokenizes differently: it is refused, not misread.
    """
    path = Path(path)
    text = _read_text(path, "codes file")
    if text.strip("\r\n ") and not text.startswith("#version"):
        raise MalformedMergesError(
            f"{path}:1: no '#version: 0.2' line: a version 0.1 codes file (a separate </w>) is not read"
        )
    return _parse_merges(text, path)


def write_codes(path: str | os.PathLike[str], merges: Sequence[Merge]) -> None:
    """Write *merges* as a subword-nmt codes file (``#version: 0.2`` header)."""
    lines = [CODES_HEADER, *(f"{left} {right}" for left, right in merges)]
    write_atomic(path, "\n".join(lines) + "\n")


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write *text* (UTF-8) to *path* all at once: a temporary file beside it, synced and renamed.

    The file gets the mode a plain ``open(path, "w")`` would give it (``0o666`` less the umask).
    A path that is not a regular file (``/dev/stdout``, a pipe) is written as it is.
    """
    data = text.encode("utf-8")
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "wb") as stream:
            stream.write(data)
        return
    umask = os.umask(0)
    os.umask(umask)
    with atomic_output(os.fspath(path), overwrite=True, mode=0o666 & ~umask) as out:
        out.write(data)


def read_vocab_file(path: str | os.PathLike[str]) -> list[str]:
    """The tokens of a subword-nmt vocabulary file (``get-vocab``: ``token count`` a line), in file order.

    Lines are cut and split as ``apply-bpe --vocabulary`` cuts them (``strip('\\r\\n ')``,
    then one space between the token and its count); blank lines are skipped.
    """
    path = Path(path)
    text = _read_text(path, "vocabulary file")
    tokens: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip("\r\n ")
        if not stripped:
            continue
        parts = stripped.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1].isdigit():
            raise MalformedModelError(f"{path}:{number}: {line!r} is not a vocabulary line: 'token count'")
        tokens.append(parts[0])
    return tokens


def read_gpt2(directory: str | os.PathLike[str]) -> tuple[dict[str, int], list[Merge]]:
    """The vocabulary and merges of a GPT-2 model directory (``vocab.json``, ``merges.txt``)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ModelNotFoundError(f"{directory}: no such model directory (with {VOCAB_NAME} and {MERGES_NAME})")
    vocab_path = directory / VOCAB_NAME
    try:
        vocab = json.loads(_read_text(vocab_path, "vocabulary file"))
    except json.JSONDecodeError as exc:
        raise VocabMismatchError(f"{vocab_path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(vocab, dict) or not all(
        isinstance(token, str) and isinstance(i, int) and not isinstance(i, bool) for token, i in vocab.items()
    ):
        raise VocabMismatchError(f"{vocab_path}: not a JSON object of token -> integer id")
    merges_path = directory / MERGES_NAME
    return vocab, _parse_merges(_read_text(merges_path, "merges file"), merges_path)


def write_gpt2(directory: str | os.PathLike[str], vocab: dict[str, int], merges: Sequence[Merge]) -> None:
    """Write ``vocab.json`` and ``merges.txt`` into *directory* (made if missing)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_atomic(directory / VOCAB_NAME, json.dumps(vocab, ensure_ascii=False))
    lines = [CODES_HEADER, *(f"{left} {right}" for left, right in merges)]
    write_atomic(directory / MERGES_NAME, "\n".join(lines) + "\n")
