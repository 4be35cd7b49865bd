"""``mlflow-agentic run``: one tracked search, the best model registered."""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING, Any

import click

from mlflow_agentic.cli.options import (
    blank_to_none,
    code_options,
    encoding_option,
    exit_on_user_error,
    experiment_option,
    llm_options,
    pop_code,
    pop_llm,
    pop_split,
    process_started,
    say_note,
    split_options,
    tracking_uri_option,
)
from mlflow_agentic.cli.settings import pop_settings, settings_options
from mlflow_agentic.cli.text import plain
from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.settings import REGISTER_POLICIES
from mlflow_agentic.proposers.factory import PROPOSERS

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mlflow_agentic.frontdoor.orchestrator import SearchResult
    from mlflow_agentic.tracking import MlflowTracker


@click.command("run")
@click.option("--data", required=True, help="CSV or Parquet file with features and target.")
@click.option("--target", callback=blank_to_none,
              help="Target column (default: the one column named target/label/churn/y...).")
@click.option("--task", type=click.Choice(["auto", "binary", "multiclass", "regression"]),
              default="auto", show_default=True,
              help="What the target is; auto infers it (a number column with few distinct "
                   "whole values, e.g. scores 0-10, is read as classes: say regression).")
@click.option("--proposer", type=click.Choice(PROPOSERS), default="optuna", show_default=True,
              help="Who proposes candidates: optuna (seeded TPE), sequence (a fixed list), "
                   "llm (an LLM picks trainer and knobs), random, or code (an LLM writes "
                   "each pipeline, run in a Docker sandbox).")
@settings_options
@click.option("--scheduler", callback=blank_to_none, metavar="ADDRESS",
              help="Dask scheduler for --backend dask, e.g. tcp://10.0.0.5:8786.")
@click.option("--ray-address", callback=blank_to_none, metavar="ADDRESS",
              help="Ray cluster for --backend ray, e.g. ray://10.0.0.5:10001 or auto.")
@click.option("--register-name", callback=blank_to_none,
              help="Registered model name (default: <data file stem>-agentic).")
@click.option("--register", type=click.Choice(REGISTER_POLICIES), default="better",
              show_default=True,
              help="better: a new registry version only when the selected model beats the "
                   "current @challenger beyond the noise of the same sealed rows (a paired "
                   "bootstrap; else the model stays logged on its run and the reason is "
                   "printed); always: every search registers a version; never: log only.")
@click.option("--no-register", is_flag=True,
              help="Log the best model but do not register it (= --register never).")
@click.option("--no-diagnostics", is_flag=True,
              help="Skip the selected model's holdout diagnostics (MLflow's evaluator plots, "
                   "holdout predictions, permutation importance; ~10 s on churn).")
@experiment_option("MLflow experiment (default: <data file stem>-agentic).")
@click.option("--candidates", callback=blank_to_none, type=click.Path(),
              help="JSON list of {trainer, params} for --proposer sequence.")
@click.option("--optuna-storage", callback=blank_to_none,
              help="Optuna storage URL to share one study between processes.")
@tracking_uri_option()
@llm_options
@click.option("--replay", callback=blank_to_none,
              help="Re-run an LLM search from its recorded answers (a run id or a "
                   "llm_exchanges.jsonl path): no network.")
@click.option("--resume", callback=blank_to_none, metavar="RUN_ID|last",
              help="Continue a search that was killed or interrupted (its search run id, "
                   "printed first; or 'last': the latest unfinished search of the experiment "
                   "on this file), with the same data and settings: finished attempts are "
                   "read back from MLflow, not run again.")
@split_options
@code_options
@encoding_option
@click.option("--merge-label-variants", is_flag=True,
              help="Merge target labels that differ only in case or surrounding spaces "
                   "(Yes / 'yes ') into their most frequent spelling; refused otherwise.")
@click.option("--quiet", is_flag=True, help="No progress display; print the summary only.")
def run_command(**options) -> None:
    """Search for a verified model on DATA and register the best in MLflow.

    The holdout is sealed first; the search sees only the training rows; every attempt is scored
    on the holdout at the end (CV minus holdout = the gap).
    """
    started = process_started()
    state: dict = {}
    o = options
    settings = pop_settings(o)
    scheduler, ray_address = o.pop("scheduler"), o.pop("ray_address")
    if (scheduler and settings["backend"] != "dask") or \
            (ray_address and settings["backend"] != "ray"):
        raise click.UsageError("--scheduler goes with --backend dask, --ray-address with "
                               "--backend ray")
    settings["backend_address"] = scheduler or ray_address
    def work() -> None:
        if o["proposer"] != "code" and not o["resume"]:  # code mode fits in its sandbox
            from mlflow_agentic.engine.workers.parallel import prestart

            prestart(settings["n_jobs"], settings["backend"])
        front = dict(
            data=o["data"], target=o["target"],
            split=pop_split(o),
            keep_flagged_columns=o["keep_flagged_columns"], experiment=o["experiment"],
            register_name=o["register_name"],
            register="never" if o["no_register"] else o["register"],
            tracking_uri=o["tracking_uri"], diagnostics=not o["no_diagnostics"],
            llm=pop_llm(o),
            code=pop_code(o), candidates=o["candidates"],
            optuna_storage=o["optuna_storage"], encoding=o["encoding"],
            merge_label_variants=o["merge_label_variants"], resume=o["resume"],
            task=None if o["task"] == "auto" else o["task"], started=started, **settings)
        _run(state, replay=o["replay"], proposer=o["proposer"], quiet=o["quiet"],
             kwargs=front)

    with quiet_warnings(o["quiet"]):
        exit_on_user_error(work, kept=lambda: _kept(state.get("tracker")))


