"""mlflow-agentic: a proposer suggests, a deterministic engine verifies, MLflow remembers."""

from mlflow_agentic.data import Dataset
from mlflow_agentic.engine import (
    AgenticAutoML,
    AttemptRecord,
    EngineeringRun,
    SearchObserver,
    SolutionCandidate,
    Verdict,
)
from mlflow_agentic.errors import AgenticError, ProposerOutputError, SandboxError, UserInputError
from mlflow_agentic.proposers import CandidateProposer, OptunaProposer, SequenceProposer
from mlflow_agentic.verify import DeterministicVerifier

__version__ = "0.1.0"

__all__ = [
    "AgenticAutoML",
    "AgenticError",
    "AttemptRecord",
    "CandidateProposer",
    "Dataset",
    "DeterministicVerifier",
    "EngineeringRun",
    "OptunaProposer",
    "ProposerOutputError",
    "SandboxError",
    "SearchObserver",
    "SequenceProposer",
    "SolutionCandidate",
    "UserInputError",
    "Verdict",
    "__version__",
]
