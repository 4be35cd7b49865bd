"""``mlflow-agentic leaderboard [RUN|last]``: a past search's table, as the run logged it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mlflow_agentic.cli.options import (
    exit_on_user_error,
    experiment_option,
    tracking_uri_option,
)

if TYPE_CHECKING:
    from mlflow_agentic.tracking.results import PastSearch

SHOWN = ("rank", "run_name", "status", "selected", "tie")
"""The table format's leading columns; the CV, holdout and gap columns follow by metric."""


@click.command("leaderboard")
@click.argument("run", default="last", metavar="[RUN_ID|last]")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True, help="table: the main columns for a terminal; csv and json: "
                                      "every column of leaderboard.csv.")
@experiment_option("With last: the latest search of this experiment (default: of any).")
@tracking_uri_option()
def leaderboard_command(run: str, fmt: str, experiment: str | None,
                        tracking_uri: str | None) -> None:
    """Print a past search's leaderboard: every attempt best first, with its verdict, CV and
    holdout scores and gap, as the search logged it (leaderboard.csv on its run). RUN is a
    search run id, or last (the default): the latest search in the store."""

    def work() -> None:
        from mlflow_agentic.tracking.results import read_search
        from mlflow_agentic.tracking.store import use_store

        use_store(tracking_uri, existing=True)
        past = read_search(run, experiment)
        if fmt == "csv":
            click.echo(past.leaderboard.to_csv(index=False), nl=False)
        elif fmt == "json":
            click.echo(past.leaderboard.to_json(orient="records", indent=1))
        else:
            _table(past)

    exit_on_user_error(work, kept=lambda: "")


def _table(past: PastSearch) -> None:
    import pandas as pd
    from rich.console import Console
    from rich.table import Table

    frame = past.leaderboard
    scores = [c for c in frame.columns if c.startswith(("cv_", "holdout_")) or c == "gap"]
    columns = [c for c in (*SHOWN, *scores, "fit_seconds") if c in frame.columns]
    table = Table(title=f"search run {past.run_id} ({past.experiment}, {past.status})",
                  title_justify="left")
    for name in columns:
        table.add_column(name, justify="right" if frame[name].dtype.kind in "fi" else "left",
                         overflow="fold")
    for _, row in frame[columns].iterrows():
        table.add_row(*("" if pd.isna(v) else _shown(v, name) for name, v in row.items()))
    import sys

    console = Console(width=None if sys.stdout.isatty() else 250)  # piped: nothing cut
    console.print(table)
    if past.summary:
        console.print(past.summary.splitlines()[0], highlight=False, soft_wrap=True)


def _shown(value: Any, column: str) -> str:
    if isinstance(value, bool):  # the UI's flags: true, or blank
        return "true" if value else ""
    if isinstance(value, float):
        return f"{value:.2f}" if column == "fit_seconds" else f"{value:.4f}"
    return str(value)
