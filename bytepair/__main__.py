"""``python -m bytepair``: the same command as the ``bytepair`` console script."""

from __future__ import annotations

if __name__ == "__main__":  # not when a worker process re-imports the main module
    import sys

    from .cli import run

    sys.exit(run())
