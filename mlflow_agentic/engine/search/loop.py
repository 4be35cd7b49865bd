"""``AgenticAutoML``: propose -> cross-validate -> verify -> reflect -> select -> refit.

The loop owns the budget (``max_iterations``, ``patience``, ``max_attempts``, ``time_budget``:
``engine.budget``); proposers only suggest. Every score it ranks is one it computed itself on
fixed CV splits. The folds of a batch of candidates run on ``n_jobs`` worker processes
(``engine.parallel``); results are recorded in proposal order, so a seeded search gives the
same leaderboard with any ``n_jobs``. Steps given in ``after_loop`` (the search's ensemble:
``engine.steps``) add candidates before selection.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mlflow_agentic.core.deadline import Deadline
from mlflow_agentic.core.metrics import resolve_metric
from mlflow_agentic.core.observer import Observers, SearchContext, SearchObserver
from mlflow_agentic.core.protocol import CandidateProposer, CodeModeProposer, proposer_name
from mlflow_agentic.core.settings import SearchSettings
from mlflow_agentic.core.types import (
    AttemptRecord,
    EngineeringRun,
    SolutionCandidate,
    StopKind,
    StopReason,
)
from mlflow_agentic.engine.after.refit import bagged, refit
from mlflow_agentic.engine.after.selection import (
    affordable,
    bag_worthy,
    combination_wins,
    select,
    ties,
)
from mlflow_agentic.engine.evaluate.code import dropped_columns, refit_code, reviewed, submitted
from mlflow_agentic.engine.evaluate.cv import make_splits, resolve_scheme
from mlflow_agentic.engine.evaluate.evaluation import baseline_model, cross_validate
from mlflow_agentic.engine.evaluate.folds import FoldData
from mlflow_agentic.engine.evaluate.outcome import Outcome
from mlflow_agentic.engine.search.attempts import attempt_record, plan_attempt
from mlflow_agentic.engine.search.batch import BatchRunner
from mlflow_agentic.engine.search.budget import LoopBudget, restart_for_refit
from mlflow_agentic.engine.search.near_perfect import verifier_for
from mlflow_agentic.engine.search.reserves import full_refit_share
from mlflow_agentic.engine.search.restore import Restored
from mlflow_agentic.engine.workers.parallel import WorkerPool, resolve_n_jobs, workers_that_fit
from mlflow_agentic.trainers.registry import resolve_trainers
from mlflow_agentic.verify.verifier import DeterministicVerifier

if TYPE_CHECKING:
    import pandas as pd

    from mlflow_agentic.data import Dataset
    from mlflow_agentic.engine.evaluate.pruning import FoldPruner
    from mlflow_agentic.frontdoor.briefing import Briefing
    from mlflow_agentic.sandbox.runners import Sandbox


class AgenticAutoML:
    """Search for a verified model. ``solve(dataset)`` returns an ``EngineeringRun``.

    Seeds from ``proposer.propose_initial`` are all evaluated (one batch); then up to
    ``max_iterations`` reflection attempts, in batches of the proposer's ``batch_size``,
    stopping early after ``patience`` attempts without a verified improvement.
    ``max_attempts`` (seeds included) and ``time_budget`` (wall seconds, the refit included: the
    search stops early enough to refit the best in time, and cuts attempts still running when
    the budget is spent) bound a search the same way for every proposer. ``after_loop`` steps
    (``engine.steps.EnsembleStep``) add engine-made candidates. ``extra_X``: features (no
    labels) of rows every fold model predicts, for observers (the holdout scorer). ``solve``
    takes training rows only: there is deliberately no way to hand it holdout labels.
    """

    def __init__(self, proposer: CandidateProposer, settings: SearchSettings | None = None,
                 *, verifier: DeterministicVerifier | None = None, sandbox: Sandbox | None = None,
                 observers: Iterable[SearchObserver] = (), briefing: Briefing | None = None,
                 extra_X: pd.DataFrame | None = None, after_loop: Sequence = (),
                 restored: Mapping[int, Restored] | None = None,
                 deadline: Deadline | None = None, **changes: object) -> None:
        """``settings`` (or its field names as keywords: ``max_iterations=4, cv=3``...).
        ``restored``: the finished attempts of a killed search, by index, to resume it.
        ``sandbox``: where code-mode candidates run (``mlflow_agentic.sandbox``).
        ``deadline``: the loop's, its refit included (default: ``time_budget`` from ``solve``)."""
        if not isinstance(proposer, CandidateProposer):
            raise TypeError(f"{type(proposer).__name__} is not a proposer: subclass "
                            "mlflow_agentic.CandidateProposer (propose_initial, propose_next)")
        self.proposer = proposer
        self.settings = SearchSettings.of(settings, **changes)
        self.given_verifier = verifier  # None: solve makes one for the data (verifier_for)
        self.verifier = verifier or DeterministicVerifier(self.settings.margin)
        self.n_jobs = resolve_n_jobs(self.settings.n_jobs,
                                     local=self.settings.backend_address is None)
        self.extra_X = extra_X
        self.observers = Observers(observers)
        self.briefing = briefing
        self.restored = dict(restored or {})
        self.sandbox = sandbox
        self.after_loop = list(after_loop)
        self.budget = LoopBudget(self.settings, self.restored, bool(self.after_loop), deadline)
        self.oof: dict[int, np.ndarray] = {}
        """Out-of-fold predictions of the verified attempts (what the ensemble blends)."""
        self.extras: dict[int, np.ndarray] = {}
        self.runner: BatchRunner | None = None
        self.pool = WorkerPool(1)
        """The search's workers (``solve`` starts them; a refit after it asks ``refit_pool``)."""

    def solve(self, dataset: Dataset) -> EngineeringRun:
        """Run the search on ``dataset`` (all of whose rows are training rows)."""
        self.budget.start()
        self.oof, self.extras = {}, {}
        context, splits = self._context(dataset)
        s = self.settings
        self.verifier = self.given_verifier or verifier_for(dataset, splits, context)
        self.budget.workers = self.n_jobs
        self.budget.full_refit = full_refit_share(
            dataset.n_rows, 0 if self.extra_X is None else len(self.extra_X))
        self.pool = pool = WorkerPool(self.n_jobs, s.backend, s.backend_address)
        if self.sandbox is None:  # code mode fits in the sandbox, not in these workers
            pool.warm_up()  # they import the scientific stack while the baseline and tracking run
        self.runner = BatchRunner(FoldData.for_pool(dataset, splits, self.extra_X, pool),
                                  pool, context.metric,
                                  _pruner(self.settings), s.seed, self.sandbox)
        try:  # a failure from here on ends the observers' records too (FAILED, with why)
            self.observers.search_start(context)
            run = self._search(context)
            run.wall_seconds = self.budget.elapsed()
            run.preprocess_seconds = self.runner.folds.preprocess_seconds
            self.observers.search_end(run)
        except BaseException as exc:
            self.observers.error(exc)
            raise
        return run

    def _context(self, dataset: Dataset) -> tuple[SearchContext, list]:
        """What is fixed for the whole search: metric, trainers, folds, the baseline."""
        s = self.settings
        metric = resolve_metric(s.metric, dataset.task)
        scheme, why = (resolve_scheme(dataset, s.cv_scheme) if isinstance(s.cv, int)
                       else (getattr(s.cv, "scheme", type(s.cv).__name__),
                             getattr(s.cv, "reason", "splitter given")))
        if self.briefing is not None and scheme == self.briefing.cv_scheme:
            why = self.briefing.cv_reason  # the briefing resolved it: its reason, not "user"
        splits = make_splits(dataset, s.folds_for(dataset.n_rows), s.seed, scheme,
                             known=getattr(self.briefing, "folds", None))
        if s.backend_address is None and self.n_jobs > 1:
            self.n_jobs, note = workers_that_fit(
                self.n_jobs, int(dataset.frame.memory_usage(deep=True).sum()))
            if note:
                warnings.warn(note, stacklevel=3)
        baseline = cross_validate(lambda: baseline_model(dataset.task), dataset, splits, metric)
        context = SearchContext(
            dataset=dataset, metric=metric, trainers=tuple(resolve_trainers(s.trainers,
                                                                            dataset.task)),
            baseline_score=baseline.mean, baseline_fold_scores=baseline.fold_scores,
            n_splits=len(splits), search=s, proposer_name=proposer_name(self.proposer),
            cv_reason=why, recorded=recorded_settings(self), cv_scheme=scheme,
            briefing=self.briefing, emit=self.observers.emit,
            deadline=self.budget.loop.end)
        return context, splits

    @property
    def batches(self) -> BatchRunner:
        """The batch runner of the search in progress (made when its folds are)."""
        assert self.runner is not None, "the search's folds are made before any batch"
        return self.runner

    def _search(self, ctx: SearchContext) -> EngineeringRun:
        s = self.settings
        history: list[AttemptRecord] = []
        if len(self.after_loop) == 1:  # the ensemble alone: its members are known as it runs
            standing = getattr(self.after_loop[0], "standing", None)
            self.budget.members_now = standing and standing(self, ctx, history)
        self.proposer.start(ctx)
        seeds = self.proposer.propose_initial(ctx.dataset, list(ctx.trainers))
        if isinstance(seeds, SolutionCandidate) or seeds is None:
            seeds = [seeds] if seeds is not None else []
        if s.max_attempts is not None:
            seeds = list(seeds)[: s.max_attempts]
        stop = self.budget.spent(len(history))
        if not stop:
            self._run_batch(ctx, history, list(seeds), "seed")
        best = _best(history)
        iterations, patience_left = 0, s.patience
        while not stop:
            stop = (self.budget.exhausted(iterations, patience_left)
                    or self.budget.spent(len(history)))
            if stop:
                break
            candidates, stop = self._propose(ctx, history, iterations, patience_left)
            if not candidates:
                break
            for record in self._run_batch(ctx, history, candidates, "reflect"):
                iterations += 1
                if record.verdict.valid and (best is None or
                                             ctx.metric.better(record.score, best.score)):
                    best, patience_left = record, s.patience
                elif patience_left is not None:
                    patience_left -= 1
        return self._conclude(ctx, history, best, stop, iterations)

    def _conclude(self, ctx: SearchContext, history: list[AttemptRecord],
                  best: AttemptRecord | None, stop: StopReason | None,
                  iterations: int) -> EngineeringRun:
        """The steps after the loop, the selection (the proposer's, when it submits), the
        refit of the selected attempt."""
        s = self.settings
        if s.refit and self.sandbox is None:  # code mode refits in its sandbox
            restart_for_refit(self.pool, self.budget)
        why = ""
        for step in self.after_loop:
            record = step(self, ctx, history)
            if record is not None:
                wins, reason = combination_wins(record, best, history)
                if wins:
                    best, why = record, reason
        top = best
        best = select(history, top, s.selection)
        selection, note, model, refit_seconds = s.selection, "", None, 0.0
        if isinstance(self.proposer, CodeModeProposer):  # the submitter chooses; checked here
            best, note = submitted(self.proposer, history, top)
            selection = "submitter"
        elif s.refit and best is not None:
            best, note, model = affordable(
                best, history, self.budget.refit_fits,
                lambda r: bagged(r, history, self.batches.folds, ctx.dataset), prefer_bag=s.bag)
        bag = model is not None  # the fold models' average, already fitted: no refit
        if s.refit and not bag:
            in_sandbox = sandbox_refit(self.sandbox, self.batches.folds.dataset)
            model, refit_seconds, best = refit(history, best, ctx.dataset, self.pool, s.seed,
                                               in_sandbox)
        return EngineeringRun(
            attempts=history, best_candidate=best.candidate if best else None,
            best_score=best.score if best else None, model=model, metric=ctx.metric.name,
            baseline_score=ctx.baseline_score, n_iterations=iterations,
            greater_is_better=ctx.metric.greater_is_better, best_attempt=best,
            stop=stop, dataset_name=ctx.dataset.name, task=ctx.dataset.task,
            refit_seconds=refit_seconds, selection=selection, top_attempt=top,
            ties=tuple(ties(history, top)),
            selection_note="; ".join(n for n in (why if best is top else "", note) if n),
            bagged=bag, served_rows=ctx.dataset.n_rows if model is not None else 0)

    def _propose(self, ctx: SearchContext, history: list[AttemptRecord], iterations: int,
                 patience_left: int | None) -> tuple[list, StopReason | None]:
        """Up to one batch of candidates, within the iteration and attempt budgets."""
        n = self.budget.batch(self.proposer.batch_size, iterations, len(history), patience_left)
        candidates: list = []
        for _ in range(n):
            try:
                candidate = self.proposer.propose_next(ctx.dataset, tuple(history),
                                                       list(ctx.trainers))
            except Exception as exc:  # a broken proposer ends the search, never loses attempts
                warnings.warn(f"proposer failed, ending the search: {exc}", stacklevel=2)
                return candidates, StopReason(StopKind.PROPOSER_ERROR, f"proposer failed: "
                                              f"{type(exc).__name__}: {exc}")
            if candidate is None:  # the proposer says why (cost cap, endpoint), or it is done
                if candidates:
                    return candidates, None
                return candidates, self.proposer.stop_reason or StopReason(
                    StopKind.EXHAUSTED, "proposer has no more candidates")
            candidates.append(candidate)
        return candidates, None

    def _run_batch(self, ctx: SearchContext, history: list[AttemptRecord], candidates: list,
                   phase: str) -> list[AttemptRecord]:
        """Evaluate candidates together; each record is appended and announced in order."""
        first = len(history) + 1
        plans = [plan_attempt(candidate, first + k, ctx.dataset, ctx.trainers, self.sandbox,
                              self.restored) for k, candidate in enumerate(candidates)]
        records: list[AttemptRecord] = []

        def started() -> None:
            for offset, plan in enumerate(plans):
                self.observers.attempt_start(first + offset, plan.candidate, phase)

        def done(i: int, outcome: Outcome) -> None:
            record = attempt_record(ctx, first + i, plans[i], outcome, phase,
                                    proposer=proposer_name(self.proposer),
                                    verifier=self.verifier, elapsed=self.budget.elapsed())
            if record.candidate.code is not None:
                record = reviewed(self.proposer, record, outcome)
            history.append(record)
            records.append(record)
            self._keep_outputs(record, outcome, history, plans[i].style)
            self.proposer.observe(record)
            if outcome.oof is not None and not record.restored:  # what a resume reads back
                self.observers.attempt_outputs(record, outcome.oof, outcome.extra)
            self.observers.attempt_end(record)
            if outcome.extra is not None:
                self.observers.attempt_predictions(record, outcome.extra)

        self.batches.run(plans, self.budget.attempts_end(), done, on_submitted=started)
        return records

    def _keep_outputs(self, record: AttemptRecord, outcome: Outcome,
                      history: list[AttemptRecord], style: str | None) -> None:
        """What later steps need of an attempt: its out-of-fold and extra-row predictions (to
        blend), the best attempts' fold models (to serve averaged), its refit's cost."""
        folds = self.batches.folds
        if record.verdict.valid and outcome.fit_seconds:  # sized before its models may go
            n = len(outcome.fold_scores) or folds.n_splits
            self.budget.note_refit_cost(record, outcome.fit_seconds, n,
                                        folds.fold_preprocess_seconds(style),
                                        folds.model_mb(record.index))
        folds.keep_models_of(bag_worthy(history), upto=record.index)
        if outcome.oof is not None and record.verdict.valid:
            self.oof[record.index] = outcome.oof
        if outcome.extra is not None:
            self.extras[record.index] = outcome.extra


