"""Hypothesis strategies for the inputs where byte pair encoding goes wrong."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def blocky_bytes(draw: st.DrawFn, max_size: int = 3000) -> bytes:
    """Bytes with the structure that stresses pair counting: runs, repeats, small alphabets."""
    kind = draw(st.sampled_from(["alphabet", "runs", "repeat", "raw"]))
    if kind == "raw":
        return draw(st.binary(min_size=1, max_size=max_size))
    if kind == "runs":
        parts = draw(st.lists(st.tuples(st.integers(0, 255), st.integers(1, 40)), min_size=1, max_size=60))
        return b"".join(bytes([b]) * n for b, n in parts)
    if kind == "repeat":
        unit = draw(st.binary(min_size=1, max_size=6))
        return unit * draw(st.integers(1, max_size // len(unit)))
    alphabet = draw(st.lists(st.integers(0, 255), min_size=1, max_size=4, unique=True))
    return bytes(draw(st.lists(st.sampled_from(alphabet), min_size=1, max_size=max_size)))
