"""Subword BPE: learn merges from text, and tokenize with them, as subword-nmt and GPT-2 do.

::

    from bytepair import subword
    tok = subword.learn(["low lower lowest", "newer wider"], 10)
    tok.tokenize("lowest")      # ['low', 'est</w>'] or so
    tok.apply("lower newest")   # subword-nmt apply-bpe's line: 'low@@ er new@@ est'
    tok.save("codes.bpe")       # a subword-nmt codes file

``scheme="word"`` is Sennrich's (subword-nmt: words split on spaces, ``</w>`` on
the last character, the same merges as ``subword-nmt learn-bpe``);
``scheme="byte"`` is GPT-2's (pre-split chunks of UTF-8 bytes, ``vocab.json`` +
``merges.txt`` that Hugging Face ``tokenizers`` reads). A byte-scheme model is also
saved and loaded as Hugging Face's ``tokenizer.json`` and as tiktoken's rank file
(``save(path, format=...)``, ``Tokenizer.load`` finds the format); ``unk_token=``
makes symbols without an id one token. See ``docs/subword.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .errors import (
        InvalidIdError,
        MalformedMergesError,
        MalformedModelError,
        ModelNotFoundError,
        SubwordError,
        UnknownSymbolError,
        UnsupportedModelError,
        VocabMismatchError,
    )
    from .learn import learn, learn_merges
    from .tokenizer import Tokenizer
    from .words import WORD_END, count_words

_WHERE = {
    "InvalidIdError": ".errors",
    "MalformedMergesError": ".errors",
    "MalformedModelError": ".errors",
    "ModelNotFoundError": ".errors",
    "SubwordError": ".errors",
    "UnknownSymbolError": ".errors",
    "UnsupportedModelError": ".errors",
    "VocabMismatchError": ".errors",
    "learn": ".learn",
    "learn_merges": ".learn",
    "Tokenizer": ".tokenizer",
    "WORD_END": ".words",
    "count_words": ".words",
}
"""Where each public name lives: imported on first use, so that loading the compiled
kernels (``subword._compiled``, which ``bytepair.backend`` checks for every command)
does not import the tokenizer."""


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'bytepair.subword' has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


__all__ = [
    "WORD_END",
    "InvalidIdError",
    "MalformedMergesError",
    "MalformedModelError",
    "ModelNotFoundError",
    "SubwordError",
    "Tokenizer",
    "UnknownSymbolError",
    "UnsupportedModelError",
    "VocabMismatchError",
    "count_words",
    "learn",
    "learn_merges",
]
