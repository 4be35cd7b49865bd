"""The MLflow UI's shared view of one search: its attempts, best CV first, with the columns
that tell the story, opened by a link with no click (an experiment tag
``mlflow.sharedViewState.<key>`` and ``?viewStateShareKey=<key>``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

if TYPE_CHECKING:
    from mlflow_agentic.core.metrics import Metric
    from mlflow_agentic.tracking.store.retry import StoreClient

SHARED_VIEW = "mlflow.sharedViewState."
"""The MLflow UI's shared views: an experiment tag holding the view as JSON, opened by
``?viewStateShareKey=<key>``."""


def view_state(parent_run_id: str, metric: Metric) -> dict:
    """The runs table of this search: its attempts, sorted by CV, with rank, tie, selected, CV,
    holdout and gap as columns (and nothing else: at 1440x900, beside the Assistant panel MLflow
    opens on a first visit, these fit; CV's spread, the fit time and the model are on each run
    and in the leaderboard)."""
    m = metric.name
    tags = [f"tags.`{t}`" for t in ("rank", "tie", "selected")]
    names = (f"cv_{m}", f"holdout_{m}", "gap")
    metrics = [f"metrics.`{k}`" for k in names]  # what matters first
    columns = [*tags, *metrics]
    widths = dict(zip(tags, (40, 50, 60), strict=True)) | dict(zip(metrics, (80, 100, 72),
                                                                  strict=True))
    return {"searchFilter": f"tags.`mlflow.parentRunId` = '{parent_run_id}'",
            "orderByKey": f"metrics.`cv_{m}`", "orderByAsc": not metric.greater_is_better,
            "lifecycleFilter": "Active", "datasetsFilter": [], "modelVersionFilter":
            "All Runs", "startTime": "ALL", "selectedColumns": columns,
            "columnOrder": columns, "columnWidths": widths, "runsHiddenMode": "SHOW_ALL"}


def share_view(client: StoreClient, experiment_id: str, parent_run_id: str, view: dict) -> bool:
    """Write the view as an experiment tag; False if the store refused."""
    try:
        client.set_experiment_tag(experiment_id, f"{SHARED_VIEW}{parent_run_id}",
                                  json.dumps(view))
    except Exception:
        return False
    return True


def runs_path(experiment_id: str, parent_run_id: str, view: dict, shared: bool) -> str:
    """The UI path that opens the view: by its share key, or (when the tag could not be
    written) by the search facets the UI reads from its URL."""
    if shared:
        query = urlencode({"viewStateShareKey": parent_run_id,
                           "workflowType": "machine_learning"}, quote_via=quote)
    else:
        query = urlencode({key: view[key] for key in ("searchFilter", "orderByKey")}
                          | {"orderByAsc": str(view["orderByAsc"]).lower(),
                             # the UI's own switch; a fresh browser otherwise opens GenAI
                             "workflowType": "machine_learning"}, quote_via=quote)
    return f"#/experiments/{experiment_id}/runs?{query}"


EXPERIMENT_KIND = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"
"""The experiment tag the MLflow UI reads to open an experiment in its Model training view."""


def mark_model_training(client: StoreClient, experiment_id: str) -> None:
    """The MLflow UI opens an experiment without a kind in its GenAI view (traces, an empty
    overview, "Evaluation runs"): ours are model training. A kind the user set is kept."""
    if EXPERIMENT_KIND in client.get_experiment(experiment_id).tags:
        return
    try:
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND, MODEL_TRAINING)
    except Exception:  # another search set it between our read and write (sqlite: UNIQUE)
        if EXPERIMENT_KIND not in client.get_experiment(experiment_id).tags:
            raise
