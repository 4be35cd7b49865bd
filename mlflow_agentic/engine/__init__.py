"""The engine: records, cross-validation and the search loop (no mlflow, openai or docker)."""

from mlflow_agentic.engine.loop import AgenticAutoML
from mlflow_agentic.engine.observer import SearchContext, SearchObserver
from mlflow_agentic.engine.types import AttemptRecord, EngineeringRun, SolutionCandidate, Verdict

__all__ = [
    "AgenticAutoML",
    "AttemptRecord",
    "EngineeringRun",
    "SearchContext",
    "SearchObserver",
    "SolutionCandidate",
    "Verdict",
]
