"""Shared parameter types and options of the commands (MLproject passes blanks for unset)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from mlflow_agentic.cli.text import plain
from mlflow_agentic.core.errors import AgenticError

if TYPE_CHECKING:
    from mlflow_agentic.frontdoor.orchestrator import SplitOptions
    from mlflow_agentic.proposers.factory import CodeOptions, LLMOptions

EXIT_USER_ERROR = 2
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


UNSET = ("", "auto", "none")
"""What an MLproject parameter says for "not given" (its defaults are ``auto`` or ``none``, so
the project run's parameters read as words, never as empty strings)."""


def unset(value: Any) -> bool:
    return value is None or str(value).strip().lower() in UNSET


def blank_to_none(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """An unset optional parameter: empty, ``auto`` or ``none`` (MLproject defaults)."""
    return None if unset(value) else value


class WholeNumber(click.ParamType):
    """An integer that also accepts "8.0" (MLproject float parameters)."""

    name = "integer"

    def __init__(self, min: int | None = None, allow_blank: bool = False) -> None:
        self.min = min
        self.allow_blank = allow_blank

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int | None:
        if self.allow_blank and unset(value):
            return None
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


def optional_float(ctx: click.Context, param: click.Parameter, value: Any) -> float | None:
    """A float, or None for an empty MLproject parameter."""
    value = blank_to_none(ctx, param, value)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not a number") from exc


def gap_threshold(ctx: click.Context, param: click.Parameter, value: Any) -> float:
    """The promotion gate's threshold (blank: the gate's default), checked by the gate's own
    rule (a NaN or a negative threshold would disable it), reported as a bad option value."""
    from mlflow_agentic.core.errors import UserInputError
    from mlflow_agentic.scoring.promotion import DEFAULT_MAX_GAP, check_max_gap

    value = optional_float(ctx, param, value)
    if value is None:
        return DEFAULT_MAX_GAP
    try:
        check_max_gap(value)
    except UserInputError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


def named_list(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A comma-separated list option that, when given, names at least one thing (``,`` does
    not mean "all")."""
    value = blank_to_none(ctx, param, value)
    if value is not None and split_list(value) is None:
        raise click.BadParameter(f"{value!r} names nothing; leave the option out for the "
                                 "default, or name at least one")
    return value


def split_list(value: Any) -> list[str] | None:
    if not value:
        return None
    return [v.strip() for v in str(value).replace(" ", ",").split(",") if v.strip()] or None


class OptionGroup:
    """Options a command takes together, added in the order given (as ``--help`` lists
    them); ``names``: their parameters, so the code that reads them needs no list of its own."""

    def __init__(self, *options: Callable) -> None:
        self.options = options

    def __call__(self, command: Callable) -> Callable:
        for option in reversed(self.options):
            command = option(command)
        return command

    @property
    def names(self) -> tuple[str, ...]:
        def probe() -> None: ...

        self(probe)
        params = getattr(probe, "__click_params__", [])  # where click's decorators put them
        return tuple(p.name for p in reversed(params))


TRACKING_URI_HELP = "MLflow tracking URI (default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db)."


def tracking_uri_option(help: str = TRACKING_URI_HELP) -> Callable:
    """``--tracking-uri``, declared once for every command that reads or writes a store."""
    return click.option("--tracking-uri", callback=blank_to_none, help=help)


def experiment_option(help: str) -> Callable:
    """``--experiment``, declared once (each command says what its default is)."""
    return click.option("--experiment", callback=blank_to_none, help=help)


llm_options = OptionGroup(
    click.option("--llm-model", callback=blank_to_none,
                 help="Model for --proposer llm or code (default: "
                      "$MLFLOW_AGENTIC_LLM_MODEL)."),
    click.option("--llm-base-url", callback=blank_to_none,
                 help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 "
                      "(default: $OPENAI_BASE_URL, else OpenAI). Key: $OPENAI_API_KEY."),
    click.option("--max-cost-usd", default=None, callback=optional_float,
                 help="Stop an LLM search when its next call would exceed this estimated "
                      "cost (compare: per proposer and seed)."),
)
"""How to reach the LLM (``LLMOptions``): the same for run and compare."""


encoding_option = click.option(
    "--encoding", callback=blank_to_none,
    help="Text encoding of a CSV file, e.g. latin-1 [default: UTF-8, else detected].")


split_options = OptionGroup(
    click.option("--time-column", callback=blank_to_none,
                 help="Rows are ordered by this column: the latest rows are the holdout and "
                      "CV folds train on the past."),
    click.option("--group-column", callback=blank_to_none,
                 help="Whole groups (e.g. customers) stay on one side of every split."),
    click.option("--holdout-fraction", default=None, callback=optional_float,
                 help="Share of rows sealed as the holdout, in (0, 0.5] (default 0.2; 0.25 "
                      "with --group-column)."),
    click.option("--post-outcome-columns", callback=blank_to_none,
                 help="Comma-separated columns known only after the outcome: blanked in the "
                      "holdout, as at prediction time."),
    click.option("--keep-flagged-columns", is_flag=True,
                 help="Keep columns a critical leakage finding would exclude."),
)
"""How the holdout is sealed and the CV folds are built (shared by run and compare)."""


def pop_split(options: dict) -> SplitOptions:
    """``SplitOptions`` from a command's parsed ``split_options``: its fields, taken out of
    ``options`` (post-outcome columns as the command line lists them)."""
    import dataclasses

    from mlflow_agentic.frontdoor.orchestrator import SplitOptions

    given = {f.name: options.pop(f.name) for f in dataclasses.fields(SplitOptions)}
    given["post_outcome_columns"] = split_list(given["post_outcome_columns"]) or ()
    return SplitOptions(**given)


def pop_llm(options: dict) -> LLMOptions:
    """``LLMOptions`` (model, endpoint, cost cap) from a command's parsed ``llm_options``,
    taken out of ``options``."""
    from mlflow_agentic.proposers.factory import LLMOptions

    return LLMOptions(*(options.pop(k) for k in llm_options.names))


def process_started() -> float:
    """``time.perf_counter()`` at the moment this process started (Linux: from /proc), so a
    time budget covers the interpreter and imports too; elsewhere, now."""
    import os
    import time

    now = time.perf_counter()
    try:
        from pathlib import Path

        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now
    return now - max(0.0, age)


def exit_on_user_error(work: Callable[[], None],
                       kept: Callable[[], str] = lambda: "") -> None:
    """Run ``work`` and turn every way it can end badly into one message and an exit code:
    a user error 2 (nothing half-written), a failure 1, Ctrl-C 130, SIGTERM 143.
    ``kept()`` says what the tracking store holds (for the interrupt and failure lines).
    ``MLFLOW_AGENTIC_TRACEBACK=1`` adds the traceback of an unexpected error."""
    import signal

    from mlflow_agentic.core.errors import SearchTerminated
    from mlflow_agentic.core.stopping import stops_raise

    with stops_raise({signal.SIGTERM: SearchTerminated, signal.SIGINT: KeyboardInterrupt}):
        try:
            work()
        except SearchTerminated:
            _stopped("terminated (SIGTERM)", kept())
            sys.exit(EXIT_TERMINATED)
        except KeyboardInterrupt:
            _stopped("interrupted", kept())
            sys.exit(EXIT_INTERRUPTED)
        except Exception as exc:
            from mlflow_agentic.core.errors import disk_full

            if isinstance(exc, AgenticError) or not disk_full(exc):  # ours says it already
                _failed(exc, kept)
            what = kept()
            click.secho("error: the disk is full (No space left on device): the tracking store "
                        "or the search's journal could not be written.", fg="red", err=True)
            click.echo((f"Kept: {what}. " if what else "Nothing was kept. ") + "Nothing was "
                       "registered. Free space on that disk, then continue the search as said "
                       "(its finished attempts are not run again).", err=True)
            sys.exit(EXIT_FAILURE)


def _failed(exc: Exception, kept: Callable[[], str]) -> None:
    """Every other way ``work`` ends badly: a user error (2) or a failure (1)."""
    import os

    if isinstance(exc, AgenticError):
        from mlflow_agentic.tracking.store import TrackingUnavailable

        click.secho(f"error: {plain(exc)}", fg="red", err=True)
        sys.exit(EXIT_FAILURE if isinstance(exc, TrackingUnavailable) else EXIT_USER_ERROR)
    from mlflow_agentic.tracking.store import deleted_while_running

    deleted = deleted_while_running(exc)
    if deleted is not None:
        _deleted(deleted)
    # a bug or an environment fault: one line, the runs marked FAILED
    if os.environ.get("MLFLOW_AGENTIC_TRACEBACK"):
        import traceback

        traceback.print_exception(exc)
    what = kept()
    click.secho(f"error: {type(exc).__name__}: {plain(exc)}", fg="red", err=True)
    click.echo(("the search run is marked FAILED with this reason; kept: " + what + ". "
                if what else "") + "Set MLFLOW_AGENTIC_TRACEBACK=1 for the traceback.",
               err=True)
    sys.exit(EXIT_FAILURE)


def _deleted(run_id: str) -> None:
    """The experiment (or a run) was deleted while the search wrote to it: say so, and how to
    keep what was recorded (restore, then resume); exit 1."""
    from mlflow_agentic.tracking.store import restore_command

    restore, search = restore_command(run_id)
    click.secho(f"error: run {run_id} was deleted while the search wrote to it (its "
                "experiment was deleted?): the search stopped; nothing was registered.",
                fg="red", err=True)
    click.echo((f"What was recorded stays in the deleted experiment. To keep it and continue: "
                f"{restore}, then the same command with --resume {search}. "
                if search else f"To keep what was recorded: {restore}. ")
               + "Or run the command again: a new experiment is made.", err=True)
    sys.exit(EXIT_FAILURE)


def say_note(line: str) -> None:
    """A note while a command runs (how a file was read, store retries): yellow, on stderr."""
    click.secho(line, fg="yellow", err=True)


def _stopped(how: str, kept: str) -> None:
    if kept:
        click.secho(f"{how}: kept {kept}; the attempt under way and the search run are marked "
                    "KILLED; nothing was registered", fg="yellow", err=True)
    else:
        click.secho(f"{how}: nothing was recorded", fg="yellow", err=True)


code_options = OptionGroup(
    click.option("--max-experiments", type=WholeNumber(min=1), default=4, show_default=True,
                 help="Code mode: how many candidate.py the coder writes (attempts)."),
    click.option("--critic-model", callback=blank_to_none,
                 help="Code mode: the critic's model, e.g. a smaller one [default: "
                      "--llm-model]."),
    click.option("--allow-host-execution", is_flag=True,
                 help="Code mode without Docker: run candidates in a plain subprocess "
                      "(empty environment, wall-clock kill, NO network, file or memory "
                      "isolation); every such run is tagged sandbox=host."),
    click.option("--sandbox-image", callback=blank_to_none, metavar="IMAGE",
                 help="Code mode: the sandbox image [default: the one `mlflow-agentic "
                      "sandbox build` makes for this machine's packages]."),
    click.option("--sandbox-memory", default="2g", show_default=True,
                 help="Code mode: memory cap per candidate container (Docker units)."),
    click.option("--sandbox-cpus", type=click.FloatRange(min=0.1),
                 default=float(min(2, os.cpu_count() or 1)), show_default=True,
                 help="Code mode: CPU cap per candidate container (at most this machine's)."),
    click.option("--sandbox-timeout", type=click.FloatRange(min=1), default=600.0,
                 show_default=True, metavar="SECONDS",
                 help="Code mode: wall-clock limit per sandbox container (a fold, the refit, "
                      "a prediction); a candidate whose fold is killed at it stops its other "
                      "folds."),
)
"""Code mode (``--proposer code``): the roles' budget and critic, and the sandbox."""


def pop_code(options: dict) -> CodeOptions:
    """``CodeOptions`` from a command's parsed ``code_options``, taken out of ``options``."""
    return code_from(**{k: options.pop(k) for k in code_options.names})


def code_from(max_experiments: int, critic_model: str | None, allow_host_execution: bool,
              sandbox_image: str | None, sandbox_memory: str, sandbox_cpus: float,
              sandbox_timeout: float) -> CodeOptions:
    """``CodeOptions`` from the code-mode flags."""
    from mlflow_agentic.proposers.factory import CodeOptions
    from mlflow_agentic.sandbox.runners import Limits

    return CodeOptions(critic_model, max_experiments, allow_host_execution, sandbox_image,
                       Limits(memory=sandbox_memory, cpus=sandbox_cpus,
                              timeout=sandbox_timeout))
