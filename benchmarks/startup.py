"""The command line from a cold start: ``bytepair -c`` and ``-dc`` against ``gzip`` and importing numpy.

    python benchmarks/startup.py [--runs N] [--size BYTES] [--source PATH]

Times, in turns so that all see the same machine, the wall time of

* ``python -c "import numpy"`` (what every bytepair command must at least do),
* ``bytepair -c FILE > out`` and ``bytepair -dc FILE.bp > out``,
* ``gzip -6 -c FILE > out`` and ``gzip -dc FILE.gz > out`` (where gzip is installed),

on a slice of ``--size`` bytes (1 MB) of real data: the files of ``--source``
(``../shared/corpus``, else Python's own standard library sources) joined and
cut. Prints each median, its ratio to importing numpy and to gzip, and the
kernels ``bytepair -V`` names (peak memory: ``benchmarks/memory.py``). Exit status: 0
done, 1 a command failed, 2 bad option.

Each command first runs once untimed, with ``PYTHONDONTWRITEBYTECODE`` unset, so
that the timed runs import bytepair from compiled bytecode, as an installed
package does (pip compiles it at install time; numpy's always is).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

# this checkout's package, even where another copy is installed: a benchmark run
# from a working tree must time that tree's code
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PROG = "startup.py"
SHARED_CORPUS = REPO.parent / "shared" / "corpus"


def sample(size: int, source: Path | None) -> bytes:
    """*size* bytes of the files under *source* joined (sorted by path), repeated if short."""
    if source is None:
        source = SHARED_CORPUS if SHARED_CORPUS.is_dir() else Path(sysconfig.get_paths()["stdlib"])
    data = bytearray()
    for path in sorted(p for p in source.rglob("*") if p.is_file() and p.suffix not in (".pyc",)):
        data += path.read_bytes()
        if len(data) >= size:
            break
    if not data:
        raise ValueError(f"no data under {source}")
    return (bytes(data) * -(-size // len(data)))[:size]


def parse_size(text: str) -> int:
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30}
    for unit, factor in units.items():
        if text.upper().endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def timed_run(command: list[str], out: Path, env: dict[str, str]) -> float:
    """Wall time of *command* with its output to *out*."""
    with out.open("wb") as sink:
        start = time.perf_counter()
        proc = subprocess.run(command, stdout=sink, stderr=subprocess.PIPE, env=env, check=False)
        elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip()
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}: {message}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="Time the command line from a cold start.")
    parser.add_argument("--runs", type=int, default=20, help="runs of each command; times are medians (20)")
    parser.add_argument("--size", type=parse_size, default=10**6, help="bytes of data (1MB; 10MB for the CLI goal)")
    parser.add_argument("--source", type=Path, help="folder of files to take the data from (../shared/corpus)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.size < 1:
        parser.error("--runs and --size must be at least 1")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    gzip = shutil.which("gzip")
    with tempfile.TemporaryDirectory() as folder:
        plain = Path(folder, "data")
        plain.write_bytes(sample(args.size, args.source))
        packed = Path(folder, "data.bp")
        gzipped = Path(folder, "data.gz")
        out = Path(folder, "out")
        bp = [sys.executable, "-m", "bytepair"]
        commands: dict[str, list[str]] = {
            'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
            "bytepair -c FILE": [*bp, "-c", str(plain)],
            "bytepair -dc FILE.bp": [*bp, "-dc", str(packed)],
        }
        if gzip:
            commands["gzip -6 -c FILE"] = [gzip, "-6", "-c", str(plain)]
            commands["gzip -dc FILE.gz"] = [gzip, "-dc", str(gzipped)]
        try:
            timed_run(commands["bytepair -c FILE"], packed, env)
            if gzip:
                timed_run(commands["gzip -6 -c FILE"], gzipped, env)
            for command in commands.values():  # writes bytecode; warms the file cache
                timed_run(command, out, env)
            times: dict[str, list[float]] = {name: [] for name in commands}
            for _ in range(args.runs):
                for name, command in commands.items():
                    times[name].append(timed_run(command, out, env))
                    if name == "bytepair -dc FILE.bp" and out.read_bytes() != plain.read_bytes():
                        raise RuntimeError("bytepair -dc did not give the data back")
        except RuntimeError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        kernels = subprocess.run([*bp, "-V"], capture_output=True, text=True, check=False, env=env).stdout
        size, packed_size = plain.stat().st_size, packed.stat().st_size
    said = kernels.splitlines()[-1] if kernels else "kernels: ?"
    print(f"{said}; {size:,} bytes -> {packed_size:,}; {args.runs} runs")
    print(f"{said}; {size:,} bytes -> {packed_size:,}; {args.runs} runs")
    print()
    numpy_time = statistics.median(times['python -c "import numpy"'])
    print("| command | median | against importing numpy | against gzip |")
    print("|:--|--:|--:|--:|")
    for name, values in times.items():
        median = statistics.median(values)
        twin = {"bytepair -c FILE": "gzip -6 -c FILE", "bytepair -dc FILE.bp": "gzip -dc FILE.gz"}.get(name)
        against_gzip = f"{median / statistics.median(times[twin]):.2f}x" if twin in times else ""
        print(f"| `{name}` | {median * 1e3:.1f} ms | {median / numpy_time:.2f}x | {against_gzip} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
