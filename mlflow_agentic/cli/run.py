"""``mlflow-agentic run``: one tracked search, the best model registered."""

from __future__ import annotations

import math
import time

import click

from mlflow_agentic.cli.options import (
    WholeNumber,
    blank_to_none,
    encoding_option,
    exit_on_user_error,
    optional_float,
    process_started,
    split_from,
    split_list,
    split_options,
)
from mlflow_agentic.errors import UserInputError
from mlflow_agentic.proposers.factory import (
    PROPOSERS,
    LLMOptions,
    build_proposer,
    check_llm_endpoint,
)


@click.command("run")
@click.option("--data", required=True, help="CSV or Parquet file with features and target.")
@click.option("--target", callback=blank_to_none,
              help="Target column (default: the one column named target/label/churn/y...).")
@click.option("--proposer", type=click.Choice(PROPOSERS), default="optuna", show_default=True,
              help="Who proposes candidates.")
@click.option("--trainers", callback=blank_to_none,
              help="Comma-separated trainers to search (default: all that fit the task).")
@click.option("--max-iterations", type=WholeNumber(min=0, allow_blank=True), default=None,
              help="Reflection attempts after the seed candidates [default: 8; off with "
                   "--time-budget].")
@click.option("--patience", type=WholeNumber(min=1, allow_blank=True), default=None,
              help="Stop after this many attempts without a verified improvement [default: 3; "
                   "off with --time-budget].")
@click.option("--time-budget", default=None, callback=optional_float, metavar="SECONDS",
              help="Wall-clock budget for the whole command (search, refit, holdout, "
                   "registration); iterations and patience are off unless given.")
@click.option("--n-jobs", type=WholeNumber(allow_blank=True), default=None,
              help="Worker processes for the CV folds; each model is single-threaded "
                   "[default: the cores this process may use; -1: all].")
@click.option("--no-ensemble", is_flag=True,
              help="Do not try a greedy ensemble of the verified attempts at the end.")
@click.option("--no-prune", is_flag=True,
              help="Run every fold of every candidate (no fold-by-fold pruning).")
@click.option("--cv", type=WholeNumber(min=2), default=5, show_default=True,
              help="Cross-validation folds.")
@click.option("--metric", callback=blank_to_none,
              help="roc_auc, log_loss, accuracy, balanced_accuracy, f1, roc_auc_ovr, rmse, mae, "
                   "r2 (default: by task).")
@click.option("--register-name", callback=blank_to_none,
              help="Registered model name (default: <data file stem>-agentic).")
@click.option("--no-register", is_flag=True, help="Log the best model but do not register it.")
@click.option("--experiment", callback=blank_to_none,
              help="MLflow experiment (default: <data file stem>-agentic).")
@click.option("--seed", type=WholeNumber(), default=0, show_default=True,
              help="Seed for CV splits, models and the proposer.")
@click.option("--candidates", callback=blank_to_none, type=click.Path(),
              help="JSON list of {trainer, params} for --proposer sequence.")
@click.option("--optuna-storage", callback=blank_to_none,
              help="Optuna storage URL to share one study between processes.")
@click.option("--margin", type=click.FloatRange(0, 1, max_open=True), default=0.01,
              show_default=True, help="How much a candidate must beat the trivial baseline by.")
@click.option("--tracking-uri", callback=blank_to_none,
              help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db).")
@click.option("--llm-model", callback=blank_to_none,
              help="Model for --proposer llm (default: $MLFLOW_AGENTIC_LLM_MODEL).")
@click.option("--llm-base-url", callback=blank_to_none,
              help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 "
                   "(default: $OPENAI_BASE_URL, else OpenAI). Key: $OPENAI_API_KEY.")
@click.option("--max-cost-usd", default=None, callback=optional_float,
              help="Stop the search when the next LLM call would exceed this estimated cost.")
@click.option("--replay", callback=blank_to_none,
              help="Re-run an LLM search from its recorded answers (a run id or a "
                   "llm_exchanges.jsonl path): no network.")
