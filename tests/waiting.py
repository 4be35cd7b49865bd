"""Waiting on a condition instead of sleeping a fixed time: as soon as it holds, the test goes
on; on a busy machine it waits longer, up to ``seconds``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], seconds: float, step: float = 0.25) -> T:
    """``condition()`` once it is truthy, or its last value after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return condition()
