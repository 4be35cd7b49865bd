"""``mlflow-agentic worker`` and ``finalize``: one search scaled out over processes and
machines that share an Optuna study (PostgreSQL) and an MLflow tracking server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from mlflow_agentic.cli.options import (
    WholeNumber,
    blank_to_none,
    encoding_option,
    exit_on_user_error,
    experiment_option,
    pop_split,
    say_note,
    split_options,
    tracking_uri_option,
)
from mlflow_agentic.cli.settings import pop_settings, setting_option

if TYPE_CHECKING:
    from mlflow_agentic.frontdoor.orchestrator import SearchResult

study_option = click.option("--study", required=True,
                            help="Optuna study name: every worker of one search uses the same.")
storage_option = click.option(
    "--storage", required=True, envvar="MLFLOW_AGENTIC_STORAGE",
    help="Optuna RDB storage URL shared by the workers, e.g. "
         "postgresql+psycopg2://user@db:5432/optuna ($MLFLOW_AGENTIC_STORAGE). sqlite is "
         "refused for more than one worker.")
tracking_option = tracking_uri_option(
    "MLflow tracking server every worker logs to (default: $MLFLOW_TRACKING_URI or "
    "sqlite:///mlflow.db for one machine).")


@click.command("worker")
@study_option
@storage_option
@click.option("--data", required=True, help="The search's CSV or Parquet file (the same rows "
              "on every worker: checked by digest).")
@click.option("--target", callback=blank_to_none, help="Target column (default: detected).")
@setting_option("trainers")
@setting_option("metric")
@setting_option("cv")
@setting_option("seed")
@click.option("--n-trials", type=WholeNumber(min=1), default=20, show_default=True,
              help="Trials in the study, all workers together; a worker stops when it is full.")
@setting_option("n_jobs")
@setting_option("margin")
@setting_option("prune")
@setting_option("portfolio")
@experiment_option("MLflow experiment (default: <data file stem>-agentic).")
@click.option("--finalize", "finalize_last", is_flag=True,
              help="The last worker to finish (no trial still running) finalizes the search, "
                   "once: no separate finalize command needed.")
@click.option("--register-name", callback=blank_to_none,
              help="Registered model name when this worker finalizes.")
@tracking_option
@split_options
@setting_option("cv_scheme")
@encoding_option
@click.option("--quiet", is_flag=True, help="No progress display.")
def worker_command(**o) -> None:
    """Work on a shared search: ask the study for trials, cross-validate them here, record each
    as a child run of the one search run. Start as many as you like, on any machine; then run
    `mlflow-agentic finalize` once."""
    from mlflow_agentic.cli.progress import RichProgress
    from mlflow_agentic.distributed import run_worker

    state: dict = {}
    study, storage, data = o["study"], o["storage"], o["data"]
    finalize_last = o["finalize_last"]

    def work() -> None:
        settings = pop_settings(o)
        result = run_worker(
            data, study=study, storage=storage, target=o["target"], n_trials=o["n_trials"],
            split=pop_split(o), keep_flagged_columns=o["keep_flagged_columns"],
            experiment=o["experiment"], tracking_uri=o["tracking_uri"], encoding=o["encoding"],
            observers=[] if o["quiet"] else [RichProgress()], say=say_note,
            tracker_ready=lambda t: state.update(tracker=t), finalize_last=finalize_last,
            register_name=o["register_name"], **settings)
        run = result.run
        click.echo(f"worker done: {len(run.attempts)} attempts ({len(run.valid_attempts)} "
                   f"verified); {run.stop_reason}")
        click.echo(f"search run: {result.run_id}")
        if result.finalized is not None:
            _report_finalized(result.finalized)
        elif finalize_last:
            click.echo("another worker finalizes the search (the last one to finish)")
        else:
            click.echo(f"when every worker is done: mlflow-agentic finalize --study {study} "
                       f"--storage {storage} --data {data}")

    exit_on_user_error(work, kept=lambda: state["tracker"].recorded()
                       if "tracker" in state else "")


@click.command("finalize")
@study_option
@storage_option
@click.option("--data", required=True, help="The workers' file (checked by digest).")
@click.option("--register-name", callback=blank_to_none,
              help="Registered model name (default: <data file stem>-agentic).")
@click.option("--no-register", is_flag=True, help="Log the best model but do not register it.")
@click.option("--no-diagnostics", is_flag=True,
              help="Skip the selected model's holdout diagnostics.")
@setting_option("selection")
@setting_option("n_jobs")
@tracking_option
@encoding_option
@click.option("--quiet", is_flag=True, help="No progress display.")
def finalize_command(**o) -> None:
    """End a shared search once its workers are done: read every finished attempt back (nothing
    is fitted again), ensemble, select, refit, score the sealed holdout, register."""
    from mlflow_agentic.cli.progress import RichProgress
    from mlflow_agentic.distributed import finalize

    def work() -> None:
        observers = [] if o.pop("quiet") else [RichProgress()]
        _report_finalized(finalize(
            o.pop("data"), study=o.pop("study"), storage=o.pop("storage"),
            register=not o.pop("no_register"), diagnostics=not o.pop("no_diagnostics"),
            observers=observers, say=say_note, **pop_settings(o), **o))

    exit_on_user_error(work)


def _report_finalized(result: SearchResult) -> None:
    from mlflow_agentic.tracking.store import current_uri

    click.echo(result.summary())
    click.echo(f"search run: {result.run_id} (tracking URI {current_uri()})")
    if result.model_version is not None:
        mv = result.model_version
        click.echo(f"registered: models:/{mv.name} version {mv.version} ({result.alias_note})")
    elif result.alias_note:
        click.echo(f"not registered: {result.alias_note}")
