"""The two decoders: they agree, and they refuse every malformed table before allocating."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair import CorruptDataError
from bytepair._engine import encode_blocks
from bytepair._expand import expand, expand_reference
from bytepair._tables import PairTables
from tests.strategies import blocky_bytes


def tables_for(data: bytes, cuts: list[int], threshold: int = 2) -> PairTables:
    arr = np.frombuffer(data, dtype=np.uint8)
    bounds = np.array([0, *cuts, len(arr)], dtype=np.int64)
    enc = encode_blocks(arr, bounds, threshold=threshold)
    return PairTables(
        np.diff(bounds), enc.n_merges, enc.n_fresh, enc.code, enc.left, enc.right, enc.payload_len, enc.payload
    )


def both(t: PairTables) -> bytes:
    fast = expand(t).tobytes()
    assert expand_reference(t) == fast
    return fast


def one_block(
    pairs: list[tuple[int, int, int]], payload: bytes, orig_len: int, n_fresh: int | None = None
) -> PairTables:
    code, left, right = (
        (np.array(col, dtype=np.uint8) for col in zip(*pairs, strict=True)) if pairs else (np.zeros(0, np.uint8),) * 3
    )
    n = len(pairs)
    return PairTables(
        np.array([orig_len]),
        np.array([n]),
        np.array([n if n_fresh is None else n_fresh]),
        code,
        left,
        right,
        np.array([len(payload)]),
        np.frombuffer(payload, dtype=np.uint8),
    )


@settings(max_examples=150, deadline=None)
@given(data=blocky_bytes(), threshold=st.integers(2, 4), n_cuts=st.integers(0, 4))
def test_decoders_agree_and_invert_the_engine(data: bytes, threshold: int, n_cuts: int) -> None:
    cuts = sorted(set(np.linspace(0, len(data), n_cuts + 2, dtype=int)[1:-1].tolist()) - {0, len(data)})
    assert both(tables_for(data, cuts, threshold)) == data


def test_recycled_codes_mean_what_they_meant_when_used() -> None:
    # code 255 is defined, used inside 254, then redefined: each use must get its own meaning
    t = one_block(
        [(255, ord("a"), ord("b")), (254, 255, ord("c")), (255, ord("x"), ord("y"))],
        bytes([254, 255, 254]),
        8,
        n_fresh=2,
    )
    assert both(t) == b"abcxyabc"


def test_deep_chain_needs_no_recursion() -> None:
    # 255 nested codes: far deeper than Gage's 30-entry stack
    pairs = [(255, 1, 1)] + [(255 - k, 256 - k, 1) for k in range(1, 200)]
    t = one_block(pairs, bytes([56]), 201)
    assert both(t) == b"\x01" * 201


@pytest.mark.parametrize(
    ("pairs", "payload", "orig_len", "message"),
    [
        ([(255, 255, ord("a"))], b"\xff", 2, "before it is defined"),  # refers to itself
        ([(255, 254, ord("a")), (254, 255, ord("b"))], b"\xfe", 3, "before it is defined"),  # a cycle
        ([(255, ord("a"), ord("b"))], b"\xff\xff", 3, "expands to 4 bytes"),  # wrong declared length
        ([(255, ord("a"), ord("b"))], b"\xff", 1, "more than the block"),  # a code longer than its block
        ([(255, ord("a"), ord("b")), (255, ord("c"), ord("d"))], b"\xff", 2, "fresh code twice"),
    ],
)
def test_malformed_tables_are_refused(
    pairs: list[tuple[int, int, int]], payload: bytes, orig_len: int, message: str
) -> None:
    t = one_block(pairs, payload, orig_len)
    for decoder in (expand, expand_reference):
        with pytest.raises(CorruptDataError, match=message):
            decoder(t)


def test_doubling_bomb_is_refused_before_allocation() -> None:
    # 255 codes each doubling the previous describe 2**255 bytes; the block says 4
    pairs = [(255, ord("a"), ord("a"))] + [(255 - k, 256 - k, 256 - k) for k in range(1, 255)]
    t = one_block(pairs, bytes([1]), 4)
    for decoder in (expand, expand_reference):
        with pytest.raises(CorruptDataError):
            decoder(t)


def test_error_names_the_block() -> None:
    good = tables_for(b"abcabcabc" * 10 + b"xyzxyzxyz" * 10, [90])
    bad = dataclasses.replace(good, orig_len=good.orig_len + np.array([0, 1]), first_block=7)
    with pytest.raises(CorruptDataError, match="block 8"):
        expand(bad)


def frames_of(blob: bytes) -> list[PairTables]:
    """The pair tables of every frame of a one-stream blob."""
    from bytepair._format import FRAME_HEADER_SIZE, STREAM_HEADER_SIZE, unpack_frame_body, unpack_frame_header

    tables: list[PairTables] = []
    pos = STREAM_HEADER_SIZE
    while blob[pos] == ord("F"):
        header = unpack_frame_header(blob, pos, len(tables))
        body = blob[pos + FRAME_HEADER_SIZE : pos + FRAME_HEADER_SIZE + header.body_size]
        tables.append(unpack_frame_body(header, body, len(tables), 0))
        pos += FRAME_HEADER_SIZE + header.body_size
    return tables


def test_reference_decoder_agrees_on_golden_files() -> None:
    from tests.golden import CASES, GOLDEN

    for name in CASES:
        blob = (GOLDEN / f"{name}.bp").read_bytes()
        decoded = b"".join(both(t) for t in frames_of(blob))
        assert decoded == (GOLDEN / f"{name}.bin").read_bytes(), name


@pytest.mark.slow
def test_reference_decoder_agrees_on_corpus_files() -> None:
    import bytepair
    from tests.helpers import corpus_files

    for path in corpus_files("calgary"):
        if path.stat().st_size > 60_000:  # the reference decoder is pure Python
            continue
        data = path.read_bytes()
        assert b"".join(both(t) for t in frames_of(bytepair.compress(data))) == data, path.name
