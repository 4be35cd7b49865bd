"""Steps after the loop: candidates the engine makes from the attempts, before selection.

A step is a step of the search (``search_sealed`` adds the ensemble when
``SearchSettings.ensemble``, and the stack when ``SearchSettings.stack`` too), not of the loop:
``AgenticAutoML`` with a sequence of N candidates reports N attempts unless it is given steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np

from mlflow_agentic.core.types import ENSEMBLE, STACK, AttemptRecord, SolutionCandidate, best_first
from mlflow_agentic.engine.after.ensemble import (
    MAX_MEMBERS,
    EnsembleChoice,
    NestedScore,
    blend,
    select_ensemble,
)
from mlflow_agentic.engine.after.selection import beats_choosing, diverse_first
from mlflow_agentic.engine.after.stacking import StackChoice, select_stack
from mlflow_agentic.trainers.stacked import stack_features, stack_output

if TYPE_CHECKING:
    from mlflow_agentic.core.observer import SearchContext
    from mlflow_agentic.core.settings import SearchSettings
    from mlflow_agentic.engine.search.loop import AgenticAutoML

Choice = TypeVar("Choice", bound=NestedScore)
"""What a step chooses: an ensemble's or a stack's members, with their nested score."""


def combining_steps(settings: SearchSettings) -> list[CombiningStep]:
    """The steps ``settings`` ask for after the loop: the ensemble, then the stack (which only
    comes with the ensemble: ``--no-ensemble`` means one model, served alone)."""
    if not settings.ensemble:
        return []
    return [EnsembleStep(), StackStep()] if settings.stack else [EnsembleStep()]


class CombiningStep(Generic[Choice]):
    """A candidate made of the best verified attempts' out-of-fold predictions, its CV score
    nested (nothing chosen on the fold it is scored on), verified like any attempt. Subclasses
    say how they combine (``choose``), what they record (``describe``) and what they predict
    on the holdout from the members' predictions there (``combined``)."""

    def choose(self, loop: AgenticAutoML, ctx: SearchContext,
               pool: list[AttemptRecord]) -> Choice | None:
        raise NotImplementedError

    def standing(self, loop: AgenticAutoML, ctx: SearchContext,
                 history: list[AttemptRecord]) -> Callable[[], list[int]] | None:
        """``() -> the members this step would choose now`` (cheaply, while the loop runs: its
        budget keeps back their refit), or None when that is not known ahead."""
        return None

    def describe(self, choice: Choice, members: list[AttemptRecord]) -> SolutionCandidate:
        raise NotImplementedError

    def combined(self, choice: Choice, outputs: list[np.ndarray],
                 ctx: SearchContext) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, loop: AgenticAutoML, ctx: SearchContext,
                 history: list[AttemptRecord]) -> AttemptRecord | None:
        pool: list[AttemptRecord] = []
        for a in candidates(loop, history):  # members whose refit, side by side, fits in time
            if len(pool) < MAX_MEMBERS and loop.budget.refit_fits([*pool, a],
                                                                  tolerance=not pool):
                pool.append(a)
        started = time.perf_counter()
        choice = self.choose(loop, ctx, pool)
        if choice is None:
            return None
        by_index = {a.index: a for a in history}
        candidate = self.describe(choice, [by_index[i] for i in choice.members])
        index = len(history) + 1
        loop.observers.attempt_start(index, candidate, "ensemble")
        verdict = loop.verifier.verify(choice.score, ctx.baseline_score,
                                       greater_is_better=ctx.metric.greater_is_better,
                                       bounded=ctx.metric.bounded, metric=ctx.metric.name,
                                       by=[(by_index[i].candidate.trainer, by_index[i].params)
                                           for i in choice.members])
        record = AttemptRecord(
            candidate=candidate, score=choice.score, verdict=verdict, index=index,
            phase="ensemble", metric=ctx.metric.name,
            greater_is_better=ctx.metric.greater_is_better, params=dict(candidate.params),
            fold_scores=choice.fold_scores, score_std=choice.std, proposer="engine",
            seconds=time.perf_counter() - started, elapsed=loop.budget.elapsed(),
            restored=index in loop.restored)  # recomputed (deterministic), recorded once
        history.append(record)
        loop.observers.attempt_end(record)
        if all(i in loop.extras for i in choice.members):
            loop.observers.attempt_predictions(record, self.combined(
                choice, [loop.extras[i] for i in choice.members], ctx))
        return record


