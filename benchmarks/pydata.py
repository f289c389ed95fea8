"""bytepair in the PyData stack: Zarr on a 2-worker Dask cluster, one .bp file read in parallel, import time.

    python benchmarks/pydata.py [--size 256MB] [--text-size 200MB] [--blocksize 8MiB] [--workdir DIR]

1. Zarr: a ``--size`` array made of the corpora's bytes in ../shared/corpus, repeated,
   viewed as uint8 and as int16 (text-like values), with and without numcodecs'
   ``Shuffle`` in front, written to and read from a local Zarr (format 3) store by a
   ``LocalCluster`` of 2 worker processes of one thread each, with bytepair, zlib and
   zstd side by side in the same run: ratio (stored / original, lower is better) and
   MB/s of original data for the write and the read. Every read is checked against
   the data (its sum).
2. Reading one ``--text-size`` ``.bp`` file of the corpora's text files, repeated, with
   ``bytepair.dask.read_text(..., blocksize=...)`` (split by frames) on 2 workers
   against 1 worker: the median of ``--runs`` reads, taking turns, and their ratio.
3. ``import bytepair`` in a fresh interpreter: which of the PyData hosts it loads
   (none should) and its median wall time against ``import numpy``.

Needs bytepair[pydata] and ../shared. Exit status: 0 done, 1 a check failed, 2 bad
option or missing data. Timings on a shared machine wander; compare rows of one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# this checkout's package (and the workers'), even where another copy is installed
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np

import bytepair

REPO = Path(__file__).resolve().parent.parent
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

CORPUS = Path(os.environ.get("BYTEPAIR_SHARED", REPO.parent / "shared")) / "corpus"
HOSTS = ("numcodecs", "zarr", "fsspec", "dask", "distributed", "pandas")
CHUNK = 4 << 20
"""Bytes of one Zarr chunk: a common size for compressed chunks (two bytepair frames)."""


def parse_size(text: str) -> int:
    from dask.utils import parse_bytes

    size = int(parse_bytes(text if text[-1].isalpha() else text + "MB"))
    if size <= 0:
        raise argparse.ArgumentTypeError(f"size must be positive: {text}")
    return size


def corpus_files() -> list[Path]:
    files = sorted(p for p in CORPUS.glob("*/*") if p.is_file())
    if not files:
        raise SystemExit(f"pydata.py: no corpus in {CORPUS} (it lives in ../shared beside the repo)")
    return files


def is_text(data: bytes) -> bool:
    """Printable ASCII and white space only: what a .txt file of lines holds."""
    return all(32 <= b < 127 or b in b"\t\n\r\f" for b in set(data))


# --- 1. Zarr -------------------------------------------------------------------------------


def corpus_block(offset: int, nbytes: int, dtype: str) -> np.ndarray:
    """Bytes *offset* .. *offset* + *nbytes* of the corpora repeated without end, as *dtype*.

    Runs on the workers, which read the corpus themselves (a few MB, from the page cache).
    """
    whole = np.frombuffer(b"".join(p.read_bytes() for p in corpus_files()), dtype="u1")
    index = (offset + np.arange(nbytes, dtype=np.int64)) % whole.size
    return whole[index].view(dtype)


def source(size: int, dtype: str) -> Any:
    """A dask array of *size* bytes of corpus data, each chunk made on a worker."""
    import dask.array as da

    itemsize = np.dtype(dtype).itemsize
    n, per_chunk = size // itemsize, CHUNK // itemsize

    def make(block_info: Any = None) -> np.ndarray:
        start, stop = block_info[None]["array-location"][0]
        return corpus_block(start * itemsize, (stop - start) * itemsize, dtype)

    return da.map_blocks(
        make, chunks=((per_chunk,) * (n // per_chunk) + ((n % per_chunk,) if n % per_chunk else ()),), dtype=dtype
    )


def codecs(dtype: str, shuffle: bool, level: int) -> dict[str, list[Any]]:
    import zarr.codecs
    import zarr.codecs.numcodecs as zn

    import bytepair.zarr

    front = [zn.Shuffle(elementsize=np.dtype(dtype).itemsize)] if shuffle else []
    return {
        f"bytepair-{level}": [*front, bytepair.zarr.BytePair(level=level)],
        "zlib-6": [*front, zn.Zlib(level=6)],
        "zstd-3": [*front, zarr.codecs.ZstdCodec(level=3)],
    }


def stored_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in (folder / "c").rglob("*") if p.is_file())


def bench_zarr(client: Any, size: int, workdir: Path, level: int) -> bool:
    import warnings

    import dask.array as da
    import zarr

    warnings.filterwarnings("ignore", message="Numcodecs codecs are not in the Zarr version 3 specification")
    ok = True
    print(f"\nZarr (format 3), {size / 1e6:.0f} MB of corpus bytes, chunks of {CHUNK >> 20} MiB, 2 workers x 1 thread")
    print(f"{'data':<16}{'codec':<14}{'ratio':>8}{'write MB/s':>12}{'read MB/s':>11}")
    for dtype in ("u1", "i2"):
        # held in the workers' memory, so that writes time the codecs, not the making of the data
        data = client.persist(source(size, dtype))
        expected = int(data.sum(dtype="i8").compute())
        for shuffle in (False, True):
            label = f"{'uint8' if dtype == 'u1' else 'int16'}{' +shuffle' if shuffle else ''}"
            for name, chain in codecs(dtype, shuffle, level).items():
                store = workdir / f"{dtype}-{shuffle}-{name}.zarr"
                array = zarr.create_array(
                    str(store), shape=data.shape, chunks=data.chunksize, dtype=dtype, compressors=chain, overwrite=True
                )
                start = time.perf_counter()
                data.store(array, lock=False)
                write = time.perf_counter() - start
                start = time.perf_counter()
                got = int(da.from_zarr(str(store)).sum(dtype="i8").compute())
                read = time.perf_counter() - start
                ratio = stored_bytes(store) / size
                print(f"{label:<16}{name:<14}{ratio:>8.3f}{size / 1e6 / write:>12.1f}{size / 1e6 / read:>11.1f}")
                if got != expected:
                    print(f"  MISMATCH: read back sums to {got}, the data to {expected}")
                    ok = False
                subprocess.run(["rm", "-rf", str(store)], check=False)
    return ok


# --- 2. one .bp file, split by frames ------------------------------------------------------


def make_text_file(path: Path, size: int) -> tuple[int, int]:
    """*path*: the corpora's text files repeated to *size* bytes, compressed (all cores). Lines and bytes."""
    text = b"".join(data for p in corpus_files() if is_text(data := p.read_bytes()))
    if not text.endswith(b"\n"):
        text += b"\n"
    lines = 0
    with bytepair.BytePairFile(path, "wb", threads=0) as f:
        written = 0
        while written < size:
            piece = text[: size - written]
            f.write(piece)
            lines += piece.count(b"\n") + (not piece.endswith(b"\n"))
            written += len(piece)
    return lines, written


