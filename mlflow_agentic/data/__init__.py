"""Datasets and column typing."""

from mlflow_agentic.data.columns import ColumnInfo
from mlflow_agentic.data.dataset import TASKS, Dataset

__all__ = ["TASKS", "ColumnInfo", "Dataset"]