def candidates(loop: AgenticAutoML, history: list[AttemptRecord]) -> list[AttemptRecord]:
    """The attempts a combination may take, best first with each trainer's best first (code
    mode's are refit in their sandbox: not members)."""
    return diverse_first(best_first(a for a in history if a.index in loop.oof
                                    and a.candidate.code is None),
                         lambda a: a.candidate.trainer)


class StandingEnsemble:
    """The attempts the ensemble step would serve from the attempts so far: its members when
    the ensemble it chooses (the same greedy selection, nested-scored) beats the best single
    attempt by the loop's own test (``beats_choosing``), else that attempt alone (time kept
    back for an ensemble that is not chosen goes unused). Recomputed only when
    the best ``MAX_MEMBERS`` candidates change, so the loop may ask after every batch."""

    def __init__(self, step: EnsembleStep, loop: AgenticAutoML, ctx: SearchContext,
                 history: list[AttemptRecord]) -> None:
        self.step, self.loop, self.ctx, self.history = step, loop, ctx, history
        self.key: tuple[int, ...] = ()
        self.members: list[int] = []

    def __call__(self) -> list[int]:
        pool = candidates(self.loop, self.history)[:MAX_MEMBERS]
        key = tuple(a.index for a in pool)
        if key != self.key:
            self.key, self.members = key, list(key[:1])
            if len(pool) > 1:
                started = time.perf_counter()
                choice = self.step.choose(self.loop, self.ctx, pool)
                self.loop.budget.note_selection(time.perf_counter() - started)
                if choice is not None and beats_choosing(choice.score, pool[0], self.history):
                    self.members = list(choice.members)
        return self.members


class EnsembleStep(CombiningStep[EnsembleChoice]):
    """Greedy ensemble selection: the members' weighted average (``engine.ensemble``)."""

    name = ENSEMBLE

    def choose(self, loop: AgenticAutoML, ctx: SearchContext,
               pool: list[AttemptRecord]) -> EnsembleChoice | None:
        return select_ensemble([(a.index, loop.oof[a.index]) for a in pool],
                               ctx.dataset.y.to_numpy(), loop.batches.folds.splits, ctx.metric,
                               tuple(ctx.dataset.classes))

    def standing(self, loop: AgenticAutoML, ctx: SearchContext,
                 history: list[AttemptRecord]) -> Callable[[], list[int]]:
        return StandingEnsemble(self, loop, ctx, history)

    def describe(self, choice: EnsembleChoice, members: list[AttemptRecord]) -> SolutionCandidate:
        return SolutionCandidate(
            ENSEMBLE, {"members": list(choice.members),
                       "weights": [round(w, 4) for w in choice.weights],
                       "trainers": [m.candidate.trainer for m in members]},
            "greedy ensemble selection over the out-of-fold predictions of attempts "
            + ", ".join(f"{m.index} ({m.candidate.trainer}, weight {w:.2f})"
                        for m, w in zip(members, choice.weights, strict=True)))

    def combined(self, choice: EnsembleChoice, outputs: list[np.ndarray],
                 ctx: SearchContext) -> np.ndarray:
        return blend(outputs, choice.weights)


class StackStep(CombiningStep[StackChoice]):
    """A linear stacker over the members' outputs (``engine.stacking``)."""

    name = STACK

    def choose(self, loop: AgenticAutoML, ctx: SearchContext,
               pool: list[AttemptRecord]) -> StackChoice | None:
        return select_stack([(a.index, loop.oof[a.index]) for a in pool],
                            ctx.dataset.y.to_numpy(), loop.batches.folds.splits, ctx.metric,
                            tuple(ctx.dataset.classes), ctx.dataset.task, loop.settings.seed)

    def describe(self, choice: StackChoice, members: list[AttemptRecord]) -> SolutionCandidate:
        return SolutionCandidate(
            STACK, {"members": list(choice.members), "coef": [list(r) for r in choice.coef],
                    "intercept": list(choice.intercept),
                    "trainers": [m.candidate.trainer for m in members]},
            f"stacking: {choice.method} over the out-of-fold predictions of attempts "
            + ", ".join(f"{m.index} ({m.candidate.trainer})" for m in members))

    def combined(self, choice: StackChoice, outputs: list[np.ndarray],
                 ctx: SearchContext) -> np.ndarray:
        return stack_output(stack_features(outputs, ctx.dataset.task), np.asarray(choice.coef),
                            np.asarray(choice.intercept), ctx.dataset.task)
