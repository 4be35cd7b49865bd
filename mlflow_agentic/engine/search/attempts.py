"""One candidate into a plan (checked, its hyperparameters resolved), and one outcome into an
``AttemptRecord`` (scored, verified). A bad candidate becomes a failed attempt, never an error
of the search."""

from __future__ import annotations

import math
import traceback
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from mlflow_agentic.core.errors import ProposerOutputError
from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate, Verdict
from mlflow_agentic.engine.evaluate.code import CODE, code_plan
from mlflow_agentic.engine.evaluate.outcome import Outcome, Planned
from mlflow_agentic.trainers.registry import get_trainer

if TYPE_CHECKING:
    from mlflow_agentic.core.observer import SearchContext
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.sandbox.runners import Sandbox
    from mlflow_agentic.verify import DeterministicVerifier


def plan_attempt(candidate: SolutionCandidate, index: int, dataset: Dataset,
                 trainers: Sequence[str], sandbox: Sandbox | None,
                 restored: Mapping) -> Planned:
    """What the batch runner fits for ``candidate``; a finished attempt of a killed search
    (``restored``) is checked to be the same candidate and stands in for running it."""
    if isinstance(candidate, SolutionCandidate) and candidate.trainer == CODE:
        plan = code_plan(candidate, sandbox)
    else:
        plan = trainer_plan(candidate, dataset, trainers)
    plan.index = index
    previous = restored.get(index)
    if previous is not None:  # finished before the search was killed: not run again
        previous.check(index, plan)
        plan.restored = previous.outcome
    return plan


def trainer_plan(candidate: SolutionCandidate, dataset: Dataset,
                 trainers: Sequence[str]) -> Planned:
    try:
        candidate = check_candidate(candidate, trainers)
        trainer = get_trainer(candidate.trainer)
        return Planned(candidate, trainer, trainer.resolve_params(dataset, candidate.params))
    except Exception as exc:  # recorded as data; the search goes on
        if not isinstance(candidate, SolutionCandidate):
            candidate = SolutionCandidate(trainer=str(getattr(candidate, "trainer", "?")),
                                          params={}, rationale=repr(candidate)[:500])
        return Planned(candidate, error=f"{type(exc).__name__}: {exc}",
                       traceback=traceback.format_exc())


def check_candidate(candidate: SolutionCandidate, allowed: Sequence[str]) -> SolutionCandidate:
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


def attempt_record(ctx: SearchContext, index: int, plan: Planned, outcome: Outcome, phase: str, *,
                   proposer: str, verifier: DeterministicVerifier,
                   elapsed: float) -> AttemptRecord:
    """The record of one attempt: failed, pruned, or scored and verified against the
    baseline. A non-finite CV score is a failure, never a stored number."""
    metric = ctx.metric
    common = dict(candidate=plan.candidate, index=index, phase=phase, metric=metric.name,
                  greater_is_better=metric.greater_is_better, params=plan.params,
                  fit_seconds=outcome.fit_seconds, seconds=outcome.seconds, proposer=proposer,
                  restored=plan.restored is not None,
                  elapsed=elapsed if outcome.elapsed is None else outcome.elapsed)
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
    verdict = verifier.verify(mean, ctx.baseline_score, greater_is_better=metric.greater_is_better,
                              bounded=metric.bounded, metric=metric.name,
                              by=[(plan.candidate.trainer, plan.params)])
    return AttemptRecord(score=mean, verdict=verdict, fold_scores=scores,
                         score_std=float(np.std(scores)), **common)
