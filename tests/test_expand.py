"""The two decoders: they agree, and they refuse every malformed table before allocating."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bytepair import CorruptDataError
from bytepair.backend import expand
from bytepair.core.engine import encode_blocks
from bytepair.core.tables import PairTables
from tests.helpers import DECODERS, expand_in_python, expand_python_nodes, expand_vectorized, use_kernels
from tests.strategies import blocky_bytes


def tables_for(data: bytes, cuts: list[int], threshold: int = 2) -> PairTables:
    arr = np.frombuffer(data, dtype=np.uint8)
    bounds = np.array([0, *cuts, len(arr)], dtype=np.int64)
    enc = encode_blocks(arr, bounds, threshold=threshold)
    return PairTables(
        np.diff(bounds), enc.n_merges, enc.n_fresh, enc.code, enc.left, enc.right, enc.payload_len, enc.payload
    )


def both(t: PairTables) -> bytes:
    """*t* decoded by the fast decoder, checked against every other way of decoding it."""
    fast = expand(t).tobytes()
    for decoder in DECODERS:
        assert decoder(t) == fast, decoder.__name__
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
    for decoder in DECODERS:
        with pytest.raises(CorruptDataError, match=message):
            decoder(t)


def test_doubling_bomb_is_refused_before_allocation() -> None:
    # 255 codes each doubling the previous describe 2**255 bytes; the block says 4
    pairs = [(255, ord("a"), ord("a"))] + [(255 - k, 256 - k, 256 - k) for k in range(1, 255)]
    t = one_block(pairs, bytes([1]), 4)
    for decoder in DECODERS:
        with pytest.raises(CorruptDataError):
            decoder(t)


def test_error_names_the_block() -> None:
    good = tables_for(b"abcabcabc" * 10 + b"xyzxyzxyz" * 10, [90])
    bad = dataclasses.replace(good, orig_len=good.orig_len + np.array([0, 1]), first_block=7)
    for decoder in DECODERS:
        with pytest.raises(CorruptDataError, match="block 8"):
            decoder(bad)


def frames_of(blob: bytes) -> list[PairTables]:
    """The pair tables of every frame of a one-stream blob."""
    from bytepair.container.format import FRAME_HEADER_SIZE, STREAM_HEADER_SIZE, unpack_frame_body, unpack_frame_header
    from tests.helpers import framed

    blob = framed(blob)  # a compact stream as the frame it stands for
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


def _texty(length: int, seed: int) -> bytes:
    """Words and long repeated phrases: codes of more than 16 bytes, and many short ones."""
    rng = np.random.default_rng(seed)
    words = [b"pair ", b"byte ", b"of ", b"the block and the code ", b"0123456789abcdefghijklmnopqrstuvwxyz"]
    letters = [bytes(rng.integers(97, 123, 3).astype(np.uint8)) for _ in range(200)]
    pick = rng.integers(0, len(words) + len(letters), length // 3)
    return b"".join((words + letters)[i] for i in pick)[:length]


@pytest.mark.parametrize(
    ("length", "block"),
    [
        (60_000, 30_000),  # few large blocks: decoded block by block through per-block tables
        (20_000, 1_000),  # small blocks: every symbol resolved to its node, decoded in groups
        (4_000, 8),  # tiny blocks, too many for tables: operands and symbols found by search
    ],
)
@pytest.mark.parametrize("ordered", [True, False], ids=["word-copies", "byte-gathers"])
def test_every_decoding_strategy_agrees_with_the_reference(
    length: int, block: int, ordered: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bytepair.core import expand as _expand
    from bytepair.core.expand import _W, _Payloads, _Resolved, _Scratch

    monkeypatch.setattr(_expand, "ordered_writes", lambda: ordered)

    data = _texty(length, seed=length) if block > 8 else b"aaaabbbb" * (length // 8)
    t = tables_for(data, list(range(block, length, block)))
    assert len(t.code)
    res = _Resolved(t)
    nodes = _Payloads(t, res, _Scratch()).nodes
    kind = "search" if res.final is None else "group" if nodes is not None else "block"
    assert kind == {30_000: "block", 1_000: "group", 8: "search"}[block]
    assert both(t) == data
    if block > 8:  # long codes are copied word by word
        assert int(np.max(t.orig_len)) > _W


def test_recycled_codes_resolve_alike_by_table_and_by_search() -> None:
    """The same recycled table decoded alone (tables) and among many tiny blocks (search)."""
    pairs = [(255, ord("a"), ord("b")), (254, 255, ord("c")), (255, ord("x"), ord("y")), (254, 255, 254)]
    alone = one_block(pairs, bytes([254, 255]), 7, n_fresh=2)
    expected = both(alone)
    assert expected == b"xyabc" + b"xy"
    tiny = [(b"%c" % (65 + k % 26)) for k in range(2000)]
    n = len(tiny)
    many = PairTables(
        np.concatenate((alone.orig_len, np.ones(n, dtype=np.int64))),
        np.concatenate((alone.n_merges, np.zeros(n, dtype=np.int64))),
        np.concatenate((alone.n_fresh, np.zeros(n, dtype=np.int64))),
        alone.code,
        alone.left,
        alone.right,
        np.concatenate((alone.payload_len, np.ones(n, dtype=np.int64))),
        np.concatenate((alone.payload, np.frombuffer(b"".join(tiny), dtype=np.uint8))),
    )
    from bytepair.core.expand import _Resolved

    assert _Resolved(many).final is None
    assert both(many) == expected + b"".join(tiny)


@pytest.mark.parametrize("ordered", [True, False], ids=["word-copies", "byte-gathers"])
@pytest.mark.parametrize("block", [1_500, 20_000])
def test_escapes_are_checked_and_restored_per_block(block: int, ordered: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Escapes whose originals are the mark itself (so the data is unchanged), in every block
    but one; that block's mark value occurs in it and must be left alone."""
    from bytepair.core import expand as _expand
    from bytepair.core.escape import Escapes

    monkeypatch.setattr(_expand, "ordered_writes", lambda: ordered)

    data = _texty(4 * block, seed=block)
    t = tables_for(data, [block, 2 * block, 3 * block])
    mark = ord("p")
    count = np.array([data[k : k + block].count(mark) for k in range(0, 4 * block, block)], dtype=np.int64)
    count[2] = 0
    assert count.min(initial=1) >= 0 and count[[0, 1, 3]].min() > 0
    escapes = Escapes(count, np.full(4, mark, dtype=np.uint8), np.full(int(count.sum()), mark, dtype=np.uint8))
    assert both(dataclasses.replace(t, escapes=escapes)) == data
    # blocks 1 and 3 now claim one escaped byte too many: block 1 is named
    wrong = count + np.array([0, 1, 0, 1])
    broken = Escapes(wrong, escapes.mark, np.full(int(wrong.sum()), mark, dtype=np.uint8))
    for decoder in DECODERS:
        with pytest.raises(CorruptDataError, match="block 11: holds its escape mark"):
            decoder(dataclasses.replace(t, escapes=broken, first_block=10))


