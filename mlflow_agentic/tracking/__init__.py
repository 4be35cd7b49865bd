"""The one place that talks to MLflow: runs, models, registry, artifacts."""

from mlflow_agentic.tracking.tracker import MlflowTracker

__all__ = ["MlflowTracker"]
