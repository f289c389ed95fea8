"""tiktoken's rank file: ``<base64 of a token's bytes> <rank>`` a line, read and written.

tiktoken keeps no merge list. To encode a chunk it returns the chunk's own rank
if the whole chunk is a token; otherwise it starts from single bytes and, again and
again, joins the adjacent two parts whose *concatenation* has the lowest rank
(the leftmost among equals), until no concatenation is a token. The ranks are the
ids. Single bytes are never a concatenation of two parts, so their ranks only
name them: only the order of the longer tokens' ranks decides the merges.

A merge list (GPT-2's, bytepair's) and ranks describe the same tokenizer when
each token's rank follows the order its merge was learnt in and, for every
token, merging its bytes with the lower ranks alone ends in exactly the two
tokens its merge joins: the rule tiktoken's own converters use to turn ranks
back into merges (:func:`merges_from_ranks`). :meth:`Tokenizer.save_tiktoken
<bytepair.subword.Tokenizer.save_tiktoken>` checks that of every model it writes
and :meth:`Tokenizer.load_tiktoken <bytepair.subword.Tokenizer.load_tiktoken>`
rebuilds the merges with it.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from pathlib import Path

from .errors import MalformedModelError, UnsupportedModelError
from .formats import _read_text, write_atomic

__all__ = ["merges_from_ranks", "rank_merge", "read_ranks", "write_ranks"]


def read_ranks(path: str | os.PathLike[str]) -> dict[bytes, int]:
    """Token bytes -> rank, from a tiktoken rank file (blank lines skipped, as tiktoken skips them)."""
    path = Path(path)
    text = _read_text(path, "tiktoken rank file")
    ranks: dict[bytes, int] = {}
    seen: set[int] = set()
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 2 or not parts[1].isdigit():
                raise ValueError
            token = base64.b64decode(parts[0], validate=True)
        except (ValueError, binascii.Error):
            raise MalformedModelError(
                f"{path}:{number}: {line!r} is not a rank line: '<base64 token> <rank>'"
            ) from None
        rank = int(parts[1])
        if not token:
            raise MalformedModelError(f"{path}:{number}: an empty token")
        if token in ranks or rank in seen:
            raise MalformedModelError(f"{path}:{number}: token {token!r} or rank {rank} is given twice")
        ranks[token] = rank
        seen.add(rank)
    return ranks


def write_ranks(path: str | os.PathLike[str], ranks: Mapping[bytes, int]) -> None:
    """Write *ranks* as a tiktoken rank file, in rank order (what ``tiktoken.load.load_tiktoken_bpe`` reads)."""
    lines = [f"{base64.b64encode(token).decode('ascii')} {rank}\n" for token, rank in sorted(ranks.items(), key=_rank)]
    write_atomic(path, "".join(lines))


def _rank(item: tuple[bytes, int]) -> int:
    return item[1]


def rank_merge(ranks: Mapping[bytes, int], token: bytes, max_rank: int | None = None) -> list[bytes]:
    """tiktoken's merging of *token*'s bytes, with only the ranks below *max_rank* (all when None)."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 1:
        best = -1
        best_rank = max_rank
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best_rank is None or rank < best_rank):
                best, best_rank = i, rank
        if best < 0:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return parts


def merges_from_ranks(ranks: Mapping[bytes, int], where: str = "the ranks") -> list[tuple[bytes, bytes]]:
    """The merge list the ranks stand for, in rank order, as tiktoken's converters rebuild it.

    For each token of two bytes or more, in rank order, its bytes are merged with
    the lower ranks alone; they must end in two parts, the merge that makes the
    token. Anything else (a token no merge can reach) is an
    :class:`~bytepair.subword.errors.UnsupportedModelError`.
    """
    merges: list[tuple[bytes, bytes]] = []
    for token, rank in sorted(ranks.items(), key=_rank):
        if len(token) < 2:
            continue
        parts = rank_merge(ranks, token, rank)
        if len(parts) != 2:
            raise UnsupportedModelError(
                f"{where}: token {token!r} (rank {rank}) is not two lower-ranked tokens joined "
                f"(the lower ranks make {parts!r}): no merge list gives these ranks"
            )
        merges.append((parts[0], parts[1]))
    return merges
