"""``mlflow-agentic compare``: proposers side by side on the same splits and the same budget."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mlflow_agentic.cli.options import (
    WholeNumber,
    blank_to_none,
    encoding_option,
    exit_on_user_error,
    experiment_option,
    llm_options,
    optional_float,
    pop_llm,
    pop_split,
    split_list,
    split_options,
    tracking_uri_option,
)
from mlflow_agentic.cli.settings import pop_settings, setting_option
from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.proposers.factory import PROPOSERS, check_llm_endpoint

if TYPE_CHECKING:
    from mlflow_agentic.compare import CompareOptions
    from mlflow_agentic.data import Dataset

DATA_SUFFIXES = (".csv", ".parquet", ".pq")


@click.command("compare")
@click.option("--data", "data", multiple=True, required=True,
              help="CSV/Parquet file, or a directory of them; repeat (or comma-separate) for "
                   "several datasets: one comparison each plus a ranking across them.")
@click.option("--target", callback=blank_to_none,
              help="Target column (default: detected per file).")
@click.option("--proposers", default="optuna,sequence,random", show_default=True,
              help=f"Comma-separated, from: {', '.join(PROPOSERS)}.")
@click.option("--budget-iterations", type=WholeNumber(min=1, allow_blank=True), default=None,
              help="Attempts per proposer and seed, seed candidates included (default 30).")
@click.option("--time-budget", default=None, callback=optional_float, metavar="SECONDS",
              help="Wall seconds per proposer and seed instead, proposal time included.")
@click.option("--seeds", default="1,2,3", show_default=True,
              help="Comma-separated seeds: each proposer runs once per seed.")
@click.option("--split-seed", type=WholeNumber(), default=0, show_default=True,
              help="Seed of the sealed holdout and CV folds that every proposer shares.")
@setting_option("trainers")
@setting_option("cv")
@setting_option("metric")
@setting_option("margin")
@setting_option("portfolio")
@click.option("--candidates", callback=blank_to_none, type=click.Path(),
              help="JSON list of {trainer, params} for the sequence proposer (default: every "
                   "trainer at its defaults).")
@llm_options
@click.option("--llm-replay", callback=blank_to_none,
              help="Comparison id whose recorded LLM answers to replay, seed by seed: no "
                   "network, the same LLM proposals.")
@experiment_option("MLflow experiment (default: <data stem>-compare, or agentic-compare for "
                   "several datasets).")
@tracking_uri_option()
@click.option("--output", callback=blank_to_none, type=click.Path(file_okay=False),
              help="Also write the report (Markdown, HTML, PNG, JSON) to this directory.")
@split_options
@setting_option("cv_scheme")
@encoding_option
@click.option("--quiet", is_flag=True, help="No progress bars; print the tables only.")
def compare_command(**o) -> None:
    """Compare proposers on DATA fairly: one sealed holdout, one set of CV folds, one verifier
    and one budget shared by every proposer x seed; each is a search run tagged with the
    comparison id, nested under a comparison run that holds the report."""

    def work() -> None:
        from mlflow_agentic.compare import CompareOptions
        from mlflow_agentic.core.settings import SearchSettings

        if o["budget_iterations"] is not None and o["time_budget"] is not None:
            raise UserInputError("give --budget-iterations or --time-budget, not both")
        options = CompareOptions(
            proposers=split_list(o.pop("proposers")) or [], seeds=_seeds(o.pop("seeds")),
            budget_attempts=o.pop("budget_iterations"), split=pop_split(o), llm=pop_llm(o),
            split_seed=o.pop("split_seed"), keep_flagged_columns=o.pop("keep_flagged_columns"),
            candidates=o.pop("candidates"), llm_replay=o.pop("llm_replay"),
            settings=SearchSettings(time_budget=o.pop("time_budget"), **pop_settings(o)))
        _compare(_datasets(o["data"], o["target"], o["encoding"]), options, o["experiment"],
                 o["tracking_uri"], o["output"], o["quiet"])

    exit_on_user_error(work)


def _seeds(text: str) -> list[int]:
    values = split_list(text) or []
    try:
        return [int(float(v)) for v in values]
    except ValueError as exc:
        raise UserInputError(f"--seeds {text!r}: expected comma-separated integers, "
                             "e.g. 1,2,3") from exc


def _datasets(data: tuple[str, ...], target: str | None, encoding: str | None = None) -> list:
    """Every file named, or every CSV/Parquet file inside a named directory."""
    from mlflow_agentic.data import Dataset

    paths: list[Path] = []
    for item in (part for value in data for part in split_list(value) or []):
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix.lower() in DATA_SUFFIXES)
            if not found:
                raise UserInputError(f"--data {item}: the directory holds no .csv or .parquet "
                                     "file")
            paths += found
        else:
            paths.append(path)
    if not paths:
        raise UserInputError("--data: give at least one CSV/Parquet file or directory")
    return [Dataset.from_path(p, target, encoding=encoding) for p in dict.fromkeys(paths)]


def _compare(datasets: list[Dataset], options: CompareOptions, experiment: str | None,
             tracking_uri: str | None, output: str | None, quiet: bool) -> None:
    from rich.console import Console

    from mlflow_agentic.cli.progress import ArmProgress
    from mlflow_agentic.compare import compare
    from mlflow_agentic.compare.report import console_table, proposer_grid, ranking_grid
    from mlflow_agentic.tracking.results import ComparisonTracker
    from mlflow_agentic.tracking.store import store_option

    if "llm" in options.proposers and not options.llm_replay:
        check_llm_endpoint(options.llm, "Start the server, drop llm from --proposers, or "
                           "replay an earlier comparison with --llm-replay COMPARISON_ID")
    default = f"{datasets[0].name}-compare" if len(datasets) == 1 else "agentic-compare"
    tracker = ComparisonTracker(experiment=experiment or default, tracking_uri=tracking_uri)
    console = Console(stderr=True, width=max(Console(stderr=True).width, 120))
    result = compare(
        datasets, options, tracker=tracker,
        progress=None if quiet else (lambda msg: console.print(f"[dim]{msg}[/]")),
        observers=[] if quiet else [ArmProgress(console, options.budget_attempts)],
        output=output)
    out = Console(width=max(Console().width, 160))
    for report in result.reports:
        out.print(console_table(proposer_grid(report.summary, report.metric)))
        out.print(f"{report.dataset}: {report.verdict}")
        out.print(f"comparison run: {report.run_id}")
    if result.ranking:
        out.print(console_table(ranking_grid(result.ranking)))
        out.print(f"ranking run: {result.run_id}")
    click.echo(f"comparison id: {result.comparison_id} (tag agentic.comparison_id)")
    if output:
        click.echo(f"report files: {output}")
    click.echo(f"browse it:  mlflow-agentic ui --run {result.run_id}{store_option()}   (every arm: "
               f"filter runs with tags.`agentic.comparison_id` = '{result.comparison_id}')")
    if "llm" not in options.proposers:
        click.echo("the LLM proposer was not included: add it with --proposers "
                   "llm,optuna,sequence,random --llm-base-url http://127.0.0.1:8080/v1")
    if not any(report.compared for report in result.reports):
        click.echo("error: no comparison of proposers was made on any dataset (see the verdict "
                   "above); every arm that ran is recorded", err=True)
        sys.exit(1)
