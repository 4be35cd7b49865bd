"""One honest search, in order: seal the holdout, brief, build the proposer, run the loop, score
the holdout, then register. The only place that holds both the loop and the holdout."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.deadline import Deadline
from mlflow_agentic.core.observer import Observers
from mlflow_agentic.core.settings import SearchSettings, folds_for
from mlflow_agentic.core.tracker import Tracker
from mlflow_agentic.data import Dataset
from mlflow_agentic.data.split import Holdout, check_holdout_fraction, seal_holdout
from mlflow_agentic.engine import AgenticAutoML, EngineeringRun, SearchObserver
from mlflow_agentic.engine.search.reserves import loop_deadline, recording_deadline
from mlflow_agentic.engine.search.steps import combining_steps
from mlflow_agentic.frontdoor.briefing import Briefing, build_briefing
from mlflow_agentic.frontdoor.refit_full import serve_on_all_rows
from mlflow_agentic.proposers.base import CandidateProposer
from mlflow_agentic.scoring import HoldoutReport, HoldoutScorer, score_on_holdout
from mlflow_agentic.verify import DeterministicVerifier

if TYPE_CHECKING:
    from mlflow_agentic.engine.search.restore import Restored
    from mlflow_agentic.sandbox.runners import Sandbox


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
    def dataset(self) -> Dataset:
        """The training rows as the search sees them (flagged columns excluded)."""
        return self.briefing.dataset


def seal(dataset: Dataset, *, split: SplitOptions | None = None, cv: int = 5,
         cv_scheme: str = "auto", random_state: int = 0, keep_flagged_columns: bool = False,
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
    dataset: Dataset,
    make_proposer: Callable[[], CandidateProposer],
    settings: SearchSettings | None = None,
    *,
    split: SplitOptions | None = None,
    verifier: DeterministicVerifier | None = None,
    keep_flagged_columns: bool = False,
    tracker: Tracker | None = None,
    observers: Sequence[SearchObserver] = (),
    started: float | None = None,
    restored: Mapping[int, Restored] | None = None,
    sandbox: Sandbox | None = None,
    **changes,
) -> SearchResult:
    """Seal, brief, search, score, register. ``make_proposer`` is called after the holdout is
    sealed, so no proposer ever exists while the holdout rows are in reach.

    ``settings`` (or its field names as keywords). Its ``time_budget`` covers the whole job
    from ``started`` (a ``time.perf_counter()`` value; default: now): sealing, the search, the
    refit, holdout scoring and registration. ``restored``: a killed search's finished attempts
    by index (``engine.restore``), to resume it. ``sandbox``: where code-mode candidates run.
    """
    settings = SearchSettings.of(settings, **changes)
    deadline = Deadline.starting(settings.time_budget, started)
    Observers(observers).phase("sealing the holdout, briefing the training rows")
    task = seal(dataset, split=split, cv=settings.cv, cv_scheme=settings.cv_scheme,
                random_state=settings.seed, keep_flagged_columns=keep_flagged_columns,
                large_rows=settings.large_rows)
    return search_sealed(task, make_proposer, settings, verifier=verifier, tracker=tracker,
                         observers=observers, deadline=deadline, restored=restored,
                         sandbox=sandbox)


def search_sealed(
    task: SealedTask,
    make_proposer: Callable[[], CandidateProposer],
    settings: SearchSettings | None = None,
    *,
    verifier: DeterministicVerifier | None = None,
    tracker: Tracker | None = None,
    observers: Sequence[SearchObserver] = (),
    deadline: Deadline | None = None,
    restored: Mapping[int, Restored] | None = None,
    sandbox: Sandbox | None = None,
    **changes,
) -> SearchResult:
    """Search the training rows of ``task``, score every attempt on its holdout, register.

    ``settings.cv`` may be a fold count (the briefing's scheme) or fixed splits shared between
    searches. ``deadline``: the command's, made when it started (default: ``time_budget`` from
    now); the loop gets it less the recording after it (``reserves.loop_deadline``), the
    holdout diagnostics less the registration (``reserves.recording_deadline``).
    """
    settings = SearchSettings.of(settings, **changes)
    deadline = deadline or Deadline.starting(settings.time_budget)
    briefing = task.briefing
    loop = loop_deadline(deadline, tracker is not None,
                         task.train.n_rows + task.holdout.n_rows, len(briefing.dataset.columns))
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
                           deadline=loop)
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
                                                automl.budget.full_refit_end())
        if tracker is not None:
            told.phase("recording: the model, the holdout's diagnostics, the registry")
            tracker.finish(run, report, task.holdout, deadline=recording_deadline(deadline))
    except BaseException as exc:
        if tracker is not None:
            tracker.on_search_error(exc)
        raise
    return SearchResult(run, briefing, report, task.train.n_rows)


__all__ = ["Holdout", "SealedTask", "SearchResult", "SearchSettings", "SplitOptions", "run_search",
           "seal", "search_sealed"]
