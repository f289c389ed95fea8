"""The round-trip benchmark: it must catch a codec that loses data, report every
codec, and compute its figures from what it measured. No timing assertions."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import bytepair
import bytepair.backend
from bytepair import DEFAULT_LEVEL
from bytepair.cli import bench as _bench
from bytepair.cli.bench import Codec
from tests.helpers import CORPUS, REPO, require_shared, use_kernels

SCRIPT = REPO / "benchmarks" / "roundtrip.py"
TEXT = b"the quick brown fox jumps over the lazy dog; " * 200 + bytes(range(256))
INPUTS = [("text.txt", TEXT), ("zeros.bin", bytes(1000)), ("empty.bin", b"")]


def identity(data: bytes) -> bytes:
    return data


class FakeClock:
    """A timer that moves only when a fake codec says so: exact, repeatable times."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def codec(self, name: str, c_cost: float, d_cost: float, shrink: int = 0) -> Codec:
        def comp(data: bytes) -> bytes:
            self.now += c_cost
            return bytes(shrink) + data

        def decomp(data: bytes) -> bytes:
            self.now += d_cost
            return data[shrink:]

        return Codec(name, comp, decomp)


@pytest.fixture(scope="module")
def result() -> _bench.BenchResult:
    return _bench.run_benchmark(INPUTS, levels=[1, DEFAULT_LEVEL], runs=2)


def test_default_codecs_cover_levels_and_references(result: _bench.BenchResult) -> None:
    assert result.codecs[:2] == ("bytepair-1", f"bytepair-{DEFAULT_LEVEL}")
    assert {"zlib-6", "bz2-9", "lzma-6"} <= set(result.codecs)
    assert len(result.measurements) == len(INPUTS) * len(result.codecs)
    for m in result.measurements:
        assert len(m.compress_times) == len(m.decompress_times) == 2
        assert all(t >= 0 for t in m.compress_times + m.decompress_times)


def test_zlib_size_is_what_zlib_gives(result: _bench.BenchResult) -> None:
    (m,) = [m for m in result.measurements if m.file == "text.txt" and m.codec == "zlib-6"]
    assert m.size == len(TEXT)
    assert m.compressed == len(zlib.compress(TEXT, 6))


def test_broken_codec_is_caught_and_named() -> None:
    broken = Codec("broken", identity, lambda data: data[:-1] + b"?", warm_up=len(TEXT))
    with pytest.raises(_bench.RoundTripError, match=rf"broken on text\.txt.*first difference at byte {len(TEXT) - 1}"):
        _bench.run_benchmark(
            [("text.txt", TEXT)], levels=[DEFAULT_LEVEL], runs=1, codecs=[Codec("ok", identity, identity), broken]
        )


def test_codec_broken_only_on_one_input_is_caught() -> None:
    def lossy(data: bytes) -> bytes:
        return data.replace(b"\x00\x00", b"\x00\x01")

    with pytest.raises(_bench.RoundTripError, match=r"lossy on zeros\.bin"):
        _bench.run_benchmark(INPUTS, levels=[1], runs=1, codecs=[Codec("lossy", identity, lossy)])


def test_decompress_that_raises_is_reported_as_round_trip_failure() -> None:
    def fails(data: bytes) -> bytes:
        raise ValueError("bad stream")

    with pytest.raises(_bench.RoundTripError, match=r"crashy on text\.txt.*bad stream"):
        _bench.run_benchmark(INPUTS[:1], levels=[1], runs=1, codecs=[Codec("crashy", zlib.compress, fails)])


def test_codecs_are_interleaved_within_each_run() -> None:
    calls: list[str] = []

    def recording(name: str) -> Codec:
        def comp(data: bytes) -> bytes:
            calls.append(name)
            return data

        return Codec(name, comp, identity)

    _bench.run_benchmark(INPUTS[:1], levels=[1], runs=3, codecs=[recording("a"), recording("b"), recording("c")])
    timed = calls[3:]  # after one warm-up call each
    assert [sorted(timed[i : i + 3]) for i in range(0, 9, 3)] == [["a", "b", "c"]] * 3


def test_each_codec_warms_up_on_as_many_bytes_as_it_asks() -> None:
    first_calls: dict[str, bytes] = {}

    def recording(name: str, warm_up: int) -> Codec:
        def comp(data: bytes) -> bytes:
            first_calls.setdefault(name, data)
            return data

        return Codec(name, comp, identity, warm_up)

    short = [("short.txt", b"abc"), ("long.txt", TEXT)]
    _bench.run_benchmark(short, levels=[1], runs=1, codecs=[recording("small", 2), recording("big", 10)])
    # the first input, cut or repeated to the size asked; never a timed input
    assert first_calls == {"small": b"ab", "big": b"abcabcabca"}


