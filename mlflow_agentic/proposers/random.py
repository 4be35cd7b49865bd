"""``RandomProposer``: uniform random search over the same spaces, the control of every comparison.

A trainer is drawn uniformly among the allowed ones, then each hyperparameter uniformly over its
range (log-uniformly where the space is on a log scale). No defaults, no learning from results:
any proposer worth paying for must beat it on the same budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mlflow_agentic.core.types import SolutionCandidate
from mlflow_agentic.proposers.optuna import OptunaProposer

if TYPE_CHECKING:
    import optuna

    from mlflow_agentic.core.dataset_like import DatasetLike


class RandomProposer(OptunaProposer):
    """Optuna's ``RandomSampler`` (seeded) over the trainers' spaces, via ask/tell."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed=seed, seed_defaults=False)

    def propose_initial(self, dataset: DatasetLike,
                        trainers: Sequence[str]) -> list[SolutionCandidate]:
        self._create_study(dataset, trainers)
        return [self._ask(dataset, trainers, None)]

    def _default_sampler(self, trainers: Sequence[str]) -> optuna.samplers.BaseSampler:
        import optuna

        return optuna.samplers.RandomSampler(seed=self.seed)

    def _rationale(self, trial: optuna.trial.Trial) -> str:
        return f"uniform random draw #{trial.number + 1} (seed {self.seed})"
