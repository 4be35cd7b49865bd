"""One search run shared by worker processes on one Optuna study (``mlflow-agentic worker``).

The first worker creates the search run through the client (never the active-run stack: the
run outlives that process) and publishes its id in the study; the others join it. Every worker
records its attempts as child runs of it, numbered by their Optuna trial; ``finalize`` ends it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field


def worker_label() -> str:
    """``host-pid``: who ran an attempt."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass
class SharedRun:
    """The search run workers share: ``run_id`` to join it, or None to create it and hand its
    id to ``publish``."""

    run_id: str | None = None
    publish: Callable[[str], None] | None = None
    study: str = ""
    worker: str = field(default_factory=worker_label)
