"""The ``bytepair`` command.

:func:`main` is the console script's entry (and ``python -m bytepair``'s). It
imports the command, and with it numpy and the kernels, only once it runs, so
that Ctrl-C at any moment after Python itself started ends the command as gzip
ends: status 130, no traceback, nothing left behind (the command removes its
partial output itself; see ``cli.main``).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]

INTERRUPTED = 130
"""128 + SIGINT: the status a shell reports for a command Ctrl-C ended."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        from .main import main as run

        return run(None if argv is None else list(argv))
    except KeyboardInterrupt:  # while importing, or between the command's own handlers
        return INTERRUPTED
