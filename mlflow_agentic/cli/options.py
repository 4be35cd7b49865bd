"""Shared parameter types and options of the commands (MLproject passes blanks for unset)."""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from mlflow_agentic.errors import AgenticError

EXIT_USER_ERROR = 2


def blank_to_none(ctx, param, value):
    """MLproject passes unset optional parameters as empty strings."""
    return None if value is None or str(value).strip() == "" else value


class WholeNumber(click.ParamType):
    """An integer that also accepts "8.0" (MLproject float parameters)."""

    name = "integer"

    def __init__(self, min: int | None = None, allow_blank: bool = False) -> None:
        self.min = min
        self.allow_blank = allow_blank

    def convert(self, value, param, ctx):
        if self.allow_blank and str(value).strip() == "":
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


def optional_float(ctx, param, value):
    """A float, or None for an empty MLproject parameter."""
    value = blank_to_none(ctx, param, value)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not a number") from exc


def threshold(ctx, param, value):
    """A finite number >= 0 (a NaN or a negative threshold would disable a gate)."""
    import math

    value = optional_float(ctx, param, value)
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"{value!r}: expected a finite number >= 0, e.g. 0.05")
    return value


def split_list(value):
    if not value:
        return None
    return [v.strip() for v in str(value).replace(" ", ",").split(",") if v.strip()] or None


encoding_option = click.option(
    "--encoding", callback=blank_to_none,
    help="Text encoding of a CSV file, e.g. latin-1 [default: UTF-8, else detected].")


def split_options(command: Callable) -> Callable:
    """How the holdout is sealed and the CV folds are built (shared by run and compare)."""
    for option in reversed((
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
        click.option("--cv-scheme",
                     type=click.Choice(("auto", "stratified", "kfold", "group", "time")),
                     default="auto", show_default=True,
                     help="auto follows the briefing's advice (group / time / stratified)."),
        click.option("--keep-flagged-columns", is_flag=True,
                     help="Keep columns a critical leakage finding would exclude."),
    )):
        command = option(command)
    return command


def split_from(time_column, group_column, holdout_fraction, post_outcome_columns):
    from mlflow_agentic.search import SplitOptions

    return SplitOptions(time_column=time_column, group_column=group_column,
                        holdout_fraction=holdout_fraction,
                        post_outcome_columns=split_list(post_outcome_columns) or ())


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


def exit_on_user_error(work: Callable[[], None]) -> None:
    """Run ``work``; a user error prints one red line and exits 2 (nothing half-written)."""
    try:
        work()
    except AgenticError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(EXIT_USER_ERROR)
