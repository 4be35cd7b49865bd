"""Work on a daemon thread, for waits that Ctrl-C must be able to leave: a thread of
``concurrent.futures``' pools is joined when the interpreter exits, so an interrupted command
would wait for the call it abandoned (an LLM answer trickling in, one long prediction)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


def in_background(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any
                  ) -> Future[Any]:
    """``fn(*args, **kwargs)`` on a daemon thread called ``name``; its result or exception
    comes through the returned future."""
    future: Future[Any] = Future()

    def work() -> None:
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, as a pool does
            future.set_exception(exc)

    threading.Thread(target=work, name=name, daemon=True).start()
    return future
