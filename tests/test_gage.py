"""Gage's 1994 format: his files read back exactly, ours obey every constraint of his expander.

The checker below reads files with its own small parser (GAGE.md, "File format"),
so it does not trust the module it checks; its stack-need computation is itself
checked against the MANIFEST's figures for Gage's own files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import itertools
import os
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bytepair import BytePairError, CorruptDataError, OutputLimitError, TruncatedDataError, gage
from bytepair.core.expand import expand_reference
from bytepair.core.tables import PairTables
from tests.helpers import CORPUS, GAGE_VECTORS, gage_input

EMPTY_BLOCK = b"\xfe\x7f\xfe\xff\x00\x00"
STACK = 30  # entries of the stack in Gage's expand.c


# -- an independent reader and checker --------------------------------------------


@dataclasses.dataclass
class Block:
    pairs: dict[int, tuple[int, int]]
    table: bytes
    payload: bytes


def read_blocks(data: bytes) -> list[Block]:
    """Split a Gage file into blocks, walking each table as his expander does."""
    blocks = []
    pos = 0
    while pos < len(data):
        start = pos
        pairs: dict[int, tuple[int, int]] = {}
        c = 0
        while c < 256:
            count = data[pos]
            pos += 1
            if count > 127:
                c += count - 127
                assert c <= 256, "literal run past code 255"
                if c == 256:
                    break
                count = 0
            assert c + count <= 255, "pair run past code 255"
            for _ in range(count + 1):
                left = data[pos]
                pos += 1
                if left != c:
                    pairs[c] = (left, data[pos])
                    pos += 1
                c += 1
        table = data[start:pos]
        size = int.from_bytes(data[pos : pos + 2], "big")
        pos += 2
        assert pos + size <= len(data), "payload cut"
        blocks.append(Block(pairs, table, data[pos : pos + size]))
        pos += size
    return blocks


def stack_need(pairs: dict[int, tuple[int, int]]) -> dict[int, int]:
    """Stack entries Gage's expander needs per code: D(pair) = max(2, 1 + D(left), D(right)).

    Expanding a code pops it and pushes right then left; left is expanded one slot
    higher than right. Raises on a cycle.
    """
    need: dict[int, int] = {}

    def d(c: int, seen: frozenset[int]) -> int:
        if c not in pairs:
            return 0
        assert c not in seen, f"code {c} is part of a cycle"
        if c not in need:
            left, right = pairs[c]
            need[c] = max(2, 1 + d(left, seen | {c}), d(right, seen | {c}))
        return need[c]

    for c in pairs:
        d(c, frozenset())
    return need


def expand_block(block: Block) -> bytes:
    """What his expander outputs for one block (code expansions memoised, same result)."""
    exp = {v: bytes([v]) for v in range(256)}

    def e(c: int) -> bytes:
        if c in block.pairs and len(exp[c]) == 1 and exp[c][0] == c:
            left, right = block.pairs[c]
            exp[c] = e(left) + e(right)
        return exp[c]

    return b"".join(e(s) for s in block.payload)


def check_gage_file(packed: bytes, original: bytes, *, ours: bool = True) -> list[Block]:
    """Everything Gage's original expander needs, and what our writer promises besides."""
    blocks = read_blocks(packed)
    out = []
    for k, block in enumerate(blocks):
        leftcode = list(range(256))
        rightcode = [0] * 256
        for c, (left, right) in block.pairs.items():
            assert left != c and right != c, f"block {k}: code {c} refers to itself"
            leftcode[c], rightcode[c] = left, right
        # his writer's run caps and literal absorption give exactly these bytes
        assert block.table == gage._pack_table(leftcode, rightcode), f"block {k}: table not as Gage writes it"
        assert len(block.payload) <= 65535
        need = stack_need(block.pairs)
        if ours:
            assert max(need.values(), default=0) <= STACK, f"block {k}: needs {max(need.values())} stack entries"
            assert block.payload or len(blocks) == 1, f"block {k} is empty"
        data = expand_block(block)
        # a pair code stands for its pair everywhere, so it can never be data of its block
        assert not set(data) & set(block.pairs), f"block {k}: a pair code occurs as data"
        out.append(data)
    assert b"".join(out) == original
    if ours and not original:
        assert packed == EMPTY_BLOCK
    return blocks


