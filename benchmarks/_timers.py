"""Timers wrapped around the package's own functions, for the profiling scripts.

Each call's wall time is charged to its phase, less the time of timed calls
nested inside it, so the phases never add up to more than the total and the
rest of a run is what no timer covers. ``observe`` callbacks see every call of
one function with its time, arguments and result, for fits per call.
"""

from __future__ import annotations

import collections
import functools
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

Observer = Callable[[float, tuple[Any, ...], Any], None]


class PhaseTimers:
    """``with PhaseTimers() as timers: timers.wrap(owner, name, phase); ...``: the
    originals are put back on leaving the block, whatever happens in it."""

    def __init__(self) -> None:
        self.time: collections.defaultdict[str, float] = collections.defaultdict(float)
        self._charged = 0.0  # all time charged so far: what a call's nested timers took
        self._saved: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, phase: str, observe: Observer | None = None) -> None:
        """Time ``owner.name`` (a module's function, or a class's method) as *phase*.

        A module's function is wrapped where it is looked up: the module that
        calls it, if that one imported it by name.
        """
        original = getattr(owner, name)
        timers = self

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            charged_before = timers._charged
            start = time.perf_counter()
            try:
                result = original(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                own = spent - (timers._charged - charged_before)
                timers.time[phase] += own
                timers._charged += own
            if observe is not None:
                observe(spent, args, result)
            return result

        self._saved.append((owner, name, original))
        setattr(owner, name, timed)

    def total(self) -> float:
        """Seconds charged to all phases together."""
        return self._charged

    def __enter__(self) -> PhaseTimers:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()
