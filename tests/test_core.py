"""The one-shot API: round trips, input types, parameters, limits, concatenation, corpora."""

from __future__ import annotations

import array
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bytepair
from bytepair import CorruptDataError, OutputLimitError, TruncatedDataError, backend
from tests.helpers import compiled, corpus_files, frame_size, record_pools
from tests.strategies import blocky_bytes

HARD_CASES = {
    "empty": b"",
    "one byte": b"\x00",
    "all 256 values": bytes(range(256)),
    "all values repeated": bytes(range(256)) * 300,
    "long run": b"\xff" * 200_000,
    "abab": b"ab" * 50_000,
    "random": np.random.default_rng(0).integers(0, 256, 300_000, dtype=np.uint8).tobytes(),
    "text": b"It was the best of times, it was the worst of times. " * 3000,
}


@pytest.mark.parametrize("block_size", [16, 64, 100])
def test_tiny_blocks_cost_no_more_than_storing(block_size: int) -> None:
    """An encoded block must save its own header: stored neighbours share one."""
    data = (b"Tiny blocks barely compress; the header of each one must be paid for. " * 60)[:4000]
    bound = 8 + 21 + 21 + 9 * (-(-len(data) // 65535) + 1)
    packed = bytepair.compress(data, block_size=block_size)
    assert bytepair.decompress(packed) == data
    assert len(packed) <= len(data) + bound


@pytest.mark.parametrize("name", sorted(HARD_CASES))
def test_hard_cases_round_trip(name: str, kernels: str) -> None:
    data = HARD_CASES[name]
    assert bytepair.decompress(bytepair.compress(data)) == data


@pytest.mark.parametrize("block_size", [1, 2, 255, 256, 257, 1023, 1024, 1025])
@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_sizes_around_block_boundaries(block_size: int, extra: int, kernels: str) -> None:
    data = (b"abcab" * 1000)[: 3 * block_size + extra]
    assert bytepair.decompress(bytepair.compress(data, block_size=block_size, threshold=2)) == data


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=5000), blocky_bytes()), level=st.integers(1, 9))
def test_round_trip_arbitrary_bytes(data: bytes, level: int, kernels: str) -> None:
    assert bytepair.decompress(bytepair.compress(data, level=level)) == data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=blocky_bytes(),
    block_size=st.integers(1, 65535),
    max_distinct=st.integers(1, 255),
    threshold=st.integers(2, 10),
)
def test_round_trip_any_parameters(
    data: bytes, block_size: int, max_distinct: int, threshold: int, kernels: str
) -> None:
    packed = bytepair.compress(data, block_size=block_size, max_distinct=max_distinct, threshold=threshold)
    assert bytepair.decompress(packed) == data


