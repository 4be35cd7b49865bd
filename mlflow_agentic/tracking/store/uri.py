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


def project_run() -> contextlib.AbstractContextManager:
    """Under ``mlflow run``, the project's run as the outer run (work nests under it); else a
    context that does nothing."""

    if not os.environ.get("MLFLOW_RUN_ID"):
        return contextlib.nullcontext()
    import mlflow

    return mlflow.start_run()


def use_store(uri: str | None, existing: bool = False) -> None:
    """Record to ``uri`` from now on (None: leave the current store). ``existing``: a command
    that only reads (leaderboard, predict, promote, ui) refuses a local store that is not there,
    instead of creating an empty one (and its folders) for a mistyped path."""
    if existing:
        _check_exists(uri or default_uri())
    if uri:
        import mlflow

        mlflow.set_tracking_uri(uri)


def _check_exists(uri: str) -> None:
    from pathlib import Path

    from mlflow_agentic.core.errors import UserInputError

    if uri.startswith("sqlite:///"):
        path = Path(uri.removeprefix("sqlite:///"))
    elif uri.startswith("file:") or "://" not in uri:
        path = Path(uri.removeprefix("file://").removeprefix("file:"))
    else:
        return  # a server, or a database the user runs: it answers for itself
    if not path.exists():
        raise UserInputError(f"no tracking store at {uri}: {path} does not exist (a search "
                             "writes it); give the store a search wrote with --tracking-uri, "
                             "or run a search first")


def check_project_run(uri: str) -> None:
    """Under ``mlflow run`` (``MLFLOW_RUN_ID`` set) the project's run must be live in this
    store: a variable left over from an earlier project run would have a new search take over
    that finished run (renamed, new children, its model rewritten)."""
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if not run_id:
        return
    import mlflow
    from mlflow.exceptions import MlflowException

    from mlflow_agentic.core.errors import UserInputError

    try:
        status = mlflow.MlflowClient(uri).get_run(run_id).info.status
    except MlflowException:
        status = None
    if status != "RUNNING":
        found = f"is {status}" if status else f"is not in {uri}"
        raise UserInputError(f"MLFLOW_RUN_ID={run_id} names a run that {found}: a variable "
                             "left from an earlier `mlflow run`? Unset it (unset MLFLOW_RUN_ID) "
                             "to start a search of its own")
