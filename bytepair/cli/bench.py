"""The round-trip benchmark: bytepair against the standard library's codecs.

One timing loop serves ``bytepair -b`` and ``benchmarks/roundtrip.py``, so the
figures people quote come from one place. Every codec compresses and decompresses
every input ``runs`` times, interleaved, and every round trip is checked: a fast
codec that loses data must fail loudly, never win a table.
"""

from __future__ import annotations

import bz2
import dataclasses
import datetime
import errno
import functools
import gc
import importlib
import lzma
import os
import platform
import statistics
import sys
import sysconfig
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .._core import compress, decompress
from ..core.params import DEFAULT_LEVEL, LEVELS
from ..io.parallel import MIN_SHARE, resolve_threads
from .names import shown

__all__ = [
    "REFERENCE_CODEC",
    "BenchResult",
    "Codec",
    "Figures",
    "Measurement",
    "RoundTripError",
    "bench_command",
    "collect_inputs",
    "default_codecs",
    "format_table",
    "run_benchmark",
    "sample_files",
    "to_json",
]

REFERENCE_CODEC = "zlib-6"
"""The codec every speed is compared with: the one everybody has."""

MEGABYTE = 1_000_000
"""MB/s means 10**6 bytes per second, as zstd and lzbench report it."""

TOTAL = "total"
"""The file column of the total rows."""

STDLIB_MODULES = (
    "argparse", "ast", "calendar", "collections", "configparser", "dataclasses", "difflib", "doctest",
    "email._header_value_parser", "email.message", "enum", "ftplib", "functools", "http.client",
    "http.server", "imaplib", "inspect", "json.decoder", "json.encoder", "locale", "logging", "mailbox",
    "optparse", "pathlib", "pickle", "platform", "pydoc", "_pydecimal", "_pyio", "random", "shutil",
    "smtplib", "socket", "ssl", "statistics", "subprocess", "tarfile", "textwrap", "threading", "turtle",
    "typing", "unittest.case", "unittest.mock", "urllib.parse", "urllib.request", "xml.dom.minidom",
    "xml.etree.ElementTree", "zipfile",
)  # fmt: skip
"""Pure-Python modules of every CPython 3.11+, none of them frozen, some of them
packages in later versions (pathlib, zipfile): real source text, on every machine."""

Compressor = Callable[[bytes], bytes]

WARM_UP_BYTES = 65536
"""Input of a codec's untimed first round trip, unless it needs more."""


class RoundTripError(RuntimeError):
    """A codec did not give back the input it was handed: the benchmark is void."""


@dataclasses.dataclass(frozen=True)
class Codec:
    """A named pair of one-shot functions; the benchmark knows codecs by these only.

    ``warm_up`` is how many bytes its untimed first round trip takes: enough to
    start whatever the codec starts on first use (workers, for
    ``threads`` other than 1), so that no timed run pays for it.
    """

    name: str
    compress: Compressor
    decompress: Compressor
    warm_up: int = WARM_UP_BYTES


@dataclasses.dataclass(frozen=True)
class Measurement:
    """Everything measured for one input and one codec: the raw material of every figure."""

    file: str
    codec: str
    size: int
    compressed: int
    compress_times: tuple[float, ...]
    decompress_times: tuple[float, ...]

    @property
    def compress_seconds(self) -> float:
        return statistics.median(self.compress_times)

    @property
    def decompress_seconds(self) -> float:
        return statistics.median(self.decompress_times)


@dataclasses.dataclass(frozen=True)
class Figures:
    """One row of the table: a file's, or the total's, figures for one codec.

    Speeds are ``None`` where they cannot be computed (no time measured, or no
    reference codec in the run); the table shows them as ``n/a``.
    """

    file: str
    codec: str
    size: int
    compressed: int
    compress_seconds: float
    decompress_seconds: float
    compress_vs_zlib: float | None
    decompress_vs_zlib: float | None

    @property
    def ratio(self) -> float | None:
        """Compressed size over original size: smaller is better."""
        return self.compressed / self.size if self.size else None

    @property
    def compress_mbps(self) -> float | None:
        return _speed(self.size, self.compress_seconds)

    @property
    def decompress_mbps(self) -> float | None:
        return _speed(self.size, self.decompress_seconds)

    def as_dict(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "ratio": self.ratio,
            "compress_mb_per_s": self.compress_mbps,
            "decompress_mb_per_s": self.decompress_mbps,
        }


