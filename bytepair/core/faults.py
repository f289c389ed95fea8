"""What a damaged frame can be wrong with, each told in one message, written once.

Every decoder raises these: the numpy ones (``container.format.unpack_frame_body``,
``core.expand``, ``core.escape``) where they find the fault, and the compiled one's
Python side (``core.kernels.decode``) from the status its kernel fills. The tests
hold the two paths to the same exception and the same message for every input.
"""

from __future__ import annotations

from .._errors import CorruptDataError

__all__ = [
    "bad_bitmap",
    "bad_lengths",
    "bad_payload_length",
    "bad_runs",
    "bad_set_header",
    "content_crc",
    "escape_count",
    "forward_reference",
    "fresh_code_twice",
    "long_body",
    "over_budget",
    "short_body",
    "too_long",
    "wrong_size",
    "wrong_total",
]


# a block's merges and payload


def bad_payload_length() -> CorruptDataError:
    return CorruptDataError("a block's payload is empty or longer than the block")


def fresh_code_twice() -> CorruptDataError:
    return CorruptDataError("pair table lists a fresh code twice")


def forward_reference(block: int, code: int, merge: int, operand: int) -> CorruptDataError:
    """An operand that is a fresh code not defined yet (or a cycle)."""
    return CorruptDataError(f"block {block}: pair code {code} (merge {merge}) uses code {operand} before it is defined")


def too_long(block: int, code: int, block_size: int) -> CorruptDataError:
    return CorruptDataError(f"block {block}: pair code {code} expands to more than the block's {block_size} bytes")


def over_budget(first_block: int, last_block: int, expanded: int, budget_factor: int) -> CorruptDataError:
    return CorruptDataError(
        f"blocks {first_block}..{last_block}: pair tables expand to "
        f"{expanded} bytes or more, more than {budget_factor}x the data they describe"
    )


def wrong_total(block: int, expanded: int | str, declared: int) -> CorruptDataError:
    """A block that expands to another length than its header says (*expanded* may say
    ``"N or more"`` where decoding stopped early)."""
    return CorruptDataError(f"block {block}: expands to {expanded} bytes, header says {declared}")


def escape_count(block: int, held: int, declared: int) -> CorruptDataError:
    return CorruptDataError(
        f"block {block}: holds its escape mark {held} times, its header says {declared} escaped bytes"
    )


# a frame body's columns


def short_body(frame: int) -> CorruptDataError:
    return CorruptDataError(f"frame {frame}: body is shorter than its columns")


def long_body(frame: int, extra: int) -> CorruptDataError:
    return CorruptDataError(f"frame {frame}: {extra} bytes after the last payload")


def wrong_size(frame: int, held: int, declared: int) -> CorruptDataError:
    return CorruptDataError(f"frame {frame}: blocks hold {held} bytes, frame header says {declared}")


def content_crc(frame: int) -> CorruptDataError:
    return CorruptDataError(f"frame {frame}: decoded data fails its CRC-32 check")


def bad_lengths(block: int) -> CorruptDataError:
    return CorruptDataError(f"block {block}: impossible lengths in the block header")


def bad_set_header(block: int) -> CorruptDataError:
    return CorruptDataError(f"block {block}: impossible code-set header")


def bad_runs(block: int) -> CorruptDataError:
    return CorruptDataError(f"block {block}: fresh code runs do not describe its codes")


def bad_bitmap(block: int) -> CorruptDataError:
    return CorruptDataError(f"block {block}: code bitmap does not match its code count")
