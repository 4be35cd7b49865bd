"""A past search read back from the store: its leaderboard as the run printed it (for
``mlflow-agentic leaderboard``), found by run id or as the latest search."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.tracking.store import downloaded

LAST = "last"


@dataclass
class PastSearch:
    run_id: str
    experiment: str
    status: str
    summary: str
    leaderboard: pd.DataFrame


def latest_search(experiment: str | None = None) -> str:
    """The id of the latest search run (of ``experiment``, or of any experiment)."""
    import mlflow

    client = mlflow.MlflowClient()
    if experiment is not None:
        found = client.get_experiment_by_name(experiment)
        if found is None:
            raise UserInputError(f"no experiment named {experiment!r} in the tracking store "
                                 f"{mlflow.get_tracking_uri()}")
        ids = [found.experiment_id]
    else:
        ids = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(ids, "tags.`agentic.role` = 'search'", max_results=1,
                              order_by=["attributes.start_time DESC"]) if ids else []
    if not runs:
        raise UserInputError(f"no search run in the tracking store {mlflow.get_tracking_uri()}"
                             + (f" under experiment {experiment!r}" if experiment else "")
                             + ": run one with mlflow-agentic run --data FILE")
    return runs[0].info.run_id


def read_search(run: str, experiment: str | None = None) -> PastSearch:
    """Search run ``run`` (or ``last``): its leaderboard and summary as it logged them."""
    import mlflow
    from mlflow.exceptions import MlflowException

    run_id = latest_search(experiment) if run == LAST else run
    client = mlflow.MlflowClient()
    found = _run(client, run_id)
    if found.data.tags.get("agentic.role") != "search":
        parent = found.data.tags.get("mlflow.parentRunId")
        hint = f" (its search run is {parent})" if parent else ""
        raise UserInputError(f"run {run_id} is not a search run{hint}; pass the search's run "
                             "id, or last")
    try:
        with downloaded(run_id=run_id, artifact_path="leaderboard.csv",
                        purpose="leaderboard") as path:
            frame = _flags(pd.read_csv(path, dtype={"tie": str}))
    except (MlflowException, OSError) as exc:
        raise UserInputError(f"search run {run_id} has no leaderboard.csv yet (status "
                             f"{found.info.status}): it is written when the search ends"
                             ) from exc
    summary = ""
    try:
        with downloaded(run_id=run_id, artifact_path="summary.txt", purpose="summary") as path:
            summary = path.read_text().strip()
    except (MlflowException, OSError):
        pass
    experiment_name = client.get_experiment(found.info.experiment_id).name
    return PastSearch(run_id, experiment_name, found.info.status, summary, frame)


def _run(client, run_id: str):
    """Run ``run_id``, or a clear error naming it and what to pass instead."""
    import mlflow
    from mlflow.exceptions import MlflowException

    try:
        return client.get_run(run_id)
    except MlflowException as exc:
        raise UserInputError(f"no run {run_id!r} in the tracking store "
                             f"{mlflow.get_tracking_uri()}: pass a search run id (printed as "
                             "'search run: ...'), or last") from exc


def search_path(run: str, experiment: str | None = None) -> str:
    """The MLflow UI's path (``#/...``) to search run ``run`` (or ``last``): its attempts best
    CV first, in the Model training view (the view the search shared, when it could); another
    run (a comparison's): its own page in that view."""
    import mlflow

    from mlflow_agentic.core.metrics import resolve_metric
    from mlflow_agentic.tracking.store import SHARED_VIEW, runs_path

    run_id = latest_search(experiment) if run == LAST else run
    client = mlflow.MlflowClient()
    found = _run(client, run_id)
    experiment_id = found.info.experiment_id
    if found.data.tags.get("agentic.role") != "search":  # a comparison, an attempt: its page
        return f"#/experiments/{experiment_id}/runs/{run_id}?workflowType=machine_learning"
    tags = client.get_experiment(experiment_id).tags
    metric = found.data.tags.get("metric", "")
    try:
        ascending = not resolve_metric(metric, found.data.tags.get("task", "binary")
                                       ).greater_is_better
    except UserInputError:  # an unknown metric: best first as most metrics rank
        ascending = False
    view = {"searchFilter": f"tags.`mlflow.parentRunId` = '{run_id}'",
            "orderByKey": f"metrics.`cv_{metric}`", "orderByAsc": ascending}
    return runs_path(experiment_id, run_id, view,
                           shared=f"{SHARED_VIEW}{run_id}" in tags)


def _flags(frame: pd.DataFrame) -> pd.DataFrame:
    """The ``tie`` column as every view shows it: ``true`` or blank (a leaderboard logged
    before the flag was one word said ``True``/``False``)."""
    if "tie" in frame.columns:
        frame["tie"] = frame["tie"].fillna("").replace({"True": "true", "False": ""})
    return frame