def test_word_copies_in_order_copy_every_byte() -> None:
    """Copies as 16-byte words, applied in order, leave exactly the source bytes at each
    destination; the words of a copy of 16 bytes or more stay inside it."""
    from bytepair.core.expand import _W, _chunks

    rng = np.random.default_rng(1)
    source = rng.integers(0, 256, 2000, dtype=np.uint8)
    for skip_first in (False, True):
        for _ in range(300):
            k = int(rng.integers(1, 20))
            lengths = rng.integers(_W + 1 if skip_first else 1, 5 * _W, k)
            src = rng.integers(0, 1000, k)
            dst = np.cumsum(lengths) - lengths
            words_src, words_dst, first = _chunks(src, dst, lengths, skip_first)
            out = np.zeros(int(lengths.sum()) + _W, dtype=np.uint8)
            if skip_first:  # the first word of each copy was written before
                for a, b in zip(src.tolist(), dst.tolist(), strict=True):
                    out[b : b + _W] = source[a : a + _W]
            for a, b in zip(words_src.tolist(), words_dst.tolist(), strict=True):
                out[b : b + _W] = source[a : a + _W]
            for a, b, n in zip(src.tolist(), dst.tolist(), lengths.tolist(), strict=True):
                assert out[b : b + n].tolist() == source[a : a + n].tolist()
            owner = np.repeat(np.arange(k), np.diff(np.append(first, len(words_src))))
            long = lengths[owner] >= _W
            assert (words_dst[long] + _W <= (dst + lengths)[owner][long]).all()


