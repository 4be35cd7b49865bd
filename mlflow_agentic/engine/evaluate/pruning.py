"""Fold-by-fold pruning: a candidate clearly behind after its first folds stops early.

Each attempt is a trial of a private in-memory Optuna study (separate from any proposer's); the
running mean of its fold utilities is reported after each fold to ``ClearlyBehindPruner``, an
Optuna pruner: prune when the running mean is below the 25th percentile of the completed
attempts at the same fold *by more than its standard error* (the completed attempts' typical
fold-to-fold spread over the square root of the folds seen). Near-ties, the usual case among
tuned candidates, are never pruned; a candidate one or two spreads behind is.

Trials are told their result only when their whole batch has finished, so a decision depends on
the attempts of earlier batches and the candidate's own folds, never on worker timing: a seeded
search prunes the same attempts with any number of workers.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import optuna
from optuna.trial import TrialState

FOLD_STD = "fold_std"


class ClearlyBehindPruner(optuna.pruners.BasePruner):
    """Prune a maximised trial whose running mean at step ``k`` is below the ``percentile`` of
    the completed trials at step ``k`` minus ``median(fold_std) / sqrt(k + 1)``."""

    def __init__(self, percentile: float = 25.0, n_startup_trials: int = 5,
                 n_warmup_steps: int = 1) -> None:
        self.percentile = percentile
        self.n_startup_trials = n_startup_trials
        self.n_warmup_steps = n_warmup_steps

    def threshold(self, study: optuna.Study, step: int) -> float | None:
        """The value a trial must reach at ``step`` not to be pruned (None: no basis yet)."""
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        values = [t.intermediate_values[step] for t in done if step in t.intermediate_values]
        spreads = [t.user_attrs[FOLD_STD] for t in done if FOLD_STD in t.user_attrs]
        if len(values) < self.n_startup_trials or not spreads:
            return None
        reference = float(np.percentile(values, self.percentile))
        return reference - float(np.median(spreads)) / math.sqrt(step + 1)

    def prune(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> bool:
        step = trial.last_step
        if step is None or step < self.n_warmup_steps:
            return False
        threshold = self.threshold(study, step)
        return threshold is not None and trial.intermediate_values[step] < threshold


class FoldPruner:
    """The engine's side: one trial per attempt, fold results reported in fold order."""

    def __init__(self, percentile: float = 25.0, n_startup: int = 5, warmup_folds: int = 1
                 ) -> None:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.percentile = percentile
        self.pruner = ClearlyBehindPruner(percentile, n_startup, warmup_folds)
        self.study = optuna.create_study(direction="maximize", pruner=self.pruner)

    def trial(self) -> optuna.Trial:
        return self.study.ask()

    @staticmethod
    def should_prune(trial: optuna.Trial, fold: int, running_utility: float) -> bool:
        """Report the running mean utility after fold ``fold`` (0-based); True to stop."""
        if not math.isfinite(running_utility):
            return False
        trial.report(running_utility, fold)
        return trial.should_prune()

    def tell(self, trial: optuna.Trial, utility: float | None, pruned: bool,
             fold_std: float | None = None) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if pruned:
                self.study.tell(trial, state=TrialState.PRUNED)
            elif utility is None or not math.isfinite(utility):
                self.study.tell(trial, state=TrialState.FAIL)
            else:
                if fold_std is not None and math.isfinite(fold_std):
                    trial.set_user_attr(FOLD_STD, float(fold_std))
                self.study.tell(trial, utility)

    @staticmethod
    def describe() -> str:
        return ("fold by fold: below the 25th percentile of earlier attempts by more than a "
                "standard error, after 5 attempts, from fold 2")
