"""Hugging Face's one-file format, ``tokenizer.json``: a byte-level BPE model, read and written.

``tokenizers`` keeps a whole pipeline in one JSON object (normalizer,
pre-tokenizer, model, post-processor, decoder, added tokens). bytepair runs one
pipeline, GPT-2's, so it reads the files that describe that one and refuses the
others with :class:`~bytepair.subword.errors.UnsupportedModelError`, naming the
part at fault; a file that is not JSON or lacks a field is a
:class:`~bytepair.subword.errors.MalformedModelError`. Read:

* ``model``: ``type`` ``"BPE"``, no dropout, no ``continuing_subword_prefix`` or
  ``end_of_word_suffix`` (a byte-level model has neither), ``fuse_unk``,
  ``byte_fallback`` and ``ignore_merges`` off; ``merges`` in either of Hugging
  Face's encodings (``"a b"`` strings, or ``["a", "b"]`` pairs since tokenizers 0.20);
  ``unk_token`` kept.
* ``pre_tokenizer``: ``ByteLevel`` with ``use_regex`` (GPT-2's pattern) and without
  ``add_prefix_space``; or a ``Sequence`` of a ``Split`` by GPT-2's, cl100k's or
  o200k's pattern (``Isolated``, not inverted; spelt as :data:`.words.PATTERNS`,
  :data:`.words.HF_PATTERNS` or tiktoken's spellings of GPT-2's) then ``ByteLevel``
  without the regex. No other pattern: bytepair implements these three only.
* ``normalizer`` none; ``post_processor`` none or ``ByteLevel`` (it moves offsets,
  not ids); ``decoder`` none or ``ByteLevel``; no truncation or padding.
* ``added_tokens`` join the vocabulary with their ids. bytepair does not cut them
  out of the text before the pre-split, as ``tokenizers`` does: text that spells
  one (``<|endoftext|>``) is encoded as ordinary text, as tiktoken's
  ``encode_ordinary`` does.

Written: the same, with a ``ByteLevel`` pre-tokenizer (GPT-2's pattern) or a ``Split``
by :data:`.words.HF_PATTERNS` then ``ByteLevel`` (the others) and a ``ByteLevel`` decoder, merges as
``"a b"`` strings (byte-level tokens hold no space, and readers older than
tokenizers 0.20 read only these), the unk token as the model's ``unk_token`` (not
an added token, so that ``tokenizers`` does not cut it out of text either).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import MalformedModelError, UnsupportedModelError
from .formats import _read_text, write_atomic
from .words import _SPELLINGS, HF_PATTERNS, PATTERNS, Pattern

__all__ = ["GPT2_PATTERN", "GPT2_PATTERNS", "HFModel", "read_tokenizer_json", "write_tokenizer_json"]

Merge = tuple[str, str]

GPT2_PATTERN = PATTERNS["gpt2"]
"""GPT-2's pre-split pattern as GPT-2, Hugging Face's ``ByteLevel`` and its ``Split`` spell it."""

GPT2_PATTERNS = frozenset(regex for regex, name in _SPELLINGS.items() if name == "gpt2")
"""The spellings of GPT-2's pattern that are read as GPT-2's pattern (tiktoken's two among them)."""

_ACCEPTED = (
    "a ByteLevel pre-tokenizer with use_regex (GPT-2's pattern) and without add_prefix_space, "
    "or a Sequence of a Split by GPT-2's, cl100k's or o200k's pattern then a ByteLevel without the regex"
)


@dataclass(frozen=True)
class HFModel:
    """What bytepair takes from a ``tokenizer.json``: token -> id (added tokens included), merges, unk token."""

    vocab: dict[str, int]
    merges: list[Merge]
    unk_token: str | None
    pattern: Pattern = "gpt2"


def read_tokenizer_json(path: str | os.PathLike[str]) -> HFModel:
    """The byte-level BPE model of a ``tokenizer.json``, or the reason it is not one bytepair runs."""
    path = Path(path)
    text = _read_text(path, "tokenizer.json")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedModelError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    where = str(path)
    if not isinstance(doc, dict):
        raise MalformedModelError(f"{where}: not a tokenizer.json: the top is not a JSON object")
    model = doc.get("model")
    if not isinstance(model, dict):
        raise MalformedModelError(f"{where}: no 'model' object")
    kind = model.get("type", "BPE")  # files of tokenizers before 0.9 name no type
    if kind != "BPE":
        raise UnsupportedModelError(f"{where}: model type {kind!r}: bytepair reads BPE models only")
    _check_model_options(model, where)
    for part in ("truncation", "padding"):
        if doc.get(part) is not None:
            raise UnsupportedModelError(f"{where}: {part} is set: bytepair encodes whole texts, unpadded")
    _check_normalizer(doc.get("normalizer"), where)
    pattern = _check_pre_tokenizer(doc.get("pre_tokenizer"), where)
    for part in ("post_processor", "decoder"):
        value = doc.get(part)
        if value is not None and _type(value, f"{part}", where) != "ByteLevel":
            raise UnsupportedModelError(
                f"{where}: {part} {_type(value, part, where)!r}: bytepair reads byte-level models (ByteLevel or none)"
            )
    vocab = _vocab(model.get("vocab"), where)
    merges = _merges(model.get("merges"), where)
    unk = model.get("unk_token")
    if unk is not None and (not isinstance(unk, str) or not unk):
        raise MalformedModelError(f"{where}: model.unk_token is not a non-empty string")
    for token, i in _added_tokens(doc.get("added_tokens", []), where):
        known = vocab.get(token)
        if known is None:
            vocab[token] = i
        elif known != i:
            raise MalformedModelError(f"{where}: added token {token!r} has id {i}, the model's vocab {known}")
    return HFModel(vocab, merges, unk, pattern)


def _type(value: object, part: str, where: str) -> str:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise MalformedModelError(f"{where}: {part} is not an object with a 'type'")
    return value["type"]  # type: ignore[no-any-return]


def _check_model_options(model: Mapping[str, Any], where: str) -> None:
    if model.get("dropout") not in (None, 0, 0.0):
        raise UnsupportedModelError(f"{where}: model.dropout is {model['dropout']!r}: BPE dropout is not implemented")
    for field in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(field) not in (None, ""):
            raise UnsupportedModelError(
                f"{where}: model.{field} is {model[field]!r}: bytepair reads byte-level models, which have none"
            )
    for field in ("fuse_unk", "byte_fallback", "ignore_merges"):
        if model.get(field, False) not in (False, None):
            raise UnsupportedModelError(f"{where}: model.{field} is on: not implemented (GPT-2's BPE has it off)")


def _check_normalizer(normalizer: object, where: str) -> None:
    if normalizer is None:
        return
    kind = _type(normalizer, "normalizer", where)
    if kind == "Sequence" and isinstance(normalizer, dict) and normalizer.get("normalizers") == []:
        return
    raise UnsupportedModelError(
        f"{where}: normalizer {kind!r}: bytepair takes text as it is (a model with a normalizer is not read)"
    )


def _check_pre_tokenizer(pre: object, where: str) -> Pattern:
    """The pattern the pre-tokenizer cuts by, if it is one bytepair runs."""
    if pre is None:
        raise UnsupportedModelError(f"{where}: no pre_tokenizer; bytepair reads {_ACCEPTED}")
    kind = _type(pre, "pre_tokenizer", where)
    steps = pre.get("pretokenizers") if kind == "Sequence" and isinstance(pre, dict) else [pre]
    if not isinstance(steps, list) or not steps:
        raise MalformedModelError(f"{where}: pre_tokenizer Sequence without a list of pretokenizers")
    kinds = [_type(step, "pre_tokenizer", where) for step in steps]
    if kinds == ["ByteLevel"]:
        _check_byte_level(steps[0], where, regex=True)
        return "gpt2"
    if kinds == ["Split", "ByteLevel"]:
        pattern = _check_split(steps[0], where)
        _check_byte_level(steps[1], where, regex=False)
        return pattern
    raise UnsupportedModelError(f"{where}: pre_tokenizer {' then '.join(kinds)}: bytepair reads {_ACCEPTED}")


def _check_byte_level(step: Mapping[str, Any], where: str, *, regex: bool) -> None:
    if "add_prefix_space" not in step:  # tokenizers itself refuses such a file
        raise MalformedModelError(f"{where}: ByteLevel pre-tokenizer without its add_prefix_space field")
    if step["add_prefix_space"] is not False:
        raise UnsupportedModelError(
            f"{where}: ByteLevel pre-tokenizer with add_prefix_space: not implemented (bytepair reads {_ACCEPTED})"
        )
    if step.get("use_regex", True) is not regex:
        said = "without" if regex else "with"
        raise UnsupportedModelError(
            f"{where}: ByteLevel pre-tokenizer {said} use_regex here: bytepair reads {_ACCEPTED}"
        )


def _check_split(step: Mapping[str, Any], where: str) -> Pattern:
    pattern = step.get("pattern")
    regex = pattern.get("Regex") if isinstance(pattern, dict) else None
    if not isinstance(regex, str):
        raise UnsupportedModelError(
            f"{where}: Split pre-tokenizer by {pattern!r}: bytepair splits by a regex (GPT-2's, cl100k's or o200k's)"
        )
    name = _SPELLINGS.get(regex)
    if name is None:
        raise UnsupportedModelError(
            f"{where}: Split pre-tokenizer by the pattern {regex!r}: bytepair implements GPT-2's, cl100k's and "
            f"o200k's patterns only ({GPT2_PATTERN!r}, {HF_PATTERNS['cl100k']!r}, {HF_PATTERNS['o200k']!r})"
        )
    if step.get("behavior") != "Isolated" or step.get("invert", False) is not False:
        raise UnsupportedModelError(
            f"{where}: Split pre-tokenizer with behavior {step.get('behavior')!r}, invert {step.get('invert')!r}: "
            "bytepair reads Isolated, not inverted (each match a chunk, as GPT-2 cuts)"
        )
    return name


def _vocab(vocab: object, where: str) -> dict[str, int]:
    if not isinstance(vocab, dict):
        raise MalformedModelError(f"{where}: model.vocab is missing or not an object of token -> id")
    for token, i in vocab.items():
        if not isinstance(i, int) or isinstance(i, bool):
            raise MalformedModelError(f"{where}: model.vocab[{token!r}] is {i!r}, not an integer id")
    return dict(vocab)


def _merges(merges: object, where: str) -> list[Merge]:
    if not isinstance(merges, list):
        raise MalformedModelError(f"{where}: model.merges is missing or not a list")
    found: list[Merge] = []
    for number, merge in enumerate(merges, start=1):
        if isinstance(merge, str):
            parts: object = merge.split(" ")
        else:
            parts = merge
        if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(part, str) and part for part in parts):
            raise MalformedModelError(f"{where}: merge {number} ({merge!r}) is not 'a b' nor ['a', 'b']")
        found.append((parts[0], parts[1]))
    return found


