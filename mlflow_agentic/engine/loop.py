"""``AgenticAutoML``: propose -> cross-validate -> verify -> reflect -> select -> refit.

The loop owns the budget (``max_iterations``, ``patience``); proposers only suggest. Every score
it ranks is one it computed itself on fixed CV splits.
"""

from __future__ import annotations

import math
import time
import traceback
import warnings
from collections.abc import Iterable, Sequence

from mlflow_agentic.engine.cv import make_splits, resolve_scheme
from mlflow_agentic.engine.evaluation import baseline_model, cross_validate
from mlflow_agentic.engine.observer import SearchContext, SearchObserver
from mlflow_agentic.engine.types import AttemptRecord, EngineeringRun, SolutionCandidate, Verdict
from mlflow_agentic.errors import ProposerOutputError, UserInputError
from mlflow_agentic.metrics import Metric, resolve_metric
from mlflow_agentic.proposers.base import CandidateProposer, proposer_name
from mlflow_agentic.trainers.registry import get_trainer, resolve_trainers
from mlflow_agentic.verify.verifier import DeterministicVerifier


class AgenticAutoML:
    """Search for a verified model. ``solve(dataset)`` returns an ``EngineeringRun``.

    Seeds from ``proposer.propose_initial`` are all evaluated; then up to ``max_iterations``
    reflection rounds, stopping early after ``patience`` rounds without a verified improvement.
    A comparison gives every proposer the same budget instead: ``max_attempts`` (seeds
    included) and/or ``time_budget`` seconds of wall time (proposal time included; checked
    before each proposal, so the attempt under way finishes), with ``patience=None`` and
    ``max_iterations=None`` (no early stop).
    ``cv_scheme="auto"`` follows the data's advice (group / time / stratified K-fold).
    ``solve`` takes training rows only: there is deliberately no way to hand it a holdout.
    """

    def __init__(
        self,
        proposer: CandidateProposer,
        verifier: DeterministicVerifier | None = None,
        max_iterations: int | None = 8,
        patience: int | None = 3,
        cv: int | object = 5,
        metric: str | None = None,
        trainers: Sequence[str] | None = None,
        random_state: int = 0,
        observers: Iterable[SearchObserver] = (),
        cv_scheme: str = "auto",
        briefing=None,
        max_attempts: int | None = None,
        time_budget: float | None = None,
    ) -> None:
        if max_iterations is not None and max_iterations < 0:
            raise UserInputError(f"max_iterations must be >= 0, got {max_iterations}")
        if patience is not None and patience < 1:
            raise UserInputError(f"patience must be >= 1, got {patience}")
        if max_attempts is not None and max_attempts < 1:
            raise UserInputError(f"max_attempts must be >= 1, got {max_attempts}")
        if time_budget is not None and not time_budget > 0:
            raise UserInputError(f"time_budget must be > 0 seconds, got {time_budget}")
        if max_iterations is None and max_attempts is None and time_budget is None:
            raise UserInputError("an unbounded search: give max_iterations, max_attempts or "
                                 "time_budget")
        self.proposer = proposer
        self.verifier = verifier or DeterministicVerifier()
        self.max_iterations = None if max_iterations is None else int(max_iterations)
        self.patience = None if patience is None else int(patience)
        self.max_attempts = None if max_attempts is None else int(max_attempts)
        self.time_budget = None if time_budget is None else float(time_budget)
        self._started = 0.0
        self.cv = cv
        self.metric = metric
        self.trainers = list(trainers) if trainers is not None else None
        self.random_state = int(random_state)
        self.observers = list(observers)
        self.cv_scheme = cv_scheme
        self.briefing = briefing

    # ---- public -----------------------------------------------------------------------------
    def solve(self, dataset) -> EngineeringRun:
        """Run the search on ``dataset`` (all of whose rows are training rows)."""
        started = self._started = time.perf_counter()
        metric = resolve_metric(self.metric, dataset.task)
        trainers = resolve_trainers(self.trainers, dataset.task)
        scheme, why = (resolve_scheme(dataset, self.cv_scheme) if isinstance(self.cv, int)
                       else (getattr(self.cv, "scheme", type(self.cv).__name__),
                             getattr(self.cv, "reason", "splitter given")))
        splits = make_splits(dataset, self.cv, self.random_state, scheme)
        baseline = cross_validate(lambda: baseline_model(dataset.task), dataset, splits, metric)
        context = SearchContext(
            dataset=dataset, metric=metric, trainers=tuple(trainers),
            baseline_score=baseline.mean, baseline_fold_scores=baseline.fold_scores,
            n_splits=len(splits), max_iterations=self.max_iterations, patience=self.patience,
            random_state=self.random_state, proposer_name=proposer_name(self.proposer),
            settings={"cv_scheme_reason": why, "verifier_margin": self.verifier.margin,
                      **self._budget_settings()},
            cv_scheme=scheme, briefing=self.briefing, emit=self._emit,
        )
        self._notify("on_search_start", context)
        try:
            run = self._search(context, splits)
            run.wall_seconds = time.perf_counter() - started
            self._notify("on_search_end", run)
        except BaseException as exc:
            self._notify_error(exc)
            raise
        return run

    # ---- the loop ---------------------------------------------------------------------------
    def _search(self, ctx: SearchContext, splits) -> EngineeringRun:
        dataset, metric, trainers = ctx.dataset, ctx.metric, list(ctx.trainers)
        history: list[AttemptRecord] = []
        if hasattr(self.proposer, "start"):
            self.proposer.start(ctx)

        seeds = self.proposer.propose_initial(dataset, trainers)
        if isinstance(seeds, SolutionCandidate) or seeds is None:
            seeds = [seeds] if seeds is not None else []
        stop_reason = ""
        for candidate in seeds:
            stop_reason = self._budget_spent(len(history))
            if stop_reason:
                break
            history.append(self._attempt(ctx, splits, len(history) + 1, candidate, "seed"))
        best = self._best(history, metric)

        iterations, patience_left = 0, self.patience
        while not stop_reason:
            if self.max_iterations is not None and iterations >= self.max_iterations:
                stop_reason = f"reached max_iterations={self.max_iterations}"
                break
            if patience_left is not None and patience_left <= 0:
                stop_reason = (f"patience exhausted: {self.patience} rounds without a verified "
                               "improvement")
                break
            stop_reason = self._budget_spent(len(history))
            if stop_reason:
                break
            try:
                candidate = self.proposer.propose_next(dataset, tuple(history), trainers)
            except Exception as exc:  # a broken proposer ends the search, never loses attempts
                warnings.warn(f"proposer failed, ending the search: {exc}", stacklevel=2)
                stop_reason = f"proposer failed: {type(exc).__name__}: {exc}"
                break
            if candidate is None:
                stop_reason = "proposer has no more candidates"
                break
            iterations += 1
            record = self._attempt(ctx, splits, len(history) + 1, candidate, "reflect")
            history.append(record)
            if record.verdict.valid and (best is None or metric.better(record.score, best.score)):
                best, patience_left = record, self.patience
            elif patience_left is not None:
                patience_left -= 1

        model, refit_seconds, best = self._refit(ctx, history, best)
        return EngineeringRun(
            attempts=history, best_candidate=best.candidate if best else None,
            best_score=best.score if best else None, model=model, metric=metric.name,
            baseline_score=ctx.baseline_score, n_iterations=iterations,
            greater_is_better=metric.greater_is_better, best_attempt=best,
            stop_reason=stop_reason, dataset_name=dataset.name, task=dataset.task,
            refit_seconds=refit_seconds,
        )

    def _attempt(self, ctx: SearchContext, splits, index: int, candidate, phase: str
                 ) -> AttemptRecord:
        metric, dataset = ctx.metric, ctx.dataset
        name = proposer_name(self.proposer)
        self._notify("on_attempt_start", index, candidate, phase)
        start = time.perf_counter()
        params: dict = {}
        fit_seconds = 0.0
        try:
            candidate = _check_candidate(candidate, ctx.trainers)
            trainer = get_trainer(candidate.trainer)
            params = trainer.resolve_params(dataset, candidate.params)
            result = cross_validate(
                lambda: trainer.pipeline(dataset, params, self.random_state),
                dataset, splits, metric)
            fit_seconds = result.fit_seconds
            if not math.isfinite(result.mean):
                raise FloatingPointError(
                    f"non-finite CV score {result.mean} (folds: {list(result.fold_scores)})")
            verdict = self.verifier.verify(result.mean, ctx.baseline_score,
                                           greater_is_better=metric.greater_is_better,
                                           bounded=metric.bounded, metric=metric.name)
            record = AttemptRecord(
                candidate=candidate, score=result.mean, verdict=verdict, index=index,
                phase=phase, metric=metric.name, greater_is_better=metric.greater_is_better,
                params=params, fold_scores=result.fold_scores, score_std=result.std,
                fit_seconds=fit_seconds, seconds=time.perf_counter() - start, proposer=name,
                elapsed=time.perf_counter() - self._started)
        except Exception as exc:  # recorded as data; the search goes on
            error = f"{type(exc).__name__}: {exc}"
            if not isinstance(candidate, SolutionCandidate):
                candidate = SolutionCandidate(trainer=str(getattr(candidate, "trainer", "?")),
                                              params={}, rationale=repr(candidate)[:500])
            record = AttemptRecord(
                candidate=candidate, score=metric.worst,
                verdict=Verdict(False, f"failed: {error}", float("nan")), index=index,
                phase=phase, metric=metric.name, greater_is_better=metric.greater_is_better,
                params=params, fit_seconds=fit_seconds, seconds=time.perf_counter() - start,
                error=error, traceback=traceback.format_exc(), proposer=name,
                elapsed=time.perf_counter() - self._started)
        if hasattr(self.proposer, "observe"):
            self.proposer.observe(record)
        self._notify("on_attempt_end", record)
        return record

    def _refit(self, ctx, history, best):
        """Fit the best verified candidate on all rows; if that fails, the next best."""
        ranked = sorted((a for a in history if a.verdict.valid),
                        key=lambda a: (-a.utility, a.index))
        for record in ranked:
            trainer = get_trainer(record.candidate.trainer)
            start = time.perf_counter()
            try:
                model = trainer.pipeline(ctx.dataset, record.params, self.random_state)
                model.fit(ctx.dataset.X, ctx.dataset.y)
            except Exception as exc:
                warnings.warn(f"refit of attempt {record.index} ({record.candidate.trainer}) "
                              f"failed: {exc}; trying the next verified attempt", stacklevel=2)
                continue
            return model, time.perf_counter() - start, record
        return None, 0.0, None

    def _budget_spent(self, n_attempts: int) -> str:
        """Why the shared budget stops the search now, or "" while some is left."""
        if self.max_attempts is not None and n_attempts >= self.max_attempts:
            return f"attempt budget spent: {n_attempts} of {self.max_attempts} attempts"
        if self.time_budget is not None:
            elapsed = time.perf_counter() - self._started
            if elapsed >= self.time_budget:
                return (f"time budget spent: {elapsed:.1f}s of {self.time_budget:g}s "
                        "(proposal time included)")
        return ""

    def _budget_settings(self) -> dict:
        settings: dict = {}
        if self.max_attempts is not None:
            settings["budget_attempts"] = self.max_attempts
        if self.time_budget is not None:
            settings["budget_seconds"] = self.time_budget
        return settings

    @staticmethod
    def _best(history: Sequence[AttemptRecord], metric: Metric) -> AttemptRecord | None:
        best = None
        for record in history:
            if record.verdict.valid and (best is None or metric.better(record.score, best.score)):
                best = record
        return best

    def _notify(self, hook: str, *args) -> None:
        for observer in self.observers:
            getattr(observer, hook)(*args)

    def _emit(self, hook: str, *args) -> None:
        """Optional events from proposers, to the observers that define the hook."""
        for observer in self.observers:
            method = getattr(observer, hook, None)
            if method is not None:
                method(*args)

    def _notify_error(self, exc: BaseException) -> None:
        for observer in self.observers:
            try:
                observer.on_search_error(exc)
            except Exception as inner:  # keep the original error visible
                warnings.warn(f"observer {type(observer).__name__} failed on error: {inner}",
                              stacklevel=2)


def _check_candidate(candidate, allowed: Sequence[str]) -> SolutionCandidate:
    """A proposer's output, checked: the right type, an allowed trainer, params a mapping."""
    if isinstance(candidate, dict):
        try:
            candidate = SolutionCandidate(**candidate)
        except TypeError as exc:
            raise ProposerOutputError(f"cannot read candidate {candidate!r}: {exc}") from exc
    if not isinstance(candidate, SolutionCandidate):
        raise ProposerOutputError(
            f"proposer returned {type(candidate).__name__}, expected a SolutionCandidate")
    if candidate.trainer not in allowed:
        raise ProposerOutputError(
            f"trainer {candidate.trainer!r} is not allowed in this search. "
            f"Allowed: {', '.join(allowed)}")
    return candidate
