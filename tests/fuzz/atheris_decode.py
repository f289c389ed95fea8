"""Coverage-guided fuzzing of the readers with atheris (libFuzzer for Python), on both paths.

    python3 -m tests.fuzz.atheris_decode -max_total_time=1800 CORPUS_DIR [SEED_DIR ...]
    python3 -m tests.fuzz.atheris_decode crash-...          # replay one input

Each input is read by ``bytepair.decompress`` (with a 16 MiB limit), by
``BytePairDecompressor`` fed in pieces, and by ``gage.decompress``, once on the numpy
path and once on the compiled one. Every call must return bytes or raise a
``BytePairError`` (nothing else), and the two paths must agree: the same bytes,
or the same exception class and message. A disagreement or any other exception
is a finding: libFuzzer saves the input as ``crash-*`` in the working directory.

Coverage guides the search through the Python code (the container's readers,
the wrappers of the kernels); the compiled kernels themselves are not
instrumented, so their branches are reached through the inputs the Python side
finds interesting. Needs ``pip install atheris``; the seeds are the golden
streams (``testdata/golden``) and the fuzzer's saved cases (``testdata/fuzz``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

import bytepair
import bytepair._core
import bytepair.container.codec
import bytepair.core.expand
import bytepair.core.kernels.decode
import bytepair.core.kernels.stream
import bytepair.io.stream
from bytepair import backend, gage

LIMIT = 1 << 24
"""Most bytes a case may decode to, so that a small input cannot ask for gigabytes."""

Outcome = tuple[str, object]


def _outcomes(data: bytes) -> list[Outcome]:
    """What each reader makes of *data*: ("ok", bytes) or (exception class, message)."""
    found: list[Outcome] = []
    for read in (_decompress, _incremental, _gage):
        try:
            found.append(("ok", read(data)))
        except bytepair.BytePairError as exc:
            found.append((type(exc).__name__, str(exc)))
    return found


def _decompress(data: bytes) -> bytes:
    return bytepair.decompress(data, max_length=LIMIT)


def _incremental(data: bytes) -> bytes:
    """As ``lzma.LZMADecompressor``: pieces until the end of the stream, then what is left
    over is ``unused_data`` (decompressing after the end raises ``EOFError``)."""
    reader = bytepair.BytePairDecompressor()
    out = []
    for i in range(0, len(data), 777):
        if reader.eof:
            break
        out.append(reader.decompress(data[i : i + 777], max_length=LIMIT))
    return b"".join(out) + b"|" + reader.unused_data


def _gage(data: bytes) -> bytes:
    return gage.decompress(data, max_length=LIMIT)


def test_one_input(data: bytes) -> None:
    with backend.use("numpy"):
        expected = _outcomes(data)
    with backend.use("compiled"):
        got = _outcomes(data)
    if got != expected:
        which = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]
        raise AssertionError(
            f"the paths disagree on reader(s) {which}: numpy {expected[which[0]]!r:.300}, "
            f"compiled {got[which[0]]!r:.300}"
        )


def main() -> None:
    if not backend.compiled():
        sys.exit(f"atheris_decode: needs the compiled kernels ({backend.describe()})")
    repo = Path(__file__).resolve().parent.parent.parent
    replaying = any(Path(arg).is_file() for arg in sys.argv[1:] if not arg.startswith("-"))
    seeds = [] if replaying else [str(repo / "testdata" / "golden"), str(repo / "testdata" / "fuzz")]
    atheris.instrument_all()  # every function loaded so far: the readers, imported above
    atheris.Setup([*sys.argv, *seeds], test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