def _added_tokens(added: object, where: str) -> list[tuple[str, int]]:
    if not isinstance(added, list):
        raise MalformedModelError(f"{where}: added_tokens is not a list")
    found: list[tuple[str, int]] = []
    for entry in added:
        token = entry.get("content") if isinstance(entry, dict) else None
        i = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(token, str) or not isinstance(i, int) or isinstance(i, bool):
            raise MalformedModelError(f"{where}: added token {entry!r} has no 'content' string and 'id' integer")
        found.append((token, i))
    return found


def tokenizer_json(
    vocab: Mapping[str, int], merges: Sequence[Merge], unk_token: str | None, pattern: Pattern = "gpt2"
) -> dict[str, Any]:
    """The ``tokenizer.json`` object of a byte-level model (what :func:`write_tokenizer_json` writes)."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    pre: dict[str, Any] = byte_level
    if pattern != "gpt2":
        split = {"type": "Split", "pattern": {"Regex": HF_PATTERNS[pattern]}, "behavior": "Isolated", "invert": False}
        pre = {"type": "Sequence", "pretokenizers": [split, {**byte_level, "use_regex": False}]}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": byte_level,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unk_token,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": dict(vocab),
            "merges": [f"{left} {right}" for left, right in merges],
        },
    }


def write_tokenizer_json(
    path: str | os.PathLike[str],
    vocab: Mapping[str, int],
    merges: Sequence[Merge],
    unk_token: str | None,
    pattern: Pattern = "gpt2",
) -> None:
    """Write a byte-level model as a ``tokenizer.json`` that ``tokenizers.Tokenizer.from_file`` loads."""
    for number, (left, right) in enumerate(merges, start=1):
        if " " in left or " " in right:
            raise UnsupportedModelError(f"merge {number} ({left!r}, {right!r}) holds a space: not a byte-level model")
    doc = tokenizer_json(vocab, merges, unk_token, pattern)
    write_atomic(path, json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