@dataclasses.dataclass(frozen=True)
class BenchResult:
    """A finished run: what was measured, how, and on what machine."""

    files: tuple[tuple[str, int], ...]
    codecs: tuple[str, ...]
    levels: tuple[int, ...]
    runs: int
    measurements: tuple[Measurement, ...]
    machine: dict[str, Any]

    def per_file(self) -> list[Figures]:
        """Figures per file and codec, in input order then codec order."""
        by_key = {(m.file, m.codec): m for m in self.measurements}
        rows: list[Figures] = []
        for name, size in self.files:
            ref = by_key.get((name, REFERENCE_CODEC))
            ref_times = (ref.compress_seconds, ref.decompress_seconds) if ref else None
            for codec in self.codecs:
                m = by_key[name, codec]
                rows.append(
                    _figures(name, codec, size, m.compressed, m.compress_seconds, m.decompress_seconds, ref_times)
                )
        return rows

    def totals(self) -> list[Figures]:
        """Figures per codec over all files; speeds come from the summed median times."""
        size = sum(size for _, size in self.files)
        compressed = dict.fromkeys(self.codecs, 0)
        c_seconds = dict.fromkeys(self.codecs, 0.0)
        d_seconds = dict.fromkeys(self.codecs, 0.0)
        for m in self.measurements:
            compressed[m.codec] += m.compressed
            c_seconds[m.codec] += m.compress_seconds
            d_seconds[m.codec] += m.decompress_seconds
        ref_times = (c_seconds[REFERENCE_CODEC], d_seconds[REFERENCE_CODEC]) if REFERENCE_CODEC in self.codecs else None
        return [
            _figures(TOTAL, codec, size, compressed[codec], c_seconds[codec], d_seconds[codec], ref_times)
            for codec in self.codecs
        ]


def _speed(size: int, seconds: float) -> float | None:
    return size / seconds / MEGABYTE if seconds > 0 else None


def _figures(
    file: str,
    codec: str,
    size: int,
    compressed: int,
    c_seconds: float,
    d_seconds: float,
    ref_times: tuple[float, float] | None,
) -> Figures:
    """A row; the speed relative to the reference is a time ratio, since both saw the same bytes."""

    def vs(ref: float, own: float) -> float | None:
        return ref / own if own > 0 and ref > 0 else None

    return Figures(
        file,
        codec,
        size,
        compressed,
        c_seconds,
        d_seconds,
        vs(ref_times[0], c_seconds) if ref_times else None,
        vs(ref_times[1], d_seconds) if ref_times else None,
    )


# -- inputs ---------------------------------------------------------------------------


def _stdlib_source() -> bytes:
    """The modules of STDLIB_MODULES, concatenated; any this installation lacks
    (a distribution that ships only bytecode) are left out, not guessed at."""
    root = Path(sysconfig.get_paths()["stdlib"])
    parts: list[bytes] = []
    for module in STDLIB_MODULES:
        rel = module.replace(".", "/")
        for candidate in (root / f"{rel}.py", root / rel / "__init__.py"):
            if candidate.is_file():
                parts.append(f"# ---- {module} ----\n".encode() + candidate.read_bytes())
                break
    return b"".join(parts)


def _records() -> bytes:
    """A little-endian table of fixed-size records, as a database or a log writes them:
    counters, timestamps, a random walk, flags. Typical binary data, neither text nor noise."""
    n = 16384
    rng = np.random.default_rng(1)
    rec = np.zeros(n, dtype=[("id", "<u4"), ("time", "<i8"), ("value", "<f4"), ("flags", "u1"), ("kind", "<u2")])
    rec["id"] = np.arange(1000, 1000 + n)
    rec["time"] = 1_700_000_000_000 + np.cumsum(rng.integers(1, 2000, n))
    rec["value"] = np.cumsum(rng.normal(0.0, 1.0, n)).astype(np.float32)
    rec["flags"] = rng.integers(0, 4, n) << 2
    rec["kind"] = rng.choice(np.array([7, 42, 300, 1024]), n, p=[0.7, 0.2, 0.07, 0.03])
    return rec.tobytes()


