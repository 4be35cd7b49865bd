"""Steps after the loop: candidates the engine makes from the attempts, before selection.

A step is a step of the search (``search_sealed`` adds the ensemble when
``SearchSettings.ensemble``), not of the loop: ``AgenticAutoML`` with a sequence of N candidates
reports N attempts unless it is given steps.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate, best_first
from mlflow_agentic.engine.ensemble import MAX_MEMBERS, blend, select_ensemble
from mlflow_agentic.engine.refit import ENSEMBLE

if TYPE_CHECKING:
    from mlflow_agentic.core.observer import SearchContext
    from mlflow_agentic.engine.loop import AgenticAutoML


class EnsembleStep:
    """A greedy ensemble of the best verified attempts' out-of-fold predictions, its CV score
    nested (weights never chosen on the fold they are scored on), verified like any attempt."""

    name = ENSEMBLE

    def __call__(self, loop: AgenticAutoML, ctx: SearchContext,
                 history: list[AttemptRecord]) -> AttemptRecord | None:
        ranked = best_first(a for a in history if a.index in loop.oof
                            and a.candidate.code is None)  # code attempts refit in the sandbox
        pool: list[AttemptRecord] = []
        for a in ranked:  # members whose refit, side by side, still fits the time budget
            if len(pool) < MAX_MEMBERS and loop.budget.refit_fits([*pool, a]):
                pool.append(a)
        started = time.perf_counter()
        y = ctx.dataset.y.to_numpy()
        choice = select_ensemble([(a.index, loop.oof[a.index]) for a in pool], y,
                                 loop.runner.folds.splits, ctx.metric, tuple(ctx.dataset.classes))
        if choice is None:
            return None
        by_index = {a.index: a for a in history}
        members = [by_index[i] for i in choice.members]
        candidate = SolutionCandidate(
            ENSEMBLE, {"members": list(choice.members),
                       "weights": [round(w, 4) for w in choice.weights],
                       "trainers": [m.candidate.trainer for m in members]},
            "greedy ensemble selection over the out-of-fold predictions of attempts "
            + ", ".join(f"{m.index} ({m.candidate.trainer}, weight {w:.2f})"
                        for m, w in zip(members, choice.weights, strict=True)))
        index = len(history) + 1
        loop.observers.notify("on_attempt_start", index, candidate, "ensemble")
        verdict = loop.verifier.verify(choice.score, ctx.baseline_score,
                                       greater_is_better=ctx.metric.greater_is_better,
                                       bounded=ctx.metric.bounded, metric=ctx.metric.name)
        record = AttemptRecord(
            candidate=candidate, score=choice.score, verdict=verdict, index=index,
            phase="ensemble", metric=ctx.metric.name,
            greater_is_better=ctx.metric.greater_is_better, params=dict(candidate.params),
            fold_scores=choice.fold_scores, score_std=choice.std, proposer="engine",
            seconds=time.perf_counter() - started, elapsed=loop.budget.elapsed(),
            restored=index in loop.restored)  # recomputed (deterministic), recorded once
        history.append(record)
        loop.observers.notify("on_attempt_end", record)
        if all(i in loop.extras for i in choice.members):
            loop.observers.emit("on_attempt_predictions", record,
                                blend([loop.extras[i] for i in choice.members], choice.weights))
        return record
