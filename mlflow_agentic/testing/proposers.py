"""``check_proposer(make)``: does a proposer keep the loop's contract?

Each check runs the real engine loop (no MLflow, no holdout) on a small synthetic table, with
proposers made fresh by ``make`` (``make()`` or ``make(trainers)``):

- ``declares_itself``: a ``CandidateProposer`` with a name, a whole ``batch_size`` >= 1 and
  ``run_params()`` a dict of named values.
- ``proposes_within_its_trainers``: every attempt names an allowed trainer (code mode: code)
  with a dict of params, and at least one attempt completes.
- ``is_seeded``: two proposers from ``make`` propose the same attempts, scored the same.
- ``stops_within_its_budget``: with ``max_iterations=1`` the loop asks for at most one
  reflection attempt after the seeds, and the run says why it stopped.
- ``failures_are_data``: attempts that fail (offered the kit's ``kit_failing`` trainer, whose
  fit raises, and one other; code mode: a candidate that raises) are recorded with their error,
  never verified, and the search goes on.
- ``resumes``: a search resumed from the first attempts of an earlier one proposes those
  attempts again (read back, not run) and ends with the same attempts as the earlier one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin

from mlflow_agentic.core.protocol import CandidateProposer, CodeModeProposer, proposer_name
from mlflow_agentic.core.types import EngineeringRun
from mlflow_agentic.data import Dataset
from mlflow_agentic.engine import AgenticAutoML
from mlflow_agentic.engine.evaluate.outcome import Outcome
from mlflow_agentic.engine.search.restore import Restored, recorded_value
from mlflow_agentic.trainers import FloatParam, Trainer
from mlflow_agentic.trainers.registry import register_trainer, trainer_registry

KIT_TRAINERS = ("linear", "hist_gradient_boosting")
"""The trainers a proposer is offered by default (quick on the kit's table)."""
FAILING_TRAINER = "kit_failing"
"""A trainer whose every fit raises, offered beside ``KIT_TRAINERS`` in ``failures_are_data``."""


class ProposerCheckFailed(AssertionError):
    """A proposer broke the loop's contract: the message names the check and what was seen."""


class KitFailure(ClassifierMixin, BaseEstimator):
    """An estimator whose fit always raises: the kit's failing attempt."""

    def __init__(self, strength: float = 1.0) -> None:
        self.strength = strength

    def fit(self, X: Any, y: Any) -> KitFailure:
        raise RuntimeError("kit_failing: this trainer always fails (check_proposer)")


FAILING = Trainer(FAILING_TRAINER, build_model=lambda task, p, seed: KitFailure(p["strength"]),
                  space=lambda ds: {"strength": FloatParam(0.1, 10.0)},
                  defaults=lambda ds: {"strength": 1.0}, preprocessing="native",
                  description="always fails (mlflow_agentic.testing)")


def kit_dataset(rows: int = 240, seed: int = 0) -> Dataset:
    """A small binary table (6 numeric columns, 3 informative): quick to cross-validate."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=rows, n_features=6, n_informative=3,
                               random_state=seed)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    frame["label"] = np.where(y == 1, "yes", "no")
    return Dataset.from_frame(frame, "label", name="kit")


class _Kit:
    """What every check shares: the factory, the table, the trainers, the loop's settings."""

    def __init__(self, make: Callable[..., CandidateProposer], dataset: Dataset,
                 trainers: Sequence[str], sandbox: Any, max_iterations: int) -> None:
        self.make, self.dataset, self.trainers = make, dataset, list(trainers)
        self.sandbox, self.max_iterations = sandbox, max_iterations
        self.takes_trainers = bool(inspect.signature(make).parameters)
        self.code_mode = isinstance(self.proposer(), CodeModeProposer)
        """Code mode proposes code, not trainers: its failures are candidates that raise."""

    def proposer(self, trainers: Sequence[str] | None = None) -> CandidateProposer:
        trainers = list(trainers or self.trainers)
        return self.make(trainers) if self.takes_trainers else self.make()

    def search(self, proposer: CandidateProposer, trainers: Sequence[str] | None = None,
               restored: dict[int, Restored] | None = None, **changes: Any) -> EngineeringRun:
        settings: dict[str, Any] = dict(max_iterations=self.max_iterations, patience=None,
                                        cv=3, seed=0, n_jobs=1, prune=False,
                                        trainers=tuple(trainers or self.trainers))
        settings.update(changes)
        return AgenticAutoML(proposer, sandbox=self.sandbox, restored=restored,
                             **settings).solve(self.dataset)


def _expect(condition: bool, check: str, what: str) -> None:
    if not condition:
        raise ProposerCheckFailed(f"{check}: {what}")


def _board(run: EngineeringRun) -> list[tuple]:
    return [(a.candidate.trainer, {k: recorded_value(v) for k, v in a.params.items()},
             a.error is not None, tuple(round(s, 10) for s in a.fold_scores))
            for a in run.attempts]


def check_declares_itself(kit: _Kit) -> None:
    proposer = kit.proposer()
    name = "declares_itself"
    _expect(isinstance(proposer, CandidateProposer), name,
            f"{type(proposer).__name__} does not subclass CandidateProposer")
    _expect(bool(proposer_name(proposer)), name, "no name")
    _expect(isinstance(proposer.batch_size, int) and not isinstance(proposer.batch_size, bool)
            and proposer.batch_size >= 1, name,
            f"batch_size {proposer.batch_size!r} is not a whole number >= 1")
    params = proposer.run_params()
    _expect(isinstance(params, dict) and all(isinstance(k, str) for k in params), name,
            f"run_params() gave {params!r}, not a dict of named values")


def check_proposes_within_its_trainers(kit: _Kit) -> None:
    run = kit.search(kit.proposer())
    name = "proposes_within_its_trainers"
    allowed = {"code"} if kit.code_mode else set(kit.trainers)
    _expect(len(run.attempts) > 0, name, "the search made no attempt")
    for attempt in run.attempts:
        _expect(attempt.candidate.trainer in allowed, name,
                f"attempt {attempt.index} names {attempt.candidate.trainer!r}, not one of "
                f"{sorted(allowed)}")
        _expect(isinstance(attempt.candidate.params, dict), name,
                f"attempt {attempt.index}'s params are {type(attempt.candidate.params)}")
    _expect(any(not a.failed for a in run.attempts), name,
            f"every attempt failed (first: {run.attempts[0].error})")


def check_is_seeded(kit: _Kit) -> None:
    first, second = _board(kit.search(kit.proposer())), _board(kit.search(kit.proposer()))
    _expect(first == second, "is_seeded",
            f"two proposers from make() searched differently: {first} then {second}")


def check_stops_within_its_budget(kit: _Kit) -> None:
    run = kit.search(kit.proposer(), max_iterations=1)
    name = "stops_within_its_budget"
    _expect(run.n_iterations <= 1, name,
            f"{run.n_iterations} reflection attempts with max_iterations=1")
    _expect(bool(str(run.stop_reason or "")), name, "the run does not say why it stopped")


def check_failures_are_data(kit: _Kit) -> None:
    name = "failures_are_data"
    trainers = kit.trainers if kit.code_mode else [FAILING_TRAINER, kit.trainers[0]]
    added = FAILING_TRAINER not in trainer_registry()
    if added:
        register_trainer(FAILING)
    try:
        run = kit.search(kit.proposer(trainers), trainers=trainers,
                         max_iterations=2 * kit.max_iterations)
    finally:
        if added:
            trainer_registry().pop(FAILING_TRAINER, None)
    failed = [a for a in run.attempts if a.failed]
    _expect(bool(failed), name, "no attempt failed: offer the failing trainer (make(trainers)) "
            "or, in code mode, let one candidate raise")
    _expect(all(a.error and not a.verdict.valid for a in failed), name,
            "a failed attempt has no error, or was verified")
    _expect(len(run.attempts) > len(failed) or run.stop_reason is not None, name,
            "the search ended at a failure without a stop reason")


def check_resumes(kit: _Kit) -> None:
    name = "resumes"
    earlier = kit.search(kit.proposer())
    kept = earlier.attempts[: max(1, len(earlier.attempts) // 2)]
    restored = {a.index: Restored(a.candidate.trainer,
                                  {k: recorded_value(v) for k, v in a.params.items()},
                                  Outcome(fold_scores=list(a.fold_scores),
                                          fit_seconds=a.fit_seconds, error=a.error,
                                          traceback=a.traceback, pruned=a.pruned,
                                          elapsed=a.elapsed))
                for a in kept}
    resumed = kit.search(kit.proposer(), restored=restored)
    _expect(all(a.restored for a in resumed.attempts[: len(kept)]), name,
            "the resumed search ran again an attempt the earlier one had finished")
    _expect(_board(resumed) == _board(earlier), name,
            f"resumed from {len(kept)} attempts, it ended with {_board(resumed)} instead of "
            f"{_board(earlier)}")


CHECKS: dict[str, Callable[[_Kit], None]] = {
    "declares_itself": check_declares_itself,
    "proposes_within_its_trainers": check_proposes_within_its_trainers,
    "is_seeded": check_is_seeded,
    "stops_within_its_budget": check_stops_within_its_budget,
    "failures_are_data": check_failures_are_data,
    "resumes": check_resumes,
}


def check_proposer(make: Callable[..., CandidateProposer], *, dataset: Dataset | None = None,
                   trainers: Sequence[str] = KIT_TRAINERS, sandbox: Any = None,
                   max_iterations: int = 4, skip: Sequence[str] = ()) -> list[str]:
    """Run each check (``CHECKS``, in order) on proposers made by ``make`` (``make()``, or
    ``make(trainers)`` when it takes the trainers it may propose); raise
    ``ProposerCheckFailed`` naming the first broken one. ``sandbox``: where a code-mode
    proposer's candidates run. ``skip``: checks that do not apply, by name (say why in your
    test). Returns the names of the checks passed."""
    unknown = [s for s in skip if s not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; the checks are {list(CHECKS)}")
    kit = _Kit(make, dataset or kit_dataset(), trainers, sandbox, max_iterations)
    passed = []
    for name, check in CHECKS.items():
        if name in skip:
            continue
        try:
            check(kit)
        except ProposerCheckFailed:
            raise
        except Exception as exc:  # the loop refused it (a resume that diverged, ...)
            raise ProposerCheckFailed(f"{name}: {type(exc).__name__}: {exc}") from exc
        passed.append(name)
    return passed
