"""``mlflow-agentic``: run a tracked AutoML search from the command line."""

from __future__ import annotations

import sys

import click

from mlflow_agentic import __version__
from mlflow_agentic.errors import AgenticError, ProposerOutputError, UserInputError

PROPOSERS = ("optuna", "sequence", "llm")
EXIT_USER_ERROR = 2


def _blank_to_none(ctx, param, value):
    """MLproject passes unset optional parameters as empty strings."""
    return None if value is None or str(value).strip() == "" else value


class WholeNumber(click.ParamType):
    """An integer that also accepts "8.0" (MLproject float parameters)."""

    name = "integer"

    def __init__(self, min: int | None = None) -> None:
        self.min = min

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            number = value
        else:
            try:
                as_float = float(str(value))
            except ValueError:
                self.fail(f"{value!r} is not an integer", param, ctx)
            if as_float != int(as_float):
                self.fail(f"{value!r} is not an integer", param, ctx)
            number = int(as_float)
        if self.min is not None and number < self.min:
            self.fail(f"{number} is below the minimum {self.min}", param, ctx)
        return number


def _optional_float(ctx, param, value):
    """A float, or None for an empty MLproject parameter."""
    value = _blank_to_none(ctx, param, value)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not a number") from exc


def _split_list(value):
    if not value:
        return None
    return [v.strip() for v in str(value).replace(" ", ",").split(",") if v.strip()] or None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mlflow-agentic")
def main() -> None:
    """Agentic AutoML tracked in MLflow: a proposer suggests, the engine verifies, MLflow
    remembers."""


@main.command("run")
@click.option("--data", required=True, help="CSV or Parquet file with features and target.")
@click.option("--target", callback=_blank_to_none,
              help="Target column (default: the one column named target/label/churn/y...).")
@click.option("--proposer", type=click.Choice(PROPOSERS), default="optuna", show_default=True,
              help="Who proposes candidates.")
@click.option("--trainers", callback=_blank_to_none,
              help="Comma-separated trainers to search (default: all that fit the task).")
@click.option("--max-iterations", type=WholeNumber(min=0), default=8, show_default=True,
              help="Reflection rounds after the seed candidates.")
@click.option("--patience", type=WholeNumber(min=1), default=3, show_default=True,
              help="Stop after this many rounds without a verified improvement.")
@click.option("--cv", type=WholeNumber(min=2), default=5, show_default=True,
              help="Cross-validation folds.")
@click.option("--metric", callback=_blank_to_none,
              help="roc_auc, log_loss, accuracy, balanced_accuracy, f1, roc_auc_ovr, rmse, mae, "
                   "r2 (default: by task).")
@click.option("--register-name", callback=_blank_to_none,
              help="Registered model name (default: <data file stem>-agentic).")
@click.option("--no-register", is_flag=True, help="Log the best model but do not register it.")
@click.option("--experiment", callback=_blank_to_none,
              help="MLflow experiment (default: <data file stem>-agentic).")
@click.option("--seed", type=WholeNumber(), default=0, show_default=True,
              help="Seed for CV splits, models and the proposer.")
@click.option("--candidates", callback=_blank_to_none, type=click.Path(),
              help="JSON list of {trainer, params} for --proposer sequence.")
@click.option("--optuna-storage", callback=_blank_to_none,
              help="Optuna storage URL to share one study between processes.")
@click.option("--margin", type=click.FloatRange(0, 1, max_open=True), default=0.01,
              show_default=True, help="How much a candidate must beat the trivial baseline by.")
@click.option("--tracking-uri", callback=_blank_to_none,
              help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db).")
@click.option("--time-column", callback=_blank_to_none,
              help="Rows are ordered by this column: the latest rows are the holdout and CV "
                   "folds train on the past.")
@click.option("--group-column", callback=_blank_to_none,
              help="Whole groups (e.g. customers) stay on one side of every split.")
@click.option("--holdout-fraction", default=None, callback=_optional_float,
              help="Share of rows sealed as the holdout, in (0, 0.5] (default 0.2; 0.25 with "
                   "--group-column).")
@click.option("--post-outcome-columns", callback=_blank_to_none,
              help="Comma-separated columns known only after the outcome: blanked in the "
                   "holdout, as at prediction time.")
