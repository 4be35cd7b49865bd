"""Compare proposers fairly: same sealed holdout, same folds, same verifier, same budget."""

from mlflow_agentic.compare.runner import CompareOptions, ComparisonResult, compare

__all__ = ["CompareOptions", "ComparisonResult", "compare"]
