"""One honest search, in order: seal the holdout, brief, build the proposer, run the loop, score
the holdout, then register. The only place that holds both the loop and the holdout."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mlflow_agentic.core.observer import Observers
from mlflow_agentic.core.settings import SearchSettings, folds_for
from mlflow_agentic.core.tracker import Tracker
from mlflow_agentic.data import Dataset
from mlflow_agentic.data.split import Holdout, check_holdout_fraction, seal_holdout
from mlflow_agentic.engine import AgenticAutoML, EngineeringRun, SearchObserver
from mlflow_agentic.engine.search.steps import combining_steps
from mlflow_agentic.frontdoor.briefing import Briefing, build_briefing
from mlflow_agentic.frontdoor.refit_full import serve_on_all_rows
from mlflow_agentic.proposers.base import CandidateProposer
from mlflow_agentic.scoring import HoldoutReport, HoldoutScorer, score_on_holdout
from mlflow_agentic.verify import DeterministicVerifier

FINISH_SECONDS = 1.0
FINISH_SHARE = 0.03
"""Kept back from a time budget for what follows the loop (model logging, the evaluator on the
holdout, the registry gate, plots): 1 s + 3% (docs/performance.md has the measurements). A
model over 30 MB is the loop's to plan for (``engine.search.budget.LOG_SECONDS_PER_MB``);
diagnostics that would not fit are skipped and say so."""
FINISH_PER_ROW = 1.5e-5
"""And per row of the file beyond ``FINISH_FREE_ROWS``: the holdout rows logged and scored,
the data profile (21 s at 1.4M rows)."""
FINISH_FREE_ROWS = 50_000
"""Rows the fixed reserve already covers: the recording's time is flat up to about this many
rows (docs/performance.md)."""
FINISH_PER_COLUMN = 0.004
"""And per column: the model's signature and input example, the data profile, the holdout
rows."""
REGISTER_SECONDS = 1.5
"""What registration and the last tags need after the diagnostics."""
MIN_LOOP_SECONDS = 1.0
"""The least loop worth starting: with less, a wide file's folds may not even be preprocessed
before the deadline, and the attempts it starts are only cut."""


@dataclass
class SplitOptions:
    time_column: str | None = None
    group_column: str | None = None
    holdout_fraction: float | None = None
    post_outcome_columns: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.holdout_fraction is not None:
            check_holdout_fraction(self.holdout_fraction)
        if isinstance(self.post_outcome_columns, str):  # "a,b" as on the command line
            object.__setattr__(self, "post_outcome_columns", tuple(
                c.strip() for c in self.post_outcome_columns.split(",") if c.strip()))


@dataclass
class SearchResult:
    """A finished search: the engine's run, the briefing, the holdout report; and, when it was
    tracked, where MLflow has it."""

    run: EngineeringRun
    briefing: Briefing
    holdout: HoldoutReport
    train_rows: int
    run_id: str | None = None
    """The search (parent) run."""
    model_uri: str | None = None
    model_version: Any = None
    """The registered ``ModelVersion`` (None when nothing was registered)."""
    alias: str | None = None
    alias_note: str = ""
    """What became of the alias: moved to this version, or kept on a better one."""

    def summary(self) -> str:
        return f"{self.run.summary()}\n{self.holdout.line()}"

    def tracked(self, tracker: Tracker) -> SearchResult:
        """This result with where ``tracker`` recorded it."""
        self.run_id, self.model_uri = tracker.parent_run_id, tracker.model_uri
        self.model_version, self.alias = tracker.model_version, tracker.alias
        self.alias_note = tracker.alias_note
        return self


@dataclass
class SealedTask:
    """The fixed part of a search: the sealed holdout and the briefing of the training rows.

    One ``SealedTask`` can serve many searches (a comparison of proposers): each then sees the
    same training rows, the same findings and exclusions, and is scored on the same holdout.
    """

    train: Dataset
    holdout: Holdout
    briefing: Briefing

    @property
    def dataset(self):
        """The training rows as the search sees them (flagged columns excluded)."""
        return self.briefing.dataset


def seal(dataset, *, split: SplitOptions | None = None, cv: int = 5, cv_scheme: str = "auto",
         random_state: int = 0, keep_flagged_columns: bool = False,
         large_rows: int = 0) -> SealedTask:
    """Seal the holdout, then brief the training rows (profile, leakage findings, CV advice)
    on the folds the search will use (``folds_for``: fewer from ``large_rows`` rows)."""
    split = split or SplitOptions()
    train, holdout = seal_holdout(
        dataset, time_column=split.time_column, group_column=split.group_column,
        holdout_fraction=split.holdout_fraction,
        post_outcome_columns=tuple(split.post_outcome_columns), random_state=random_state)
    briefing = build_briefing(train, cv=folds_for(cv, large_rows, train.n_rows),
                              cv_scheme=cv_scheme, random_state=random_state,
                              keep_flagged_columns=keep_flagged_columns)
    briefing.recipe = {
        "source": dataset.source, "target": dataset.target, "task": dataset.task,
        "split": dataclasses.asdict(split) | {"post_outcome_columns": list(
            split.post_outcome_columns)},
        "cv": cv if isinstance(cv, int) else None, "cv_scheme": cv_scheme,
        "random_state": random_state, "keep_flagged_columns": keep_flagged_columns,
        "large_rows": large_rows,
        "rows": holdout.positions()}
    return SealedTask(train, holdout, briefing)


def run_search(
    dataset,
    make_proposer: Callable[[], CandidateProposer],
    settings: SearchSettings | None = None,
    *,
    split: SplitOptions | None = None,
    verifier: DeterministicVerifier | None = None,
    keep_flagged_columns: bool = False,
    tracker: Tracker | None = None,
    observers: Sequence[SearchObserver] = (),
    started: float | None = None,
    restored=None,
    sandbox=None,
    **changes,
) -> SearchResult:
    """Seal, brief, search, score, register. ``make_proposer`` is called after the holdout is
    sealed, so no proposer ever exists while the holdout rows are in reach.

    ``settings`` (or its field names as keywords). Its ``time_budget`` covers the whole job
    from ``started`` (a ``time.perf_counter()`` value; default: now): sealing, the search, the
    refit, holdout scoring and registration. ``restored``: a killed search's finished attempts
    by index (``engine.restore``), to resume it. ``sandbox``: where code-mode candidates run.
    """
    started = time.perf_counter() if started is None else started
    settings = SearchSettings.of(settings, **changes)
    Observers(observers).phase("sealing the holdout, briefing the training rows")
    task = seal(dataset, split=split, cv=settings.cv, cv_scheme=settings.cv_scheme,
                random_state=settings.seed, keep_flagged_columns=keep_flagged_columns,
                large_rows=settings.large_rows)
    loop_seconds = loop_budget(settings.time_budget, started, tracker is not None,
                               dataset.n_rows, len(dataset.columns))
    finish_by = (None if settings.time_budget is None
                 else started + settings.time_budget - REGISTER_SECONDS)
    return search_sealed(task, make_proposer, settings, verifier=verifier, tracker=tracker,
                         observers=observers, finish_by=finish_by, restored=restored,
                         sandbox=sandbox, loop_seconds=loop_seconds)


def loop_budget(total: float | None, started: float, tracked: bool,
                n_rows: int = 0, n_columns: int = 0) -> float | None:
    """What is left of ``total`` for the loop (refit included): the time already spent, and
    what tracking needs after the loop (logging the model, registering, plots, the holdout
    rows and their scores: more on a big file), kept back. Under ``MIN_LOOP_SECONDS`` left,
    none: attempts started then would only be cut, past the budget."""
    if total is None:
        return None
    reserve = (FINISH_SECONDS + FINISH_SHARE * total
               + FINISH_PER_ROW * max(n_rows - FINISH_FREE_ROWS, 0)
               + FINISH_PER_COLUMN * n_columns if tracked else 0.0)
    left = total - (time.perf_counter() - started) - reserve
    return left if left >= MIN_LOOP_SECONDS else 0.0


def search_sealed(
    task: SealedTask,
    make_proposer: Callable[[], CandidateProposer],
    settings: SearchSettings | None = None,
    *,
    verifier: DeterministicVerifier | None = None,
    tracker: Tracker | None = None,
    observers: Sequence[SearchObserver] = (),
    finish_by: float | None = None,
    restored=None,
    sandbox=None,
    loop_seconds: float | None = None,
    **changes,
) -> SearchResult:
    """Search the training rows of ``task``, score every attempt on its holdout, register.

    ``settings.cv`` may be a fold count (the briefing's scheme) or fixed splits shared between
    searches. ``finish_by`` (a ``time.perf_counter()`` value): holdout diagnostics that would
    end later are skipped (a time budget). ``loop_seconds``: the loop's share of
    ``settings.time_budget`` (``loop_budget``; default: all of it).
    """
    settings = SearchSettings.of(settings, **changes)
    briefing = task.briefing
    scorer = HoldoutScorer(task.holdout, briefing.dataset.classes)
    all_observers: list[Any] = [scorer, *observers]  # the tracker is one too (its hooks)
    if tracker is not None:
        tracker.expect_finish()
        all_observers.insert(0, tracker)
    automl = AgenticAutoML(make_proposer(), settings.replace(cv_scheme=briefing.cv_scheme),
                           verifier=verifier, observers=all_observers, briefing=briefing,
                           extra_X=task.holdout.dataset.X,  # features only: labels stay here
                           restored=restored, sandbox=sandbox,
                           after_loop=combining_steps(settings),
                           loop_seconds=loop_seconds)
    run = automl.solve(briefing.dataset)
    told = Observers(observers)
    try:
        told.phase("scoring every attempt on the sealed holdout")
        report = score_on_holdout(run, briefing.dataset, task.holdout, scorer)
        if settings.refit_full:  # after the holdout has spoken: it scored the model above
            if run.model is not None:
                told.phase("refitting the selected recipe on every labelled row")
            run.served_note = serve_on_all_rows(run, briefing.dataset, task.holdout,
                                                automl.pool, settings.seed,
                                                automl.budget.refit_full_by())
        if tracker is not None:
            told.phase("recording: the model, the holdout's diagnostics, the registry")
            tracker.finish(run, report, task.holdout, deadline=finish_by)
    except BaseException as exc:
        if tracker is not None:
            tracker.on_search_error(exc)
        raise
    return SearchResult(run, briefing, report, task.train.n_rows)


__all__ = ["Holdout", "SealedTask", "SearchResult", "SearchSettings", "SplitOptions", "run_search",
           "seal", "search_sealed"]