@click.option("--cv-scheme", type=click.Choice(("auto", "stratified", "kfold", "group", "time")),
              default="auto", show_default=True,
              help="auto follows the briefing's advice (group / time / stratified).")
@click.option("--keep-flagged-columns", is_flag=True,
              help="Keep columns a critical leakage finding would exclude.")
@click.option("--llm-model", callback=_blank_to_none,
              help="Model for --proposer llm (default: $MLFLOW_AGENTIC_LLM_MODEL).")
@click.option("--llm-base-url", callback=_blank_to_none,
              help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 "
                   "(default: $OPENAI_BASE_URL, else OpenAI). Key: $OPENAI_API_KEY.")
@click.option("--max-cost-usd", default=None, callback=_optional_float,
              help="Stop the search when the next LLM call would exceed this estimated cost.")
@click.option("--replay", callback=_blank_to_none,
              help="Re-run an LLM search from its recorded answers (a run id or a "
                   "llm_exchanges.jsonl path): no network.")
@click.option("--quiet", is_flag=True, help="No progress display; print the summary only.")
def run_command(data, target, proposer, trainers, max_iterations, patience, cv, metric,
                register_name, no_register, experiment, seed, candidates, optuna_storage, margin,
                tracking_uri, time_column, group_column, holdout_fraction, post_outcome_columns,
                cv_scheme, keep_flagged_columns, llm_model, llm_base_url, max_cost_usd, replay,
                quiet) -> None:
    """Search for a verified model on DATA and register the best in MLflow.

    The holdout is sealed first; the search sees only the training rows; every attempt is scored
    on the holdout at the end (CV minus holdout = the gap).
    """
    from mlflow_agentic.search import SplitOptions

    split = SplitOptions(time_column=time_column, group_column=group_column,
                         holdout_fraction=holdout_fraction,
                         post_outcome_columns=_split_list(post_outcome_columns) or ())
    try:
        _run(data=data, target=target, proposer=proposer, trainers=_split_list(trainers),
             max_iterations=max_iterations, patience=patience, cv=cv, metric=metric,
             register_name=register_name, register=not no_register, experiment=experiment,
             seed=seed, candidates=candidates, optuna_storage=optuna_storage, margin=margin,
             tracking_uri=tracking_uri, split=split, cv_scheme=cv_scheme,
             keep_flagged_columns=keep_flagged_columns,
             llm={"model": llm_model, "base_url": llm_base_url, "max_cost_usd": max_cost_usd,
                  "replay": replay},
             quiet=quiet)
    except AgenticError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(EXIT_USER_ERROR)


def _run(*, data, target, proposer, trainers, max_iterations, patience, cv, metric,
         register_name, register, experiment, seed, candidates, optuna_storage, margin,
         tracking_uri, split, cv_scheme, keep_flagged_columns, llm, quiet) -> None:
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.metrics import resolve_metric
    from mlflow_agentic.search import run_search
    from mlflow_agentic.trainers import resolve_trainers
    from mlflow_agentic.verify import DeterministicVerifier

    dataset = Dataset.from_path(data, target)
    resolve_metric(metric, dataset.task)  # fail before anything is logged
    allowed = resolve_trainers(trainers, dataset.task)
    if candidates and proposer != "sequence":
        raise UserInputError("--candidates only applies to --proposer sequence")
    if llm.get("replay"):
        if proposer not in ("llm", "optuna"):
            raise UserInputError("--replay replays an LLM search; use it with --proposer llm")
        proposer = "llm"
        llm["recording"] = _load_recording(llm["replay"])  # fail before anything is logged

    from mlflow_agentic.progress import RichProgress
    from mlflow_agentic.tracking import MlflowTracker

    tracker = MlflowTracker(experiment=experiment, register_name=register_name,
                            register=register, tracking_uri=tracking_uri)
    outcome = run_search(
        dataset,
        # built only after the holdout is sealed
        lambda: _make_proposer(proposer, candidates, allowed, dataset, seed, optuna_storage,
                               llm),
        split=split, verifier=DeterministicVerifier(margin), max_iterations=max_iterations,
        patience=patience, cv=cv, cv_scheme=cv_scheme, metric=metric, trainers=allowed,
        random_state=seed, keep_flagged_columns=keep_flagged_columns, tracker=tracker,
        observers=[] if quiet else [RichProgress()])
    result = outcome.run

    import mlflow

    click.echo(outcome.summary())
    click.echo(f"search run: {tracker.parent_run_id} (tracking URI {mlflow.get_tracking_uri()})")
    if tracker.model_version is not None:
        mv = tracker.model_version
        click.echo(f"registered: models:/{mv.name}@{tracker.alias} (version {mv.version})")
        click.echo(f"serve it:   mlflow models serve -m models:/{mv.name}@{tracker.alias} "
                   "--env-manager local -p 5001")
    elif result.best_candidate is None:
        click.secho("nothing verified: no candidate beat the trivial baseline, so nothing was "
                    "registered", fg="yellow")
    click.echo(f"browse it:  mlflow ui --backend-store-uri {mlflow.get_tracking_uri()}")


