"""Recording a search while it runs: the tracker (tracker, recorder), the search run opened,
reopened, joined and ended (search_run, lifecycle), one child run per attempt (attempt_runs),
LLM calls as traces (llm_calls), a worker's shared run (shared). The run context and the
shared runs view are ``store``'s.

Its public face: the names other parts use, imported lazily (MLflow loads on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.core.lazy import lazy_getattr

_EXPORTS = {
    "MlflowTracker": "mlflow_agentic.tracking.live.tracker",
    "SharedRun": "mlflow_agentic.tracking.live.shared",
    "tracker_for": "mlflow_agentic.tracking.live.tracker",
    "worker_label": "mlflow_agentic.tracking.live.shared",
}
__all__ = [
    "MlflowTracker",
    "SharedRun",
    "tracker_for",
    "worker_label",
]

if TYPE_CHECKING:
    from mlflow_agentic.tracking.live.shared import SharedRun, worker_label
    from mlflow_agentic.tracking.live.tracker import MlflowTracker, tracker_for

__getattr__ = lazy_getattr(__name__, _EXPORTS)
