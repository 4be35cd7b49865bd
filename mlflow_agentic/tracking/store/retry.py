"""Calls to the tracking store retried with backoff (and a message) while it does not
answer; the errors that mean "not answering", and what to say when it does not come back.

A store that stops answering mid-search is retried with backoff, saying so on stderr: the
attempts' records (journaled on disk, ``tracking.store.journal``) until it answers again while
the search goes on; a call the search waits for, for ``MLFLOW_AGENTIC_TRACKING_RETRY_SECONDS``
(default 300 s). If the store does not come back, ``TrackingUnavailable`` says what was
recorded, and where the rest waits.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mlflow_agentic.core.errors import AgenticError

if TYPE_CHECKING:
    from mlflow import MlflowClient

RETRY_SECONDS_ENV = "MLFLOW_AGENTIC_TRACKING_RETRY_SECONDS"
DEFAULT_RETRY_SECONDS = 300.0
FIRST_WAIT = 1.0
MAX_WAIT = 30.0
T = TypeVar("T")
AGAIN = "run the search again when the store is back"
"""What to do after the store stopped answering, when nothing waits in a journal."""


class TrackingUnavailable(AgenticError):
    """The tracking store stopped answering and did not come back within the retry window."""


def is_transient(exc: BaseException) -> bool:
    """A store that does not answer (refused, timed out, 502/503/504, sqlite locked), as
    opposed to a request it answered with an error."""
    import requests

    if isinstance(exc, (requests.ConnectionError, requests.Timeout, ConnectionError,
                        TimeoutError)):
        return True
    text = str(exc)
    return any(marker in text for marker in (
        "failed with exception", "Max retries exceeded", "Connection refused",
        "TEMPORARILY_UNAVAILABLE", "database is locked", "status code 502",
        "status code 503", "status code 504"))


def reason_of(exc: BaseException) -> str:
    text = str(exc)
    for marker in ("Connection refused", "timed out", "Name or service not known",
                   "database is locked"):
        if marker in text:
            return marker.lower()
    return f"{type(exc).__name__}: {text[:200]}"


class Retrying:
    """Calls against the store, retried with exponential backoff while it does not answer.

    ``say`` gets one line per retry; after ``window`` seconds ``TrackingUnavailable`` is raised
    with ``recorded()`` (what is safely in the store) in its message. After that, calls fail
    at once (``down``), so error handling does not wait a second window.
    """

    def __init__(self, uri: str, recorded: Callable[[], str] = lambda: "",
                 say: Callable[[str], None] | None = None,
                 window: float | None = None, meanwhile: str = "",
                 next_step: Callable[[], str] = lambda: AGAIN) -> None:
        self.uri = uri
        self.recorded = recorded
        self.next_step = next_step
        self.say = say or (lambda line: print(line, file=sys.stderr, flush=True))
        self.window = float(os.environ.get(RETRY_SECONDS_ENV, DEFAULT_RETRY_SECONDS)
                            if window is None else window)
        self.meanwhile = meanwhile
        """With no window (``math.inf``): what goes on while it retries, for the retry line."""
        self.down = False
        self.stopped = threading.Event()
        """Set (``stop``): the retry under way gives up at once, and every later call."""

    def stop(self) -> None:
        self.down = True
        self.stopped.set()

    def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        started, wait, attempt = time.monotonic(), FIRST_WAIT, 0
        while True:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                attempt += 1
                left = self.window - (time.monotonic() - started)
                if self.down or left <= 0:
                    self.down = True
                    raise TrackingUnavailable(self._gave_up(what, exc, attempt)) from exc
                wait = min(wait, max(left, 0.1))
                until = (f"giving up in {left:.0f}s" if math.isfinite(left)
                         else self.meanwhile or "retrying until it answers")
                self.say(f"tracking store {self.uri} is not answering ({reason_of(exc)}) while "
                         f"{what}; retry {attempt} in {wait:.0f}s, {until}")
                self.stopped.wait(wait)
                wait = min(wait * 2, MAX_WAIT)
            else:
                if attempt:
                    self.say(f"tracking store {self.uri} is answering again; the search goes on")
                return result

    def _gave_up(self, what: str, exc: BaseException, attempts: int) -> str:
        recorded = self.recorded()
        over = f" over {self.window:.0f}s" if math.isfinite(self.window) else ""
        return (f"the tracking store {self.uri} stopped answering while {what} "
                f"({reason_of(exc)}; {attempts} tries{over}). "
                + (f"Recorded there before it stopped: {recorded}. " if recorded else "")
                + f"Nothing was registered; {self.next_step()}")


class RetryingClient:
    """An ``MlflowClient`` whose every method goes through ``Retrying.call``."""

    def __init__(self, client: MlflowClient, retrying: Retrying) -> None:
        self._client = client
        self._retrying = retrying

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._retrying.call(f"calling {name}", attr, *args, **kwargs)

        return call


def deleted_while_running(exc: BaseException) -> str | None:
    """The id of the run MLflow refused to write because it (or its experiment) was deleted
    while the search ran, or None for any other error (MLflow says it only in words)."""
    import re

    match = re.search(r"The run (\w+) must be in the 'active' state\. Current state is "
                      r"deleted", str(exc))
    return match.group(1) if match else None


def restore_command(run_id: str) -> tuple[str, str | None]:
    """How to bring back a deleted run: its experiment's restore (or the run's, when the
    store cannot say which experiment), and the search run to resume then (the run's parent,
    or the run itself; None when the store cannot say)."""
    import mlflow

    try:
        run = mlflow.MlflowClient().get_run(run_id)
    except Exception:  # noqa: BLE001 - the store itself may be gone too
        return f"mlflow runs restore --run-id {run_id}", None
    search = run.data.tags.get("mlflow.parentRunId", run_id)
    return f"mlflow experiments restore --experiment-id {run.info.experiment_id}", search


if TYPE_CHECKING:
    StoreClient = MlflowClient | RetryingClient
    """MLflow's client, or the same behind retries."""