def _make_proposer(name, candidates, allowed, dataset, seed, storage, llm=None):
    from mlflow_agentic.proposers import OptunaProposer, SequenceProposer
    from mlflow_agentic.trainers import get_trainer

    if name == "llm":
        import importlib.util

        from mlflow_agentic.proposers.llm import LLMProposer

        llm = llm or {}
        if llm.get("recording") is not None:
            return LLMProposer.replay(llm["recording"])
        if importlib.util.find_spec("openai") is None:
            raise UserInputError("--proposer llm needs the openai package: "
                                 "pip install -e '.[llm]'")
        return LLMProposer(model=llm.get("model"), base_url=llm.get("base_url"),
                           max_cost_usd=llm.get("max_cost_usd"))
    if name == "optuna":
        return OptunaProposer(seed=seed, storage=storage)
    if not candidates:
        return SequenceProposer.defaults(allowed)
    proposer = SequenceProposer.from_file(candidates)
    for i, cand in enumerate(proposer.candidates, start=1):
        if cand.trainer not in allowed:
            raise UserInputError(f"{candidates}: candidate {i} uses trainer {cand.trainer!r}, "
                                 f"not among the allowed trainers: {', '.join(allowed)}")
        try:
            get_trainer(cand.trainer).resolve_params(dataset, cand.params)
        except ProposerOutputError as exc:
            raise UserInputError(f"{candidates}: candidate {i}: {exc}") from exc
    return proposer


@main.group("bench")
def bench() -> None:
    """Benchmarks that ship with the product."""


@bench.command("traps")
@click.option("--seed", type=WholeNumber(), default=0, show_default=True,
              help="Seed for the generated tasks, splits and proposers.")
@click.option("--experiment", default="bench-traps", show_default=True,
              help="MLflow experiment for the task runs (one parent run per task).")
@click.option("--tracking-uri", callback=_blank_to_none,
              help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db).")
def bench_traps(seed, experiment, tracking_uri) -> None:
    """Six generated churn-like tasks, five with a planted trap (post-outcome leak, time order,
    groups, near-duplicates, class imbalance) and a clean control: which traps the search
    catches, and which a naive AutoML falls into, on the same sealed holdout."""
    import contextlib
    import os

    import mlflow
    from rich.console import Console

    from mlflow_agentic.bench.traps import format_table, run_bench

    if tracking_uri:
        mlflow.set_tracking_uri(tracking_uri)
    console = Console(width=max(Console().width, 120))
    # under `mlflow run -e bench` the project's run is the outer run: tasks nest under it
    under_project = bool(os.environ.get("MLFLOW_RUN_ID"))
    outer = mlflow.start_run() if under_project else contextlib.nullcontext()
    with outer:
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
               f"{mlflow.get_tracking_uri()}")


def _load_recording(source: str) -> list[dict]:
    """Recorded LLM exchanges from a JSONL path, or from an MLflow run's artifact."""
    from pathlib import Path

    from mlflow_agentic.llm.replay import EXCHANGES_ARTIFACT, read_exchanges

    if Path(source).exists():
        return read_exchanges(source)
    from mlflow.exceptions import MlflowException

    from mlflow_agentic.tracking.models import download_run_artifact

    try:
        return read_exchanges(download_run_artifact(source, EXCHANGES_ARTIFACT))
    except (MlflowException, OSError) as exc:
        raise UserInputError(f"--replay {source!r} is neither a file nor a run with an "
                             f"{EXCHANGES_ARTIFACT} artifact: {exc}") from exc


if __name__ == "__main__":
    main()
