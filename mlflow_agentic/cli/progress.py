"""Console progress for a search (rich): a bar over the budget and one line per attempt."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from mlflow_agentic.cli.text import plain_markup
from mlflow_agentic.core.observer import SearchContext, SearchObserver
from mlflow_agentic.core.types import AttemptRecord, EngineeringRun, SolutionCandidate

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mlflow_agentic.core.tracker import Tracker
    from mlflow_agentic.frontdoor.briefing import Briefing

STYLE = {"verified": "green", "rejected": "yellow", "failed": "red", "quarantined": "magenta",
         "pruned": "cyan"}


def _what_runs(trainers: Sequence[str], settings: dict) -> str:
    """The trainers offered, or in code mode the sandbox candidates run in and its limits."""
    if "sandbox" not in settings:
        return f"trainers {', '.join(trainers)}"
    limits = {k.removeprefix("sandbox."): _number(v) for k, v in settings.items()
              if k.startswith("sandbox.")}
    return (f"up to {settings.get('max_experiments', '?')} LLM-written candidates, each in a "
            f"{settings['sandbox']} sandbox (memory {limits.get('memory')}, "
            f"{limits.get('cpus')} CPUs, {limits.get('timeout')}s)")


def _number(value: Any) -> str:
    """``2.0`` as ``2``, ``600.0`` as ``600``; anything else (``2g``) as it is."""
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return str(value)


def _attempt_bar(console: Console) -> Progress:
    """A transient bar counting attempts, with the elapsed time."""
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                    TextColumn("{task.completed} attempts"), TimeElapsedColumn(),
                    console=console, transient=True)


class _Bar:
    """One transient attempt bar, started with its search and stopped with it."""

    console: Console
    _progress: Progress | None = None
    _task: TaskID | None = None

    def _start_bar(self, description: str, total: int | None = None) -> None:
        self._progress = _attempt_bar(self.console)
        self._progress.start()
        self._task = self._progress.add_task(description, total=total)

    def _update(self, **fields) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, **fields)

    def _stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
        self._progress = None


class RunIdLine(SearchObserver):
    """The search run's id on stderr as soon as it exists, ``--quiet`` or not: a search killed
    at any moment can be continued with ``--resume``."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker

    def on_search_start(self, context: SearchContext) -> None:
        run_id = self.tracker.parent_run_id
        if run_id:
            print(f"search run {run_id} (if it is cut: the same command with --resume "
                  f"{run_id}, or --resume last)", file=sys.stderr, flush=True)