# -- Gage's own files ------------------------------------------------------------


def manifest() -> list[dict[str, str]]:
    path = GAGE_VECTORS / "MANIFEST"
    keys = ["name", "in_bytes", "in_sha256", "gage_bytes", "gage_sha256", "nblocks", "max_stack", "note", "blocks"]
    rows = []
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            rows.append(dict(zip(keys, line.split("\t"), strict=True)))
    return rows


def vector_names() -> list[str]:
    return [row["name"] for row in manifest()]


def vector(name: str) -> tuple[bytes, bytes]:
    return gage_input(name), (GAGE_VECTORS / (name + ".gage")).read_bytes()


@pytest.mark.parametrize("name", vector_names())
def test_gage_files_expand_exactly(name: str) -> None:
    original, packed = vector(name)
    assert gage.decompress(packed) == original
    assert gage.decompress(packed, max_length=len(original)) == original
    # with and without his trailing empty block
    assert gage.decompress(packed + EMPTY_BLOCK) == original
    if packed.endswith(EMPTY_BLOCK) and len(packed) > len(EMPTY_BLOCK):
        assert gage.decompress(packed[: -len(EMPTY_BLOCK)]) == original


@pytest.mark.parametrize("name", vector_names())
def test_vectors_are_the_ones_gage_made(name: str) -> None:
    """testdata/gage is byte for byte what the MANIFEST describes (an input that is a corpus file,
    and so not in the repo, comes from decoding Gage's output)."""
    original, packed = vector(name)
    row = next(r for r in manifest() if r["name"] == name)
    assert (len(original), hashlib.sha256(original).hexdigest()) == (int(row["in_bytes"]), row["in_sha256"])
    assert (len(packed), hashlib.sha256(packed).hexdigest()) == (int(row["gage_bytes"]), row["gage_sha256"])


@pytest.mark.parametrize("name", vector_names())
def test_checker_agrees_with_manifest(name: str) -> None:
    """The checker's reader, table canon and stack need, on Gage's own output."""
    original, packed = vector(name)
    row = next(r for r in manifest() if r["name"] == name)
    blocks = check_gage_file(packed, original, ours=False)
    assert len(blocks) == int(row["nblocks"])
    needs = [max(stack_need(b.pairs).values(), default=0) for b in blocks]
    assert max(needs) == int(row["max_stack"])
    for block, need, figures in zip(blocks, needs, row["blocks"].split(), strict=False):
        if "/" in figures:
            _raw, size, n_codes, table_bytes, stack = (int(x) for x in figures.split("/"))
            assert (len(block.payload), len(block.pairs), len(block.table), need) == (size, n_codes, table_bytes, stack)


def test_concatenated_gage_files() -> None:
    names = [n for n in vector_names() if n != "kennedy.xls.bin"]
    pairs = [vector(n) for n in names]
    assert gage.decompress(b"".join(p for _, p in pairs)) == b"".join(o for o, _ in pairs)


def test_deep_chains_are_rewritten_for_his_stack() -> None:
    """His compressor makes files his expander cannot read; ours stays within 30 entries."""
    for name in ("deep_chain_40.bin", "deep_chain_60.bin"):
        original, packed = vector(name)
        assert max(max(stack_need(b.pairs).values()) for b in read_blocks(packed)) > STACK
        check_gage_file(gage.compress(original), original)
        check_gage_file(gage.compress(original, block_size=5000), original)


