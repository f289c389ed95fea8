"""Golden files: small inputs and the exact bytes bytepair writes for them.

They freeze format version 2, framed streams and compact ones (a stream of one
block; ``empty``, ``one_byte``, ``random_stored`` and ``all_values`` are stored
compact records, ``abab_t2``, ``run_of_a`` and ``escapes`` encoded ones). If a change alters these bytes, either the
format changed: bump ``bytepair.container.format.VERSION``, document it in
docs/FORMAT.md and regenerate with ``python -m tests.golden``; or only the
encoder's choices changed (the same decoder reads both): move the old files to
``earlier/<what changed>/`` first, so that every stream an earlier encoder
wrote keeps being decoded, then regenerate. Both the golden inputs and the
settings are fixed here; the files are what the encoder writes for them.
"""

from __future__ import annotations

import sys

import numpy as np

from bytepair import compress
from tests.helpers import TESTDATA

GOLDEN = TESTDATA / "golden"
EARLIER = GOLDEN / "earlier"
"""Streams earlier encoders wrote for the same inputs, one folder per change:
``one-merge-per-step`` is from before the engine merged several pairs per step,
``one-recycled-code-per-step`` from before it did so with recycled codes too,
``no-shared-symbols-per-step`` from before one step could merge pairs that share
their right symbol, ``framed-one-block`` from before a stream of one block was written
in the compact form (a frame and an end record around it; docs/FORMAT.md)."""

_TEXT = (
    b"Byte pair encoding replaces the most frequent pair of adjacent bytes with a byte that "
    b"does not occur in the data, and repeats until no pair is frequent enough. "
)


def _recycling() -> bytes:
    """250 distinct values leave 6 fresh codes, so this block must recycle codes."""
    rng = np.random.default_rng(1994)
    words = [bytes(rng.integers(0, 250, 3).astype(np.uint8)) for _ in range(40)]
    return bytes(range(250)) + b"".join(words[i] for i in rng.integers(0, 40, 3000))


def _scattered_codes() -> bytes:
    """Free byte values scattered among used ones: the code set is stored as a bitmap."""
    used = bytes(v for v in range(256) if v % 5)
    return used + bytes(used[i % 40] for i in range(3000))


def _rare_bytes() -> bytes:
    """Text long enough to run out of codes (16 bytes per free code) with a few bytes seen
    once or twice: the block escapes them."""
    text = bytearray(_TEXT * 30)
    for k, value in enumerate((0xE9, 0xFC, 0xE9, 0x80, 0xA7, 0x01)):
        text[797 * k + 40] = value
    return bytes(text)


_PINNED = {"block_size": 32768, "max_distinct": 200, "threshold": 3, "escape_limit": 10}
"""Every case names its encoder settings, so retuning the level presets changes no golden file."""

CASES: dict[str, tuple[bytes, dict[str, int]]] = {
    "empty": (b"", _PINNED),
    "one_byte": (b"x", _PINNED),
    "abab_t2": (b"ABABCABCD", _PINNED | {"threshold": 2}),
    "aaabdaaabac_t2": (b"aaabdaaabac", _PINNED | {"threshold": 2}),
    "run_of_a": (b"a" * 1000, _PINNED),
    "text_two_blocks": (_TEXT * 12, _PINNED | {"block_size": 1024}),
    "all_values": (bytes(range(256)) * 2, _PINNED),
    "random_stored": (bytes(np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8)), _PINNED),
    "recycling": (_recycling(), _PINNED),
    "scattered_codes": (_scattered_codes(), _PINNED),
    "escapes": (_rare_bytes(), _PINNED),
}


def regenerate() -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, (data, params) in CASES.items():
        (GOLDEN / f"{name}.bin").write_bytes(data)
        (GOLDEN / f"{name}.bp").write_bytes(compress(data, **params))
        print(f"wrote {name}: {len(data)} -> {len(compress(data, **params))} bytes")


if __name__ == "__main__":
    regenerate()
    sys.exit(0)