class RichProgress(_Bar, SearchObserver):
    """Shows each attempt as it finishes and the leaderboard at the end."""

    def __init__(self, console: Console | None = None, started: float | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._ctx: SearchContext | None = None
        self._started = time.perf_counter() if started is None else started

    def on_phase(self, phase: str) -> None:
        """Each step outside the loop, with the seconds since the command started, on a
        terminal (a pipe or a log keeps its lines for what happened, not what is under way)."""
        if self.console.is_terminal:
            self.console.print(f"[dim]{time.perf_counter() - self._started:5.1f}s[/] {phase} "
                               "...", highlight=False)

    def on_search_start(self, context: SearchContext) -> None:
        self._ctx = context
        ds, metric = context.dataset, context.metric
        self.console.print(f"[bold]{ds.describe()}[/]")
        self.console.print(
            f"metric {metric.name} ({metric.direction}), {context.n_splits}-fold CV, trivial "
            f"baseline {context.baseline_score:.4f}; proposer {context.proposer_name}; "
            + _what_runs(context.trainers, context.recorded))
        jobs = context.recorded.get("n_jobs")
        budget = context.recorded.get("budget_seconds")
        workers = (f"one candidate at a time, one container per fold ({jobs} at a time)"
                   if "sandbox" in context.recorded
                   else f"{jobs} worker(s), single-threaded models")
        self.console.print(workers
                           + (f"; time budget {budget:.0f}s for the search" if budget else ""))
        if context.briefing is not None:
            self._print_briefing(context.briefing)
        self._start_bar("seeding")

    def _print_briefing(self, briefing: Briefing) -> None:
        colour = {"critical": "red", "warning": "yellow", "info": "dim"}
        self.console.print(f"cv scheme {briefing.cv_scheme} ({briefing.cv_reason})")
        for f in briefing.findings:
            action = f" [bold]-> {f.action}[/]" if f.action else ""
            self.console.print(f"  [{colour[f.severity]}]{f.severity:<8}[/] {f.check}: "
                               f"{f.message}{action}")
        if not briefing.findings:
            self.console.print("  no leakage findings")

    _best: AttemptRecord | None = None

    def on_attempt_start(self, index: int, candidate: SolutionCandidate, phase: str) -> None:
        trainer = getattr(candidate, "trainer", "?")
        self._update(description=f"{phase} #{index}: {trainer}" + self._best_so_far()
                     + self._time_left(), refresh=True)

    def _best_so_far(self) -> str:
        best = self._best
        return "" if best is None else f"; best {best.metric} {best.score:.4f} (#{best.index})"

    def _time_left(self) -> str:
        deadline = self._ctx.deadline if self._ctx is not None else None
        if deadline is None:
            return ""
        return f"; {max(0.0, deadline - time.perf_counter()):.0f}s left"

    def on_attempt_end(self, record: AttemptRecord) -> None:
        style = STYLE[record.status]
        score = "failed" if record.failed else f"{record.score:.4f} ±{record.score_std:.4f}"
        if record.pruned is not None:
            folds = len(record.fold_scores)
            score = f"{record.score:.4f} ({folds} folds)" if folds else "- (no fold done)"
        reason = plain_markup(record.verdict.reason) if not record.verdict.valid else ""
        self.console.print(
            f"  {record.index:>3} {plain_markup(record.candidate.title[:24]):<24} "
            f"{record.metric}={score:<18} [{style}]{record.status:<8}[/] fit "
            f"{record.fit_seconds:5.1f}s  [dim]{reason}{' restored' if record.restored else ''}[/]")
        if record.verdict.valid and (self._best is None or record.utility > self._best.utility):
            self._best = record
        self._update(advance=1, description="searching" + self._best_so_far()
                     + self._time_left(), refresh=True)

    def on_search_end(self, run: EngineeringRun) -> None:
        self._stop()
        table = Table(title=f"leaderboard: {attempt_counts(run)} ({plain_markup(run.stop_reason)}"
                            f"; {run.wall_seconds:.0f}s)", show_lines=False)
        for col in ("#", "attempt", "trainer", f"cv {run.metric}", "status", "fit s"):
            table.add_column(col)
        for rank, a in enumerate(run.leaderboard()[:10], start=1):
            table.add_row(str(rank), str(a.index), plain_markup(a.candidate.title),
                          "-" if a.failed or not a.fold_scores else f"{a.score:.4f}",
                          f"[{STYLE[a.status]}]{a.status}[/]", f"{a.fit_seconds:.1f}")
        self.console.print(table)

    def on_search_error(self, error: BaseException) -> None:
        self._stop()


class ArmProgress(_Bar, SearchObserver):
    """Compact progress for the many searches of a comparison: one transient bar per search."""

    def __init__(self, console: Console | None = None, total: int | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.total = total
        self._best: float | None = None
        self._name = ""

    def on_search_start(self, context: SearchContext) -> None:
        self._best, self._name = None, f"{context.proposer_name} s{context.search.seed}"
        self._start_bar(self._name, self.total)

    def on_attempt_end(self, record: AttemptRecord) -> None:
        if record.verdict.valid and (self._best is None or record.utility > self._best):
            self._best = record.utility
        best = "" if self._best is None else \
            f" best {self._best if record.greater_is_better else -self._best:.4f}"
        self._update(advance=1, description=f"{self._name}{best}")

    def on_search_end(self, run: EngineeringRun) -> None:
        self._stop()

    def on_search_error(self, error: BaseException) -> None:
        self._stop()


def attempt_counts(run: EngineeringRun) -> str:
    """Where the attempts came from: the seed candidates every search starts with (the
    portfolio, each trainer's defaults), the proposer's own (``--max-iterations`` counts only
    these), the ensemble step's."""
    phases = [a.phase for a in run.attempts]
    parts = [f"{phases.count('seed')} seed candidates", f"{phases.count('reflect')} proposed"]
    if "ensemble" in phases:
        parts.append(f"{phases.count('ensemble')} from the ensemble step")
    return ", ".join(parts)