@pytest.mark.parametrize("name", ["debruijn65.bin", "debruijn64_ok.bin"])
def test_compressor_hang_input(name: str) -> None:
    """More than 4096 distinct pairs in one block hang his compressor, not ours (a hang
    here would stop the suite; speed is the benchmarks' business, not a test's)."""
    original = (GAGE_VECTORS / "compressor-hangs" / name).read_bytes()
    packed = gage.compress(original, block_size=5000)
    check_gage_file(packed, original)
    assert gage.decompress(packed) == original
    check_gage_file(gage.compress(original), original)


def test_no_worse_than_gage_on_his_corpus_vectors() -> None:
    ours = theirs = 0
    for name in ("alice29.txt.bin", "kennedy.xls.bin", "obj1.bin", "fields.c.bin", "random_20k_seed1994.bin"):
        original, packed = vector(name)
        ours += len(gage.compress(original))
        theirs += len(packed)
    assert ours <= theirs


# -- our writer -------------------------------------------------------------------


CORPUS_MEMBERS_IN_VECTORS = ("alice29.txt", "kennedy.xls", "fields.c", "obj1")
"""Corpus files among Gage's vectors (as NAME.bin): what the corpus test reads when ../shared is absent."""


def corpus_params() -> list[tuple[str, str]]:
    found = [(c, n) for c in ("canterbury", "calgary") for n in _names(c)]
    return found or [("testdata/gage", name + ".bin") for name in CORPUS_MEMBERS_IN_VECTORS]


def _names(corpus: str) -> list[str]:
    folder = CORPUS / corpus
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.mark.parametrize(("corpus", "name"), corpus_params())
def test_corpus_round_trip_meets_his_constraints(corpus: str, name: str) -> None:
    """Every corpus file, or without ../shared the corpus files among Gage's vectors in testdata/gage."""
    original = gage_input(name) if corpus == "testdata/gage" else (CORPUS / corpus / name).read_bytes()
    packed = gage.compress(original)
    check_gage_file(packed, original)
    assert gage.decompress(packed) == original


@pytest.mark.parametrize(
    "data",
    [b"", b"x", b"ABABCABCD", b"aaabdaaabac", bytes(range(256)), b"a" * 10000, b"abc" * 3000, bytes(70000)],
    ids=["empty", "one", "abab", "aaab", "all", "a10000", "abc", "zeros70000"],
)
def test_small_round_trips(data: bytes) -> None:
    for block_size in (1, 2, 5000, gage.DEFAULT_BLOCK_SIZE, 65535):
        packed = gage.compress(data, block_size=block_size)
        check_gage_file(packed, data)
        assert gage.decompress(packed) == data


def test_empty_input_is_his_empty_block() -> None:
    assert gage.compress(b"") == EMPTY_BLOCK
    assert gage.decompress(EMPTY_BLOCK) == b""
    assert gage.decompress(b"") == b""  # no blocks at all: a valid file, see the module docstring


def test_incompressible_data_costs_six_bytes_per_64k() -> None:
    data = np.random.default_rng(1994).integers(0, 256, 200_000, dtype=np.uint8).tobytes()
    packed = gage.compress(data)
    assert len(packed) == len(data) + 6 * 4
    check_gage_file(packed, data)


def test_bytes_like_inputs() -> None:
    data = b"the cat sat on the mat with the hat " * 50
    expected = gage.compress(data)
    for form in (bytearray(data), memoryview(data), np.frombuffer(data, dtype=np.uint8)):
        assert gage.compress(form) == expected
        assert gage.decompress(bytearray(expected)) == data
    assert gage.compress(np.frombuffer(data, dtype=np.uint32)) == expected
    with pytest.raises(TypeError):
        gage.compress("text")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"block_size": 0}, ValueError),
        ({"block_size": 65536}, ValueError),
        ({"max_distinct": 256}, ValueError),
        ({"threshold": 1}, ValueError),
        ({"block_size": 5000.0}, TypeError),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        gage.compress(b"data", **kwargs)  # type: ignore[arg-type]


def test_bad_max_length() -> None:
    with pytest.raises(ValueError):
        gage.decompress(EMPTY_BLOCK, max_length=-1)


