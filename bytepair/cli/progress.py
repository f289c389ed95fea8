"""A one-line progress meter on standard error, for jobs long enough to need one.

It draws only on a terminal, only once a job has run for a moment, and at most
ten times a second: scripts, logs and short jobs never see it, and redrawing
costs nothing measurable.
"""

from __future__ import annotations

import os
import time
from typing import TextIO

__all__ = ["Progress", "TerminalLine"]

INTERVAL = 0.1  # seconds between redraws


class TerminalLine:
    """One line redrawn in place on a terminal, at most every ``INTERVAL`` seconds.

    With *stream* ``None`` nothing is ever drawn, so callers need not ask whether
    a line is wanted. The first draw waits *first_after* seconds.
    """

    def __init__(self, stream: TextIO | None, *, first_after: float = INTERVAL) -> None:
        self._stream = stream
        self._start = time.monotonic()
        self._next = self._start + first_after
        self._drawn = False

    def due(self) -> bool:
        """Whether to redraw now (if so, the next redraw is ``INTERVAL`` away)."""
        if self._stream is None:
            return False
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + INTERVAL
        return True

    def draw(self, line: str) -> None:
        """Replace the line on the terminal with *line*, cut to the terminal's width."""
        assert self._stream is not None
        self._stream.write(f"\r{line[: self._width() - 1]}\x1b[K")
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


class Progress(TerminalLine):
    """Shows bytes done, percent of *total* (when known), MB/s and the ratio so far."""

    def __init__(self, label: str, total: int | None, stream: TextIO | None) -> None:
        super().__init__(stream)
        self._label = label
        self._total = total

    def update(self, done: int, original: int, compressed: int) -> None:
        """*done* input bytes are read; *original* bytes are now *compressed* bytes."""
        if not self.due():
            return
        parts = [f"{self._label}: {done / 1e6:.1f} MB"]
        if self._total:
            parts.append(f"{min(100.0, 100 * done / self._total):.0f}%")
        parts.append(f"{done / 1e6 / max(time.monotonic() - self._start, 1e-9):.2f} MB/s")
        if original and compressed:
            parts.append(f"ratio {compressed / original:.3f}")
        self.draw("  ".join(parts))