@split_options
@encoding_option
@click.option("--quiet", is_flag=True, help="No progress display; print the summary only.")
def run_command(data, target, proposer, trainers, max_iterations, patience, time_budget, n_jobs,
                no_ensemble, no_prune, cv, metric, register_name, no_register, experiment, seed,
                candidates, optuna_storage, margin, tracking_uri, time_column, group_column,
                holdout_fraction, post_outcome_columns, cv_scheme, keep_flagged_columns,
                llm_model, llm_base_url, max_cost_usd, replay, encoding, quiet) -> None:
    """Search for a verified model on DATA and register the best in MLflow.

    The holdout is sealed first; the search sees only the training rows; every attempt is scored
    on the holdout at the end (CV minus holdout = the gap).
    """
    started = process_started()
    split = split_from(time_column, group_column, holdout_fraction, post_outcome_columns)
    if time_budget is not None and not (math.isfinite(time_budget) and time_budget > 0):
        raise click.BadParameter(f"{time_budget!r} is not a positive number of seconds",
                                 param_hint="'--time-budget'")
    if n_jobs == 0:
        raise click.BadParameter("0 workers; use 1 or more, or -1 for all cores",
                                 param_hint="'--n-jobs'")
    if time_budget is None:
        max_iterations = 8 if max_iterations is None else max_iterations
        patience = 3 if patience is None else patience
    search = {"time_budget": time_budget, "started": started, "n_jobs": n_jobs,
              "ensemble": not no_ensemble, "prune": not no_prune}
    state: dict = {}
    exit_on_user_error(lambda: _run(
             data=data, target=target, proposer=proposer, trainers=split_list(trainers),
             max_iterations=max_iterations, patience=patience, search=search, cv=cv,
             metric=metric,
             register_name=register_name, register=not no_register, experiment=experiment,
             seed=seed, candidates=candidates, optuna_storage=optuna_storage, margin=margin,
             tracking_uri=tracking_uri, split=split, cv_scheme=cv_scheme,
             keep_flagged_columns=keep_flagged_columns,
             llm={"model": llm_model, "base_url": llm_base_url, "max_cost_usd": max_cost_usd,
                  "replay": replay},
             encoding=encoding, quiet=quiet, state=state),
        kept=lambda: state["tracker"].recorded() if "tracker" in state else "")


def _run(*, data, target, proposer, trainers, max_iterations, patience, search, cv, metric,
         register_name, register, experiment, seed, candidates, optuna_storage, margin,
         tracking_uri, split, cv_scheme, keep_flagged_columns, llm, encoding, quiet,
         state) -> None:
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.metrics import resolve_metric
    from mlflow_agentic.orchestrator import run_search
    from mlflow_agentic.trainers import resolve_trainers
    from mlflow_agentic.verify import DeterministicVerifier

    dataset = Dataset.from_path(data, target, encoding=encoding)
    for note in dataset.notes:
        click.secho(f"note: {note}", fg="yellow", err=True)
    resolve_metric(metric, dataset.task)  # fail before anything is logged
    allowed = resolve_trainers(trainers, dataset.task)
    if candidates and proposer != "sequence":
        raise UserInputError("--candidates only applies to --proposer sequence")
    if llm.get("replay"):
        if proposer not in ("llm", "optuna"):
            raise UserInputError("--replay replays an LLM search; use it with --proposer llm")
        proposer = "llm"
        from mlflow_agentic.tracking.models import load_llm_recording

        llm["recording"] = load_llm_recording(llm["replay"])  # fail before anything is logged
    options = LLMOptions(llm.get("model"), llm.get("base_url"), llm.get("max_cost_usd"),
                         llm.get("recording"))
    if proposer == "llm" and options.recording is None:  # before anything is logged
        check_llm_endpoint(options, "Start the server (or pass --llm-base-url), use another "
                           "--proposer, or replay an earlier search with --replay RUN_ID")

    from mlflow_agentic.progress import RichProgress
    from mlflow_agentic.tracking import MlflowTracker
    from mlflow_agentic.tracking.store import check_store

    check_store(tracking_uri)  # before the holdout is sealed: a store we cannot use is input
    tracker = state["tracker"] = MlflowTracker(experiment=experiment,
                                               register_name=register_name,
                                               register=register, tracking_uri=tracking_uri)
    outcome = run_search(
        dataset,
        # built only after the holdout is sealed
        lambda: build_proposer(proposer, seed=seed, trainers=allowed, dataset=dataset,
                               candidates=candidates, optuna_storage=optuna_storage, llm=options),
        split=split, verifier=DeterministicVerifier(margin), max_iterations=max_iterations,
        patience=patience, cv=cv, cv_scheme=cv_scheme, metric=metric, trainers=allowed,
        random_state=seed, keep_flagged_columns=keep_flagged_columns, tracker=tracker,
        observers=[] if quiet else [RichProgress()], **search)
    result = outcome.run

    import mlflow

    click.echo(outcome.summary())
    if search["time_budget"] is not None:
        spent = time.perf_counter() - search["started"]
        click.echo(f"time: {spent:.1f}s of the {search['time_budget']:g}s budget")
    click.echo(f"search run: {tracker.parent_run_id} (tracking URI {mlflow.get_tracking_uri()})")
    if tracker.model_version is not None:
        mv = tracker.model_version
        if tracker.alias_note.startswith(f"@{tracker.alias} ->"):
            click.echo(f"registered: models:/{mv.name}@{tracker.alias} (version {mv.version})")
        else:
            click.secho(f"registered: models:/{mv.name} version {mv.version}; "
                        f"{tracker.alias_note}", fg="yellow")
        click.echo(f"promote it: mlflow-agentic promote --model {mv.name}   (gate to "
                   "@champion)")
        click.echo(f"serve it:   mlflow models serve -m models:/{mv.name}@champion "
                   "--env-manager local -p 5001")
    elif result.best_candidate is None:
        click.secho(f"nothing verified ({result.why_nothing_verified()}), so nothing was "
                    "registered", fg="yellow")
    click.echo(f"browse it:  mlflow ui --backend-store-uri {mlflow.get_tracking_uri()}")