def sample_files() -> list[tuple[str, bytes]]:
    """The built-in sample: data that exists wherever the package runs, so anyone can
    reproduce a figure. Identical on every call; the stdlib text varies with the
    Python version only, which ``to_json`` records."""
    samples = [
        ("stdlib.py", _stdlib_source()),
        ("random-1MiB.bin", np.random.default_rng(0).bytes(1 << 20)),
        ("run-1MiB.bin", b"a" * (1 << 20)),
        ("abab-1MiB.bin", b"ab" * (1 << 19)),
        ("records.bin", _records()),
    ]
    return [(name, data) for name, data in samples if data]


def collect_inputs(paths: Sequence[str]) -> list[tuple[str, bytes]]:
    """The files named by *paths*, in order; a folder stands for the regular files
    directly inside it, sorted by name (not recursive: a corpus is one flat folder).

    Inputs are named by their file name, or by their path as given where two
    different files share a name. A file named twice is read once. Raises
    ``FileNotFoundError`` (an ``OSError``) for a missing path, ``ValueError`` for a
    path that is neither a file nor a folder, or a folder without files.
    """
    found: list[tuple[str, Path]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            entries = sorted((p for p in path.iterdir() if p.is_file()), key=lambda p: p.name)
            if not entries:
                raise ValueError(f"folder has no regular files: {shown(given)}")
            found.extend((str(p), p) for p in entries)
        elif path.is_file():
            found.append((given, path))
        elif path.exists():
            raise ValueError(f"not a regular file or folder: {shown(given)}")
        else:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), given)
    seen: set[Path] = set()
    unique: list[tuple[str, Path]] = []
    for label, path in found:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            unique.append((label, path))
    name_count: dict[str, int] = {}
    for _, path in unique:
        name_count[path.name] = name_count.get(path.name, 0) + 1
    return [(shown(path.name if name_count[path.name] == 1 else label), path.read_bytes()) for label, path in unique]


# -- measuring ------------------------------------------------------------------------


def default_codecs(levels: Sequence[int], threads: Sequence[int] = (1,)) -> list[Codec]:
    """bytepair at each level (and each *threads* setting: ``bytepair-5-T0`` is level
    5 with ``threads=0``), then the standard library's codecs at their usual
    settings, then zstd levels 1 and 3 and lz4 where ``zstandard`` and ``lz4`` are
    installed (the ``bench`` extra): what users would pick instead."""
    codecs = [
        Codec(
            f"bytepair-{level}" + ("" if n_threads == 1 else f"-T{n_threads}"),
            functools.partial(compress, level=level, threads=n_threads),
            decompress,
            # a share of MIN_SHARE bytes for every worker starts every worker
            WARM_UP_BYTES if n_threads == 1 else resolve_threads(n_threads) * MIN_SHARE,
        )
        for level in levels
        for n_threads in threads
    ]
    codecs += [
        Codec(REFERENCE_CODEC, functools.partial(zlib.compress, level=6), zlib.decompress),
        Codec("bz2-9", functools.partial(bz2.compress, compresslevel=9), bz2.decompress),
        Codec("lzma-6", functools.partial(lzma.compress, preset=6), lzma.decompress),
    ]
    zstd = _zstandard()
    if zstd is not None:
        for zstd_level in (1, 3):
            codecs.append(
                Codec(
                    f"zstd-{zstd_level}",
                    zstd.ZstdCompressor(level=zstd_level).compress,
                    zstd.ZstdDecompressor().decompress,
                )
            )
    lz4_frame = _optional("lz4.frame")
    if lz4_frame is not None:
        codecs.append(Codec("lz4", lz4_frame.compress, lz4_frame.decompress))
    return codecs


def _zstandard() -> Any:
    """The ``zstandard`` module, or None: it is an optional comparison, never a dependency."""
    return _optional("zstandard")


def _optional(name: str) -> Any:
    """Module *name* (a peer to compare with: the ``bench`` extra), or None."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _timed(fn: Compressor, data: bytes, timer: Callable[[], float]) -> tuple[bytes, float]:
    """*fn(data)* and the time it took, with the garbage collector held off as
    ``timeit`` does, so one codec does not pay for another's garbage."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = timer()
        out = fn(data)
        elapsed = timer() - start
    finally:
        if gc_was_enabled:
            gc.enable()
    return out, elapsed