def test_this_numpy_writes_overlapping_words_in_order() -> None:
    """The word copies rely on it; without it the decoder falls back to byte gathers
    (correct, about 1.25x the time), and this test says so."""
    from bytepair.core.expand import ordered_writes

    assert ordered_writes(), "numpy no longer assigns fancy indexes in order: decoding takes the slow path"


@pytest.mark.parametrize("ordered", [True, False], ids=["word-copies", "byte-gathers"])
def test_damaged_tables_are_refused_on_either_path(ordered: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from bytepair.core import expand as _expand

    monkeypatch.setattr(_expand, "ordered_writes", lambda: ordered)
    data = _texty(30_000, seed=7)
    t = tables_for(data, [10_000, 20_000])
    assert expand(t).tobytes() == data
    longer = t.orig_len.copy()
    longer[1] += 1
    with pytest.raises(CorruptDataError, match="block 1: expands to"):
        expand(dataclasses.replace(t, orig_len=longer))


def test_a_group_without_long_symbols_among_groups_with_them() -> None:
    """Many small blocks (decoded in groups of symbols): a group whose symbols are all
    short, while other groups hold symbols longer than a word, must decode (it raised
    IndexError on the corpora joined into one input)."""
    from bytepair.core.expand import _GROUP, _Payloads, _Resolved, _Scratch

    long_part = (bytes(range(100, 140)) * 2 + b"_") * 8  # codes of 40+ bytes
    short_part = bytes(np.random.default_rng(2).integers(0, 8, 8 * _GROUP, dtype=np.uint8))  # short codes only
    data = long_part + short_part + long_part
    block = 700
    t = tables_for(data, list(range(block, len(data), block)))
    payloads = _Payloads(t, _Resolved(t), _Scratch())
    assert payloads.nodes is not None, "expected the grouped path"
    assert len(payloads.nodes) > 3 * _GROUP, "expected a group of short symbols only"
    assert expand(t).tobytes() == data


def test_a_long_code_no_payload_symbol_uses() -> None:
    """A block whose table defines a code longer than a word that its payload never
    uses (legal, if wasteful) decodes; the word copies for long symbols have none to do
    (it raised IndexError)."""
    from bytepair.core.expand import _Payloads, _Resolved, _Scratch

    chain = [(255 - k, 255 - k + 1 if k else ord("a"), ord("b") + k) for k in range(20)]  # 21 bytes at the end
    t = one_block(chain, b"xyz" * 1000, 3000)
    assert _Payloads(t, _Resolved(t), _Scratch()).nodes is None, "expected the block-by-block path"
    assert both(t) == b"xyz" * 1000


@pytest.mark.parametrize("delta", [-2, 1])
def test_every_decoder_counts_the_marks_a_block_holds_alike(delta: int) -> None:
    """A wrong escape count is refused with the same message, naming how many marks the
    block holds, by every decoder (the Python ones stop searching after one too many)."""
    from bytepair.core.escape import Escapes

    data = b"pqpqpq xyz " * 30
    t = tables_for(data, [])
    mark, held = ord("x"), data.count(b"x")
    count = held + delta
    escapes = Escapes(np.array([count]), np.array([mark], dtype=np.uint8), np.full(count, mark, dtype=np.uint8))
    for decoder in DECODERS:
        with pytest.raises(CorruptDataError, match=f"holds its escape mark {held} times, its header says {count}"):
            decoder(dataclasses.replace(t, escapes=escapes))


def test_a_frame_decoded_in_runs_of_blocks_decodes_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames with many merges are decoded a run of blocks at a time (bounded memory):
    the same bytes, escapes included, and errors name their own block."""
    from bytepair.core import expand as _expand
    from bytepair.core.escape import Escapes

    data = _texty(40_000, seed=3)
    t = tables_for(data, list(range(2_000, 40_000, 2_000)))
    mark = ord("p")
    count = np.array([data[k : k + 2_000].count(mark) for k in range(0, 40_000, 2_000)], dtype=np.int64)
    t = dataclasses.replace(
        t, escapes=Escapes(count, np.full(20, mark, np.uint8), np.full(int(count.sum()), mark, np.uint8))
    )
    whole = expand(t).tobytes()
    assert whole == data
    monkeypatch.setattr(_expand, "MERGES_PER_RUN", int(t.n_merges.max()) + 1)  # a run of one or two blocks
    assert expand(t).tobytes() == whole
    longer = t.orig_len.copy()
    longer[13] += 1
    with pytest.raises(CorruptDataError, match="block 13: expands to"):
        expand(dataclasses.replace(t, orig_len=longer))


def test_the_expansion_budget_holds_for_a_whole_frame_decoded_in_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight blocks whose codes each spell 13,310 bytes for 1,000 of data: within
    4x + 65536 one block at a time, over it for the frame, which is the rule."""
    from bytepair.core import expand as _expand

    chain = [(255, ord("a"), ord("a"))] + [(255 - k, 256 - k, 256 - k) for k in range(1, 9)]  # 2..512 "a"
    spare = [(246 - k, 247, 248) for k in range(16)]  # 512 + 256 bytes each, never used
    pairs = chain + spare
    payload = bytes([247, 248, 249, 250, 251, 253])  # 512 + 256 + 128 + 64 + 32 + 8
    one = one_block(pairs, payload, 1000)
    assert expand(one).tobytes() == b"a" * 1000
    n = 8
    t = PairTables(
        np.full(n, 1000),
        np.full(n, len(pairs)),
        np.full(n, len(pairs)),
        np.tile(one.code, n),
        np.tile(one.left, n),
        np.tile(one.right, n),
        np.full(n, len(payload)),
        np.tile(one.payload, n),
    )
    for merges_per_run in (_expand.MERGES_PER_RUN, len(pairs)):
        monkeypatch.setattr(_expand, "MERGES_PER_RUN", merges_per_run)
        for decoder in (expand_vectorized, expand_python_nodes, expand_in_python):  # not the reference: no budget
            with pytest.raises(CorruptDataError, match="more than 4x the data they describe"):
                decoder(t)


@pytest.mark.parametrize(
    ("length", "cuts", "path"),
    [
        (3_000, [], "_expand_small"),  # one small block: all in Python
        (30_000, [], "_MeaningsInPython"),  # one block of many symbols: expansions in Python, payload in numpy
        (60_000, list(range(2_000, 60_000, 2_000)), "_Resolved"),  # 30 blocks: numpy passes per depth level
    ],
)
def test_each_size_of_run_takes_its_path(
    length: int, cuts: list[int], path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thresholds send a run of blocks to the path that is fastest for its size (on the
    numpy path, whose choice this is)."""
    from bytepair.core import expand as _expand

    use_kernels("numpy", monkeypatch)

    taken: list[str] = []

    def spy(name: str) -> Callable[..., Any]:
        original = getattr(_expand, name)

        def noted(*args: Any) -> Any:
            taken.append(name)
            return original(*args)

        return noted

    for name in ("_expand_small", "_MeaningsInPython", "_Resolved"):
        monkeypatch.setattr(_expand, name, spy(name))
    data = _texty(length, seed=5)
    t = tables_for(data, cuts, threshold=3)
    assert expand(t).tobytes() == data
    assert taken[0] == path


def test_a_payload_far_longer_than_its_block_is_refused_early() -> None:
    """The Python path joins a slice of symbols at a time and stops building at the first
    slice past the block's length, then counts the rest without building it, so it says
    what the compiled decoder says (found by the coverage-guided fuzzer on a compact
    record: "2299 or more" against "2840"); every decoder refuses."""
    t = one_block([(255, ord("a"), ord("b"))], b"\xff" * 900, 1000)  # 1,800 bytes
    for decoder in DECODERS:
        with pytest.raises(CorruptDataError, match="block 0: expands to"):
            decoder(t)
    with pytest.raises(CorruptDataError, match="expands to 1800 bytes, header says 1000"):
        expand_in_python(t)
