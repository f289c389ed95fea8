"""``python -m bytepair``: the same command as the ``bytepair`` console script."""

from __future__ import annotations

from ._cli import main

if __name__ == "__main__":  # not when a worker process re-imports the main module
    raise SystemExit(main())