def test_random_data_grows_by_a_fixed_small_amount() -> None:
    """At most the worst case docs/FORMAT.md states: 29 + 21 per frame + 9 per stored block."""
    data = HARD_CASES["random"]
    frames = -(-len(data) // (1 << 21))
    bound = 8 + 21 + 21 * frames + 9 * (-(-len(data) // 65535) + frames)
    assert len(bytepair.compress(data)) <= len(data) + bound


@pytest.mark.parametrize(
    "make",
    [bytes, bytearray, memoryview, lambda b: np.frombuffer(b, dtype=np.uint8), lambda b: array.array("B", b)],
)
def test_any_bytes_like_input(make: object) -> None:
    data = b"spam and eggs, " * 100
    packed = bytepair.compress(make(data))  # type: ignore[operator]
    assert bytepair.decompress(make(packed)) == data  # type: ignore[operator]


def test_multibyte_numpy_array_is_taken_as_its_bytes() -> None:
    values = np.arange(1000, dtype=np.int32)
    assert bytepair.decompress(bytepair.compress(values)) == values.tobytes()


def test_non_contiguous_input_is_refused() -> None:
    with pytest.raises(ValueError, match="contiguous"):
        bytepair.compress(np.arange(100, dtype=np.uint8)[::2])


def test_str_is_refused() -> None:
    with pytest.raises(TypeError, match="bytes-like"):
        bytepair.compress("text")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"level": 0}, ValueError, "level must be in 1..9"),
        ({"level": 10}, ValueError, "level"),
        ({"level": "5"}, TypeError, "level must be an integer"),
        ({"block_size": 0}, ValueError, "block_size must be in 1..65535"),
        ({"block_size": 65536}, ValueError, "block_size"),
        ({"max_distinct": 256}, ValueError, "max_distinct must be in 1..255"),
        ({"threshold": 1}, ValueError, "threshold must be in 2"),
        ({"threshold": 2.5}, TypeError, "threshold must be an integer"),
        ({"threads": -1}, ValueError, "threads must be >= 0"),
    ],
)
def test_parameters_are_validated(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        bytepair.compress(b"abc", **kwargs)  # type: ignore[arg-type]


def test_levels_are_presets() -> None:
    data = b"a man, a plan, a canal: panama. " * 2000
    preset = bytepair.LEVELS[5]
    explicit = {"block_size": preset.block_size, "max_distinct": preset.max_distinct, "threshold": preset.threshold}
    assert bytepair.compress(data, level=5) == bytepair.compress(data, level=1, **explicit)
    assert bytepair.compress(data, level=1, threshold=2) != bytepair.compress(data, level=1)


def test_trial_levels_keep_the_smallest_cutting() -> None:
    rng = np.random.default_rng(3)
    binary = rng.integers(0, 256, 20_000, dtype=np.uint8).tobytes()[::7] * 20  # many values, repeats
    data = b"plain text with a small alphabet. " * 2000 + binary
    sizes = {level: len(bytepair.compress(data, level=level)) for level in (5, 6, 9)}
    assert sizes[9] <= sizes[6] <= sizes[5]
    for level in (6, 9):
        assert bytepair.decompress(bytepair.compress(data, level=level)) == data
    # explicit settings are used as given: no trials
    assert bytepair.compress(data, level=9, threshold=3) == bytepair.compress(data, level=5)


def test_max_length() -> None:
    data = b"0123456789" * 10_000
    packed = bytepair.compress(data)
    assert bytepair.decompress(packed, max_length=len(data)) == data
    with pytest.raises(OutputLimitError, match="max_length=99999"):
        bytepair.decompress(packed, max_length=len(data) - 1)
    with pytest.raises(ValueError):
        bytepair.decompress(packed, max_length=-1)


def test_max_length_counts_every_concatenated_stream() -> None:
    packed = bytepair.compress(b"x" * 1000)
    with pytest.raises(OutputLimitError):
        bytepair.decompress(packed * 3, max_length=2500)


def test_concatenated_streams() -> None:
    a, b = b"first stream " * 50, b"second " * 70
    assert bytepair.decompress(bytepair.compress(a) + bytepair.compress(b) + bytepair.compress(b"")) == a + b


def test_trailing_garbage_is_an_error() -> None:
    with pytest.raises(CorruptDataError, match="after the end of the stream"):
        bytepair.decompress(bytepair.compress(b"abc") + b"garbage")


def test_trailing_partial_magic_is_truncation() -> None:
    with pytest.raises(TruncatedDataError):
        bytepair.decompress(bytepair.compress(b"abc") + b"BY")


def test_empty_input_is_truncated() -> None:
    with pytest.raises(TruncatedDataError):
        bytepair.decompress(b"")


def test_threads_give_identical_output(kernels: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import bytepair.io.parallel as parallel_module
    import bytepair.io.stream as stream

    data = (b"parallel frames must come back in order. " * 400 + bytes(range(256))) * 8
    monkeypatch.setattr(stream, "FRAME_SIZE", 40_000)  # several frames...
    monkeypatch.setattr(parallel_module, "MIN_SHARE", 4_000)  # ...each shared among processes
    serial = bytepair.compress(data, block_size=3000)
    pools = record_pools(monkeypatch)
    parallel = bytepair.compress(data, block_size=3000, threads=3)
    assert pools and set(pools) == {(2, compiled(kernels))}, "frames must be shared with two workers"
    assert serial == parallel
    assert bytepair.decompress(parallel) == data


def test_one_shot_functions_are_thread_safe() -> None:
    inputs = [bytes([i]) * 5000 + b"shared text body " * (100 + 37 * i) for i in range(8)]
    expected = [bytepair.compress(d) for d in inputs]
    results: list[bytes | None] = [None] * 8
    unpacked: list[bytes | None] = [None] * 8

    def work(i: int) -> None:
        results[i] = bytepair.compress(inputs[i])
        unpacked[i] = bytepair.decompress(results[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == expected
    assert unpacked == inputs


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["canterbury", "calgary"])
def test_corpus_round_trips(corpus: str, kernels: str) -> None:
    for path in corpus_files(corpus):
        data = path.read_bytes()
        assert bytepair.decompress(bytepair.compress(data)) == data, path.name


@pytest.mark.parametrize("n_streams", [1, 2])
def test_output_survives_views_that_outlive_their_frame(
    n_streams: int, kernels: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``decompress`` decodes frames straight into its output buffer; a view of a frame kept
    alive past it (as a reference cycle does until the collector runs) must cost a copy, not
    a ``BufferError`` or wrong bytes."""
    import bytepair.container.walk as walk

    real = vars(walk)["decode_frame"]
    kept: list[object] = []

    def keep_views(*args: object, **kwargs: object) -> object:
        out = real(*args, **kwargs)
        kept.append(out)
        return out

    data = bytes(range(256)) * 40 + b"views outlive frames " * 500
    with frame_size(5000):
        blob = bytepair.compress(data) * n_streams
    monkeypatch.setattr(walk, "decode_frame", keep_views)
    monkeypatch.setattr(backend, "read_whole", None, raising=False)  # frame by frame, even for one stream
    assert bytepair.decompress(blob) == data * n_streams
    assert len(kept) == n_streams * -(-len(data) // 5000)
    kept.clear()
    monkeypatch.setattr(walk, "decode_frame", real)
    assert bytepair.decompress(blob) == data * n_streams
