"""Cutting input into blocks: Gage's size and distinct-value rules."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair.core.blocks import split_blocks


def reference_cuts(data: bytes, block_size: int, max_distinct: int) -> list[int]:
    """Gage's reading loop, byte by byte."""
    cuts = [0]
    seen: set[int] = set()
    length = 0
    for i, byte in enumerate(data):
        seen.add(byte)
        length += 1
        if length == block_size or len(seen) == max_distinct:
            cuts.append(i + 1)
            seen = set()
            length = 0
    if cuts[-1] != len(data):
        cuts.append(len(data))
    return cuts


def cuts(data: bytes, block_size: int, max_distinct: int) -> list[int]:
    return [int(c) for c in split_blocks(np.frombuffer(data, dtype=np.uint8), block_size, max_distinct)]


def test_empty_input_has_no_blocks() -> None:
    assert cuts(b"", 100, 200) == [0]


def test_all_256_values_split_at_the_200th_distinct() -> None:
    assert cuts(bytes(range(256)), 5000, 200) == [0, 200, 256]


def test_exactly_200_distinct_ends_the_block_on_the_last_byte() -> None:
    assert cuts(bytes(range(200)) + b"abc", 5000, 200) == [0, 200, 203]


def test_text_uses_full_blocks() -> None:
    data = b"hello world " * 1000
    assert cuts(data, 4096, 200) == [0, 4096, 8192, 12000]


@settings(max_examples=200, deadline=None)
@given(
    data=st.one_of(st.binary(max_size=3000), st.lists(st.integers(0, 255), max_size=3000).map(bytes)),
    block_size=st.integers(1, 700),
    max_distinct=st.integers(1, 255),
)
def test_matches_gages_reading_loop(data: bytes, block_size: int, max_distinct: int) -> None:
    assert cuts(data, block_size, max_distinct) == reference_cuts(data, block_size, max_distinct)
