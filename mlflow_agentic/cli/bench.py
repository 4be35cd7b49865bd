"""``mlflow-agentic bench``: the benchmarks that ship with the product."""

from __future__ import annotations

import click

from mlflow_agentic.cli.options import (
    WholeNumber,
    tracking_uri_option,
)


@click.group("bench")
def bench() -> None:
    """Benchmarks that ship with the product."""


@bench.command("traps")
@click.option("--seed", type=WholeNumber(), default=0, show_default=True,
              help="Seed for the generated tasks, splits and proposers.")
@click.option("--experiment", default="bench-traps", show_default=True,
              help="MLflow experiment for the task runs (one parent run per task).")
@tracking_uri_option()
def bench_traps(seed: int, experiment: str, tracking_uri: str | None) -> None:
    """Six generated churn-like tasks, five with a planted trap (post-outcome leak, time order,
    groups, near-duplicates, class imbalance) and a clean control: which traps the search
    catches, and which a naive AutoML falls into, on the same sealed holdout."""
    import os

    from rich.console import Console

    from mlflow_agentic.bench.traps import format_table, run_bench
    from mlflow_agentic.tracking.store import current_uri, project_run, use_store

    use_store(tracking_uri)
    console = Console(width=max(Console().width, 120))
    # under `mlflow run -e bench` the project's run is the outer run: tasks nest under it
    under_project = bool(os.environ.get("MLFLOW_RUN_ID"))
    with project_run():
        rows = run_bench(seed, experiment=None if under_project else experiment,
                         progress=lambda msg: console.print(f"[dim]{msg}[/]"))
    console.print(format_table(rows))
    caught = sum(r.caught for r in rows if r.expected != "-")
    traps = sum(r.expected != "-" for r in rows)
    control = next((r for r in rows if r.task == "control"), None)
    click.echo(f"traps caught: {caught}/{traps}; missed: {traps - caught}; false alarms on the "
               f"control: {len(control.false_flags) if control else 0}; falsely flagged "
               f"elsewhere: {sum(len(r.false_flags) for r in rows if r.task != 'control')}; "
               f"naive AutoML fell into {sum(r.naive_fell for r in rows)}/{traps} traps")
    where = "nested under this project run" if under_project else \
        f"experiment {experiment!r}"
    click.echo(f"runs: one parent run per task (tag bench=traps), {where}, at "
               f"{current_uri()}")


