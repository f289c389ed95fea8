"""Combining frame CRCs gives exactly zlib.crc32 of the whole."""

from __future__ import annotations

import zlib

from hypothesis import given
from hypothesis import strategies as st

from bytepair.container.crc import crc32_combine


@given(a=st.binary(max_size=300), b=st.binary(max_size=300))
def test_combine_equals_crc_of_concatenation(a: bytes, b: bytes) -> None:
    assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def test_long_second_part() -> None:
    a, b = b"head", bytes(5_000_000)
    assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)
