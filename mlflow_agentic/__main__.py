"""``python -m mlflow_agentic``: the CLI (used by the MLproject, which needs no install)."""

from mlflow_agentic.cli.entry import entry

entry()
