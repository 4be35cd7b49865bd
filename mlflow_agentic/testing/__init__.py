"""Kits for people who extend mlflow-agentic: ``check_proposer`` checks a proposer against the
loop's contract, as scikit-learn's ``check_estimator`` checks an estimator."""

from mlflow_agentic.testing.proposers import (
    FAILING_TRAINER,
    KIT_TRAINERS,
    ProposerCheckFailed,
    check_proposer,
    kit_dataset,
)

__all__ = ["FAILING_TRAINER", "KIT_TRAINERS", "ProposerCheckFailed", "check_proposer",
           "kit_dataset"]