def bench_split(path: Path, lines: int, size: int, blocksize: int, runs: int) -> bool:
    import distributed

    import bytepair.dask

    pieces = bytepair.dask.plan(str(path), blocksize)
    print(
        f"\nOne {size / 1e6:.0f} MB text file ({path.stat().st_size / 1e6:.0f} MB compressed), "
        f"{len(pieces)} partitions of ~{blocksize >> 20} MiB compressed, bytepair.dask.read_text(...).count()"
    )
    times: dict[int, list[float]] = {1: [], 2: []}
    clusters = {
        n: distributed.LocalCluster(
            n_workers=n, processes=True, threads_per_worker=1, dashboard_address=":0", worker_dashboard_address=":0"
        )
        for n in (1, 2)
    }
    ok = True
    try:
        clients = {n: distributed.Client(cluster, set_as_default=False) for n, cluster in clusters.items()}
        for turn in range(runs + 1):  # the first turn warms up (imports on the workers, the file cache)
            for n in (2, 1) if turn % 2 else (1, 2):
                bag = bytepair.dask.read_text(str(path), blocksize=blocksize)
                start = time.perf_counter()
                counted = clients[n].compute(bag.count()).result()
                if turn:
                    times[n].append(time.perf_counter() - start)
                if counted != lines:
                    print(f"  MISMATCH with {n} workers: {counted} lines, the file has {lines}")
                    ok = False
        for client in clients.values():
            client.close()
    finally:
        for cluster in clusters.values():
            cluster.close()
    one, two = statistics.median(times[1]), statistics.median(times[2])
    print(f"{'1 worker':<12}{one:>8.2f} s {size / 1e6 / one:>8.1f} MB/s")
    print(f"{'2 workers':<12}{two:>8.2f} s {size / 1e6 / two:>8.1f} MB/s   speed-up {one / two:.2f}x (goal >= 1.7x)")
    return ok


