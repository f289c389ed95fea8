"""``python -m bytepair``, and the ``bytepair`` console script (:func:`main`)."""

from __future__ import annotations


def main() -> None:
    """Run the command line and exit with its status.

    Ctrl-C is held back from here until the command's imports are done (``cli.run`` lets it
    through): importing ``signal``, the first thing ``bytepair.cli`` does, takes long enough
    for an interrupt to land in it and print a traceback from inside ``enum``. (``_signal``,
    its C part, is already loaded with the interpreter.)"""
    import _signal  # type: ignore[import-not-found]  # (no stub: the C part of signal)

    if hasattr(_signal, "pthread_sigmask"):
        _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT})
    import sys

    from .cli import run

    status = run()
    # The work is done and its status known: a Ctrl-C from here on would only interrupt the
    # interpreter's shutdown (joining threads, finalisers) and print a traceback from there.
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    sys.exit(status)


if __name__ == "__main__":  # not when a worker process re-imports the main module
    main()
