"""``Connection``: the tracking store one search writes to, and how it is retried.

Two retry policies over one store: calls the search waits for (``call``, ``client``: retried
with backoff for a window, then the search stops with what is kept) and the attempt records the
writer thread sends (``sending``: no window; the journal keeps them meanwhile).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from typing import Any

import mlflow

from mlflow_agentic.core.errors import disk_full
from mlflow_agentic.tracking.store.delivery import log_batch
from mlflow_agentic.tracking.store.retry import Retrying, RetryingClient


class _NotDiskFull(logging.Filter):
    """Drops MLflow's traceback for a full disk: the search says it in one message (what the
    store holds, how to continue), and 60 lines of SQLAlchemy before it hide that message."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (disk_full(error) or "database or disk is full" in record.getMessage())


_QUIET_FULL_DISK = _NotDiskFull()


class Connection:
    """Connects to ``tracking_uri`` (None: the configured store) when built."""

    def __init__(self, tracking_uri: str | None, recorded: Callable[[], str],
                 say: Callable[[str], None], next_step: Callable[[], str]) -> None:
        logging.getLogger("mlflow.store.db.utils").addFilter(_QUIET_FULL_DISK)  # once: a set
        if tracking_uri:
            mlflow.set_tracking_uri(tracking_uri)
            mlflow.tracing.reset()  # traces follow the new store
        self.uri = mlflow.get_tracking_uri()
        if self.uri.startswith(("http://", "https://")):  # our retries say what happens;
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # MLflow's are silent
            # and one "View run ... at" line per attempt run ended would drown the progress
            os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        self.retrying = Retrying(self.uri, recorded, say=say, next_step=next_step)
        self.store = mlflow.MlflowClient()
        """The client itself, for the writer thread (which retries on its own policy)."""
        self.client = RetryingClient(self.store, self.retrying)
        self.sending = Retrying(self.uri, recorded, say=say, window=math.inf)
        """The writer's retries: no window, the search goes on while the store is down."""

    def call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self.retrying.call(what, fn, *args, **kwargs)

    def log(self, run_id: str, metrics: dict, params: dict, tags: dict,
            steps: dict | None = None) -> None:
        """One batch (``delivery.log_batch``), retried while the store does not answer."""
        log_batch(self.client, run_id, metrics, params, tags, steps)

    def link(self, path: str) -> str:
        """A path of the MLflow UI: absolute for a tracking server, else as ``mlflow ui`` on
        the same store serves it."""
        if self.uri.startswith(("http://", "https://")):
            return f"{self.uri.rstrip('/')}/{path}"
        return path
