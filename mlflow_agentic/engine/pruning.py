"""Fold-by-fold pruning: a candidate clearly behind after its first folds stops early.

Each attempt is a trial of a private in-memory Optuna study (separate from any proposer's); the
running mean of its fold utilities is reported fold by fold to Optuna's ``PercentilePruner``.
Trials are told their result only when their whole batch has finished, so a decision depends on
the attempts of earlier batches and the candidate's own folds, never on worker timing: a seeded
search prunes the same attempts with any number of workers.
"""

from __future__ import annotations

import math
import warnings


class FoldPruner:
    """Prune when the running mean after ``warmup_folds + 1`` folds or more is in the bottom
    ``percentile`` of the completed attempts at the same fold (after ``n_startup`` attempts)."""

    def __init__(self, percentile: float = 25.0, n_startup: int = 5, warmup_folds: int = 1
                 ) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.percentile = percentile
        self.n_startup = n_startup
        self.warmup_folds = warmup_folds
        pruner = optuna.pruners.PercentilePruner(percentile, n_startup_trials=n_startup,
                                                 n_warmup_steps=warmup_folds)
        self.study = optuna.create_study(direction="maximize", pruner=pruner)

    def trial(self):
        return self.study.ask()

    @staticmethod
    def should_prune(trial, fold: int, running_utility: float) -> bool:
        """Report the running mean utility after fold ``fold`` (0-based); True to stop."""
        if not math.isfinite(running_utility):
            return False
        trial.report(running_utility, fold)
        return trial.should_prune()

    def tell(self, trial, utility: float | None, pruned: bool) -> None:
        from optuna.trial import TrialState

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if pruned:
                self.study.tell(trial, state=TrialState.PRUNED)
            elif utility is None or not math.isfinite(utility):
                self.study.tell(trial, state=TrialState.FAIL)
            else:
                self.study.tell(trial, utility)

    def describe(self) -> str:
        return (f"PercentilePruner({self.percentile:g}%, after {self.n_startup} attempts, "
                f"from fold {self.warmup_folds + 1})")
