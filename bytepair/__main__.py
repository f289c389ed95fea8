"""``python -m bytepair``: the same command as the ``bytepair`` console script."""

from __future__ import annotations

from .cli.main import main

if __name__ == "__main__":  # not when a worker process re-imports the main module
    raise SystemExit(main())
