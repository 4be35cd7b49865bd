"""After the loop: the result recorded (result), the leaderboard, the holdout diagnostics, the data
profile, model outputs for evaluation, proposer comparisons, past searches read back (past).

Its public face: the names other parts use, imported lazily (MLflow loads on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.core.lazy import lazy_getattr

_EXPORTS = {
    "ComparisonTracker": "mlflow_agentic.tracking.results.comparison",
    "PastSearch": "mlflow_agentic.tracking.results.past",
    "TAG_ID": "mlflow_agentic.tracking.results.comparison",
    "TAG_SEED": "mlflow_agentic.tracking.results.comparison",
    "evaluate_with_agentic": "mlflow_agentic.tracking.results.evaluation",
    "find_llm_recordings": "mlflow_agentic.tracking.results.comparison",
    "importance": "mlflow_agentic.tracking.results.diagnostics",
    "read_search": "mlflow_agentic.tracking.results.past",
    "record_result": "mlflow_agentic.tracking.results.result",
    "search_path": "mlflow_agentic.tracking.results.past",
    "temporary_directory": "mlflow_agentic.tracking.results.comparison",
    "write_json": "mlflow_agentic.tracking.results.comparison",
}
__all__ = [
    "ComparisonTracker",
    "PastSearch",
    "TAG_ID",
    "TAG_SEED",
    "evaluate_with_agentic",
    "find_llm_recordings",
    "importance",
    "read_search",
    "record_result",
    "search_path",
    "temporary_directory",
    "write_json",
]

if TYPE_CHECKING:
    from mlflow_agentic.tracking.results.comparison import (
        TAG_ID,
        TAG_SEED,
        ComparisonTracker,
        find_llm_recordings,
        temporary_directory,
        write_json,
    )
    from mlflow_agentic.tracking.results.diagnostics import importance
    from mlflow_agentic.tracking.results.evaluation import evaluate_with_agentic
    from mlflow_agentic.tracking.results.past import PastSearch, read_search, search_path
    from mlflow_agentic.tracking.results.result import record_result

__getattr__ = lazy_getattr(__name__, _EXPORTS)