def _round_trip(codec: Codec, name: str, data: bytes, timer: Callable[[], float]) -> tuple[int, float, float]:
    """Compressed size, compress time and decompress time of one checked round trip."""
    packed, c_time = _timed(codec.compress, data, timer)
    try:
        back, d_time = _timed(codec.decompress, packed, timer)
    except Exception as exc:
        raise RoundTripError(f"{codec.name} on {name}: decompress raised {exc!r}") from exc
    if back != data:
        common = min(len(back), len(data))
        diff = next((i for i in range(common) if back[i] != data[i]), common)
        raise RoundTripError(
            f"{codec.name} on {name}: round trip gave {len(back)} bytes for {len(data)}, "
            f"first difference at byte {diff}"
        )
    return len(packed), c_time, d_time


def run_benchmark(
    inputs: Sequence[tuple[str, bytes]],
    *,
    levels: Sequence[int],
    runs: int = 5,
    threads: Sequence[int] = (1,),
    codecs: Sequence[Codec] | None = None,
    timer: Callable[[], float] = time.perf_counter,
    progress: Callable[[str], None] | None = None,
) -> BenchResult:
    """Compress and decompress every input with every codec *runs* times, checking
    each round trip, and keep every time (the figures use the median).

    *codecs* defaults to ``default_codecs(levels, threads)``; when given, it is the
    whole set and *levels* is only recorded. Each run visits every input with every codec in
    turn, starting one codec later each run, so drift and noise in the machine fall
    on all codecs alike. Raises ``RoundTripError`` naming the file and codec when a
    round trip fails, or when decompression raises.
    """
    levels = tuple(levels)
    for level in levels:
        if level not in LEVELS:
            raise ValueError(f"level must be in {min(LEVELS)}..{max(LEVELS)}, got {level}")
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    if not inputs:
        raise ValueError("nothing to benchmark: no inputs")
    names = [name for name, _ in inputs]
    if len(set(names)) != len(names):
        raise ValueError("input names must be unique")
    codec_list = list(default_codecs(levels, threads) if codecs is None else codecs)
    if not codec_list or len({c.name for c in codec_list}) != len(codec_list):
        raise ValueError("codec names must be unique, and there must be at least one codec")

    data_list = [(name, bytes(data)) for name, data in inputs]
    first_name, first_data = data_list[0]
    for codec in codec_list:  # first calls pay for imports, caches and workers; no run should
        warm = _warm_up_input(first_data, codec.warm_up)
        _round_trip(codec, f"{first_name} (warm-up on {len(warm)} bytes of it)", warm, timer)

    sizes: dict[tuple[str, str], int] = {}
    c_times: dict[tuple[str, str], list[float]] = {}
    d_times: dict[tuple[str, str], list[float]] = {}
    for run in range(runs):
        if progress is not None:
            progress(f"run {run + 1}/{runs}")
        shift = run % len(codec_list)
        order = codec_list[shift:] + codec_list[:shift]
        for name, data in data_list:
            for codec in order:
                key = (name, codec.name)
                size, c_time, d_time = _round_trip(codec, name, data, timer)
                sizes.setdefault(key, size)
                c_times.setdefault(key, []).append(c_time)
                d_times.setdefault(key, []).append(d_time)

    measurements = tuple(
        Measurement(name, c.name, len(data), sizes[name, c.name], tuple(c_times[name, c.name]),
                    tuple(d_times[name, c.name]))
        for name, data in inputs
        for c in codec_list
    )  # fmt: skip
    return BenchResult(
        files=tuple((name, len(data)) for name, data in inputs),
        codecs=tuple(c.name for c in codec_list),
        levels=levels,
        runs=runs,
        measurements=measurements,
        machine=machine_info(),
    )


