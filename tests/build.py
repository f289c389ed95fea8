"""The compiled kernels of this checkout, built in place before the tests import bytepair.

The tests import this checkout's package (not an installed copy), so its compiled
modules must sit beside their sources. :func:`build_in_place` builds them once
(``python3 setup.py build_ext --inplace``) where they are missing or older than
any kernel source; a machine without a C compiler or Cython gets no build, and the
compiled-path tests skip with the reason. ``BYTEPAIR_TEST_BUILD=0`` turns it off
(a bounds-checked build made by hand is then kept as it is).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE_SUFFIXES = (".pyx", ".pxd", ".h")


def _stale(package: Path) -> list[Path]:
    """The kernel sources with no compiled module beside them, or newer than it."""
    sources = [p for p in package.rglob("*") if p.suffix in SOURCE_SUFFIXES]
    newest = max((p.stat().st_mtime for p in sources), default=0.0)
    stale = []
    for pyx in package.rglob("*.pyx"):
        built = list(pyx.parent.glob(pyx.stem + ".*.so")) + list(pyx.parent.glob(pyx.stem + ".*.pyd"))
        if not built or min(p.stat().st_mtime for p in built) < newest:
            stale.append(pyx)
    return stale


def build_in_place() -> str:
    """Build what is stale; returns a line saying what happened ("" when nothing was needed)."""
    if os.environ.get("BYTEPAIR_TEST_BUILD", "1") == "0":
        return ""
    stale = _stale(REPO / "bytepair")
    if not stale:
        return ""
    if importlib.util.find_spec("Cython") is None:
        return "the compiled kernels are not built and Cython is not installed: compiled-path tests skip"
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace", "-t", str(REPO / "build" / "tests")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or _stale(REPO / "bytepair"):
        return "the compiled kernels failed to build here: compiled-path tests skip\n" + done.stderr[-2000:]
    return f"built the compiled kernels in place ({len(stale)} modules)"