def test_threaded_codecs_warm_up_on_enough_input_to_start_every_worker() -> None:
    from bytepair.io.parallel import MIN_SHARE, resolve_threads

    codecs = {c.name: c for c in _bench.default_codecs([DEFAULT_LEVEL], threads=(1, 0, 3))}
    assert codecs[f"bytepair-{DEFAULT_LEVEL}"].warm_up == _bench.WARM_UP_BYTES
    assert codecs[f"bytepair-{DEFAULT_LEVEL}-T0"].warm_up == resolve_threads(0) * MIN_SHARE
    assert codecs[f"bytepair-{DEFAULT_LEVEL}-T3"].warm_up == 3 * MIN_SHARE
    assert codecs["zlib-6"].warm_up == _bench.WARM_UP_BYTES


def test_threaded_warm_up_is_shared_among_the_workers() -> None:
    """A small input would never reach a worker; the warm-up input must be cut into a share
    for every worker. (Which thread runs a share is a race, so the plan is what is checked.)"""
    from bytepair.core.blocks import split_blocks
    from bytepair.io.parallel import MIN_SHARE, share_edges

    (codec,) = [c for c in _bench.default_codecs([1], threads=(2,)) if c.name == "bytepair-1-T2"]
    warm_up = np.frombuffer((TEXT * (codec.warm_up // len(TEXT) + 1))[: codec.warm_up], dtype=np.uint8)
    params = bytepair.LEVELS[1]
    assert len(warm_up) >= 2 * MIN_SHARE  # what FramePipeline.finish needs to share a frame at all
    bounds = split_blocks(warm_up, params.block_size, params.max_distinct)
    assert len(share_edges(bounds, 2)) - 1 >= 2


def test_figures_come_from_medians_and_sums() -> None:
    clock = FakeClock()
    codecs = [clock.codec("zlib-6", 1.0, 0.5, shrink=0), clock.codec("slow", 4.0, 0.25, shrink=10)]
    inputs = [("a", bytes(1_000_000)), ("b", bytes(3_000_000))]
    res = _bench.run_benchmark(inputs, levels=[1], runs=3, codecs=codecs, timer=clock)
    (a_slow,) = [r for r in res.per_file() if r.file == "a" and r.codec == "slow"]
    assert (a_slow.compressed, a_slow.compress_seconds, a_slow.decompress_seconds) == (1_000_010, 4.0, 0.25)
    assert a_slow.compress_mbps == pytest.approx(0.25)
    totals = {r.codec: r for r in res.totals()}
    assert [r.file for r in res.totals()] == ["total", "total"]
    slow, ref = totals["slow"], totals["zlib-6"]
    assert (slow.size, slow.compressed) == (4_000_000, 4_000_020)
    assert slow.ratio == pytest.approx(4_000_020 / 4_000_000)
    assert (slow.compress_seconds, slow.decompress_seconds) == (8.0, 0.5)
    assert slow.compress_mbps == pytest.approx(0.5)
    assert slow.decompress_mbps == pytest.approx(8.0)
    assert slow.compress_vs_zlib == pytest.approx(0.25)
    assert slow.decompress_vs_zlib == pytest.approx(2.0)
    assert ref.compress_vs_zlib == ref.decompress_vs_zlib == 1.0


def test_without_reference_speeds_relative_to_zlib_are_na() -> None:
    res = _bench.run_benchmark(INPUTS[:1], levels=[1], runs=1, codecs=[Codec("copy", identity, identity)])
    assert res.totals()[0].compress_vs_zlib is None
    assert "n/a" in _bench.format_table(res, per_file=True)


def test_table_has_every_codec_and_total_rows(result: _bench.BenchResult) -> None:
    table = _bench.format_table(result, per_file=True)
    header = (
        "| file | codec | size | compressed | ratio | compress MB/s | decompress MB/s "
        "| compress vs zlib | decompress vs zlib |"
    )
    assert table.count(header) == 2
    assert f"round trip, kernels: {_bench.kernels_in_use()};" in table.splitlines()[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and line != header]
    total_rows = [r for r in rows if r.startswith("| total |")]
    assert [r.split(" | ")[1] for r in total_rows] == list(result.codecs)
    for name, _ in INPUTS:
        assert sum(r.startswith(f"| {name} |") for r in rows) == len(result.codecs)
    (zlib_total,) = [r for r in total_rows if "| zlib-6 |" in r]
    assert zlib_total.endswith("| 1.00x | 1.00x |")
    assert str(sum(len(d) for _, d in INPUTS)) in zlib_total


@pytest.mark.parametrize("path", ["numpy", "compiled"])
def test_the_header_says_which_kernels_ran(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    use_kernels(path, monkeypatch)
    assert _bench.kernels_in_use() == ("compiled" if path == "compiled" else "numpy (asked for)")


def test_table_without_per_file_has_totals_only(result: _bench.BenchResult) -> None:
    table = _bench.format_table(result, per_file=False)
    assert "text.txt" not in table
    assert sum(line.startswith("| total |") for line in table.splitlines()) == len(result.codecs)


def test_json_has_every_figure(result: _bench.BenchResult) -> None:
    doc = json.loads(json.dumps(_bench.to_json(result)))
    assert doc["parameters"]["runs"] == 2
    assert doc["parameters"]["levels"] == [1, DEFAULT_LEVEL]
    assert doc["parameters"]["codecs"] == list(result.codecs)
    assert set(doc["parameters"]["bytepair_levels"]) == {"1", str(DEFAULT_LEVEL)}
    for key in ("python", "numpy", "platform", "cpu_count", "bytepair", "kernels"):
        assert doc["machine"][key]
    assert [f["name"] for f in doc["files"]] == [name for name, _ in INPUTS]
    assert len(doc["results"]) == len(INPUTS) * len(result.codecs)
    row = next(r for r in doc["results"] if r["file"] == "text.txt" and r["codec"] == "zlib-6")
    assert row["compressed"] == len(zlib.compress(TEXT, 6))
    assert row["size"] == len(TEXT)
    assert row["ratio"] == pytest.approx(row["compressed"] / row["size"])
    assert len(row["compress_times"]) == len(row["decompress_times"]) == 2
    for key in ("compress_seconds", "decompress_seconds", "compress_mb_per_s", "decompress_mb_per_s"):
        assert row[key] > 0
    assert row["compress_vs_zlib"] == 1.0
    empty = next(r for r in doc["results"] if r["file"] == "empty.bin")
    assert empty["ratio"] is None
    assert [t["codec"] for t in doc["totals"]] == list(result.codecs)
    assert doc["totals"][0]["size"] == sum(len(d) for _, d in INPUTS)


def test_collect_inputs_reads_folder_sorted_not_recursive(tmp_path: Path) -> None:
    for name, data in (("b.txt", b"bee"), ("a.bin", b"ay"), ("c", b"")):
        (tmp_path / name).write_bytes(data)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.txt").write_bytes(b"deep")
    assert _bench.collect_inputs([str(tmp_path)]) == [("a.bin", b"ay"), ("b.txt", b"bee"), ("c", b"")]


def test_collect_inputs_files_in_order_once_and_clashes_by_path(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "one" / "same.txt").write_bytes(b"1")
    (tmp_path / "two" / "same.txt").write_bytes(b"2")
    (tmp_path / "z.txt").write_bytes(b"z")
    one, two, z = (str(tmp_path / p) for p in ("one/same.txt", "two/same.txt", "z.txt"))
    assert _bench.collect_inputs([z, one, two, z]) == [("z.txt", b"z"), (one, b"1"), (two, b"2")]


def test_collect_inputs_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-file")
    with pytest.raises(FileNotFoundError, match=r"No such file or directory: .*no-such-file"):
        _bench.collect_inputs([missing])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no regular files"):
        _bench.collect_inputs([str(tmp_path / "empty")])


def test_sample_files_are_deterministic_and_varied() -> None:
    first, second = _bench.sample_files(), _bench.sample_files()
    assert first == second
    names = [name for name, _ in first]
    assert names == ["stdlib.py", "random-1MiB.bin", "run-1MiB.bin", "abab-1MiB.bin", "records.bin"]
    assert all(data for _, data in first)
    stdlib = dict(first)["stdlib.py"]
    assert len(stdlib) > 1_000_000
    assert b"# ---- argparse ----\n" in stdlib
    assert len(set(dict(first)["random-1MiB.bin"])) == 256


def test_bench_command_prints_tables(tmp_path: Path) -> None:
    import io

    path = tmp_path / "in.txt"
    path.write_bytes(TEXT)
    out = io.StringIO()
    assert _bench.bench_command([str(path)], levels=None, runs=1, out=out) == 0
    text = out.getvalue()
    assert f"| in.txt | bytepair-{DEFAULT_LEVEL} |" in text
    assert "| total | zlib-6 |" in text


def run_benchmark(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One of benchmarks/ run as users run it, from the top of the checkout."""
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )


def test_script_runs_and_writes_json(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(TEXT)
    out_json = tmp_path / "out.json"
    proc = run_benchmark(SCRIPT, "--runs", "1", "--levels", "5", str(path), "--json", str(out_json))
    assert proc.returncode == 0, proc.stderr
    assert "| in.txt | bytepair-5 |" in proc.stdout
    assert "| total | lzma-6 |" in proc.stdout
    assert json.loads(out_json.read_text())["parameters"]["levels"] == [5]


def test_script_missing_path_exits_1_with_one_line(tmp_path: Path) -> None:
    proc = run_benchmark(SCRIPT, "--runs", "1", str(tmp_path / "nothing-here"))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert "nothing-here" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_script_plot_needs_matplotlib(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(TEXT)
    png = tmp_path / "plot.png"
    proc = run_benchmark(SCRIPT, "--runs", "1", "--quiet", "--plot", str(png), str(path))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert proc.returncode == 2
        assert "matplotlib" in proc.stderr
        assert proc.stderr.count("\n") == 1
        assert not png.exists()
    else:
        assert proc.returncode == 0, proc.stderr
        assert png.read_bytes().startswith(b"\x89PNG")


def test_threads_add_named_codecs() -> None:
    names = [c.name for c in _bench.default_codecs([1, 5], threads=[1, 0, 2])]
    assert names[:6] == ["bytepair-1", "bytepair-1-T0", "bytepair-1-T2", "bytepair-5", "bytepair-5-T0", "bytepair-5-T2"]
    codec = _bench.default_codecs([5], threads=[2])[0]
    assert codec.decompress(codec.compress(TEXT)) == TEXT


def test_script_concat_joins_inputs_and_measures_threads(tmp_path: Path) -> None:
    for name, data in INPUTS:
        (tmp_path / name).write_bytes(data)
    proc = run_benchmark(
        SCRIPT, "--runs", "1", "--levels", "1", "--threads", "1,2", "--concat", "--no-per-file", str(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    assert f"| total | bytepair-1 | {len(TEXT) + 1000} |" in proc.stdout
    assert f"| total | bytepair-1-T2 | {len(TEXT) + 1000} |" in proc.stdout
    bad = run_benchmark(SCRIPT, "--threads", "1,-1", str(tmp_path))
    assert bad.returncode == 2 and "threads" in bad.stderr


COMPARE = REPO / "benchmarks" / "compare.py"


def test_compare_reports_both_settings(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(TEXT)
    proc = run_benchmark(COMPARE, "--base", "level=5,escape_limit=0", "--new", "level=1", "--runs", "1", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("1 inputs, ") and "1 interleaved runs" in lines[0]
    assert lines[1].split()[:3][0] == "level=5,escape_limit=0" and " 1.000x " in lines[1]
    assert lines[2].split()[0] == "level=1"
    packed = len(bytepair.compress(TEXT, level=1))
    assert lines[2].endswith(f"ratio {packed / len(TEXT):.4f}")


def test_compare_refuses_bad_settings(tmp_path: Path) -> None:
    proc = run_benchmark(COMPARE, "--base", "level=5,bogus=1", "--new", "level=5", str(tmp_path))
    assert proc.returncode == 2 and "bogus" in proc.stderr and "Traceback" not in proc.stderr


def test_compare_base_from_another_checkout(tmp_path: Path) -> None:
    """``--base-from`` loads a checkout's package beside this one (here: this very checkout)."""
    (tmp_path / "in.txt").write_bytes(TEXT)
    proc = run_benchmark(
        COMPARE, "--base-from", str(REPO), "--base", "level=1", "--new", "level=1", "--runs", "1", str(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr
    base, new = proc.stdout.splitlines()[1:3]
    assert f"[{REPO}]" in base and base.split()[-1] == new.split()[-1]  # same code, same ratio
    missing = run_benchmark(COMPARE, "--base-from", str(tmp_path), "--base", "level=1", "--new", "level=1")
    assert missing.returncode == 1 and "no bytepair package" in missing.stderr


def test_compare_takes_turns_input_by_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each input is compressed with both settings before the next, and who goes first
    swaps from one input (and run) to the next, so that drift falls on both alike."""
    compare = benchmark_module("compare", monkeypatch)
    for name in ("a", "b", "c"):
        (tmp_path / name).write_bytes(name.encode() * 100)
    calls: list[tuple[int, bytes]] = []

    class Recorder:
        def compress(self, data: bytes, level: int) -> bytes:
            calls.append((level, data[:1]))
            return data

    monkeypatch.setattr(compare, "bytepair", Recorder())
    assert compare.main(["--base", "level=1", "--new", "level=2", "--runs", "2", str(tmp_path)]) == 0
    timed = calls[-12:]  # 2 runs x 3 inputs x 2 settings, after the checks and the warm-up
    assert [data for _, data in timed] == [d for d in (b"a", b"b", b"c") * 2 for _ in range(2)]
    assert [level for level, _ in timed] == [1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1]


def test_compare_cold_compresses_right_before_each_decode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--decompress --cold``: each timed decode comes right after a compression of the same
    input by the same package, as in ``roundtrip.py``."""
    compare = benchmark_module("compare", monkeypatch)
    for name in ("a", "b"):
        (tmp_path / name).write_bytes(name.encode() * 100)
    calls: list[tuple[str, int, bytes]] = []

    class Recorder:
        def compress(self, data: bytes, level: int) -> bytes:
            calls.append(("compress", level, data[:1]))
            return bytes([level]) + data

        def decompress(self, blob: bytes) -> bytes:
            calls.append(("decompress", blob[0], blob[1:2]))
            return blob[1:]

    monkeypatch.setattr(compare, "bytepair", Recorder())
    args = ["--decompress", "--cold", "--base", "level=1", "--new", "level=2", "--runs", "1", str(tmp_path)]
    assert compare.main(args) == 0
    timed = calls[-8:]  # 1 run x 2 inputs x 2 settings, each a compression then its decode
    assert timed == [
        ("compress", 1, b"a"), ("decompress", 1, b"a"), ("compress", 2, b"a"), ("decompress", 2, b"a"),
        ("compress", 2, b"b"), ("decompress", 2, b"b"), ("compress", 1, b"b"), ("decompress", 1, b"b"),
    ]  # fmt: skip


PRIMITIVES = REPO / "benchmarks" / "primitives.py"


def test_primitives_times_every_operation_and_sums_the_write_path() -> None:
    proc = run_benchmark(PRIMITIVES, "--items", "4096", "--repeats", "1")
    assert proc.returncode == 0, proc.stderr
    rows = {}
    for line in proc.stdout.splitlines():
        if line.startswith("| ") and not line.startswith("| operation"):
            name, ns = (cell.strip() for cell in line.strip("|").split("|"))
            rows[name] = float(ns)
    assert len(rows) == 10 and min(rows.values()) > 0
    written = float(proc.stdout.rsplit(": ", 1)[1].split()[0])
    first_four = list(rows.values())[:4]
    assert abs(written - sum(first_four)) < 0.02 * len(first_four)  # each row is rounded to 0.01
    assert run_benchmark(PRIMITIVES, "--repeats", "0").returncode == 2


PROFILE = REPO / "benchmarks" / "profile_compress.py"


def test_profile_reports_every_phase_and_the_step_fit(tmp_path: Path) -> None:
    (tmp_path / "text.txt").write_bytes(TEXT * 3)
    (tmp_path / "zeros.bin").write_bytes(bytes(5000))
    proc = run_benchmark(PROFILE, "--runs", "1", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for phase in ("choosing merges", "indexing new pairs", "the rest of each step", "outside the engine"):
        assert f"| {phase} |" in out
    shares = [float(line.rsplit("|", 2)[1].strip().rstrip("%")) for line in out.splitlines() if line.endswith("% |")]
    assert len(shares) >= 5 and min(shares) >= 0, "every phase is timed inside the total"
    assert " steps, " in out and "per match" in out


def test_profile_refuses_bad_input(tmp_path: Path) -> None:
    missing = run_benchmark(PROFILE, str(tmp_path / "missing"))
    assert missing.returncode == 1 and "missing" in missing.stderr
    assert run_benchmark(PROFILE, "--runs", "0", str(tmp_path)).returncode == 2


def benchmark_module(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A script of benchmarks/ imported as a module (its helpers import as top-level modules)."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    return importlib.import_module(name)


def test_phase_timers_charge_nested_time_to_the_inner_phase_and_restore(monkeypatch: pytest.MonkeyPatch) -> None:
    timers_module = benchmark_module("_profiling", monkeypatch)
    clock = FakeClock()
    monkeypatch.setattr(timers_module.time, "perf_counter", clock)

    class Work:
        def inner(self) -> int:
            clock.now += 2.0
            return 7

        def outer(self) -> int:
            clock.now += 1.0
            result = self.inner()
            clock.now += 0.5
            return result

    original = Work.outer
    seen: list[tuple[float, int]] = []
    with timers_module.PhaseTimers() as timers:
        timers.wrap(Work, "outer", "outer phase", lambda seconds, _args, result: seen.append((seconds, result)))
        timers.wrap(Work, "inner", "inner phase")
        assert Work().outer() == 7
        assert Work().inner() == 7
    assert dict(timers.time) == {"outer phase": 1.5, "inner phase": 4.0}
    assert timers.total() == 5.5
    assert seen == [(3.5, 7)], "an observer sees the whole call, nested time included"
    assert Work.outer is original and Work().inner() == 7


def test_phase_timers_put_originals_back_after_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    timers_module = benchmark_module("_profiling", monkeypatch)

    class Failing:
        def run(self) -> None:
            raise bytepair.CorruptDataError("bad frame")

    original = Failing.run
    with pytest.raises(bytepair.CorruptDataError), timers_module.PhaseTimers() as timers:
        timers.wrap(Failing, "run", "failing phase")
        Failing().run()
    assert Failing.run is original and "failing phase" in timers.time


def test_frame_fit_recovers_known_costs_and_keeps_parts_non_negative(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = benchmark_module("profile_decompress", monkeypatch)
    rng = np.random.default_rng(5)
    blocks = rng.integers(1, 60, 30).astype(np.float64)
    symbols = rng.integers(1_000, 400_000, 30).astype(np.float64)
    sizes = symbols * rng.uniform(2, 10, 30)
    merges = blocks * rng.integers(20, 250, 30)
    seconds = 400e-6 + 5e-6 * blocks + 250e-9 * merges + 12e-9 * symbols  # nothing per byte
    terms, coef, parts = profile.fit_frames(np.column_stack((seconds, blocks, merges, symbols, sizes)))
    assert terms[0] == "fixed" and coef[0] == pytest.approx(400e-6, rel=1e-6)
    fitted = dict(zip(terms[1:], coef[1:], strict=True))
    assert fitted["block"] == pytest.approx(5e-6, rel=1e-6) and fitted["merge"] == pytest.approx(250e-9, rel=1e-6)
    assert fitted["symbol"] == pytest.approx(12e-9, rel=1e-6)
    assert fitted.get("byte", 0.0) == pytest.approx(0.0, abs=1e-15)
    assert sum(parts) == pytest.approx(1.0)
    # time that falls with size cannot be fitted as a negative cost: that term is left out
    falling = 1e-3 - 1e-9 * sizes + 12e-9 * symbols
    terms, coef, _ = profile.fit_frames(np.column_stack((falling, blocks, merges, symbols, sizes)))
    assert "byte" not in terms and min(coef) >= 0
    assert profile.fit_frames(np.zeros((profile.MIN_FRAMES_TO_FIT - 1, 5))) is None


PROFILE_DECOMPRESS = REPO / "benchmarks" / "profile_decompress.py"


def test_profile_decompress_reports_every_phase_and_the_frame_fit(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    for k in range(15):  # one frame each: enough frames for the fit
        skewed = rng.geometric(0.02, 3000 + 900 * k).clip(1, 255).astype(np.uint8).tobytes()  # escapes
        (tmp_path / f"input{k:02}.bin").write_bytes(TEXT[: 500 * (k + 1)] + skewed)
    proc = run_benchmark(PROFILE_DECOMPRESS, "--runs", "1", "--frames", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    named_rows = [line.split(" | ")[0] for line in out.splitlines() if line.startswith("| input") and ".bin" in line]
    assert named_rows == [f"| input{k:02}.bin" for k in range(15)], "--frames lists every frame, in input order"
    assert ", 15 frames" in out
    phases = ("writing payloads", "code expansions built in Python (few merges)", "laying out code expansions")
    for phase in (*phases, "CRC-32 of the output"):
        assert f"| {phase} |" in out
    shares = [float(line.rsplit("|", 2)[1].strip().rstrip("%")) for line in out.splitlines() if line.endswith("% |")]
    assert len(shares) >= 8 and min(shares) >= 0 and sum(shares) == pytest.approx(100, abs=0.5)
    assert "frame time ~ " in out and "of frame time is the fixed part" in out


def test_profile_decompress_refuses_bad_input(tmp_path: Path) -> None:
    missing = run_benchmark(PROFILE_DECOMPRESS, str(tmp_path / "missing"))
    assert missing.returncode == 1 and "missing" in missing.stderr and len(missing.stderr.splitlines()) == 1
    assert run_benchmark(PROFILE_DECOMPRESS, "--runs", "0", str(tmp_path)).returncode == 2


STARTUP = REPO / "benchmarks" / "startup.py"


def test_startup_times_every_command_and_checks_the_output() -> None:
    proc = run_benchmark(STARTUP, "--runs", "1", "--size", "20KB")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| `")]
    assert rows[0].startswith('| `python -c "import numpy"`') and "| 1.00x |" in rows[0]
    assert [row.split("`")[1] for row in rows[1:3]] == ["bytepair -c FILE", "bytepair -dc FILE.bp"]
    assert proc.stdout.startswith("kernels: ") and "20,000 bytes" in proc.stdout.splitlines()[0]
    assert run_benchmark(STARTUP, "--runs", "0").returncode == 2


MEMORY = REPO / "benchmarks" / "memory.py"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="--via pipe forks")
def test_memory_through_a_pipe_on_two_workers_names_the_kernels() -> None:
    proc = run_benchmark(MEMORY, "--size", "3MB", "--via", "pipe", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == f"kernels {bytepair.backend._choose()}"  # as a process with this environment chooses
    assert lines[-1].startswith("round trip OK (3000000 of 3000000 bytes")


SCALING = REPO / "benchmarks" / "scaling.py"


def test_scaling_compares_the_joined_inputs_with_them_repeated(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(TEXT)
    (tmp_path / "b.bin").write_bytes(bytes(range(256)) * 8)
    joined = len(TEXT) + 2048
    proc = run_benchmark(SCALING, "--size", "100KB", "--rounds", "1", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(f"small: the inputs joined, {joined} bytes; large: repeated to 100000 bytes")
    rows = {line.split(" | ")[0]: line.split(" | ")[1:] for line in out.splitlines() if line.startswith("| ")}
    for way in ("compress", "decompress"):
        small, large, ratio, *_ = (float(cell.strip(" |")) for cell in rows[f"| {way}"])
        # times are printed to 0.01 (ms), the ratio from the unrounded times: fast (compiled)
        # paths make times small enough for that rounding to matter
        half = 0.005
        assert (large - half) / (small + half) - 0.0005 <= ratio <= (large + half) / (small - half) + 0.0005
    assert "medians of 1 and 3 calls on the large input" in out


def test_scaling_refuses_bad_input(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(TEXT)
    missing = run_benchmark(SCALING, str(tmp_path / "missing"))
    assert missing.returncode == 1 and len(missing.stderr.splitlines()) == 1
    too_small = run_benchmark(SCALING, "--size", "1KB", str(tmp_path))
    assert too_small.returncode == 2 and "twice the joined inputs" in too_small.stderr
    assert run_benchmark(SCALING, "--size", "lots", str(tmp_path)).returncode == 2
    assert run_benchmark(SCALING, "--rounds", "0", str(tmp_path)).returncode == 2
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "nothing.bin").write_bytes(b"")
    for script in (SCALING, PROFILE, PROFILE_DECOMPRESS):
        empty = run_benchmark(script, str(tmp_path / "empty"))
        assert empty.returncode == 1 and "every input is empty" in empty.stderr, script.name


BLOBS = REPO / "benchmarks" / "blobs.py"


def test_blobs_times_every_codec_against_zlib(tmp_path: Path) -> None:
    source = tmp_path / "words.txt"
    source.write_bytes(b"".join(b"line %d of a small text, cut into blobs\n" % i for i in range(400)))
    proc = run_benchmark(BLOBS, "--runs", "1", "--sizes", "100,1KB", "--source", str(source))
    assert proc.returncode == 0, proc.stderr
    rows = [line.split(" | ") for line in proc.stdout.splitlines() if line.startswith("| 1")]
    assert {(row[0], row[1]) for row in rows} >= {("| 100", "bytepair-5"), ("| 1,024", "zlib-6")}
    assert all(row[-1] == "1.00x |" for row in rows if row[1] == "zlib-6")
    assert run_benchmark(BLOBS, "--sizes", "big").returncode == 2


def test_the_peers_users_would_pick_instead_are_codecs() -> None:
    """zstd at levels 1 and 3 and lz4 join the table where installed (the bench extra)."""
    names = [codec.name for codec in _bench.default_codecs([5])]
    assert names[:4] == ["bytepair-5", "zlib-6", "bz2-9", "lzma-6"]
    peers = [name for name in names if name.startswith(("zstd", "lz4"))]
    expected = (["zstd-1", "zstd-3"] if importlib.util.find_spec("zstandard") else []) + (
        ["lz4"] if importlib.util.find_spec("lz4") else []
    )
    assert peers == expected
    for codec in _bench.default_codecs([5])[4:]:
        assert codec.decompress(codec.compress(b"peer " * 1000)) == b"peer " * 1000


TOKENIZE = REPO / "benchmarks" / "tokenizer.py"
TOKENIZE_CASES = {
    **{
        f"{case}/{p}": case
        for case in ("encode-lines", "encode-whole", "decode-lines")
        for p in ("gpt2", "cl100k", "o200k")
    },
    "word-encode-lines": "word-encode-lines",
    **{f"{case}/{p}": case for case in ("encode-batch", "decode-batch") for p in ("gpt2", "cl100k", "o200k", "word")},
    "learn": "learn",
}


def require_tokenize_peers() -> None:
    require_shared(CORPUS / "canterbury")
    require_shared(CORPUS / "calgary")
    pytest.importorskip("tiktoken", reason="a peer of benchmarks/tokenizer.py")
    pytest.importorskip("tokenizers", reason="a peer of benchmarks/tokenizer.py")


def test_no_script_is_named_like_a_standard_library_module() -> None:
    """A script's folder comes first on its sys.path: a benchmarks/tokenize.py would be every script's
    ``import tokenize`` (inspect, and so dataclasses, import it), and every script would fail."""
    names = {path.stem for path in (REPO / "benchmarks").glob("*.py")}
    assert names & sys.stdlib_module_names == set()


def test_tokenizer_measures_every_case_against_its_peer(tmp_path: Path) -> None:
    require_tokenize_peers()
    out_json = tmp_path / "out.json"
    proc = run_benchmark(TOKENIZE, "--size", "0.05", "--merges", "300", "--runs", "1", "--json", str(out_json))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("command: ") and lines[0].endswith(
        "tokenizer.py --size 0.05 --merges 300 --runs 1 --json " + str(out_json)
    )
    assert lines[1] == f"kernels: {bytepair.backend._choose()}"
    assert lines[2].startswith("machine: ")
    found = json.loads(out_json.read_text())
    assert {key: r["case"] for key, r in found["cases"].items()} == TOKENIZE_CASES
    rows = [line.split(" | ") for line in lines if line.startswith("| ") and not line.startswith("| case")]
    assert [row[0][2:] for row in rows] == [r["label"] for r in found["cases"].values()]
    for r in found["cases"].values():
        ((ours, theirs),) = r["runs_s"]
        assert r["ratio"] == pytest.approx(theirs / ours if r["unit"] == "MB/s" else ours / theirs)
    assert found["cases"]["learn"]["note"] == "merges learnt: bytepair 300, tokenizers 300"
    assert found["notes"] == []


def test_tokenizer_refuses_bad_usage_and_names_a_missing_peer(tmp_path: Path) -> None:
    for args in (["--only", "encode"], ["--patterns", "gpt3"], ["--runs", "0"]):
        assert run_benchmark(TOKENIZE, *args).returncode == 2, args
    require_shared(CORPUS / "canterbury")
    hidden = tmp_path / "hidden"
    for peer in ("tiktoken", "tokenizers"):
        (hidden / peer).mkdir(parents=True)
        (hidden / peer / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    proc = subprocess.run(
        [sys.executable, str(TOKENIZE), "--size", "0.02", "--merges", "100", "--runs", "1", "--patterns", "gpt2"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(hidden)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "note: encode-lines, encode-whole, decode-lines left out: tiktoken is not installed" in proc.stdout
    assert "note: learn left out: tokenizers is not installed" in proc.stdout
    assert "| byte gpt2: encode_batch, threads=0 |" in proc.stdout


def test_tokenizer_exits_1_when_a_peer_gives_other_ids(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    require_tokenize_peers()
    import tiktoken

    spec = importlib.util.spec_from_file_location("tokenizer_benchmark", TOKENIZE)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the script puts the checkout first
    monkeypatch.setitem(sys.modules, spec.name, script)
    spec.loader.exec_module(script)
    for name in ("RAYON_NUM_THREADS", "TOKENIZERS_PARALLELISM", "TIKTOKEN_CACHE_DIR"):  # main sets them
        monkeypatch.setenv(name, "")
    original = tiktoken.Encoding.encode_ordinary
    monkeypatch.setattr(tiktoken.Encoding, "encode_ordinary", lambda self, text: original(self, text)[::-1])
    args = ["--size", "0.02", "--merges", "100", "--runs", "1", "--patterns", "gpt2", "--only", "encode-lines"]
    assert script.main(args) == 1
    assert capsys.readouterr().err.startswith("tokenizer.py: byte gpt2: tiktoken encode_ordinary: line ")
