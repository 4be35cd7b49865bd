"""Recording a search while it runs: the tracker (tracker, recorder), the search run opened,
reopened, joined and ended (search_run, lifecycle), one child run per attempt (attempt_runs),
LLM calls as traces (llm_calls), the shared runs view (views), a worker's shared run (shared),
the run context (context).

Its public face: the names other parts use, imported lazily (MLflow loads on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.core.lazy import lazy_getattr

_EXPORTS = {
    "MlflowTracker": "mlflow_agentic.tracking.live.tracker",
    "SHARED_VIEW": "mlflow_agentic.tracking.live.views",
    "SharedRun": "mlflow_agentic.tracking.live.shared",
    "active_search": "mlflow_agentic.tracking.live.context",
    "begin": "mlflow_agentic.tracking.live.context",
    "end": "mlflow_agentic.tracking.live.context",
    "mark_model_training": "mlflow_agentic.tracking.live.search_run",
    "runs_path": "mlflow_agentic.tracking.live.views",
    "search_tags": "mlflow_agentic.tracking.live.context",
    "tracker_for": "mlflow_agentic.tracking.live.tracker",
    "worker_label": "mlflow_agentic.tracking.live.shared",
}
__all__ = [
    "MlflowTracker",
    "SHARED_VIEW",
    "SharedRun",
    "active_search",
    "begin",
    "end",
    "mark_model_training",
    "runs_path",
    "search_tags",
    "tracker_for",
    "worker_label",
]

if TYPE_CHECKING:
    from mlflow_agentic.tracking.live.context import active_search, begin, end, search_tags
    from mlflow_agentic.tracking.live.search_run import mark_model_training
    from mlflow_agentic.tracking.live.shared import SharedRun, worker_label
    from mlflow_agentic.tracking.live.tracker import MlflowTracker, tracker_for
    from mlflow_agentic.tracking.live.views import SHARED_VIEW, runs_path

__getattr__ = lazy_getattr(__name__, _EXPORTS)
