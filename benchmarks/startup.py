"""Start-up time: ``bytepair -d`` on a small file against ``python -c "import numpy"``.

    python benchmarks/startup.py [--runs N]

Runs each command ``--runs`` times (20), taking turns so that both see the same
machine, and prints the median wall time of each and its ratio to importing
numpy, which every bytepair command must do. The small file is made here: a
few hundred bytes compressed by this checkout. Exit status: 0 done, 1 a command failed, 2 bad option.

The first line names the kernels large inputs would take here (``bytepair -V``)
and whether ``bytepair -dc FILE`` imported numba (it must not: a small input never
pays for numba's import, so the figure holds with a warm numba cache or none).

Each command first runs once untimed, with ``PYTHONDONTWRITEBYTECODE`` unset, so
that the timed runs import bytepair from compiled bytecode, as an installed
package does (pip compiles it at install time; numpy's always is). A checkout
used with that variable set would otherwise compile its sources on every run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# this checkout's package, even where another copy is installed: a benchmark run
# from a working tree must time that tree's code
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bytepair

PROG = "startup.py"


def commands(small: Path) -> dict[str, list[str]]:
    return {
        'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
        "bytepair -dc FILE": [sys.executable, "-m", "bytepair", "-dc", str(small)],
    }


def imports_numba(command: list[str], env: dict[str, str]) -> bool:
    """Whether *command* imports numba (from Python's own import report, untimed)."""
    report = subprocess.run(
        command, capture_output=True, text=True, check=False, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}
    ).stderr
    return any(line.rsplit("|", 1)[-1].strip().split(".")[0] == "numba" for line in report.splitlines())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="Time bytepair's start-up against importing numpy.")
    parser.add_argument("--runs", type=int, default=20, help="runs of each command; times are medians (20)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    with tempfile.TemporaryDirectory() as folder:
        small = Path(folder, "small.txt.bp")
        content = b"a small file, decompressed to standard output\n" * 8
        small.write_bytes(bytepair.compress(content))
        timed: dict[str, list[float]] = {name: [] for name in commands(small)}
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        # the commands run this checkout's package too
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(Path(bytepair.__file__).parent.parent), env.get("PYTHONPATH")])
        )
        for command in commands(small).values():  # writes bytecode; warms the file cache
            subprocess.run(command, capture_output=True, check=False, env=env)
        numba_imported = imports_numba(commands(small)["bytepair -dc FILE"], env)
        for _ in range(args.runs):
            for name, command in commands(small).items():
                start = time.perf_counter()
                done = subprocess.run(command, capture_output=True, check=False, env=env)
                timed[name].append(time.perf_counter() - start)
                if done.returncode != 0 or (name.startswith("bytepair") and done.stdout != content):
                    print(f"{PROG}: {name} failed: {done.stderr.decode(errors='replace').strip()}", file=sys.stderr)
                    return 1
    reference = statistics.median(timed['python -c "import numpy"'])
    kernels = subprocess.run(
        [sys.executable, "-m", "bytepair", "-V"], capture_output=True, text=True, check=False, env=env
    ).stdout.splitlines()[-1:]
    said = "YES" if numba_imported else "no"
    print(f"{''.join(kernels) or 'kernels: ?'}; numba imported by `bytepair -dc FILE`: {said}")
    print()
    print("| command | median | against importing numpy |")
    print("|:--|--:|--:|")
    for name, times in timed.items():
        median = statistics.median(times)
        print(f"| `{name}` | {median * 1e3:.1f} ms | {median / reference:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
