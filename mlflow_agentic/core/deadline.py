"""``Deadline``: a time budget as one absolute end on one clock (``time.perf_counter()``).

Made once where a command starts and carried down, so whatever runs before the search (reading,
sealing, making the proposer, starting the workers) is charged to the same budget. Each part
after it gets the same end minus the reserves of what follows it
(``engine.search.reserves``)."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Deadline:
    """``seconds`` from ``started`` (None: no time budget: every question answers None)."""

    started: float
    seconds: float | None

    @classmethod
    def starting(cls, seconds: float | None, started: float | None = None) -> Deadline:
        """A budget of ``seconds`` from ``started`` (default: now)."""
        return cls(time.perf_counter() if started is None else started, seconds)

    @property
    def end(self) -> float | None:
        """When the budget is spent (a ``time.perf_counter()`` value), or None."""
        return None if self.seconds is None else self.started + self.seconds

    def before(self, reserve: float) -> float | None:
        """When a step must end to leave ``reserve`` seconds for what follows it, or None."""
        end = self.end
        return None if end is None else end - reserve

    def left(self) -> float | None:
        """Seconds until the end (negative once past it), or None."""
        end = self.end
        return None if end is None else end - time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started
