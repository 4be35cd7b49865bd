"""Which tracking store this process records to: the default (``$MLFLOW_TRACKING_URI``, else
the embedded ``sqlite:///mlflow.db``), switching to another, and ``mlflow run``'s project run."""

from __future__ import annotations

import contextlib
import os


def default_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"


def store_option() -> str:
    """`` --tracking-uri <this store>`` for a command to print, or nothing when the store is
    the working directory's ``mlflow.db`` (what every command opens by default there)."""
    uri = current_uri()
    here = ("sqlite:///mlflow.db", f"sqlite:///{os.path.abspath('mlflow.db')}")
    return "" if uri in here else f" --tracking-uri {uri}"


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
