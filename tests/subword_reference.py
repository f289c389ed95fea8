"""The real subword-nmt, called in-process, for tests that compare bytepair.subword with it."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from tests.helpers import CORPUS

ENGLISH = [
    "canterbury/alice29.txt",
    "canterbury/asyoulik.txt",
    "canterbury/lcet10.txt",
    "canterbury/plrabn12.txt",
    "calgary/book1",
    "calgary/book2",
    "calgary/paper1",
    "calgary/paper2",
    "calgary/paper3",
    "calgary/paper4",
    "calgary/paper5",
    "calgary/paper6",
    "calgary/news",
]
"""The English books and papers of ../shared/corpus: the issue's reference text."""


def normalised(path: Path) -> str:
    """The file's lines with their whitespace runs made single spaces (subword-nmt's regex merges
    misbehave on tabs inside words, see docs/subword.md)."""
    text = path.read_text(encoding="utf-8")
    return "\n".join(" ".join(line.split()) for line in text.split("\n"))


def english(name: str) -> str:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{path} is absent: the corpora live in ../shared beside the repo")
    return normalised(path)


def snmt_learn(text: str, merges: int, min_frequency: int = 2) -> list[tuple[str, str]]:
    """``subword-nmt learn-bpe -s merges --min-frequency min_frequency`` on *text*."""
    learn_bpe = pytest.importorskip("subword_nmt.learn_bpe", reason="subword-nmt is a test extra").learn_bpe
    out = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            learn_bpe(io.StringIO(text), out, merges, min_frequency)
        except ValueError as exc:  # subword-nmt fails on text without a single pair: it learns nothing
            assert "empty" in str(exc)
            return []
    lines = out.getvalue().split("\n")
    assert lines[0] == "#version: 0.2"
    return [(left, right) for left, right in (line.split(" ") for line in lines[1:] if line)]


def snmt_apply(codes: str, lines: list[str]) -> list[str]:
    """``subword-nmt apply-bpe -c codes`` on each of *lines*."""
    bpe_class = pytest.importorskip("subword_nmt.apply_bpe", reason="subword-nmt is a test extra").BPE
    bpe = bpe_class(io.StringIO(codes))
    return [bpe.process_line(line) for line in lines]
