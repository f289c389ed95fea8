"""The ``bytepair`` command.

:func:`run` is the console script's entry (and ``python -m bytepair``'s). It
imports the command, and with it numpy and the kernels, only once it runs, so
that Ctrl-C at any moment after Python itself started ends the command as gzip
ends: status 130, no traceback, nothing left behind (the command removes its
partial output itself; see ``cli.main``).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence

__all__ = ["run"]

INTERRUPTED = 130
"""128 + SIGINT: the status a shell reports for a command Ctrl-C ended."""


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    _no_blas_threads()
    try:
        main = _import_command()
        return main(None if argv is None else list(argv))
    except KeyboardInterrupt:  # before the command's own handlers, or between them
        return INTERRUPTED


def _import_command() -> Callable[[list[str] | None], int]:
    """``cli.main.main``, imported with SIGINT held back: an interrupt inside an import
    surfaces in odd places (an ``ImportError`` from numpy's C code, a message from
    importlib's locks), so it is delivered once the imports are done, as the
    ``KeyboardInterrupt`` that :func:`run` turns into status 130."""
    held = hasattr(signal, "pthread_sigmask")
    if held:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        from .main import main
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    return main


def _no_blas_threads() -> None:
    """Ask numpy's BLAS for one thread, unless the environment already says how many.

    bytepair never calls BLAS, but numpy's import starts OpenBLAS's thread pool, and its
    threads spin for a while after, on a core the command's second thread could use:
    ``python -c "import numpy"`` took 0.09-0.11 s of CPU time, 0.06 s with one thread.
    Only the command does this: a program that imports bytepair keeps its own setting."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
