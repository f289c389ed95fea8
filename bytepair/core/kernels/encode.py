"""The compiled encoder: ``engine.encode_blocks`` as C loops (``_encode.pyx``), one block at a time.

Import only where the compiled extension ``_encode`` was built (``bytepair.backend``
checks). :func:`encode_blocks` returns exactly the ``EncodedBlocks`` of the numpy
engine, field for field; tests hold the two to each other. Blocks are
independent, so where numpy advances a batch of blocks together, these loops
finish one block before starting the next, reusing one workspace (a ``_Workspace``:
the engine's state, passed to every loop by pointer).

Each block, as in Gage's program: count the pairs, then repeat { choose the
merges of a step; replace them, left to right } until no pair is worth a code;
the symbols left are the payload.

Data structures, one set per call, reused for every block (``_encode._Workspace``):

* ``val``: the symbol at each position of the block, and ``nxt``/``prv``, a
  doubly linked list over the positions still alive. A merge keeps the left
  position (now holding the code) and unlinks the right one (``DEAD``).
  Position ``n`` (the block's length) is the end of the list; ``val[n]`` is
  ``END``, which no pair holds.
* ``counts``: the exact count of every pair, a dense 256x256 table
  (``left * 256 + right``), updated as each match destroys and makes pairs.
* ``bound``/``arg``/``stale``: per row (left symbol), an upper bound of its
  counts, the lowest column holding it, and whether it may be too high. A count
  rising above the bound raises it (and makes it exact again); a count falling
  from the bound marks the row stale. Only a stale row whose bound would enter
  the best rows is rescanned, so choosing a step's pairs is one pass over 256
  bounds and a few rows.
* Where a chosen pair occurs. A pair of two bytes of the block: ``index``, one
  run ``[length, position, ...]`` per pair of the block,
  ``run_at[pair]`` its start. A pair holding a code: a merge makes only pairs
  that hold its own code, and a code is a value absent from the block (fresh,
  or recycled once it no longer occurs), so every occurrence of such a pair was
  made by the matches of its younger symbol (of two codes made in one step, the
  one replaced later), and its count only falls from then on. Each match lists
  the pairs it makes in ``made``, per side: ``(prev, code)`` at prev's position
  and ``(code, next)`` at its own, with the other symbol in ``made_sym``;
  ``made_at[code]`` says where the code's lists lie. The occurrences of
  ``(a, Z)``, Z younger, are Z's side 0 entries whose other symbol is ``a``; of
  ``(A, z)``, A's side 1 entries with ``z``: in position order, and read only
  for the few pairs ever chosen. Entries go stale (a neighbour merged first), so
  a candidate is checked against ``val`` before it is replaced.

Rules that fix the output (the numpy engine's, so the bytes never depend on luck):

* The best pair is the highest count; ties go to the lowest left symbol, then
  the lowest right symbol. With ``merges_per_step > 1`` the candidates are the
  ``merges_per_step + 2`` best rows in that order (each row's best column).
* Codes: first the values absent from the block at its start, highest first
  ("fresh"); once they are used up (and ``recycle``), values that no longer
  occur, highest first, at most ``MAX_RECYCLED`` of them per block. A pair
  needs ``threshold`` occurrences for a fresh code and ``threshold + 1`` for a
  recycled one (it costs a table byte more).
* More merges in a step (``merges_per_step > 1``): a candidate is dropped when
  its left symbol is a better candidate's right one or its right symbol a
  better one's left (they could overlap), counting every better candidate that
  passed the count test, dropped or not. Extra merges take fresh codes only
  while more than ``merges_per_step`` are left ("plenty"), else the step makes
  one merge; a recycling block makes at most ``spare - 1`` (at least 1).
* ``max_depth``: rows whose left symbol is at the limit are skipped; a pair
  whose expansion needs more than ``max_depth`` of Gage's stack ends the block.
* Replacement is one pass, left to right: in a run (``aaaa``) every other
  match, and each match changes the counts of the sequence as it is at that
  moment, so the pair between two adjacent matches is taken off once.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..engine import EncodedBlocks
from . import _encode

__all__ = ["encode_blocks"]


def encode_blocks(
    data: npt.NDArray[np.uint8],
    bounds: npt.NDArray[np.int64],
    *,
    threshold: int,
    recycle: bool = True,
    max_depth: int | None = None,
    merges_per_step: int = 1,
) -> EncodedBlocks:
    """``engine.encode_blocks`` for the blocks ``data[bounds[k]:bounds[k + 1]]``, compiled.

    The blocks must be non-empty, within *data* and at most ``MAX_COMPILED_BLOCK`` bytes
    long, and *threshold* at least 1 (ValueError otherwise; the numpy engine takes the rest).
    """
    if merges_per_step < 1 or (merges_per_step > 1 and max_depth is not None):
        raise ValueError("merges_per_step must be 1 with max_depth, and at least 1")
    data = np.ascontiguousarray(data, dtype=np.uint8)
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    depth = -1 if max_depth is None else max(int(max_depth), 0)  # below 0 forbids every code, as 0 does
    fields = _encode.encode_blocks(data, bounds, int(threshold), bool(recycle), depth, int(merges_per_step))
    return EncodedBlocks(*fields)
