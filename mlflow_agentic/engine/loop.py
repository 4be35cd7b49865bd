"""``AgenticAutoML``: propose -> cross-validate -> verify -> reflect -> select -> refit.

The loop owns the budget (``max_iterations``, ``patience``, ``max_attempts``, ``time_budget``);
proposers only suggest. Every score it ranks is one it computed itself on fixed CV splits. The
folds of a batch of candidates run on ``n_jobs`` worker processes (``engine.parallel``); results
are recorded in proposal order, so a seeded search gives the same leaderboard with any
``n_jobs``. After the loop, an ensemble of the verified attempts competes as one more candidate.
"""

from __future__ import annotations

import dataclasses
import math
import time
import traceback
import warnings
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from mlflow_agentic.engine.batch import BatchRunner, Outcome, Planned
from mlflow_agentic.engine.code import (
    CODE,
    code_plan,
    dropped_columns,
    refit_code,
    sandbox_artifacts,
    sandbox_tags,
    submitted,
)
from mlflow_agentic.engine.cv import make_splits, resolve_scheme
from mlflow_agentic.engine.ensemble import MAX_MEMBERS, blend, select_ensemble
from mlflow_agentic.engine.evaluation import baseline_model, cross_validate
from mlflow_agentic.engine.folds import FoldData
from mlflow_agentic.engine.observer import SearchContext, SearchObserver
from mlflow_agentic.engine.parallel import WorkerPool, resolve_n_jobs, workers_that_fit
from mlflow_agentic.engine.protocol import CandidateProposer, proposer_name
from mlflow_agentic.engine.refit import ENSEMBLE, refit
from mlflow_agentic.engine.restore import Restored
from mlflow_agentic.engine.selection import select, ties
from mlflow_agentic.engine.settings import SearchSettings
from mlflow_agentic.engine.types import (
    AttemptRecord,
    EngineeringRun,
    SolutionCandidate,
    StopKind,
    StopReason,
    Verdict,
)
from mlflow_agentic.errors import ProposerOutputError
from mlflow_agentic.metrics import resolve_metric
from mlflow_agentic.trainers.registry import get_trainer, resolve_trainers
from mlflow_agentic.verify.verifier import DeterministicVerifier

ENSEMBLE_RESERVE_SECONDS = 1.0
"""Kept back from a time budget for the ensemble selection (at most 10% of the budget), on top
of the refit's own estimate."""


