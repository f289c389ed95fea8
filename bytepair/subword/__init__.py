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
``merges.txt`` that Hugging Face ``tokenizers`` reads). See ``docs/subword.md``.
"""

from __future__ import annotations

from .errors import (
    InvalidIdError,
    MalformedMergesError,
    ModelNotFoundError,
    SubwordError,
    UnknownSymbolError,
    VocabMismatchError,
)
from .learn import learn, learn_merges
from .tokenizer import Tokenizer
from .words import WORD_END, count_words

__all__ = [
    "WORD_END",
    "InvalidIdError",
    "MalformedMergesError",
    "ModelNotFoundError",
    "SubwordError",
    "Tokenizer",
    "UnknownSymbolError",
    "VocabMismatchError",
    "count_words",
    "learn",
    "learn_merges",
]
