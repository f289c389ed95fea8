"""How many threads a call asks for: the one rule every ``threads=`` argument follows."""

from __future__ import annotations

import os

__all__ = ["resolve_threads"]


def resolve_threads(threads: int) -> int:
    """Number of workers for *threads* (0 means one per core the process may use)."""
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be an integer, not {type(threads).__name__}")
    if threads < 0:
        raise ValueError(f"threads must be >= 0 (0 = all cores), got {threads}")
    if threads == 0:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not every platform has affinity
            return os.cpu_count() or 1
    return threads
