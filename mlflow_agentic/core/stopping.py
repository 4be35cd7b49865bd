"""Ctrl-C and SIGTERM as exceptions in the main thread: raised once, and never lost.

Python runs a signal handler at the next bytecode of the main thread, wherever that is. When it
is inside a ``__del__`` or a weakref callback (an import's module lock, a socket being closed),
the handler's exception is printed as "Exception ignored in ..." and dropped, and the command
goes on waiting as if no one had asked it to stop. ``stops_raise`` hands such a swallowed stop
back as the same signal 50 ms later, outside the callback."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

REDELIVER_SECONDS = 0.05


@contextlib.contextmanager
def stops_raise(raised: dict[int, Callable[[], BaseException]]) -> Iterator[None]:
    """Inside the block the first of ``raised``'s signals raises its exception in the main
    thread; any later one is ignored, never raised (a terminal or a CI runner signals the whole
    process group, often INT then TERM), so the cleanup that follows is not cut short. Handlers
    and ``sys.unraisablehook`` are restored on the way out."""
    pending: list[tuple[int, BaseException]] = []  # the raise not yet seen to be swallowed

    def handler(signum: int, _frame: Any) -> None:
        if pending:
            return
        exc = raised[signum]()
        pending.append((signum, exc))
        raise exc

    hook_before = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if pending and unraisable.exc_value is pending[0][1]:
            signum = pending.pop()[0]  # swallowed: raise it again, outside the callback
            timer = threading.Timer(REDELIVER_SECONDS, os.kill, (os.getpid(), signum))
            timer.daemon = True
            timer.start()
            return
        hook_before(unraisable)

    before = {signum: signal.signal(signum, handler) for signum in raised}
    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = hook_before
        for signum, previous in before.items():
            signal.signal(signum, previous)
