"""``mlflow-agentic``: tracked AutoML searches, proposer comparisons and benchmarks."""

from __future__ import annotations

import click

from mlflow_agentic.cli.bench import bench
from mlflow_agentic.cli.compare import compare_command
from mlflow_agentic.cli.flush import flush_command
from mlflow_agentic.cli.leaderboard import leaderboard_command
from mlflow_agentic.cli.llm import llm_group
from mlflow_agentic.cli.options import EXIT_USER_ERROR
from mlflow_agentic.cli.predict import predict_command
from mlflow_agentic.cli.promote import promote_command
from mlflow_agentic.cli.run import run_command
from mlflow_agentic.cli.sandbox import sandbox_group
from mlflow_agentic.cli.ui import ui_command
from mlflow_agentic.cli.workers import finalize_command, worker_command
from mlflow_agentic.core.version import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mlflow-agentic")
def main() -> None:
    """Agentic AutoML tracked in MLflow: a proposer suggests, the engine verifies, MLflow
    remembers."""


main.add_command(run_command)
main.add_command(compare_command)
main.add_command(promote_command)
main.add_command(leaderboard_command)
main.add_command(predict_command)
main.add_command(ui_command)
main.add_command(bench)
main.add_command(worker_command)
main.add_command(finalize_command)
main.add_command(flush_command)
main.add_command(sandbox_group)
main.add_command(llm_group)

__all__ = ["EXIT_USER_ERROR", "main"]