@contextlib.contextmanager
def quiet_warnings(quiet: bool) -> Iterator[None]:
    """``--quiet``: no library warning is printed, by this process or the workers it starts
    (``PYTHONWARNINGS``); this package's own (what it changed of the command) still are."""
    import warnings

    if not quiet:
        yield
        return
    previous = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = "ignore"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.filterwarnings("default", module=r"mlflow_agentic\.")  # ours: said
            yield
    finally:
        if previous is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = previous


def _next_steps(mv: Any) -> None:  # an MLflow ModelVersion
    """How to promote (and serve) the version a search just made @challenger."""
    if mv.tags.get("generated_code") == "true":
        click.secho("this model runs LLM-written code when loaded: promote it with "
                    "--accept-generated-code, and serve it inside a container "
                    "(docs/guides/code-mode.md: The sandbox)", fg="yellow")
        click.echo(f"promote it: mlflow-agentic promote --model {mv.name} "
                   "--accept-generated-code   (gate to @champion)")
    else:
        click.echo(f"promote it: mlflow-agentic promote --model {mv.name}   (gate to "
                   "@champion)")
        click.echo(f"serve it:   mlflow models serve -m models:/{mv.name}@champion "
                   "--env-manager local -p 5001")


def _kept(tracker: MlflowTracker | None) -> str:
    """What the store holds of an interrupted search, and how to continue it."""
    recorded = tracker.recorded() if tracker is not None else ""
    if not recorded or tracker is None:
        return ""
    unmarked = (f"; the store could not be written to mark {', '.join(tracker.unmarked)} "
                "KILLED (a resume does it)" if tracker.unmarked else "")
    return (f"{recorded}{unmarked} (continue it: the same command with --resume "
            f"{tracker.parent_run_id})")


def _run(state: dict, *, replay: str | None, proposer: str, quiet: bool, kwargs: dict) -> None:
    from mlflow_agentic.cli.progress import RichProgress, RunIdLine
    from mlflow_agentic.core.settings import TrackingOptions
    from mlflow_agentic.frontdoor.api import search
    from mlflow_agentic.tracking.live import tracker_for

    if replay:
        if proposer not in ("llm", "optuna"):
            raise UserInputError("--replay replays an LLM search; use it with --proposer llm")
        from mlflow_agentic.tracking.registry import load_llm_recording

        proposer = "llm"
        kwargs["llm"].recording = load_llm_recording(replay)  # fails before anything is logged

    tracking = TrackingOptions.taken_from(None, kwargs)
    tracker = state["tracker"] = tracker_for(tracking, say_note)
    first = RunIdLine(tracker)  # even with --quiet: what a later --resume needs
    outcome = search(proposer=proposer,
                     observers=[first] if quiet else [first, RichProgress(
                         started=kwargs.get("started"))],
                     tracker=tracker, tracking=tracking, say=say_note, **kwargs)
    _report(outcome, tracker, kwargs)


def _report(outcome: SearchResult, tracker: MlflowTracker, kwargs: dict) -> None:
    """What the search ended with, where MLflow has it, and what to do next."""
    from mlflow_agentic.tracking.store import current_uri, store_option

    result = outcome.run
    click.echo(plain(outcome.summary()))
    if result.evidence_model is not None:
        click.echo(f"served: refit on all {result.served_rows} labelled rows (training + "
                   "holdout); the holdout scores above are the same recipe's before")
    elif result.served_note and result.model is not None:  # no line when nothing is served
        click.secho(f"served: fitted on the training rows only ({result.served_note})",
                    fg="yellow")
    for line in result.problems():  # said even with --quiet
        click.secho(f"warning: {plain(line)}", fg="yellow", err=True)
    if kwargs["time_budget"] is not None:
        spent = time.perf_counter() - kwargs["started"]
        click.echo(f"time: {spent:.1f}s of the {kwargs['time_budget']:g}s budget")
    click.echo(f"search run: {outcome.run_id} (tracking URI {current_uri()})")
    if outcome.model_version is not None:
        mv = outcome.model_version
        moved = outcome.alias_note.startswith(f"@{outcome.alias} ->")
        if moved:
            click.echo(f"registered: models:/{mv.name}@{outcome.alias} (version {mv.version})")
        else:
            click.secho(f"registered: models:/{mv.name} version {mv.version}; "
                        f"{outcome.alias_note}", fg="yellow")
        if moved:  # else nothing to promote: the alias did not move to this version
            _next_steps(mv)
    elif outcome.alias_note:  # a note without a version: why none was registered
        click.secho(f"not registered: {outcome.alias_note}", fg="yellow")
    elif result.best_candidate is None:
        click.secho(f"nothing verified ({result.why_nothing_verified()}), so nothing was "
                    "registered", fg="yellow")
    link = tracker.runs_link() if tracker.parent_run_id else ""
    if link.startswith(("http://", "https://")):  # a tracking server serves its own UI
        click.echo(f"browse it:  {link}")
    else:
        click.echo(f"browse it:  mlflow-agentic ui --run {outcome.run_id}{store_option()}   "
                   f"(MLflow's UI on this store; or any UI on it at /{link})")
