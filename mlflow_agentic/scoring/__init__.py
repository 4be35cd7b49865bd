"""Holdout scoring (after the loop). Imported only by the search orchestrator and the CLI."""

from mlflow_agentic.scoring.holdout import (
    HoldoutReport,
    HoldoutScore,
    HoldoutScorer,
    score_on_holdout,
)

__all__ = ["HoldoutReport", "HoldoutScore", "HoldoutScorer", "score_on_holdout"]
