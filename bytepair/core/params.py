"""Compression parameters, their validation, and the level presets that set them."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

__all__ = ["DEFAULT_LEVEL", "LEVELS", "MAX_BLOCK_SIZE", "Params", "resolve_params"]

MAX_BLOCK_SIZE = 65535
"""Largest block the format can describe (its lengths are 16-bit)."""

DEFAULT_LEVEL = 5

MAX_MERGES_PER_STEP = 64
"""More buys nothing: few blocks have that many frequent pairs that cannot overlap."""


@dataclasses.dataclass(frozen=True)
class Params:
    """What the encoder needs to know; the decoder needs none of it.

    block_size:   most bytes of input in one block (Gage: 5000).
    max_distinct: a block ends at the byte that makes this many distinct byte
                  values, so at least ``256 - max_distinct`` values are free to
                  serve as pair codes (Gage: 200).
    threshold:    a pair is replaced only if it occurs at least this often
                  (Gage: 3). A recycled code costs one table byte more, so it
                  needs ``threshold + 1``.
    recycle:      reuse byte values that no longer occur once fresh codes run out.
    trials:       further ``(block_size, max_distinct)`` cuttings to try; each frame
                  keeps whichever cutting gives the smallest output (text prefers
                  long blocks with many distinct values, binary data short blocks
                  with more free codes).
    escape_limit: byte values occurring at most this often in a block are escaped
                  (sent aside, freeing their values as codes) when a block has at
                  least two of them; 0 never escapes.
    escape_trial: encode each block that has escapes both with and without them
                  and keep the smaller (twice the work for those blocks).
    merges_per_step: how many pairs that cannot overlap a block may merge in one
                  step of the engine (1: strictly one at a time, as Gage's program;
                  8, every level: about 0.7x the time, the same ratio).
    """

    block_size: int = 32768
    max_distinct: int = 200
    threshold: int = 3
    recycle: bool = True
    trials: tuple[tuple[int, int], ...] = ()
    escape_limit: int = 10
    escape_trial: bool = False
    merges_per_step: int = 8

    def cuttings(self) -> list[tuple[int, int]]:
        """Every ``(block_size, max_distinct)`` the encoder tries, the main one first."""
        return [(self.block_size, self.max_distinct), *self.trials]

    def __post_init__(self) -> None:
        for name in ("block_size", "max_distinct", "threshold", "escape_limit", "merges_per_step"):
            value = getattr(self, name)
            try:
                operator.index(value)
            except TypeError:
                raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
            if isinstance(value, bool):
                raise TypeError(f"{name} must be an integer, not bool")
        if not 1 <= self.merges_per_step <= MAX_MERGES_PER_STEP:
            raise ValueError(f"merges_per_step must be in 1..{MAX_MERGES_PER_STEP}, got {self.merges_per_step}")
        if not 1 <= self.block_size <= MAX_BLOCK_SIZE:
            raise ValueError(f"block_size must be in 1..{MAX_BLOCK_SIZE}, got {self.block_size}")
        if not 1 <= self.max_distinct <= 255:
            raise ValueError(
                f"max_distinct must be in 1..255 (at least one byte value must stay free "
                f"for pair codes), got {self.max_distinct}"
            )
        if not 0 <= self.escape_limit <= MAX_BLOCK_SIZE:
            raise ValueError(f"escape_limit must be in 0..{MAX_BLOCK_SIZE}, got {self.escape_limit}")
        for block_size, max_distinct in self.trials:
            if not (1 <= block_size <= MAX_BLOCK_SIZE and 1 <= max_distinct <= 255):
                raise ValueError(f"trial cutting ({block_size}, {max_distinct}) is out of range")
        if not 2 <= self.threshold <= MAX_BLOCK_SIZE:
            raise ValueError(
                f"threshold must be in 2..{MAX_BLOCK_SIZE} (replacing a pair seen once "
                f"never pays), got {self.threshold}"
            )


LEVELS: dict[int, Params] = {
    # one cutting: longer blocks are faster (fewer merges in all)
    1: Params(block_size=65535, max_distinct=200),
    2: Params(block_size=65535, max_distinct=180),
    3: Params(block_size=32768, max_distinct=220),
    4: Params(block_size=32768, max_distinct=180),
    5: Params(block_size=32768, max_distinct=200),
    # several cuttings tried per frame, the smallest kept
    6: Params(block_size=32768, max_distinct=200, trials=((16384, 160),)),
    7: Params(block_size=32768, max_distinct=200, trials=((8192, 160), (16384, 220))),
    # ... and every block with escapes also tried without them
    8: Params(block_size=32768, max_distinct=200, trials=((16384, 160), (8192, 120), (65535, 220)), escape_trial=True),
    9: Params(
        block_size=32768,
        max_distinct=200,
        trials=((16384, 160), (8192, 160), (8192, 120), (65535, 220)),
        escape_trial=True,
    ),
}
"""Named presets; ``-1`` is fastest, ``-9`` smallest. See docs/python.md (Levels) for measured figures."""


def resolve_params(
    level: int | None = None,
    *,
    block_size: int | None = None,
    max_distinct: int | None = None,
    threshold: int | None = None,
    escape_limit: int | None = None,
) -> Params:
    """The preset of *level* with any explicitly given parameter overriding it."""
    if level is None:
        level = DEFAULT_LEVEL
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"level must be an integer, not {type(level).__name__}")
    if level not in LEVELS:
        raise ValueError(f"level must be in {min(LEVELS)}..{max(LEVELS)}, got {level}")
    if block_size is None and max_distinct is None and threshold is None and escape_limit is None:
        return LEVELS[level]  # frozen: shared as it is (a copy cost 20 us a call, cold)
    overrides: dict[str, Any] = {
        name: value
        for name, value in (
            ("block_size", block_size),
            ("max_distinct", max_distinct),
            ("threshold", threshold),
        )
        if value is not None
    }
    if escape_limit is not None:
        overrides["escape_limit"] = escape_limit
    if overrides:  # explicit settings are used as given, without trials of any kind
        overrides["trials"] = ()
        overrides["escape_trial"] = False
    return dataclasses.replace(LEVELS[level], **overrides)