# -- hostile and damaged input ----------------------------------------------------


@functools.cache
def sample_packed() -> bytes:
    return gage.compress(SAMPLE, block_size=300)


def block(pairs: dict[int, tuple[int, int]], payload: bytes) -> bytes:
    leftcode = list(range(256))
    rightcode = [0] * 256
    for c, (left, right) in pairs.items():
        leftcode[c], rightcode[c] = left, right
    return gage._pack_table(leftcode, rightcode) + len(payload).to_bytes(2, "big") + payload


SAMPLE = b"It was the best of times, it was the worst of times; " * 8 + bytes(range(0, 256, 3)) * 2


def test_every_cut_is_truncated_or_a_block_boundary() -> None:
    packed = gage.compress(SAMPLE, block_size=200)
    blocks = read_blocks(packed)
    assert len(blocks) > 2
    boundaries = {}
    pos = 0
    produced = b""
    for b in blocks:
        pos += len(b.table) + 2 + len(b.payload)
        produced += expand_block(b)
        boundaries[pos] = produced
    for cut in range(len(packed)):
        if cut in boundaries or cut == 0:
            assert gage.decompress(packed[:cut]) == boundaries.get(cut, b"")
        else:
            with pytest.raises(TruncatedDataError):
                gage.decompress(packed[:cut])


def test_cut_payload_names_the_size() -> None:
    with pytest.raises(TruncatedDataError, match="packed size is 256 bytes, only 100 left"):
        gage.decompress(gage.EMPTY_TABLE + b"\x01\x00" + b"x" * 100)


@pytest.mark.parametrize(
    "pairs",
    [
        {200: (201, 97), 201: (200, 98)},  # two codes
        {200: (97, 201), 201: (202, 98), 202: (98, 200)},  # three codes
        {200: (201, 201), 201: (200, 200), 250: (97, 98)},  # a cycle the payload never reaches
    ],
    ids=["cycle2", "cycle3", "unreached"],
)
def test_cycles(pairs: dict[int, tuple[int, int]]) -> None:
    start = time.perf_counter()
    with pytest.raises(CorruptDataError, match="cycle"):
        gage.decompress(block(pairs, bytes([250, 200, 97])))
    assert time.perf_counter() - start < 2


def test_self_reference() -> None:
    with pytest.raises(CorruptDataError, match="itself"):
        gage.decompress(block({200: (97, 200)}, bytes([200])))
    # left == code is Gage's literal flag: a one-byte entry, not a pair
    assert gage.decompress(block({}, b"\xc8")) == b"\xc8"


@pytest.mark.parametrize(
    "table",
    [
        b"\xff\x80\xff",  # skip 128 codes, literal 128, skip 128 more: code 256 is past the end
        b"\xff\x80\x7f",  # skip 128 codes, literal 128, a run of 128 pairs from code 129
        b"\x00\x61\x62\xff\x81\xff",  # pair 0, 128 literals, literal 129, 128 more
    ],
    ids=["literals", "pairs", "mixed"],
)
def test_runs_past_code_255(table: bytes) -> None:
    with pytest.raises(CorruptDataError, match="past code 255"):
        gage.decompress(table + b"\x00" * 300)
    # ... where his expander writes past its 256-entry tables
    assert gage.decompress(b"\xff\x80\xfe\x00\x00") == b""  # the same walk ending at 256 is valid


def test_size_larger_than_data_left() -> None:
    packed = gage.compress(b"hello hello hello hello")
    with pytest.raises(TruncatedDataError):
        gage.decompress(packed[:-1])
    with pytest.raises(TruncatedDataError):
        gage.decompress(packed[: -len(read_blocks(packed)[0].payload) - 1])


def doubling_chain(depth: int, payload: bytes) -> bytes:
    """Code 255 = '00', 254 = (255, 255), ...: one symbol stands for 2**depth bytes."""
    pairs = {255: (48, 48)}
    for k in range(1, depth):
        pairs[255 - k] = (256 - k, 256 - k)
    return block(pairs, payload)


