"""The engine: records, cross-validation and the search loop (no mlflow, openai or docker).

Names are imported on first use: the records (``core.types``) are light, the loop is not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.core.lazy import lazy_getattr

_EXPORTS = {
    "AgenticAutoML": "mlflow_agentic.engine.search.loop",
    "EnsembleStep": "mlflow_agentic.engine.search.steps",
    "StackStep": "mlflow_agentic.engine.search.steps",
    "SearchContext": "mlflow_agentic.core.observer",
    "SearchObserver": "mlflow_agentic.core.observer",
    "AttemptRecord": "mlflow_agentic.core.types",
    "EngineeringRun": "mlflow_agentic.core.types",
    "SolutionCandidate": "mlflow_agentic.core.types",
    "StopKind": "mlflow_agentic.core.types",
    "StopReason": "mlflow_agentic.core.types",
    "Verdict": "mlflow_agentic.core.types",
}

__all__ = [
    "AgenticAutoML",
    "AttemptRecord",
    "EngineeringRun",
    "EnsembleStep",
    "SearchContext",
    "SearchObserver",
    "SolutionCandidate",
    "StackStep",
    "StopKind",
    "StopReason",
    "Verdict",
]

if TYPE_CHECKING:
    from mlflow_agentic.core.observer import SearchContext, SearchObserver
    from mlflow_agentic.core.types import (
        AttemptRecord,
        EngineeringRun,
        SolutionCandidate,
        StopKind,
        StopReason,
        Verdict,
    )
    from mlflow_agentic.engine.search.loop import AgenticAutoML
    from mlflow_agentic.engine.search.steps import EnsembleStep, StackStep


__getattr__ = lazy_getattr(__name__, _EXPORTS)