def sandbox_refit(sandbox: Sandbox | None, dataset: Dataset) -> Callable[[AttemptRecord], Any]:
    """A code-mode attempt's refit: its code on every training row in a fresh container."""
    return lambda record: refit_code(sandbox, dataset, record.candidate.code or "",
                                     dropped_columns(record.candidate))


def recorded_settings(automl: AgenticAutoML) -> dict:
    """What the engine resolved from its settings, recorded on the search run over the
    settings as given (``SearchSettings.logged``): workers, the pruner, the batch size, the
    sandbox's limits, the proposer's own parameters."""
    from mlflow_agentic.engine.evaluate.pruning import FoldPruner

    s = automl.settings
    params = {"verifier_margin": automl.verifier.margin, "n_jobs": automl.n_jobs,
              "pruning": FoldPruner.describe() if s.prune else "off",
              "ensemble": bool(automl.after_loop),
              "batch_size": max(1, automl.proposer.batch_size)}
    if automl.sandbox is not None:
        params.update({"sandbox": automl.sandbox.label, **automl.sandbox.limits.tags()})
    return {**params, **automl.proposer.run_params()}


def _pruner(settings: SearchSettings) -> FoldPruner | None:
    if not settings.prune:
        return None
    from mlflow_agentic.engine.evaluate.pruning import FoldPruner

    return FoldPruner()


def _best(history: Sequence[AttemptRecord]) -> AttemptRecord | None:
    best = None
    for record in history:
        if record.verdict.valid and (best is None or record.utility > best.utility):
            best = record
    return best