class AgenticAutoML:
    """Search for a verified model. ``solve(dataset)`` returns an ``EngineeringRun``.

    Seeds from ``proposer.propose_initial`` are all evaluated (one batch); then up to
    ``max_iterations`` reflection attempts, in batches of the proposer's ``batch_size``
    (default 1), stopping early after ``patience`` attempts without a verified improvement.
    ``max_attempts`` (seeds included) and ``time_budget`` (wall seconds, the refit included: the
    search stops early enough to refit the best in time, and cuts attempts still running when
    the budget is spent) bound a search the same way for every proposer.
    ``n_jobs``: worker processes (None: the cores this process may use). ``prune``: stop a
    candidate clearly behind after its first folds. ``ensemble``: try a greedy ensemble of the
    verified attempts as a last candidate. ``extra_X``: features (no labels) of rows every fold
    model predicts, handed to observers' ``on_attempt_predictions`` (the holdout scorer).
    ``solve`` takes training rows only: there is deliberately no way to hand it holdout labels.
    """

    def __init__(self, proposer: CandidateProposer, settings: SearchSettings | None = None,
                 *, verifier: DeterministicVerifier | None = None,
                 observers: Iterable[SearchObserver] = (), briefing=None, extra_X=None,
                 restored: Mapping[int, Restored] | None = None, sandbox=None,
                 **changes) -> None:
        """``settings`` (or its field names as keywords: ``max_iterations=4, cv=3``...).
        ``restored``: the finished attempts of a killed search, by index, to resume it.
        ``sandbox``: where code-mode candidates run (``mlflow_agentic.sandbox``)."""
        self.proposer = proposer
        self.settings = SearchSettings.of(settings, **changes)
        self.verifier = verifier or DeterministicVerifier(self.settings.margin)
        self.n_jobs = resolve_n_jobs(self.settings.n_jobs,
                                     local=self.settings.backend_address is None)
        self.extra_X = extra_X
        self.observers = list(observers)
        self.briefing = briefing
        self.restored = dict(restored or {})
        self.sandbox = sandbox
        self._started = 0.0
        self._oof: dict[int, np.ndarray] = {}
        self._extras: dict[int, np.ndarray] = {}
        self._refit_estimate = 0.0
        self._best_utility: float | None = None

    # ---- public -----------------------------------------------------------------------------
    def solve(self, dataset) -> EngineeringRun:
        """Run the search on ``dataset`` (all of whose rows are training rows)."""
        started = self._started = time.perf_counter()
        self._oof, self._extras, self._refit_estimate, self._best_utility = {}, {}, 0.0, None
        s = self.settings
        metric = resolve_metric(s.metric, dataset.task)
        trainers = resolve_trainers(s.trainers, dataset.task)
        scheme, why = (resolve_scheme(dataset, s.cv_scheme) if isinstance(s.cv, int)
                       else (getattr(s.cv, "scheme", type(s.cv).__name__),
                             getattr(s.cv, "reason", "splitter given")))
        if self.briefing is not None and scheme == self.briefing.cv_scheme:
            why = self.briefing.cv_reason  # the briefing resolved it: its reason, not "user"
        splits = make_splits(dataset, s.cv, s.random_state, scheme)
        if s.backend_address is None and self.n_jobs > 1:
            self.n_jobs, note = workers_that_fit(
                self.n_jobs, int(dataset.frame.memory_usage(deep=True).sum()))
            if note:
                warnings.warn(note, stacklevel=2)
        baseline = cross_validate(lambda: baseline_model(dataset.task), dataset, splits, metric)
        context = SearchContext(
            dataset=dataset, metric=metric, trainers=tuple(trainers),
            baseline_score=baseline.mean, baseline_fold_scores=baseline.fold_scores,
            n_splits=len(splits), max_iterations=s.max_iterations, patience=s.patience,
            random_state=s.random_state, proposer_name=proposer_name(self.proposer),
            cv_reason=why,
            settings={"verifier_margin": self.verifier.margin, "selection": s.selection,
                      "n_jobs": self.n_jobs, "backend": s.backend,
                      "pruning": self._pruner_label(),
                      "ensemble": s.ensemble, "batch_size": self._batch_size(),
                      **s.budget_params(), **self._sandbox_params()},
            cv_scheme=scheme, briefing=self.briefing, emit=self._emit,
            deadline=None if s.time_budget is None else started + s.time_budget,
        )
        pool = WorkerPool(self.n_jobs, s.backend, s.backend_address)
        if self.sandbox is None:  # code mode fits in the sandbox, not in these workers
            pool.warm_up()  # they import the scientific stack while the baseline and tracking run
        self._runner = BatchRunner(FoldData(dataset, splits, self.extra_X), pool, metric,
                                   self._make_pruner(), s.random_state, self.sandbox)
        try:  # a failure from here on ends the observers' records too (FAILED, with why)
            self._notify("on_search_start", context)
            run = self._search(context, pool)
            run.wall_seconds = time.perf_counter() - started
            run.preprocess_seconds = self._runner.folds.preprocess_seconds
            self._notify("on_search_end", run)
        except BaseException as exc:
            self._notify_error(exc)
            raise
        return run

    # ---- the loop ---------------------------------------------------------------------------
    def _search(self, ctx: SearchContext, pool: WorkerPool) -> EngineeringRun:
        dataset, metric, trainers = ctx.dataset, ctx.metric, list(ctx.trainers)
        s = self.settings
        history: list[AttemptRecord] = []
        if hasattr(self.proposer, "start"):
            self.proposer.start(ctx)

        seeds = self.proposer.propose_initial(dataset, trainers)
        if isinstance(seeds, SolutionCandidate) or seeds is None:
            seeds = [seeds] if seeds is not None else []
        if s.max_attempts is not None:
            seeds = list(seeds)[: s.max_attempts]
        stop_reason = self._budget_spent(len(history))
        if not stop_reason:
            self._run_batch(ctx, history, list(seeds), "seed")
        best = self._best(history)

        iterations, patience_left = 0, s.patience
        while not stop_reason:
            if s.max_iterations is not None and iterations >= s.max_iterations:
                stop_reason = StopReason(StopKind.ITERATIONS,
                                         f"reached max_iterations={s.max_iterations}")
                break
            if patience_left is not None and patience_left <= 0:
                stop_reason = StopReason(StopKind.PATIENCE, f"patience exhausted: "
                                         f"{s.patience} attempts without a verified "
                                         "improvement")
                break
            stop_reason = self._budget_spent(len(history))
            if stop_reason:
                break
            candidates, stop_reason = self._propose(ctx, history, iterations, patience_left)
            if not candidates:
                break
            for record in self._run_batch(ctx, history, candidates, "reflect"):
                iterations += 1
                if record.verdict.valid and (best is None or
                                             metric.better(record.score, best.score)):
                    best, patience_left = record, s.patience
                elif patience_left is not None:
                    patience_left -= 1

        if s.ensemble:
            best = self._try_ensemble(ctx, history, best)
        top = best
        best = select(history, top, s.selection)
        selection, note = s.selection, ""
        if hasattr(self.proposer, "submit"):  # code mode: the submitter chooses; checked here
            best, note = submitted(self.proposer, history, top)
            selection = "submitter"
        model, refit_seconds = None, 0.0
        if s.refit:
            model, refit_seconds, best = refit(history, best, ctx.dataset, pool,
                                               s.random_state, code_refit=self._code_model)
        return EngineeringRun(
            attempts=history, best_candidate=best.candidate if best else None,
            best_score=best.score if best else None, model=model, metric=metric.name,
            baseline_score=ctx.baseline_score, n_iterations=iterations,
            greater_is_better=metric.greater_is_better, best_attempt=best,
            stop=stop_reason, dataset_name=dataset.name, task=dataset.task,
            refit_seconds=refit_seconds, selection=selection, top_attempt=top,
            ties=tuple(ties(history, top)), selection_note=note,
        )

    def _propose(self, ctx, history, iterations: int, patience_left: int | None
                 ) -> tuple[list, StopReason | None]:
        """Up to one batch of candidates, within the iteration and attempt budgets."""
        s = self.settings
        n = self._batch_size()
        if s.max_iterations is not None:
            n = min(n, s.max_iterations - iterations)
        if s.max_attempts is not None:
            n = min(n, s.max_attempts - len(history))
        ended = self._resumed_loop_end()
        if ended is not None:  # the killed search's loop ended there
            n = min(n, ended - len(history))
        if patience_left is not None:  # a batch never runs past the patience
            n = min(n, patience_left)
        candidates: list = []
        for _ in range(max(n, 0)):
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
                return candidates, getattr(self.proposer, "stop_reason", None) or StopReason(
                    StopKind.EXHAUSTED, "proposer has no more candidates")
            candidates.append(candidate)
        return candidates, None

    def _run_batch(self, ctx: SearchContext, history: list[AttemptRecord], candidates: list,
                   phase: str) -> list[AttemptRecord]:
        """Evaluate candidates together; each record is appended and announced in order."""
        first = len(history) + 1
        plans = [self._plan(ctx, candidate, first + k) for k, candidate in enumerate(candidates)]
        records: list[AttemptRecord] = []

        def started() -> None:
            for offset, plan in enumerate(plans):
                self._notify("on_attempt_start", first + offset, plan.candidate, phase)

        def done(i: int, outcome: Outcome) -> None:
            record = self._record(ctx, first + i, plans[i], outcome, phase)
            if record.candidate.code is not None:
                record = self._code_attempt(record, outcome)
            history.append(record)
            records.append(record)
            if outcome.oof is not None and record.verdict.valid:
                self._oof[record.index] = outcome.oof
            if record.verdict.valid and outcome.fit_seconds:
                self._note_refit_cost(record, outcome)
            if hasattr(self.proposer, "observe"):
                self.proposer.observe(record)
            if outcome.oof is not None and not record.restored:  # what a resume reads back
                self._emit("on_attempt_outputs", record, outcome.oof, outcome.extra)
            self._notify("on_attempt_end", record)
            if outcome.extra is not None:
                self._extras[record.index] = outcome.extra  # the ensemble blends these
                self._emit("on_attempt_predictions", record, outcome.extra)

        self._runner.run(plans, self._deadline(), done, on_submitted=started)
        return records

    def _plan(self, ctx: SearchContext, candidate, index: int) -> Planned:
        if isinstance(candidate, SolutionCandidate) and candidate.trainer == CODE:
            plan = code_plan(candidate, self.sandbox)
        else:
            plan = self._trainer_plan(ctx, candidate)
        restored = self.restored.get(index)
        if restored is not None:  # finished before the search was killed: not run again
            restored.check(index, plan)
            plan.restored = restored.outcome
        return plan

    def _trainer_plan(self, ctx: SearchContext, candidate) -> Planned:
        try:
            candidate = _check_candidate(candidate, ctx.trainers)
            trainer = get_trainer(candidate.trainer)
            plan = Planned(candidate, trainer, trainer.resolve_params(ctx.dataset,
                                                                      candidate.params))
        except Exception as exc:  # recorded as data; the search goes on
            if not isinstance(candidate, SolutionCandidate):
                candidate = SolutionCandidate(trainer=str(getattr(candidate, "trainer", "?")),
                                              params={}, rationale=repr(candidate)[:500])
            plan = Planned(candidate, error=f"{type(exc).__name__}: {exc}",
                           traceback=traceback.format_exc())
        return plan

    # ---- code mode --------------------------------------------------------------------------
    def _code_attempt(self, record: AttemptRecord, outcome: Outcome) -> AttemptRecord:
        """A code attempt with what its run keeps (the code, the plan entry, the sandbox's
        limits and log), reviewed by the proposer's critic (a note; never the score)."""
        result = outcome.sandbox
        artifacts = {"candidate.py": record.candidate.code, **record.candidate.artifacts}
        tags: dict[str, str] = {}
        if result is not None:
            artifacts.update(sandbox_artifacts(result))
            tags.update(sandbox_tags(result))
        review = getattr(self.proposer, "review", None)
        if review is not None:
            try:
                note = review(record, list(result.features) if result is not None else [])
            except Exception as exc:  # a broken critic accepts the attempt
                warnings.warn(f"critic failed on attempt {record.index}: {exc}", stacklevel=2)
            else:
                artifacts.update(note.artifacts)
                tags.update(note.tags)
        return dataclasses.replace(record, artifacts={**record.artifacts, **artifacts},
                                   tags={**record.tags, **tags})

    def _code_model(self, record: AttemptRecord):
        """The selected code attempt refit in a fresh sandbox container; the host holds its
        pickle as bytes and predicts through the sandbox (``SandboxedModel``)."""
        return refit_code(self.sandbox, self._runner.folds.dataset, record.candidate.code,
                          dropped_columns(record.candidate))

    def _record(self, ctx: SearchContext, index: int, plan: Planned, outcome: Outcome,
                phase: str) -> AttemptRecord:
        metric = ctx.metric
        common = dict(candidate=plan.candidate, index=index, phase=phase, metric=metric.name,
                      greater_is_better=metric.greater_is_better, params=plan.params,
                      fit_seconds=outcome.fit_seconds, seconds=outcome.seconds,
                      proposer=proposer_name(self.proposer), restored=plan.restored is not None,
                      elapsed=(time.perf_counter() - self._started if outcome.elapsed is None
                               else outcome.elapsed))
        scores = tuple(outcome.fold_scores)
        mean = float(np.mean(scores)) if scores else float("nan")
        if outcome.error is None and outcome.pruned is None and not math.isfinite(mean):
            outcome.error = (f"FloatingPointError: non-finite CV score {mean} "
                             f"(folds: {list(scores)})")
        if outcome.error is not None:
            return AttemptRecord(score=metric.worst, verdict=Verdict(
                False, f"failed: {outcome.error}", float("nan")), error=outcome.error,
                traceback=outcome.traceback, fold_scores=scores, **common)
        if outcome.pruned is not None:
            return AttemptRecord(score=mean, verdict=Verdict(False, outcome.pruned, mean),
                                 pruned=outcome.pruned, fold_scores=scores,
                                 score_std=float(np.std(scores)) if scores else float("nan"),
                                 **common)
        verdict = self.verifier.verify(mean, ctx.baseline_score,
                                       greater_is_better=metric.greater_is_better,
                                       bounded=metric.bounded, metric=metric.name)
        return AttemptRecord(score=mean, verdict=verdict, fold_scores=scores,
                             score_std=float(np.std(scores)), **common)

    # ---- after the loop ---------------------------------------------------------------------
    def _try_ensemble(self, ctx: SearchContext, history: list[AttemptRecord], best):
        """A greedy ensemble of the best verified attempts, as one more (verified) candidate."""
        pool = sorted((a for a in history if a.selectable and a.index in self._oof
                       and a.candidate.code is None),  # code attempts refit in the sandbox
                      key=lambda a: (-a.utility, a.index))
        pool = pool[:MAX_MEMBERS]
        ds = ctx.dataset
        started = time.perf_counter()
        choice = select_ensemble([(a.index, self._oof[a.index]) for a in pool], ds.y.to_numpy(),
                                 self._runner.folds.splits, ctx.metric, tuple(ds.classes))
        if choice is None:
            return best
        by_index = {a.index: a for a in history}
        members = [by_index[i] for i in choice.members]
        candidate = SolutionCandidate(
            ENSEMBLE, {"members": list(choice.members), "weights": [round(w, 4) for w in
                                                                    choice.weights],
                       "trainers": [m.candidate.trainer for m in members]},
            "greedy ensemble selection over the out-of-fold predictions of attempts "
            + ", ".join(f"{m.index} ({m.candidate.trainer}, weight {w:.2f})"
                        for m, w in zip(members, choice.weights, strict=True)))
        index = len(history) + 1
        self._notify("on_attempt_start", index, candidate, "ensemble")
        verdict = self.verifier.verify(choice.score, ctx.baseline_score,
                                       greater_is_better=ctx.metric.greater_is_better,
                                       bounded=ctx.metric.bounded, metric=ctx.metric.name)
        record = AttemptRecord(
            candidate=candidate, score=choice.score, verdict=verdict, index=index,
            phase="ensemble", metric=ctx.metric.name,
            greater_is_better=ctx.metric.greater_is_better, params=dict(candidate.params),
            fold_scores=choice.fold_scores, score_std=choice.std, proposer="engine",
            seconds=time.perf_counter() - started, elapsed=time.perf_counter() - self._started,
            restored=index in self.restored)  # recomputed (deterministic), recorded once
        history.append(record)
        self._notify("on_attempt_end", record)
        if all(i in self._extras for i in choice.members):
            self._emit("on_attempt_predictions", record,
                       blend([self._extras[i] for i in choice.members], choice.weights))
        if verdict.valid and (best is None or ctx.metric.better(record.score, best.score)):
            return record
        return best

    # ---- budgets ----------------------------------------------------------------------------
    def _note_refit_cost(self, record: AttemptRecord, outcome: Outcome) -> None:
        """The refit of the best so far: about one fold fit on 1/(k-1) more rows."""
        n = max(len(outcome.fold_scores), 1)
        best = self._best_utility
        if best is None or record.utility > best:
            self._best_utility = record.utility
            # one fold's fit on k/(k-1) the rows, plus that share of the preprocessing the
            # folds had ready-made (a refit does its own: seconds on a big file)
            prep = self._runner.folds.preprocess_seconds / max(self._runner.folds.n_splits, 1)
            self._refit_estimate = (outcome.fit_seconds / n + prep) * 1.3

    def _deadline(self) -> float | None:
        budget = self.settings.time_budget
        if budget is None:
            return None
        ensemble = min(ENSEMBLE_RESERVE_SECONDS, 0.1 * budget) if self.settings.ensemble else 0.0
        return self._started + budget - self._refit_estimate - ensemble

    def _budget_spent(self, n_attempts: int) -> StopReason | None:
        """Why the shared budget stops the search now, or None while some is left."""
        s = self.settings
        ended = self._resumed_loop_end()
        if ended is not None and n_attempts >= ended:
            return StopReason(StopKind.ATTEMPTS, f"resumed: the killed search had ended its "
                              f"loop after attempt {ended} and recorded its ensemble")
        if s.max_attempts is not None and n_attempts >= s.max_attempts:
            return StopReason(StopKind.ATTEMPTS, f"attempt budget spent: {n_attempts} of "
                              f"{s.max_attempts} attempts")
        deadline = self._deadline()
        if deadline is not None and time.perf_counter() >= deadline:
            elapsed = time.perf_counter() - self._started
            return StopReason(StopKind.TIME, f"time budget spent: {elapsed:.1f}s of "
                              f"{s.time_budget:g}s (time for the refit kept back)")
        return None

    def _resumed_loop_end(self) -> int | None:
        """In a resumed search whose ensemble was recorded: the last attempt of its loop (it
        ended there, by whatever budget it had; a resume's budget may be larger)."""
        ensembles = [i for i, r in self.restored.items() if r.trainer == ENSEMBLE]
        return min(ensembles) - 1 if ensembles else None

    def _sandbox_params(self) -> dict:
        """Code mode: where candidates run and the proposer's budget, for the search run."""
        if self.sandbox is None:
            return {}
        params = {"sandbox": self.sandbox.label, **self.sandbox.limits.tags()}
        for name in ("max_experiments", "critic_model"):
            if getattr(self.proposer, name, None) is not None:
                params[name] = getattr(self.proposer, name)
        return params

    def _batch_size(self) -> int:
        return max(1, int(getattr(self.proposer, "batch_size", 1) or 1))

    def _make_pruner(self):
        if not self.settings.prune:
            return None
        from mlflow_agentic.engine.pruning import FoldPruner

        return FoldPruner()

    def _pruner_label(self) -> str:
        from mlflow_agentic.engine.pruning import FoldPruner

        return FoldPruner.describe() if self.settings.prune else "off"

    def _best(self, history: Sequence[AttemptRecord]) -> AttemptRecord | None:
        best = None
        for record in history:
            if record.verdict.valid and (best is None or record.utility > best.utility):
                best = record
        return best

    # ---- observers --------------------------------------------------------------------------
    def _notify(self, hook: str, *args) -> None:
        for observer in self.observers:
            getattr(observer, hook)(*args)

    def _emit(self, hook: str, *args) -> None:
        """Optional events (from proposers, or the fold models' predictions on ``extra_X``), to
        the observers that define them."""
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