# --- 3. import time ------------------------------------------------------------------------


def bench_import(runs: int) -> bool:
    probe = f"import sys, bytepair; print(' '.join(m for m in {HOSTS!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()

    def timed(code: str) -> Callable[[], float]:
        def run() -> float:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            return time.perf_counter() - start

        return run

    commands = {"import numpy": timed("import numpy"), "import bytepair": timed("import bytepair")}
    samples: dict[str, list[float]] = {name: [] for name in commands}
    for run in commands.values():
        run()  # bytecode and file cache
    for _ in range(runs):
        for name, run in commands.items():
            samples[name].append(run())
    print(f"\nimport bytepair loads: {' '.join(loaded) or 'none'} of {', '.join(HOSTS)}")
    for name, values in samples.items():
        print(f"{name:<18}{statistics.median(values) * 1000:>8.1f} ms (median of {runs})")
    return not loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pydata.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=parse_size, default=parse_size("256MB"), help="bytes of the Zarr array (256MB)")
    parser.add_argument("--text-size", type=parse_size, default=parse_size("200MB"), help="bytes of the text (200MB)")
    parser.add_argument(
        "--blocksize", type=parse_size, default=parse_size("8MiB"), help="compressed bytes a task (8MiB)"
    )
    parser.add_argument("--level", type=int, default=bytepair.DEFAULT_LEVEL, choices=sorted(bytepair.LEVELS))
    parser.add_argument("--runs", type=int, default=3, help="timed reads of the text file at each width (3)")
    parser.add_argument("--workdir", type=Path, help="where the stores and the .bp file go (a temporary folder)")
    parser.add_argument("--skip", action="append", choices=["zarr", "split", "import"], default=[])
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    try:
        import dask.array  # noqa: F401
        import distributed
        import zarr  # noqa: F401
    except ImportError as exc:
        print(f"pydata.py: {exc.name} is missing: pip install 'bytepair[pydata]'", file=sys.stderr)
        return 2
    corpus_files()
    print(f"bytepair {bytepair.__version__}, kernels: {_kernels()}, {os.cpu_count()} cores")
    ok = True
    with tempfile.TemporaryDirectory(dir=args.workdir) as folder:
        work = Path(folder)
        if "zarr" not in args.skip:
            with (
                distributed.LocalCluster(
                    n_workers=2,
                    processes=True,
                    threads_per_worker=1,
                    dashboard_address=":0",
                    worker_dashboard_address=":0",
                ) as cluster,
                distributed.Client(cluster) as client,
            ):
                ok &= bench_zarr(client, args.size, work, args.level)
        if "split" not in args.skip:
            path = work / "text.txt.bp"
            lines, size = make_text_file(path, args.text_size)
            ok &= bench_split(path, lines, size, args.blocksize, args.runs)
    if "import" not in args.skip:
        ok &= bench_import(9)
    return 0 if ok else 1


def _kernels() -> str:
    try:
        from bytepair import backend

        return backend.describe()
    except ImportError:
        return "numpy"


if __name__ == "__main__":
    sys.exit(main())