def test_expansion_bombs_are_bounded() -> None:
    start = time.perf_counter()
    bomb = doubling_chain(200, bytes([56]))  # 2**200 bytes
    with pytest.raises(CorruptDataError, match="more than"):
        gage.decompress(bomb)
    with pytest.raises(OutputLimitError):
        gage.decompress(bomb, max_length=10**6)
    big = doubling_chain(16, bytes([240]) * 1000)  # 64 MiB in one block, beyond any writer's
    with pytest.raises(CorruptDataError):
        gage.decompress(big)
    assert time.perf_counter() - start < 2


def test_max_length() -> None:
    chain = doubling_chain(10, bytes([246]) * 3)  # 3 KiB
    assert gage.decompress(chain) == b"0" * 3072
    assert gage.decompress(chain, max_length=3072) == b"0" * 3072
    with pytest.raises(OutputLimitError):
        gage.decompress(chain, max_length=3071)
    packed = gage.compress(SAMPLE, block_size=100)
    with pytest.raises(OutputLimitError):
        gage.decompress(packed, max_length=len(SAMPLE) - 1)


def prefix_chain(n_codes: int, top_length: int) -> dict[int, tuple[int, int]]:
    """Code 255 = '00', doubled up to *top_length* bytes, then *n_codes* codes each one byte longer."""
    pairs = {255: (48, 48)}
    code, length = 255, 2
    while 2 * length <= top_length:
        pairs[code - 1] = (code, code)
        code, length = code - 1, 2 * length
    for _ in range(n_codes):
        pairs[code - 1] = (code, 49)
        code -= 1
    return pairs


