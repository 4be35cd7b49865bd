"""``BackgroundWriter``: the attempts' runs are written on one thread, in order, off the loop.

Each attempt's run costs a handful of store calls (create, outputs, one batch, terminate):
~0.3 s per attempt against a tracking server over HTTP, time the search would otherwise wait
between batches. One thread keeps their order (a run is FINISHED only after its outputs and
scores are in); ``flush`` waits for the queue, and a failure there (the store gone for good)
is raised on the search's own thread at the next call.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable


class BackgroundWriter:
    def __init__(self) -> None:
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._failed = False

    def submit(self, fn: Callable, *args) -> None:
        """Run ``fn(*args)`` after everything submitted before it."""
        self.raise_error()
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, daemon=True,
                                            name="mlflow-agentic-writer")
            self._thread.start()
        self._queue.put((fn, args))

    def flush(self, raise_error: bool = True, timeout: float | None = None) -> bool:
        """Wait until everything submitted is written (or skipped after a failure); False
        when ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        done = self._queue.all_tasks_done
        with done:
            while self._thread is not None and self._queue.unfinished_tasks:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                done.wait(left)
        if raise_error:
            self.raise_error()
        return True

    def raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _work(self) -> None:
        while True:
            fn, args = self._queue.get()
            try:
                if not self._failed:  # after a failure the rest is skipped: the store is gone
                    fn(*args)
            except BaseException as exc:  # noqa: BLE001 - handed to the search's thread
                self._failed, self._error = True, exc
            finally:
                self._queue.task_done()
