"""Kits for people who extend mlflow-agentic: ``check_proposer`` checks a proposer against the
loop's contract and ``check_trainer`` a trainer against the engine's, as scikit-learn's
``check_estimator`` checks an estimator."""

from mlflow_agentic.testing.proposers import (
    FAILING_TRAINER,
    KIT_TRAINERS,
    ProposerCheckFailed,
    check_proposer,
    kit_dataset,
)
from mlflow_agentic.testing.trainers import TrainerCheckFailed, check_trainer, kit_table

__all__ = ["FAILING_TRAINER", "KIT_TRAINERS", "ProposerCheckFailed", "TrainerCheckFailed",
           "check_proposer", "check_trainer", "kit_dataset", "kit_table"]