@pytest.mark.parametrize(("n_codes", "top_length", "slow_path"), [(120, 2, False), (100, 1024, True)])
def test_tables_longer_than_their_output(
    n_codes: int, top_length: int, slow_path: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Valid tables whose codes spell out far more than the payload uses: a little
    more goes to the vectorised decoder, a lot to the stack decoder."""
    calls = []

    def spy(tables: PairTables) -> bytes:
        calls.append(tables)
        return expand_reference(tables)

    monkeypatch.setattr(gage, "expand_reference", spy)
    pairs = prefix_chain(n_codes, top_length)
    packed = block(pairs, bytes([min(pairs), 49, 48]))
    expected = expand_block(read_blocks(packed)[0])
    tail = gage.compress(b"xyz" * 10)
    assert gage.decompress(packed + tail + packed) == expected + b"xyz" * 10 + expected
    assert len(calls) == (2 if slow_path else 0)


def test_short_last_block_with_long_codes() -> None:
    """A short block may use codes that spell out more than it holds; the writer keeps it encoded."""
    paragraph = bytes(SAMPLE[:278])
    data = paragraph * 40
    packed = gage.compress(data, block_size=5000)
    check_gage_file(packed, data)
    assert read_blocks(packed)[-1].pairs  # encoded, not stored


# -- hypothesis -------------------------------------------------------------------

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(
    data=st.binary(max_size=3000),
    block_size=st.sampled_from([1, 7, 100, 5000, gage.DEFAULT_BLOCK_SIZE]),
    threshold=st.integers(2, 5),
)
def test_round_trip_arbitrary_bytes(data: bytes, block_size: int, threshold: int) -> None:
    packed = gage.compress(data, block_size=block_size, threshold=threshold)
    assert gage.decompress(packed) == data
    check_gage_file(packed, data)


@FAST
@given(
    alphabet=st.binary(min_size=1, max_size=6),
    picks=st.lists(st.integers(0, 5), min_size=0, max_size=4000),
    max_distinct=st.sampled_from([1, 2, 200, 255]),
)
def test_round_trip_repetitive(alphabet: bytes, picks: list[int], max_distinct: int) -> None:
    data = bytes(alphabet[i % len(alphabet)] for i in picks)
    packed = gage.compress(data, max_distinct=max_distinct)
    assert gage.decompress(packed) == data
    check_gage_file(packed, data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_random_bytes_raise_only_bytepair_errors(data: bytes) -> None:
    with contextlib.suppress(BytePairError):
        gage.decompress(data, max_length=1 << 20)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_damaged_files_raise_only_bytepair_errors(data: st.DataObject) -> None:
    packed = bytearray(sample_packed())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(packed) - 1))
        packed[at] = data.draw(st.integers(0, 255))
    with contextlib.suppress(BytePairError):
        gage.decompress(bytes(packed))


@FAST
@given(st.dictionaries(st.integers(0, 255), st.tuples(st.integers(0, 255), st.integers(0, 255)), max_size=256))
def test_table_encoding_round_trips(pairs: dict[int, tuple[int, int]]) -> None:
    """Any code map (cycles included) packs to a table his reader parses back to the same map."""
    pairs = {c: (left, right) for c, (left, right) in pairs.items() if left != c}
    table = block(pairs, b"")
    parsed, _ = gage._parse(table)
    assert len(parsed.n_codes) == 1
    got = dict(zip(parsed.code.tolist(), zip(parsed.left.tolist(), parsed.right.tolist(), strict=True), strict=True))
    assert got == pairs
    assert read_blocks(table)[0].pairs == pairs
    # his caps: literal runs of at most 127, pair runs of at most 128 entries
    assert all(n <= 254 for n in group_counts(table))


def group_counts(table: bytes) -> list[int]:
    """The count byte of every group of a table."""
    counts = []
    pos = c = 0
    while c < 256:
        n = table[pos]
        counts.append(n)
        pos += 1
        if n > 127:
            c += n - 127
            n = 0
            if c == 256:
                break
        for _ in range(n + 1):
            pos += 1 if table[pos] == c else 2
            c += 1
    return counts


def test_speed_of_shared_decoder() -> None:
    """Many small blocks go to the vectorised decoder together, not one call each."""
    data = os.urandom(64) * 3000
    packed = gage.compress(data, block_size=1000)
    start = time.perf_counter()
    assert gage.decompress(packed) == data
    assert time.perf_counter() - start < 2


# -- reading in pieces (the command line's -d and -t) ---------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(0, 1 << 16), max_size=8), name=st.sampled_from(["fields.c.bin", "obj1.bin"]))
def test_iter_decompress_in_any_pieces_gives_the_file(cuts: list[int], name: str) -> None:
    original, packed = vector(name)
    bounds = sorted({0, len(packed), *(c % (len(packed) + 1) for c in cuts)})
    pieces = [packed[lo:hi] for lo, hi in itertools.pairwise(bounds)]
    assert b"".join(gage.iter_decompress(pieces)) == original


def test_iter_decompress_yields_output_before_a_cut_block() -> None:
    """Blocks before the damage come out; the cut block raises as the one-shot reader does, numbered alike."""
    packed = gage.compress(SAMPLE, block_size=200)
    blocks = read_blocks(packed)
    cut = len(packed) - len(blocks[-1].payload) // 2
    got = []
    with pytest.raises(TruncatedDataError) as one_shot:
        gage.decompress(packed[:cut])
    with pytest.raises(TruncatedDataError) as in_pieces:
        for out in gage.iter_decompress(packed[lo : min(lo + 97, cut)] for lo in range(0, cut, 97)):
            got.append(bytes(out))
    assert str(in_pieces.value) == str(one_shot.value)
    assert SAMPLE.startswith(b"".join(got)) and len(b"".join(got)) > len(SAMPLE) // 2


def test_iter_decompress_max_length_counts_across_pieces() -> None:
    packed = gage.compress(SAMPLE, block_size=200)
    with pytest.raises(OutputLimitError):
        b"".join(gage.iter_decompress([packed[:500], packed[500:]], max_length=len(SAMPLE) - 1))
    assert b"".join(gage.iter_decompress([packed[:500], packed[500:]], max_length=len(SAMPLE))) == SAMPLE
