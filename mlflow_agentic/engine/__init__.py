"""The engine: records, cross-validation and the search loop (no mlflow, openai or docker).

Names are imported on first use: the records (``engine.types``) are light, the loop is not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.lazy import lazy_getattr

_EXPORTS = {
    "AgenticAutoML": "mlflow_agentic.engine.loop",
    "EnsembleStep": "mlflow_agentic.engine.steps",
    "SearchContext": "mlflow_agentic.engine.observer",
    "SearchObserver": "mlflow_agentic.engine.observer",
    "AttemptRecord": "mlflow_agentic.engine.types",
    "EngineeringRun": "mlflow_agentic.engine.types",
    "SolutionCandidate": "mlflow_agentic.engine.types",
    "StopKind": "mlflow_agentic.engine.types",
    "StopReason": "mlflow_agentic.engine.types",
    "Verdict": "mlflow_agentic.engine.types",
}

__all__ = [
    "AgenticAutoML",
    "AttemptRecord",
    "EngineeringRun",
    "EnsembleStep",
    "SearchContext",
    "SearchObserver",
    "SolutionCandidate",
    "StopKind",
    "StopReason",
    "Verdict",
]

if TYPE_CHECKING:
    from mlflow_agentic.engine.loop import AgenticAutoML
    from mlflow_agentic.engine.observer import SearchContext, SearchObserver
    from mlflow_agentic.engine.steps import EnsembleStep
    from mlflow_agentic.engine.types import (
        AttemptRecord,
        EngineeringRun,
        SolutionCandidate,
        StopKind,
        StopReason,
        Verdict,
    )


__getattr__ = lazy_getattr(__name__, _EXPORTS)

