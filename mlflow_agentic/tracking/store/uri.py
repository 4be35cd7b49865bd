"""Which tracking store this process records to: the default (``$MLFLOW_TRACKING_URI``, else
the embedded ``sqlite:///mlflow.db``), switching to another, and ``mlflow run``'s project run."""

from __future__ import annotations

import contextlib
import os


def default_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"


def current_uri() -> str:
    """The tracking URI this process records to (what the commands print)."""
    import mlflow

    return mlflow.get_tracking_uri()


def project_run():
    """Under ``mlflow run``, the project's run as the outer run (work nests under it); else a
    context that does nothing."""

    if not os.environ.get("MLFLOW_RUN_ID"):
        return contextlib.nullcontext()
    import mlflow

    return mlflow.start_run()


def use_store(uri: str | None) -> None:
    """Record to ``uri`` from now on (None: leave the current store)."""
    if uri:
        import mlflow

        mlflow.set_tracking_uri(uri)
