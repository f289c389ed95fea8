"""The errors of :mod:`bytepair.subword`: one class per way a model or its input can be bad.

They are ``ValueError`` subclasses, so code that already guards against bad values
catches them, and each message names the file, line or id at fault.
"""

from __future__ import annotations

__all__ = [
    "InvalidIdError",
    "MalformedMergesError",
    "MalformedModelError",
    "ModelNotFoundError",
    "SubwordError",
    "UnknownSymbolError",
    "UnsupportedModelError",
    "VocabMismatchError",
]


class SubwordError(ValueError):
    """Base class of every error :mod:`bytepair.subword` raises for bad models or input."""


class ModelNotFoundError(SubwordError):
    """A codes file, or a directory's ``vocab.json``/``merges.txt``, is missing or unreadable."""


class MalformedMergesError(SubwordError):
    """A line of a codes or merges file is not ``left right`` (two symbols and one space)."""


class MalformedModelError(SubwordError):
    """A model file is not what its format says: a ``tokenizer.json`` that is not JSON or lacks a field,
    a tiktoken rank file or subword-nmt vocabulary file whose line is not ``token number``."""


class UnsupportedModelError(SubwordError):
    """A well-formed model that asks for what bytepair does not implement (another model type,
    pre-tokenizer, pattern or normalizer), or merges another format cannot express."""


class VocabMismatchError(SubwordError):
    """A ``vocab.json`` does not hold a symbol its ``merges.txt`` uses or makes, or is not a token -> id map."""


class InvalidIdError(SubwordError):
    """``decode`` was given an id that is not in the vocabulary."""


class UnknownSymbolError(SubwordError):
    """``encode`` met a character (word scheme) or byte (byte scheme) the vocabulary does not hold,
    and the tokenizer has no ``unk_token`` to put in its place."""
