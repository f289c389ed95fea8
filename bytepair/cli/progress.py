"""A one-line progress meter on standard error, for jobs long enough to need one.

It draws only on a terminal, only once a job has run for a moment, and at most
ten times a second: scripts, logs and short jobs never see it, and redrawing
costs nothing measurable.
"""

from __future__ import annotations

import os
import time
from typing import TextIO

__all__ = ["Progress"]

INTERVAL = 0.1  # seconds between redraws


class Progress:
    """Shows bytes done, percent of *total* (when known), MB/s and the ratio so far.

    With *stream* ``None`` every call is a no-op, so callers need not ask whether
    progress is wanted.
    """

    def __init__(self, label: str, total: int | None, stream: TextIO | None) -> None:
        self._label = label
        self._total = total
        self._stream = stream
        self._start = time.monotonic()
        self._next = self._start + INTERVAL
        self._drawn = False

    def update(self, done: int, original: int, compressed: int) -> None:
        """*done* input bytes are read; *original* bytes are now *compressed* bytes."""
        if self._stream is None:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + INTERVAL
        parts = [f"{self._label}: {done / 1e6:.1f} MB"]
        if self._total:
            parts.append(f"{min(100.0, 100 * done / self._total):.0f}%")
        parts.append(f"{done / 1e6 / max(now - self._start, 1e-9):.2f} MB/s")
        if original and compressed:
            parts.append(f"ratio {compressed / original:.3f}")
        line = "  ".join(parts)[: self._width() - 1]
        self._stream.write(f"\r{line}\x1b[K")
        self._stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erase the line, so what is printed next starts clean."""
        if self._stream is not None and self._drawn:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._drawn = False

    def _width(self) -> int:
        assert self._stream is not None
        try:
            return os.get_terminal_size(self._stream.fileno()).columns or 80
        except (OSError, ValueError):
            return 80