def _warm_up_input(data: bytes, size: int) -> bytes:
    """*size* bytes of *data*, repeated as often as it takes (an empty input stays empty)."""
    if not data:
        return data
    return (data * -(-size // len(data)))[:size]


def kernels_in_use() -> str:
    """Which path bytepair's runs take here, as the table's header says it:
    ``compiled``, or ``numpy`` with the reason (``bytepair.backend.describe``)."""
    from .. import backend

    return backend.describe()


def machine_info() -> dict[str, Any]:
    """What a reader needs to compare two result files: software versions and the CPU."""
    from .. import __version__

    zstd = _zstandard()
    return {
        "bytepair": __version__,
        "kernels": kernels_in_use(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "numpy": np.__version__,
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
        "zstandard": getattr(zstd, "__version__", None),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "byteorder": sys.byteorder,
    }


# -- reporting ------------------------------------------------------------------------

_COLUMNS = (
    "file", "codec", "size", "compressed", "ratio", "compress MB/s", "decompress MB/s",
    "compress vs zlib", "decompress vs zlib",
)  # fmt: skip


def _num(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _mbps(value: float | None) -> str:
    return _num(value, 1 if value is not None and value >= 10 else 2)


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{_num(value, 2 if value >= 0.1 else 3)}x"


def _table(rows: list[Figures]) -> list[str]:
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|:--|:--|" + "--:|" * (len(_COLUMNS) - 2)]
    for r in rows:
        cells = (
            r.file, r.codec, str(r.size), str(r.compressed), _num(r.ratio, 3), _mbps(r.compress_mbps),
            _mbps(r.decompress_mbps), _times(r.compress_vs_zlib), _times(r.decompress_vs_zlib),
        )  # fmt: skip
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines


def format_table(result: BenchResult, per_file: bool) -> str:
    """The result as Markdown: a line saying how it was measured, the per-file table
    when *per_file*, and the totals, one row per codec."""
    m = result.machine
    total = sum(size for _, size in result.files)
    lines = [
        f"bytepair {m['bytepair']} round trip, kernels: {m.get('kernels', 'numpy')}; "
        f"{len(result.files)} files, {total} bytes; "
        f"median time of {result.runs} run{'' if result.runs == 1 else 's'}; "
        "MB = 10^6 bytes; ratio = compressed / size; "
        f"Python {m['python']}, numpy {m['numpy']}, {m['platform']}, {m['cpu_count']} CPUs",
        "",
    ]
    if per_file:
        lines += ["### Per file", "", *_table(result.per_file()), ""]
    lines += ["### Total", "", *_table(result.totals())]
    return "\n".join(lines) + "\n"


def to_json(result: BenchResult) -> dict[str, Any]:
    """Every figure and every single time, with the machine and the parameters,
    so a result file can be re-analysed without re-running."""
    per_file = result.per_file()
    by_key = {(m.file, m.codec): m for m in result.measurements}
    return {
        "benchmark": "bytepair round trip",
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": result.machine,
        "parameters": {
            "levels": list(result.levels),
            "runs": result.runs,
            "codecs": list(result.codecs),
            "reference_codec": REFERENCE_CODEC,
            "timer": "time.perf_counter",
            "statistic": "median",
            "megabyte": MEGABYTE,
            "bytepair_levels": {str(level): dataclasses.asdict(LEVELS[level]) for level in result.levels},
        },
        "files": [{"name": name, "size": size} for name, size in result.files],
        "results": [
            {
                **row.as_dict(),
                "compress_times": list(by_key[row.file, row.codec].compress_times),
                "decompress_times": list(by_key[row.file, row.codec].decompress_times),
            }
            for row in per_file
        ],
        "totals": [row.as_dict() for row in result.totals()],
    }


def bench_command(paths: list[str], *, levels: list[int] | None, runs: int, out: TextIO, threads: int = 1) -> int:
    """``bytepair -b``: benchmark *paths* (the built-in sample when empty) at *levels*
    (the default level when None) with *threads* (``-T``, as ``zstd -b -T`` does) and
    print the Markdown tables to *out*.

    Returns 0. Bad paths raise ``OSError``/``ValueError`` and a failed round trip
    ``RoundTripError``; turning them into messages is the caller's business.
    """
    inputs = collect_inputs(paths) if paths else sample_files()
    result = run_benchmark(inputs, levels=levels or [DEFAULT_LEVEL], runs=runs, threads=(threads,))
    out.write(format_table(result, per_file=True))
    return 0
